// Public entry points: check arguments, then hand over to the backend that ctx.backend names.
#include "kernels/ops.hpp"

#include <climits>
#include <string>
#include <type_traits>
#include <utility>

#include "base/error.hpp"
#include "kernels/detail/backends.hpp"
#include "kernels/detail/dropout_mask.hpp"
#include "kernels/op_profiler.hpp"

namespace gcnpart::kernels {
namespace {

[[noreturn]] void bad_parameter(const char* name, const std::string& value, const char* expected) {
  throw InvalidInput::parameter(name, value, expected);
}

void expect_non_negative(const char* name, std::int64_t v) {
  if (v < 0) bad_parameter(name, std::to_string(v), ">= 0");
}

/// A view's own invariants: non-negative extents and ld >= cols. `name` names the argument.
template <class T>
void expect_view(const std::string& name, const DenseView<T>& v) {
  expect_non_negative((name + ".rows").c_str(), v.rows);
  expect_non_negative((name + ".cols").c_str(), v.cols);
  if (v.ld < v.cols) {
    bad_parameter((name + ".ld").c_str(), std::to_string(v.ld),
                  ("the width " + name + ".cols = " + std::to_string(v.cols) + " or more").c_str());
  }
}

/// A view the kernel reads or writes has data unless it is empty (a programming error otherwise).
template <class T>
void expect_data(const std::string& name, const DenseView<T>& v) {
  GCNPART_EXPECTS(v.empty() || v.data != nullptr, (name + " is a non-empty view without data").c_str());
}

/// One extent of a matrix argument must equal another (e.g. x.rows == a.num_cols).
void expect_extent(const char* name, std::int64_t got, const char* other, std::int64_t expected) {
  if (got != expected) {
    bad_parameter(name, std::to_string(got), (std::string(other) + " = " + std::to_string(expected)).c_str());
  }
}

/// Two matrix arguments of one shape (e.g. z and out of an epilogue).
template <class A, class B>
void expect_same_shape(const std::string& name_a, const DenseView<A>& a, const std::string& name_b,
                       const DenseView<B>& b) {
  expect_extent((name_b + ".rows").c_str(), b.rows, (name_a + ".rows").c_str(), a.rows);
  expect_extent((name_b + ".cols").c_str(), b.cols, (name_a + ".cols").c_str(), a.cols);
}

/// The element-wise kernels walk rows * cols elements from data: no gap between rows.
template <class T>
void expect_contiguous(const std::string& name, const DenseView<T>& v) {
  if (!v.contiguous()) {
    bad_parameter((name + ".ld").c_str(), std::to_string(v.ld),
                  ("the width " + name + ".cols = " + std::to_string(v.cols) + " (contiguous rows)").c_str());
  }
}

/// A matrix argument of an element-wise kernel: a valid, contiguous view.
template <class T>
void expect_packed(const std::string& name, const DenseView<T>& v) {
  expect_view(name, v);
  expect_contiguous(name, v);
}

void expect_dropout(const Dropout& d) {
  if (!(d.p >= 0.0f && d.p < 1.0f)) bad_parameter("dropout.p", std::to_string(d.p), "a probability in [0, 1)");
}

void expect_cuda_handles(const Context& ctx) {
  if (ctx.is_cuda()) GCNPART_EXPECTS(ctx.allocator != nullptr, "a CUDA context needs an allocator");
}

}  // namespace

/// Times the operation when the context has a profiler (its class from the backend function's name).
class ProfileScope {
 public:
  ProfileScope(const Context& ctx, std::string_view call) : ctx_(ctx) {
    if (ctx_.profiler != nullptr) ctx_.profiler->begin(call, ctx_.is_cuda(), ctx_.stream);
  }
  ~ProfileScope() {
    if (ctx_.profiler != nullptr) ctx_.profiler->end(ctx_.is_cuda(), ctx_.stream);
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  const Context& ctx_;
};

#if GCNPART_HAVE_CUDA
#define GCNPART_BACKEND_CALL(call) (ctx.is_cuda() ? detail::cuda::call : detail::cpu::call)
#else  // a CPU-only build: a CUDA context is refused (engine::Resources refuses --device cuda before one exists)
#define GCNPART_BACKEND_CALL(call) (ctx.is_cuda() ? throw NoCudaBuild("a CUDA kernel call") : detail::cpu::call)
#endif

#define GCNPART_DISPATCH(call)                                        \
  do {                                                                \
    const ProfileScope gcnpart_profile_scope(ctx, #call);   \
    GCNPART_BACKEND_CALL(call);                                       \
  } while (false)

void synchronize(const Context& ctx) { GCNPART_BACKEND_CALL(synchronize(ctx)); }

void copy_async(const Context& ctx, void* dst, const void* src, std::size_t bytes) {
  if (bytes == 0) return;
  GCNPART_EXPECTS(dst != nullptr && src != nullptr, "copy_async needs two buffers");
  GCNPART_DISPATCH(copy(ctx, dst, src, bytes));
}

void set_blas_workspace(const Context& ctx, void* workspace, std::size_t bytes) {
  GCNPART_EXPECTS(workspace != nullptr || bytes == 0, "set_blas_workspace needs a buffer of its size");
  GCNPART_DISPATCH(set_blas_workspace(ctx, workspace, bytes));
}

void reset_blas_workspace(const Context& ctx) { GCNPART_DISPATCH(reset_blas_workspace(ctx)); }

void memset_zero_async(const Context& ctx, void* dst, std::size_t bytes) {
  if (bytes == 0) return;
  GCNPART_EXPECTS(dst != nullptr, "memset_zero_async needs a buffer");
  GCNPART_DISPATCH(memset_zero(ctx, dst, bytes));
}

/// The checks every SpMM entry point shares; false when there is nothing to compute.
template <class T, class Y>
bool expect_spmm_args(const Context& ctx, const CsrView& a, const DenseView<const T>& x, const DenseView<Y>& y) {
  expect_non_negative("a.num_rows", a.num_rows);
  expect_non_negative("a.num_cols", a.num_cols);
  expect_view("x", x);
  expect_view("y", y);
  expect_extent("x.rows", x.rows, "a.num_cols", a.num_cols);
  expect_extent("y.rows", y.rows, "a.num_rows", a.num_rows);
  expect_extent("y.cols", y.cols, "x.cols", x.cols);
  if (a.num_rows == 0 || y.cols == 0) return false;
  GCNPART_EXPECTS(a.row_offsets != nullptr, "SpMM needs row offsets");
  expect_data("x", x);
  expect_data("y", y);
  expect_cuda_handles(ctx);
  return true;
}

void SpmmTuning::validate() const {
  if (long_row < 0)
    throw InvalidInput::parameter("--spmm-long-row", std::to_string(long_row), ">= 1, or 0 for the width's default");
  if (segment < 0)
    throw InvalidInput::parameter("--spmm-segment", std::to_string(segment), ">= 1, or 0 for the product's default");
  if (slab < 0) throw InvalidInput::parameter("--spmm-slab", std::to_string(slab), ">= 0 (0: the whole width)");
  if (lanes != 0 && lanes != 4 && lanes != 32)
    throw InvalidInput::parameter("--spmm-lanes", std::to_string(lanes),
                                  "0 (automatic), 4 (four lanes for rows of 5..16 vectors) or 32 (sized to the row)");
}


void spmm_async(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale, ConstMatrixView x,
                MatrixView y, SpmmAlgo algo, const SpmmTuning& tuning) {
  tuning.validate();
  if (!expect_spmm_args(ctx, a, x, y)) return;
#if GCNPART_HAVE_CUDA
  if (ctx.is_cuda() && algo == SpmmAlgo::kCusparse) {
    detail::cuda::cusparse_spmm_once(ctx, a, row_scale, col_scale, x.data, x.ld, y.data, y.ld, y.cols, 2);
    return;
  }
#endif
  GCNPART_DISPATCH(spmm(ctx, a, row_scale, col_scale, x.data, x.ld, y.data, y.ld, y.cols, tuning));
}

void CusparseSpmm::run_async(ConstMatrixView x, MatrixView y) {
  expect_packed("x", x);
  expect_packed("y", y);
  expect_extent("x.rows", x.rows, "a.num_cols", cols_);
  expect_extent("y.rows", y.rows, "a.num_rows", rows_);
  expect_extent("x.cols", x.cols, "the plan's width", width_);
  expect_extent("y.cols", y.cols, "the plan's width", width_);
  if (rows_ > 0 && width_ > 0) {
    expect_data("x", x);
    expect_data("y", y);
  }
  // Timed under the caller's context: the plan keeps a copy of it made at construction, before any profiler.
  const ProfileScope profile_scope(*ctx_, "spmm_cusparse(plan)");
  run_unchecked_async(x.data, y.data);
}

void spmm_bf16_async(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
                     ConstBf16MatrixView x, MatrixView y, const SpmmTuning& tuning) {
  tuning.validate();
  if (!expect_spmm_args(ctx, a, x, y)) return;
  GCNPART_DISPATCH(spmm_bf16(ctx, a, row_scale, col_scale, x.data, x.ld, y.data, y.ld, y.cols, tuning));
}

void spmm_bf16_async(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
                     ConstBf16MatrixView x, Bf16MatrixView y, MatrixView scratch, const SpmmTuning& tuning) {
  tuning.validate();
  if (!expect_spmm_args(ctx, a, x, y)) return;
  expect_view("scratch", scratch);
  if (scratch.rows < y.rows || scratch.cols < y.cols)
    bad_parameter("scratch", std::to_string(scratch.rows) + " x " + std::to_string(scratch.cols),
                  "at least y's rows and columns");
  expect_data("scratch", scratch);
  // The scratch holds long rows' sums while x is read and y written: it may share memory with neither.
  const auto span = [](const void* p, std::int64_t rows, std::int64_t ld, std::int64_t cols, std::size_t element) {
    const auto* b = static_cast<const char*>(p);
    return std::pair{b, b + static_cast<std::size_t>(rows > 0 ? (rows - 1) * ld + cols : 0) * element};
  };
  const auto disjoint = [](std::pair<const char*, const char*> a, std::pair<const char*, const char*> b) {
    return a.second <= b.first || b.second <= a.first;
  };
  const auto s_span = span(scratch.data, y.rows, scratch.ld, y.cols, sizeof(float));
  GCNPART_EXPECTS(disjoint(s_span, span(x.data, x.rows, x.ld, x.cols, sizeof(Bf16))) &&
                      disjoint(s_span, span(y.data, y.rows, y.ld, y.cols, sizeof(Bf16))),
                  "spmm_bf16_async: the float scratch may not overlap x or y");
  GCNPART_DISPATCH(spmm_bf16_out(ctx, a, row_scale, col_scale, x.data, x.ld, y.data, y.ld, y.cols, scratch.data,
                                 scratch.ld, tuning));
}

void convert_to_bf16_async(const Context& ctx, const float* x, std::int64_t n, Bf16* out) {
  expect_non_negative("n", n);
  if (n == 0) return;
  GCNPART_EXPECTS(x != nullptr && out != nullptr, "convert_to_bf16_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(convert_to_bf16(ctx, x, n, out));
}

void convert_from_bf16_async(const Context& ctx, const Bf16* x, std::int64_t n, float* out) {
  expect_non_negative("n", n);
  if (n == 0) return;
  GCNPART_EXPECTS(x != nullptr && out != nullptr, "convert_from_bf16_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(convert_from_bf16(ctx, x, n, out));
}

namespace {

/// The checks every GEMM entry point shares; false when C is empty.
template <class In, class Out>
bool expect_gemm_args(const Context& ctx, bool trans_a, bool trans_b, float alpha, const DenseView<const In>& a,
                      const DenseView<const In>& b, const DenseView<Out>& c) {
  expect_view("a", a);
  expect_view("b", b);
  expect_view("c", c);
  // Row-major storage: A is m x k (or k x m when transposed), B is k x n (or n x k), C is m x n.
  expect_extent(trans_a ? "a.cols" : "a.rows", trans_a ? a.cols : a.rows, "c.rows", c.rows);
  expect_extent(trans_b ? "b.rows" : "b.cols", trans_b ? b.rows : b.cols, "c.cols", c.cols);
  expect_extent(trans_b ? "b.cols" : "b.rows", trans_b ? b.cols : b.rows, trans_a ? "a.rows" : "a.cols",
                trans_a ? a.rows : a.cols);
  if (c.empty()) return false;
  expect_data("c", c);
  if (alpha != 0.0f) {
    expect_data("a", a);
    expect_data("b", b);
  }
  expect_cuda_handles(ctx);
  if (ctx.is_cuda()) GCNPART_EXPECTS(ctx.cublas != nullptr, "a CUDA context needs a cuBLAS handle for gemm");
  return true;
}

/// k of C = op(A) op(B): the inner extent.
template <class T>
std::int64_t inner_extent(bool trans_a, const DenseView<T>& a) {
  return trans_a ? a.rows : a.cols;
}

/// The checks of the forward epilogues (float and bf16 output); false when there is nothing to compute.
template <class In, class Out>
bool expect_epilogue_args(const Context& ctx, const char* in_name, const DenseView<const In>& z, const Dropout& dropout,
                          const DenseView<Out>& out, const char* what) {
  expect_packed(in_name, z);
  expect_packed("out", out);
  expect_same_shape(in_name, z, "out", out);
  expect_dropout(dropout);
  if (z.empty()) return false;
  GCNPART_EXPECTS(z.data != nullptr && out.data != nullptr, (std::string(what) + " needs its buffers").c_str());
  expect_cuda_handles(ctx);
  return true;
}

/// A positive mask stands for h in the ReLU backward with column sums (the engine's hidden layers) only.
void expect_positive_use(bool relu, const float* dz_column_sums, const std::uint8_t* positive) {
  GCNPART_EXPECTS(positive == nullptr || (relu && dz_column_sums != nullptr),
                  "a positive mask is read by the ReLU backward with column sums only");
}

/// The checks of both backward epilogues; false when there is nothing to compute.
template <class T>
bool expect_backward_args(const Context& ctx, const DenseView<const T>& h, const DenseView<const T>& dh, bool relu,
                          float p, const DenseView<T>& dz, bool h_from_mask) {
  expect_packed("dh", dh);
  expect_packed("dz", dz);
  expect_same_shape("dh", dh, "dz", dz);
  if (relu) {
    expect_packed("h", h);
    expect_same_shape("dh", dh, "h", h);
  }
  if (!(p >= 0.0f && p < 1.0f)) bad_parameter("p", std::to_string(p), "a probability in [0, 1)");
  // Without relu the dropout mask cannot be recovered from h (a kept value may be 0).
  GCNPART_EXPECTS(relu || p == 0.0f, "the backward epilogue recovers the dropout mask from relu outputs only");
  if (dh.empty()) return false;
  GCNPART_EXPECTS(dh.data != nullptr && dz.data != nullptr && (!relu || h_from_mask || h.data != nullptr),
                  "bias_act_dropout_backward_async needs its buffers");
  expect_cuda_handles(ctx);
  return true;
}

/// The checks of both column sums; false when there is nothing to compute.
template <class T>
bool expect_column_sum_args(const Context& ctx, const DenseView<const T>& x, const float* out) {
  expect_packed("x", x);
  if (x.cols == 0) return false;
  GCNPART_EXPECTS(out != nullptr && (x.rows == 0 || x.data != nullptr), "column_sum_async needs its buffers");
  expect_cuda_handles(ctx);
  return true;
}

}  // namespace

void gemm_async(const Context& ctx, bool trans_a, bool trans_b, float alpha, ConstMatrixView a, ConstMatrixView b,
                float beta, MatrixView c) {
  if (!expect_gemm_args(ctx, trans_a, trans_b, alpha, a, b, c)) return;
  GCNPART_DISPATCH(gemm(ctx, trans_a, trans_b, c.rows, c.cols, inner_extent(trans_a, a), alpha, a.data, a.ld, b.data,
                        b.ld, beta, c.data, c.ld));
}

void gemm_bf16_async(const Context& ctx, bool trans_a, bool trans_b, float alpha, ConstBf16MatrixView a,
                     ConstBf16MatrixView b, float beta, MatrixView c) {
  if (!expect_gemm_args(ctx, trans_a, trans_b, alpha, a, b, c)) return;
  GCNPART_DISPATCH(gemm_bf16(ctx, trans_a, trans_b, c.rows, c.cols, inner_extent(trans_a, a), alpha, a.data, a.ld,
                             b.data, b.ld, beta, c.data, false, c.ld));
}

void gemm_bf16_async(const Context& ctx, bool trans_a, bool trans_b, float alpha, ConstBf16MatrixView a,
                     ConstBf16MatrixView b, float beta, Bf16MatrixView c) {
  if (beta != 0.0f) bad_parameter("beta", std::to_string(beta), "0 for a bf16 output");
  if (!expect_gemm_args(ctx, trans_a, trans_b, alpha, a, b, c)) return;
  GCNPART_DISPATCH(gemm_bf16(ctx, trans_a, trans_b, c.rows, c.cols, inner_extent(trans_a, a), alpha, a.data, a.ld,
                             b.data, b.ld, beta, c.data, true, c.ld));
}

void column_sum_async(const Context& ctx, ConstBf16MatrixView x, float* out) {
  if (!expect_column_sum_args(ctx, x, out)) return;
  GCNPART_DISPATCH(column_sum_bf16(ctx, x.data, x.rows, x.cols, out));
}

void bias_act_dropout_async(const Context& ctx, ConstMatrixView z, const float* bias, bool relu, const Dropout& dropout,
                            Bf16MatrixView out, std::uint8_t* positive) {
  if (!expect_epilogue_args(ctx, "z", z, dropout, out, "bias_act_dropout_async")) return;
  GCNPART_DISPATCH(bias_act_dropout_to_bf16(ctx, z.data, bias, z.rows, z.cols, relu, dropout, out.data, positive));
}

void dropout_async(const Context& ctx, ConstBf16MatrixView x, const Dropout& dropout, Bf16MatrixView out) {
  if (!expect_epilogue_args(ctx, "x", x, dropout, out, "dropout_async")) return;
  GCNPART_DISPATCH(dropout_bf16(ctx, x.data, x.rows, x.cols, dropout, out.data));
}

void bias_act_dropout_backward_async(const Context& ctx, ConstBf16MatrixView h, ConstBf16MatrixView dh, bool relu,
                                     float p, Bf16MatrixView dz, float* dz_column_sums, const std::uint8_t* positive) {
  expect_positive_use(relu, dz_column_sums, positive);
  if (!expect_backward_args(ctx, h, dh, relu, p, dz, positive != nullptr)) {  // nothing to compute; the sums of no rows are zeros
    if (dz_column_sums != nullptr) column_sum_async(ctx, ConstBf16MatrixView(dz), dz_column_sums);
    return;
  }
  if (!relu) {
    if (dz.data != dh.data) copy_async(ctx, dz.data, dh.data, static_cast<std::size_t>(dh.size()) * sizeof(Bf16));
    if (dz_column_sums != nullptr) column_sum_async(ctx, ConstBf16MatrixView(dz), dz_column_sums);
    return;
  }
  if (dz_column_sums != nullptr) {
    GCNPART_DISPATCH(relu_dropout_backward_sum_bf16(ctx, h.data, dh.data, dh.rows, dh.cols, p, dz.data, dz_column_sums,
                                                    positive));
    return;
  }
  GCNPART_DISPATCH(relu_dropout_backward_bf16(ctx, h.data, dh.data, dh.size(), p, dz.data));
}

void column_sum_async(const Context& ctx, ConstMatrixView x, float* out) {
  if (!expect_column_sum_args(ctx, x, out)) return;
  GCNPART_DISPATCH(column_sum(ctx, x.data, x.rows, x.cols, out));
}

bool dropout_keep(const Dropout& d, std::int64_t global_node, std::int64_t column) {
  expect_dropout(d);
  if (d.p == 0.0f) return true;
  return detail::dropout_element_keeps(detail::dropout_key(d), d.p, global_node, column);
}

void bias_act_dropout_async(const Context& ctx, ConstMatrixView z, const float* bias, bool relu, const Dropout& dropout,
                            MatrixView out, std::uint8_t* positive) {
  if (!expect_epilogue_args(ctx, "z", z, dropout, out, "bias_act_dropout_async")) return;
  GCNPART_DISPATCH(bias_act_dropout(ctx, z.data, bias, z.rows, z.cols, relu, dropout, out.data, positive));
}

void bias_act_dropout_backward_async(const Context& ctx, ConstMatrixView h, ConstMatrixView dh, bool relu, float p,
                                     MatrixView dz, float* dz_column_sums, const std::uint8_t* positive) {
  expect_positive_use(relu, dz_column_sums, positive);
  if (!expect_backward_args(ctx, h, dh, relu, p, dz, positive != nullptr)) {  // nothing to compute; the sums of no rows are zeros
    if (dz_column_sums != nullptr) column_sum_async(ctx, ConstMatrixView(dz), dz_column_sums);
    return;
  }
  if (dz_column_sums != nullptr && relu) {
    GCNPART_DISPATCH(
        relu_dropout_backward_sum(ctx, h.data, dh.data, dh.rows, dh.cols, p, dz.data, dz_column_sums, positive));
    return;
  }
  GCNPART_DISPATCH(bias_act_dropout_backward(ctx, h.data, dh.data, dh.rows, dh.cols, relu, p, dz.data));
  if (dz_column_sums != nullptr) column_sum_async(ctx, ConstMatrixView(dz), dz_column_sums);
}

void dropout_csr_values_async(const Context& ctx, const CsrView& a, bool transposed, const Dropout& dropout,
                              float* out) {
  expect_dropout(dropout);
  if (a.num_rows == 0) return;  // a's arrays may live on the device: do not read them here
  GCNPART_EXPECTS(a.values != nullptr && out != nullptr, "dropout_csr_values_async needs values and an output");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(dropout_csr_values(ctx, a, transposed, dropout, out));
}

void dropout_async(const Context& ctx, ConstMatrixView x, const Dropout& dropout, MatrixView out) {
  if (!expect_epilogue_args(ctx, "x", x, dropout, out, "dropout_async")) return;
  GCNPART_DISPATCH(bias_act_dropout(ctx, x.data, nullptr, x.rows, x.cols, false, dropout, out.data, nullptr));
}

void softmax_cross_entropy_async(const Context& ctx, ConstMatrixView logits, const std::int32_t* labels,
                                 const NodeId* rows, std::int64_t count, float grad_scale, float* loss_sum,
                                 MatrixView grad) {
  expect_view("logits", logits);
  expect_non_negative("count", count);
  if (logits.cols <= 0) bad_parameter("logits.cols", std::to_string(logits.cols), "at least 1 (the classes)");
  if (grad.data != nullptr) {
    expect_view("grad", grad);
    expect_same_shape("logits", logits, "grad", grad);
    expect_extent("grad.ld", grad.ld, "logits.ld", logits.ld);
  }
  GCNPART_EXPECTS(loss_sum != nullptr, "softmax_cross_entropy_async needs loss_sum");
  GCNPART_EXPECTS(count == 0 || (logits.data != nullptr && labels != nullptr && rows != nullptr),
                  "softmax_cross_entropy_async needs logits, labels and rows");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(softmax_cross_entropy(ctx, logits.data, logits.rows, logits.cols, logits.ld, labels, rows, count,
                                         grad_scale, loss_sum, grad.data));
}

namespace {
template <class G>
void bias_softmax_cross_entropy_checked(const Context& ctx, MatrixView logits, const float* bias,
                                        const std::int32_t* labels, const NodeId* rows, const std::int32_t* row_slots,
                                        std::int64_t count, float grad_scale, float* loss_sum, DenseView<G> grad,
                                        float* grad_column_sums) {
  expect_view("logits", logits);
  expect_non_negative("count", count);
  if (logits.cols <= 0) bad_parameter("logits.cols", std::to_string(logits.cols), "at least 1 (the classes)");
  expect_view("grad", grad);
  expect_same_shape("logits", logits, "grad", grad);
  expect_extent("grad.ld", grad.ld, "logits.ld", logits.ld);
  expect_data("logits", logits);
  expect_data("grad", grad);
  GCNPART_EXPECTS(loss_sum != nullptr && grad_column_sums != nullptr,
                  "bias_softmax_cross_entropy_async needs loss_sum and grad_column_sums");
  GCNPART_EXPECTS(logits.rows == 0 || (labels != nullptr && row_slots != nullptr),
                  "bias_softmax_cross_entropy_async needs labels and row slots");
  GCNPART_EXPECTS(count == 0 || rows != nullptr, "bias_softmax_cross_entropy_async needs the listed rows");
  if (count > logits.rows)
    bad_parameter("count", std::to_string(count),
                  ("at most logits.rows = " + std::to_string(logits.rows) + " (rows listed once)").c_str());
  expect_cuda_handles(ctx);
  float* grad32 = nullptr;
  Bf16* grad16 = nullptr;
  if constexpr (std::is_same_v<G, Bf16>) {
    grad16 = grad.data;
  } else {
    grad32 = grad.data;
  }
  GCNPART_DISPATCH(bias_softmax_cross_entropy(ctx, logits.data, bias, logits.rows, logits.cols, logits.ld, labels,
                                              rows, row_slots, count, grad_scale, loss_sum, grad32, grad16,
                                              grad_column_sums));
}
}  // namespace

void bias_softmax_cross_entropy_async(const Context& ctx, MatrixView logits, const float* bias,
                                      const std::int32_t* labels, const NodeId* rows, const std::int32_t* row_slots,
                                      std::int64_t count, float grad_scale, float* loss_sum, MatrixView grad,
                                      float* grad_column_sums) {
  bias_softmax_cross_entropy_checked(ctx, logits, bias, labels, rows, row_slots, count, grad_scale, loss_sum, grad,
                                     grad_column_sums);
}

void bias_softmax_cross_entropy_async(const Context& ctx, MatrixView logits, const float* bias,
                                      const std::int32_t* labels, const NodeId* rows, const std::int32_t* row_slots,
                                      std::int64_t count, float grad_scale, float* loss_sum, Bf16MatrixView grad,
                                      float* grad_column_sums) {
  bias_softmax_cross_entropy_checked(ctx, logits, bias, labels, rows, row_slots, count, grad_scale, loss_sum, grad,
                                     grad_column_sums);
}

std::vector<std::int32_t> loss_row_slots(const std::vector<NodeId>& rows, std::int64_t num_rows) {
  expect_non_negative("num_rows", num_rows);
  if (static_cast<std::int64_t>(rows.size()) > std::int64_t{INT32_MAX})
    bad_parameter("rows.size()", std::to_string(rows.size()), "at most 2^31 - 1 listed rows");
  std::vector<std::int32_t> slots(static_cast<std::size_t>(num_rows), -1);
  for (std::size_t t = 0; t < rows.size(); ++t) {
    const std::int64_t r = rows[t];
    if (r < 0 || r >= num_rows)
      throw InvalidInput::parameter("rows[" + std::to_string(t) + "]", std::to_string(r),
                                    "a row below num_rows = " + std::to_string(num_rows));
    std::int32_t& slot = slots[static_cast<std::size_t>(r)];
    if (slot >= 0)
      throw InvalidInput::parameter("rows[" + std::to_string(t) + "]", std::to_string(r),
                                    "a row listed once (also rows[" + std::to_string(slot) + "])");
    slot = static_cast<std::int32_t>(t);
  }
  return slots;
}

void count_correct_async(const Context& ctx, ConstMatrixView logits, const std::int32_t* labels, const NodeId* rows,
                         std::int64_t count, std::int64_t* correct) {
  expect_view("logits", logits);
  expect_non_negative("count", count);
  if (logits.cols <= 0) bad_parameter("logits.cols", std::to_string(logits.cols), "at least 1 (the classes)");
  GCNPART_EXPECTS(correct != nullptr, "count_correct_async needs an output");
  GCNPART_EXPECTS(count == 0 || (logits.data != nullptr && labels != nullptr && rows != nullptr),
                  "count_correct_async needs logits, labels and rows");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(count_correct(ctx, logits.data, logits.cols, logits.ld, labels, rows, count, correct));
}

void adam_corrections(const AdamParams& params, std::int64_t step, float out[2]) {
  if (step < 1) bad_parameter("adam step", std::to_string(step), "1 or more (counted from 1)");
  AdamParams p = params;
  p.step = step;
  const detail::AdamCorrections c = detail::adam_corrections(p);
  out[0] = c.one_minus_beta1_pow;
  out[1] = c.one_minus_beta2_pow;
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

namespace {
/// The checks of gather_rows_async for either element type: true when there is a row to gather.
template <class T>
bool gather_rows_checks(const Context& ctx, DenseView<const T> src, const NodeId* idx, DenseView<T> dst) {
  expect_packed("src", src);
  expect_packed("dst", dst);
  expect_extent("dst.cols", dst.cols, "src.cols", src.cols);
  if (dst.empty()) return false;
  GCNPART_EXPECTS(src.data != nullptr && idx != nullptr && dst.data != nullptr, "gather_rows_async needs its buffers");
  expect_cuda_handles(ctx);
  return true;
}
}  // namespace

void gather_rows_async(const Context& ctx, ConstMatrixView src, const NodeId* idx, MatrixView dst) {
  if (gather_rows_checks(ctx, src, idx, dst))
    GCNPART_DISPATCH(gather_rows(ctx, src.data, idx, dst.rows, dst.cols, dst.data));
}

void gather_rows_async(const Context& ctx, ConstBf16MatrixView src, const NodeId* idx, Bf16MatrixView dst) {
  if (gather_rows_checks(ctx, src, idx, dst))
    GCNPART_DISPATCH(gather_rows_bf16(ctx, src.data, idx, dst.rows, dst.cols, dst.data));
}

void scatter_add_rows_async(const Context& ctx, ConstMatrixView src, const NodeId* idx, MatrixView dst) {
  expect_packed("src", src);
  expect_packed("dst", dst);
  expect_extent("dst.cols", dst.cols, "src.cols", src.cols);
  if (src.empty()) return;
  GCNPART_EXPECTS(src.data != nullptr && idx != nullptr && dst.data != nullptr,
                  "scatter_add_rows_async needs its buffers");
  expect_cuda_handles(ctx);
  GCNPART_DISPATCH(scatter_add_rows(ctx, src.data, idx, src.rows, src.cols, dst.data));
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
#undef GCNPART_BACKEND_CALL

#if !GCNPART_HAVE_CUDA
// cusparse_spmm.cu is not built: the plan cannot exist, so run_unchecked_async is never reached.
CusparseSpmm::CusparseSpmm(const Context& ctx, const CsrView&, const float*, const float*, std::int64_t, int) {
  GCNPART_EXPECTS(ctx.is_cuda(), "CusparseSpmm needs a CUDA context (the CPU backend has no cuSPARSE)");
  throw NoCudaBuild("a cuSPARSE SpMM plan");
}
CusparseSpmm::~CusparseSpmm() = default;
void CusparseSpmm::run_unchecked_async(const float*, float*) { throw NoCudaBuild("a cuSPARSE SpMM"); }
#endif

}  // namespace gcnpart::kernels
