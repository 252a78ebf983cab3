#include "engine/sparse_input.hpp"

#include <vector>

namespace gcnpart::engine {

SparseInput::SparseInput(Resources& res, const AllocationPlan& plan, const HostVector<float>& x, std::int64_t n,
                         std::int64_t f, const kernels::SpmmTuning& tuning)
    : tuning_(tuning) {
  std::vector<RowOffset> offsets(static_cast<std::size_t>(n) + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    RowOffset c = 0;
    for (std::int64_t j = 0; j < f; ++j) c += x[i * f + j] != 0.0f ? 1 : 0;
    offsets[i + 1] = offsets[i] + c;
  }
  const std::int64_t nnz = offsets[n];
  std::vector<NodeId> cols(static_cast<std::size_t>(nnz));
  std::vector<float> vals(static_cast<std::size_t>(nnz));
  std::vector<RowOffset> t_offsets(static_cast<std::size_t>(f) + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    RowOffset o = offsets[i];
    for (std::int64_t j = 0; j < f; ++j) {
      if (x[i * f + j] == 0.0f) continue;
      cols[o] = static_cast<NodeId>(j);
      vals[o] = x[i * f + j];
      ++o;
      ++t_offsets[j + 1];
    }
  }
  for (std::int64_t j = 0; j < f; ++j) t_offsets[j + 1] += t_offsets[j];
  std::vector<NodeId> t_cols(static_cast<std::size_t>(nnz));
  std::vector<float> t_vals(static_cast<std::size_t>(nnz));
  std::vector<RowOffset> cursor(t_offsets.begin(), t_offsets.end() - 1);
  for (std::int64_t i = 0; i < n; ++i)
    for (RowOffset e = offsets[i]; e < offsets[i + 1]; ++e) {
      const RowOffset o = cursor[cols[e]]++;
      t_cols[o] = static_cast<NodeId>(i);
      t_vals[o] = vals[e];
    }
  x_offsets_ = upload_planned(res, plan, "x_offsets", offsets);
  x_cols_ = upload_planned(res, plan, "x_columns", cols);
  x_vals_ = upload_planned(res, plan, "x_values", vals);
  xt_offsets_ = upload_planned(res, plan, "xt_offsets", t_offsets);
  xt_cols_ = upload_planned(res, plan, "xt_columns", t_cols);
  xt_vals_ = upload_planned(res, plan, "xt_values", t_vals);
  x_view_ = CsrView{n, f, x_offsets_.data(), x_cols_.data(), x_vals_.data(), nnz};
  xt_view_ = CsrView{f, n, xt_offsets_.data(), xt_cols_.data(), xt_vals_.data(), nnz};
  xd_vals_ = take_if_planned<float>(res, plan, "x_values_dropped");
  xtd_vals_ = take_if_planned<float>(res, plan, "xt_values_dropped");
}

CsrView SparseInput::dropped(const kernels::Context& ctx, const CsrView& m, bool transposed, float* values) const {
  if (!(last_.p > 0)) return m;
  kernels::dropout_csr_values_async(ctx, m, transposed, last_, values);
  CsrView v = m;
  v.values = values;
  return v;
}

void SparseInput::multiply_async(const kernels::Context& ctx, const kernels::Dropout& dropout, const float* w,
                                 float* out, std::int64_t width) {
  last_ = dropout;
  const CsrView xv = dropped(ctx, x_view_, false, xd_vals_.data());
  kernels::spmm_async(ctx, xv, nullptr, nullptr, kernels::make_view(w, xv.num_cols, width),
                      kernels::make_view(out, xv.num_rows, width), SpmmAlgo::kOwn, tuning_);
}

void SparseInput::weight_gradient_async(const kernels::Context& ctx, const float* dp, float* dw, std::int64_t width) {
  // dW = dropout(X)^T dP through the stored transpose, with the forward's mask.
  const CsrView xt = dropped(ctx, xt_view_, true, xtd_vals_.data());
  kernels::spmm_async(ctx, xt, nullptr, nullptr, kernels::make_view(dp, xt.num_cols, width),
                      kernels::make_view(dw, xt.num_rows, width), SpmmAlgo::kOwn, tuning_);
}

}  // namespace gcnpart::engine
