// CPU reference of the bf16-storage operations: widen the bf16 operands to float, run the float reference, round
// the result once. The CUDA versions do the same arithmetic (exact widening, float32 products and sums, one
// rounding), so they differ from these only by summation order.
#include <algorithm>
#include <vector>

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
                              std::int64_t width, bool relu, const Dropout& dropout, Bf16* out) {
  std::vector<float> h(static_cast<std::size_t>(rows * width));
  bias_act_dropout(ctx, z, bias, rows, width, relu, dropout, h.data());
  convert_to_bf16(ctx, h.data(), rows * width, out);
}

void dropout_bf16(const Context& ctx, const Bf16* x, std::int64_t rows, std::int64_t width, const Dropout& dropout,
                  Bf16* out) {
  auto x32 = widen(x, rows * width);
  bias_act_dropout(ctx, x32.data(), nullptr, rows, width, false, dropout, x32.data());
  convert_to_bf16(ctx, x32.data(), rows * width, out);
}

void relu_dropout_backward_bf16(const Context& ctx, const Bf16* h, const Bf16* dh, std::int64_t n, float p, Bf16* dz) {
  const auto h32 = widen(h, n);
  auto dh32 = widen(dh, n);
  bias_act_dropout_backward(ctx, h32.data(), dh32.data(), n, 1, true, p, dh32.data());
  convert_to_bf16(ctx, dh32.data(), n, dz);
}

void relu_dropout_backward_sum_bf16(const Context& ctx, const Bf16* h, const Bf16* dh, std::int64_t rows,
                                    std::int64_t width, float p, Bf16* dz, float* sums) {
  relu_dropout_backward_bf16(ctx, h, dh, rows * width, p, dz);
  column_sum_bf16(ctx, dz, rows, width, sums);
}

}  // namespace gcnpart::kernels::detail::cpu
