// Public entry points: check arguments, then hand over to the backend that ctx.backend names.
#include "kernels/ops.hpp"

#include <string>

#include "kernels/core/error.hpp"
#include "kernels/detail/backends.hpp"
#include "kernels/detail/dropout_mask.hpp"

namespace gcnpart::kernels {
namespace {

[[noreturn]] void bad_parameter(const char* name, const std::string& value, const char* expected) {
  throw InvalidInput::parameter(name, value, expected);
}

void expect_non_negative(const char* name, std::int64_t v) {
  if (v < 0) bad_parameter(name, std::to_string(v), ">= 0");
}

void expect_leading_dim(const char* name, std::int64_t ld, std::int64_t width) {
  if (ld < width) bad_parameter(name, std::to_string(ld), ("the width " + std::to_string(width) + " or more").c_str());
}

void expect_dropout(const Dropout& d) {
  if (!(d.p >= 0.0f && d.p < 1.0f)) bad_parameter("dropout.p", std::to_string(d.p), "a probability in [0, 1)");
}

void expect_cuda_handles(const Context& ctx) {
  if (ctx.is_cuda()) GCNPART_EXPECTS(ctx.allocator != nullptr, "a CUDA context needs an allocator");
}

}  // namespace

#define GCNPART_DISPATCH(call) \
  (ctx.is_cuda() ? detail::cuda::call : detail::cpu::call)

void synchronize(const Context& ctx) { GCNPART_DISPATCH(synchronize(ctx)); }

void copy_async(const Context& ctx, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  GCNPART_EXPECTS(dst != nullptr && src != nullptr, "copy_async needs two buffers");
  GCNPART_DISPATCH(copy(ctx, dst, src, bytes));
}

void memset_zero_async(const Context& ctx, void* dst, std::size_t bytes) {
  if (bytes == 0) return;
  GCNPART_EXPECTS(dst != nullptr, "memset_zero_async needs a buffer");
  GCNPART_DISPATCH(memset_zero(ctx, dst, bytes));
}

/// The checks every SpMM entry point shares; false when there is nothing to compute.
bool expect_spmm_args(const Context& ctx, const CsrView& a, const void* x, std::int64_t ldx, const float* y,
                      std::int64_t ldy, std::int64_t width) {
  expect_non_negative("width", width);
  expect_non_negative("a.num_rows", a.num_rows);
  expect_non_negative("a.num_cols", a.num_cols);
  expect_leading_dim("ldx", ldx, width);
  expect_leading_dim("ldy", ldy, width);
  if (a.num_rows == 0 || width == 0) return false;
  GCNPART_EXPECTS(a.row_offsets != nullptr && y != nullptr, "SpMM needs row offsets and an output");
  GCNPART_EXPECTS(a.num_cols == 0 || x != nullptr, "SpMM needs an input matrix");
  expect_cuda_handles(ctx);
  return true;
}

void SpmmTuning::validate() const {
  if (long_row < 1) throw InvalidInput::parameter("--spmm-long-row", std::to_string(long_row), ">= 1");
  if (segment < 1) throw InvalidInput::parameter("--spmm-segment", std::to_string(segment), ">= 1");
}

void spmm_async(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
                const float* x, std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width, SpmmAlgo algo,
                const SpmmTuning& tuning) {
  tuning.validate();
  if (!expect_spmm_args(ctx, a, x, ldx, y, ldy, width)) return;
  if (ctx.is_cuda() && algo == SpmmAlgo::kCusparse) {
    detail::cuda::cusparse_spmm_once(ctx, a, row_scale, col_scale, x, ldx, y, ldy, width, 2);
    return;
  }
  GCNPART_DISPATCH(spmm(ctx, a, row_scale, col_scale, x, ldx, y, ldy, width, tuning));
}

void spmm_bf16_async(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
                     const std::uint16_t* x_bf16, std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width,
                     const SpmmTuning& tuning) {
  tuning.validate();
  if (!expect_spmm_args(ctx, a, x_bf16, ldx, y, ldy, width)) return;
  GCNPART_DISPATCH(spmm_bf16(ctx, a, row_scale, col_scale, x_bf16, ldx, y, ldy, width, tuning));
}

void convert_to_bf16_async(const Context& ctx, const float* x, std::int64_t n, std::uint16_t* out) {
  expect_non_negative("n", n);
  if (n == 0) return;
  GCNPART_EXPECTS(x != nullptr && out != nullptr, "convert_to_bf16_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(convert_to_bf16(ctx, x, n, out));
}

void convert_from_bf16_async(const Context& ctx, const std::uint16_t* x, std::int64_t n, float* out) {
  expect_non_negative("n", n);
  if (n == 0) return;
  GCNPART_EXPECTS(x != nullptr && out != nullptr, "convert_from_bf16_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(convert_from_bf16(ctx, x, n, out));
}

namespace {

/// The checks every GEMM entry point shares; false when C is empty.
bool expect_gemm_args(const Context& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                      float alpha, const void* a, std::int64_t lda, const void* b, std::int64_t ldb, const void* c,
                      std::int64_t ldc) {
  expect_non_negative("m", m);
  expect_non_negative("n", n);
  expect_non_negative("k", k);
  // Row-major storage: A is m x k (or k x m when transposed), B is k x n (or n x k), C is m x n.
  expect_leading_dim("lda", lda, trans_a ? m : k);
  expect_leading_dim("ldb", ldb, trans_b ? k : n);
  expect_leading_dim("ldc", ldc, n);
  if (m == 0 || n == 0) return false;
  GCNPART_EXPECTS(c != nullptr, "gemm needs an output");
  GCNPART_EXPECTS(k == 0 || alpha == 0.0f || (a != nullptr && b != nullptr), "gemm needs A and B");
  expect_cuda_handles(ctx);
  if (ctx.is_cuda()) GCNPART_EXPECTS(ctx.cublas != nullptr, "a CUDA context needs a cuBLAS handle for gemm");
  return true;
}

/// The checks of both forward epilogues (float and bf16 output); false when there is nothing to compute.
bool expect_epilogue_args(const Context& ctx, const void* z, std::int64_t rows, std::int64_t width,
                          const Dropout& dropout, const void* out, const char* what) {
  expect_non_negative("rows", rows);
  expect_non_negative("width", width);
  expect_dropout(dropout);
  if (rows == 0 || width == 0) return false;
  GCNPART_EXPECTS(z != nullptr && out != nullptr, (std::string(what) + " needs its buffers").c_str());
  expect_cuda_handles(ctx);
  return true;
}

/// The checks of both backward epilogues; false when there is nothing to compute.
bool expect_backward_args(const Context& ctx, const void* h, const void* dh, std::int64_t rows, std::int64_t width,
                          bool relu, float p, const void* dz) {
  expect_non_negative("rows", rows);
  expect_non_negative("width", width);
  if (!(p >= 0.0f && p < 1.0f)) bad_parameter("p", std::to_string(p), "a probability in [0, 1)");
  // Without relu the dropout mask cannot be recovered from h (a kept value may be 0).
  GCNPART_EXPECTS(relu || p == 0.0f, "the backward epilogue recovers the dropout mask from relu outputs only");
  if (rows == 0 || width == 0) return false;
  GCNPART_EXPECTS(dh != nullptr && dz != nullptr && (!relu || h != nullptr),
                  "bias_act_dropout_backward_async needs its buffers");
  expect_cuda_handles(ctx);
  return true;
}

}  // namespace

void gemm_async(const Context& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
                std::int64_t ldc) {
  if (!expect_gemm_args(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, c, ldc)) return;
  GCNPART_DISPATCH(gemm(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc));
}


void gemm_bf16_async(const Context& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                     float alpha, const Bf16* a, std::int64_t lda, const Bf16* b, std::int64_t ldb, float beta,
                     float* c, std::int64_t ldc) {
  if (!expect_gemm_args(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, c, ldc)) return;
  GCNPART_DISPATCH(gemm_bf16(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, false, ldc));
}

void gemm_bf16_async(const Context& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
                     float alpha, const Bf16* a, std::int64_t lda, const Bf16* b, std::int64_t ldb, float beta, Bf16* c,
                     std::int64_t ldc) {
  if (beta != 0.0f) bad_parameter("beta", std::to_string(beta), "0 for a bf16 output");
  if (!expect_gemm_args(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, c, ldc)) return;
  GCNPART_DISPATCH(gemm_bf16(ctx, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, true, ldc));
}

void column_sum_async(const Context& ctx, const Bf16* x, std::int64_t rows, std::int64_t width, float* out) {
  expect_non_negative("rows", rows);
  expect_non_negative("width", width);
  if (width == 0) return;
  GCNPART_EXPECTS(out != nullptr && (rows == 0 || x != nullptr), "column_sum_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(column_sum_bf16(ctx, x, rows, width, out));
}

void bias_act_dropout_async(const Context& ctx, const float* z, const float* bias, std::int64_t rows,
                            std::int64_t width, bool relu, const Dropout& dropout, Bf16* out) {
  if (!expect_epilogue_args(ctx, z, rows, width, dropout, out, "bias_act_dropout_async")) return;
  GCNPART_DISPATCH(bias_act_dropout_to_bf16(ctx, z, bias, rows, width, relu, dropout, out));
}

void dropout_async(const Context& ctx, const Bf16* x, std::int64_t rows, std::int64_t width, const Dropout& dropout,
                   Bf16* out) {
  if (!expect_epilogue_args(ctx, x, rows, width, dropout, out, "dropout_async")) return;
  GCNPART_DISPATCH(dropout_bf16(ctx, x, rows, width, dropout, out));
}

void bias_act_dropout_backward_async(const Context& ctx, const Bf16* h, const Bf16* dh, std::int64_t rows,
                                     std::int64_t width, bool relu, float p, Bf16* dz) {
  if (!expect_backward_args(ctx, h, dh, rows, width, relu, p, dz)) return;
  if (!relu) {
    if (dz != dh) copy_async(ctx, dz, dh, static_cast<std::size_t>(rows * width) * sizeof(Bf16));
    return;
  }
  GCNPART_DISPATCH(relu_dropout_backward_bf16(ctx, h, dh, rows * width, p, dz));
}

void column_sum_async(const Context& ctx, const float* x, std::int64_t rows, std::int64_t width, float* out) {
  expect_non_negative("rows", rows);
  expect_non_negative("width", width);
  if (width == 0) return;
  GCNPART_EXPECTS(out != nullptr && (rows == 0 || x != nullptr), "column_sum_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(column_sum(ctx, x, rows, width, out));
}

bool dropout_keep(const Dropout& d, std::int64_t global_node, std::int64_t column) {
  expect_dropout(d);
  if (d.p == 0.0f) return true;
  return detail::dropout_element_keeps(d.key, d.p, global_node, column);
}

void bias_act_dropout_async(const Context& ctx, const float* z, const float* bias, std::int64_t rows,
                            std::int64_t width, bool relu, const Dropout& dropout, float* out) {
  if (!expect_epilogue_args(ctx, z, rows, width, dropout, out, "bias_act_dropout_async")) return;
  GCNPART_DISPATCH(bias_act_dropout(ctx, z, bias, rows, width, relu, dropout, out));
}

void bias_act_dropout_backward_async(const Context& ctx, const float* h, const float* dh, std::int64_t rows,
                                     std::int64_t width, bool relu, float p, float* dz) {
  if (!expect_backward_args(ctx, h, dh, rows, width, relu, p, dz)) return;
  GCNPART_DISPATCH(bias_act_dropout_backward(ctx, h, dh, rows, width, relu, p, dz));
}

void dropout_csr_values_async(const Context& ctx, const CsrView& a, bool transposed, const Dropout& dropout,
                              float* out) {
  expect_dropout(dropout);
  if (a.num_rows == 0) return;  // a's arrays may live on the device: do not read them here
  GCNPART_EXPECTS(a.values != nullptr && out != nullptr, "dropout_csr_values_async needs values and an output");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(dropout_csr_values(ctx, a, transposed, dropout, out));
}

void dropout_async(const Context& ctx, const float* x, std::int64_t rows, std::int64_t width, const Dropout& dropout,
                   float* out) {
  bias_act_dropout_async(ctx, x, nullptr, rows, width, false, dropout, out);
}

void softmax_cross_entropy_async(const Context& ctx, const float* logits, std::int64_t num_rows,
                                 std::int64_t classes, const std::int32_t* labels, const NodeId* rows,
                                 std::int64_t count, float grad_scale, float* loss_sum, float* grad) {
  expect_non_negative("num_rows", num_rows);
  expect_non_negative("count", count);
  if (classes <= 0) bad_parameter("classes", std::to_string(classes), "at least 1");
  GCNPART_EXPECTS(loss_sum != nullptr, "softmax_cross_entropy_async needs loss_sum");
  GCNPART_EXPECTS(count == 0 || (logits != nullptr && labels != nullptr && rows != nullptr),
                  "softmax_cross_entropy_async needs logits, labels and rows");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(
      softmax_cross_entropy(ctx, logits, num_rows, classes, labels, rows, count, grad_scale, loss_sum, grad));
}

void count_correct_async(const Context& ctx, const float* logits, std::int64_t classes, const std::int32_t* labels,
                         const NodeId* rows, std::int64_t count, std::int64_t* correct) {
  expect_non_negative("count", count);
  if (classes <= 0) bad_parameter("classes", std::to_string(classes), "at least 1");
  GCNPART_EXPECTS(correct != nullptr, "count_correct_async needs an output");
  GCNPART_EXPECTS(count == 0 || (logits != nullptr && labels != nullptr && rows != nullptr),
                  "count_correct_async needs logits, labels and rows");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(count_correct(ctx, logits, classes, labels, rows, count, correct));
}

void adam_step_async(const Context& ctx, float* w, const float* g, float* m, float* v, std::int64_t n,
                     const AdamParams& params) {
  expect_non_negative("n", n);
  if (params.step < 1) bad_parameter("adam step", std::to_string(params.step), "1 or more (counted from 1)");
  if (n == 0) return;
  GCNPART_EXPECTS(w != nullptr && g != nullptr && m != nullptr && v != nullptr, "adam_step_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(adam_step(ctx, w, g, m, v, n, params));
}

void inv_sqrt_degree_async(const Context& ctx, const RowOffset* row_offsets, std::int64_t n, float extra,
                           float* dinv) {
  expect_non_negative("n", n);
  if (n == 0) return;
  GCNPART_EXPECTS(row_offsets != nullptr && dinv != nullptr, "inv_sqrt_degree_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(inv_sqrt_degree(ctx, row_offsets, n, extra, dinv));
}

void gather_rows_async(const Context& ctx, const float* src, const NodeId* idx, std::int64_t count,
                       std::int64_t width, float* dst) {
  expect_non_negative("count", count);
  expect_non_negative("width", width);
  if (count == 0 || width == 0) return;
  GCNPART_EXPECTS(src != nullptr && idx != nullptr && dst != nullptr, "gather_rows_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(gather_rows(ctx, src, idx, count, width, dst));
}

void gather_rows_async(const Context& ctx, const Bf16* src, const NodeId* idx, std::int64_t count,
                       std::int64_t width, Bf16* dst) {
  expect_non_negative("count", count);
  expect_non_negative("width", width);
  if (count == 0 || width == 0) return;
  GCNPART_EXPECTS(src != nullptr && idx != nullptr && dst != nullptr, "gather_rows_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(gather_rows_bf16(ctx, src, idx, count, width, dst));
}

void scatter_add_rows_async(const Context& ctx, const float* src, const NodeId* idx, std::int64_t count,
                            std::int64_t width, float* dst) {
  expect_non_negative("count", count);
  expect_non_negative("width", width);
  if (count == 0 || width == 0) return;
  GCNPART_EXPECTS(src != nullptr && idx != nullptr && dst != nullptr, "scatter_add_rows_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(scatter_add_rows(ctx, src, idx, count, width, dst));
}

void sum_async(const Context& ctx, const float* x, std::int64_t n, float* out) {
  expect_non_negative("n", n);
  GCNPART_EXPECTS(out != nullptr && (n == 0 || x != nullptr), "sum_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(sum(ctx, x, n, out));
}

void sum_squares_async(const Context& ctx, const float* x, std::int64_t n, float* out) {
  expect_non_negative("n", n);
  GCNPART_EXPECTS(out != nullptr && (n == 0 || x != nullptr), "sum_squares_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(sum_squares(ctx, x, n, out));
}

#undef GCNPART_DISPATCH

}  // namespace gcnpart::kernels
