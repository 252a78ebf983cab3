// CPU reference of the bf16-storage operations: widen the bf16 operands to float, run the float reference, round
// the result once. The CUDA versions do the same arithmetic (exact widening, float32 products and sums, one
// rounding), so they differ from these only by summation order.
#include <algorithm>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "kernels/detail/backends.hpp"
#include "kernels/detail/bf16.hpp"

namespace gcnpart::kernels::detail::cpu {
namespace {

std::vector<float> widen(const Bf16* x, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  convert_from_bf16(Context{}, x, n, out.data());
  return out;
}

/// The stored extent of a row-major rows x cols matrix with leading dimension ld (0 when empty).
std::int64_t extent(std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return rows == 0 || cols == 0 ? 0 : (rows - 1) * ld + cols;
}

}  // namespace

void gemm_bf16(const Context& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
               float alpha, const Bf16* a, std::int64_t lda, const Bf16* b, std::int64_t ldb, float beta, void* c,
               bool c_bf16, std::int64_t ldc) {
  const bool product = k > 0 && alpha != 0.0f;
  std::vector<float> a32, b32;
  if (product) {
    a32 = widen(a, trans_a ? extent(k, m, lda) : extent(m, k, lda));
    b32 = widen(b, trans_b ? extent(n, k, ldb) : extent(k, n, ldb));
  }
  if (!c_bf16) {
    gemm(ctx, trans_a, trans_b, m, n, k, alpha, a32.data(), lda, b32.data(), ldb, beta, static_cast<float*>(c), ldc);
    return;
  }
  // beta == 0 (checked at the entry point): compute into a dense float matrix, round into C's rows.
  std::vector<float> c32(static_cast<std::size_t>(m * n));
  gemm(ctx, trans_a, trans_b, m, n, k, alpha, a32.data(), lda, b32.data(), ldb, 0.0f, c32.data(), n);
  auto* out = static_cast<Bf16*>(c);
  for (std::int64_t i = 0; i < m; ++i) convert_to_bf16(ctx, c32.data() + i * n, n, out + i * ldc);
}

void column_sum_bf16(const Context& ctx, const Bf16* x, std::int64_t rows, std::int64_t width, float* out) {
  const auto x32 = widen(x, rows * width);
  column_sum(ctx, x32.data(), rows, width, out);
}

void bias_act_dropout_to_bf16(const Context& ctx, const float* z, const float* bias, std::int64_t rows,
                              std::int64_t width, bool relu, const Dropout& dropout, Bf16* out,
                              std::uint8_t* positive) {
  std::vector<float> h(static_cast<std::size_t>(rows * width));
  bias_act_dropout(ctx, z, bias, rows, width, relu, dropout, h.data(), nullptr);
  convert_to_bf16(ctx, h.data(), rows * width, out);
  if (positive != nullptr) fill_positive_mask(widen(out, rows * width).data(), rows, width, positive);  // stored values
}

void dropout_bf16(const Context& ctx, const Bf16* x, std::int64_t rows, std::int64_t width, const Dropout& dropout,
                  Bf16* out) {
  auto x32 = widen(x, rows * width);
  bias_act_dropout(ctx, x32.data(), nullptr, rows, width, false, dropout, x32.data(), nullptr);
  convert_to_bf16(ctx, x32.data(), rows * width, out);
}

void relu_dropout_backward_bf16(const Context& ctx, const Bf16* h, const Bf16* dh, std::int64_t n, float p, Bf16* dz) {
  const auto h32 = widen(h, n);
  auto dh32 = widen(dh, n);
  bias_act_dropout_backward(ctx, h32.data(), dh32.data(), n, 1, true, p, dh32.data());
  convert_to_bf16(ctx, dh32.data(), n, dz);
}

void relu_dropout_backward_sum_bf16(const Context& ctx, const Bf16* h, const Bf16* dh, std::int64_t rows,
                                    std::int64_t width, float p, Bf16* dz, float* sums,
                                    const std::uint8_t* positive) {
  if (positive != nullptr) {
    std::vector<Bf16> h16(static_cast<std::size_t>(rows * width));
    const std::vector<float> h32 = positive_mask_values(positive, rows, width);
    convert_to_bf16(ctx, h32.data(), rows * width, h16.data());
    relu_dropout_backward_bf16(ctx, h16.data(), dh, rows * width, p, dz);
  } else {
    relu_dropout_backward_bf16(ctx, h, dh, rows * width, p, dz);
  }
  column_sum_bf16(ctx, dz, rows, width, sums);
}

/// The reference of the fused output-layer loss: the bias pass, the listed rows' softmax cross-entropy (which checks
/// them), the gradient rounded where it is stored as bf16, and the float gradient's column sums.
void bias_softmax_cross_entropy(const Context& ctx, float* logits, const float* bias, std::int64_t num_rows,
                                std::int64_t classes, std::int64_t ld, const std::int32_t* labels, const NodeId* rows,
                                const std::int32_t* row_slots, std::int64_t count, float grad_scale, float* loss_sum,
                                float* grad, Bf16* grad16, float* grad_column_sums) {
  for (std::int64_t r = 0; r < num_rows; ++r) {
    const std::int32_t t = row_slots[r];
    if (t < -1 || t >= count || (t >= 0 && rows[t] != r))
      throw InvalidInput::parameter("row_slots[" + std::to_string(r) + "]", std::to_string(t),
                                    "the position of row " + std::to_string(r) + " in rows, or -1 (loss_row_slots)");
  }
  if (bias != nullptr)
    for (std::int64_t r = 0; r < num_rows; ++r)
      for (std::int64_t c = 0; c < ld; ++c) logits[r * ld + c] += bias[c];
  std::vector<float> g32;
  float* g = grad;
  if (g == nullptr) {
    g32.resize(static_cast<std::size_t>(num_rows * ld));
    g = g32.data();
  }
  softmax_cross_entropy(ctx, logits, num_rows, classes, ld, labels, rows, count, grad_scale, loss_sum, g);
  column_sum(ctx, g, num_rows, ld, grad_column_sums);
  if (grad16 != nullptr) convert_to_bf16(ctx, g, num_rows * ld, grad16);
}

}  // namespace gcnpart::kernels::detail::cpu
