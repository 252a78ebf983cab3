// The two implementations behind kernels/ops.hpp: detail::cpu (OpenMP, the reference) and detail::cuda.
// Same signatures as the public functions; kernels/ops.cpp checks arguments and picks one by ctx.backend.
// Plain declarations only, so that host code includes this without the CUDA headers.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/ops.hpp"

// clang-format off
#define GCNPART_KERNELS_BACKEND_DECLARATIONS                                                                      \
  void spmm(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,                  \
            const float* x, std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width,                      \
            const SpmmTuning& tuning);                                                                             \
  void spmm_bf16(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,             \
                 const Bf16* x, std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width,                 \
                 const SpmmTuning& tuning);                                                                        \
  void spmm_bf16_out(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,         \
                     const Bf16* x, std::int64_t ldx, Bf16* y, std::int64_t ldy, std::int64_t width,              \
                     float* scratch, std::int64_t ld_scratch, const SpmmTuning& tuning);                           \
  void convert_to_bf16(const Context& ctx, const float* x, std::int64_t n, Bf16* out);                            \
  void convert_from_bf16(const Context& ctx, const Bf16* x, std::int64_t n, float* out);                          \
  void gemm_bf16(const Context& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,    \
                 float alpha, const Bf16* a, std::int64_t lda, const Bf16* b, std::int64_t ldb, float beta,         \
                 void* c, bool c_bf16, std::int64_t ldc);                                                          \
  void column_sum_bf16(const Context& ctx, const Bf16* x, std::int64_t rows, std::int64_t width, float* out);      \
  void bias_act_dropout_to_bf16(const Context& ctx, const float* z, const float* bias, std::int64_t rows,          \
                                std::int64_t width, bool relu, const Dropout& dropout, Bf16* out,                  \
                                std::uint8_t* positive);                                                           \
  void dropout_bf16(const Context& ctx, const Bf16* x, std::int64_t rows, std::int64_t width,                       \
                    const Dropout& dropout, Bf16* out);                                                            \
  void relu_dropout_backward_bf16(const Context& ctx, const Bf16* h, const Bf16* dh, std::int64_t n, float p,      \
                                  Bf16* dz);                                                                       \
  void relu_dropout_backward_sum_bf16(const Context& ctx, const Bf16* h, const Bf16* dh, std::int64_t rows,      \
                                      std::int64_t width, float p, Bf16* dz, float* sums,                          \
                                      const std::uint8_t* positive);                                               \
  void relu_dropout_backward_sum(const Context& ctx, const float* h, const float* dh, std::int64_t rows,           \
                                 std::int64_t width, float p, float* dz, float* sums,                              \
                                 const std::uint8_t* positive);                                                    \
  void gemm(const Context& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,         \
            float alpha, const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, \
            std::int64_t ldc);                                                                                     \
  void column_sum(const Context& ctx, const float* x, std::int64_t rows, std::int64_t width, float* out);          \
  void bias_act_dropout(const Context& ctx, const float* z, const float* bias, std::int64_t rows,                  \
                        std::int64_t width, bool relu, const Dropout& dropout, float* out,                         \
                        std::uint8_t* positive);                                                                   \
  void bias_act_dropout_backward(const Context& ctx, const float* h, const float* dh, std::int64_t rows,           \
                                 std::int64_t width, bool relu, float p, float* dz);                               \
  void softmax_cross_entropy(const Context& ctx, const float* logits, std::int64_t num_rows,                       \
                             std::int64_t classes, std::int64_t ld, const std::int32_t* labels,                   \
                             const NodeId* rows, std::int64_t count, float grad_scale, float* loss_sum,            \
                             float* grad);                                                                         \
  void bias_softmax_cross_entropy(const Context& ctx, float* logits, const float* bias, std::int64_t num_rows,      \
                                  std::int64_t classes, std::int64_t ld, const std::int32_t* labels,              \
                                  const NodeId* rows, const std::int32_t* row_slots, std::int64_t count,          \
                                  float grad_scale, float* loss_sum, float* grad, Bf16* grad16,                   \
                                  float* grad_column_sums);                                                       \
  void count_correct(const Context& ctx, const float* logits, std::int64_t classes, std::int64_t ld,              \
                     const std::int32_t* labels, const NodeId* rows, std::int64_t count, std::int64_t* correct);   \
  void adam_step(const Context& ctx, float* w, const float* g, float* m, float* v, std::int64_t n,                 \
                 const AdamParams& params);                                                                        \
  void inv_sqrt_degree(const Context& ctx, const RowOffset* row_offsets, std::int64_t n, float extra,             \
                       float* dinv);                                                                               \
  void gather_rows(const Context& ctx, const float* src, const NodeId* idx, std::int64_t count,                   \
                   std::int64_t width, float* dst);                                                                \
  void scatter_add_rows(const Context& ctx, const float* src, const NodeId* idx, std::int64_t count,              \
                        std::int64_t width, float* dst);                                                           \
  void gather_rows_bf16(const Context& ctx, const Bf16* src, const NodeId* idx, std::int64_t count,               \
                        std::int64_t width, Bf16* dst);                                                            \
  void sum(const Context& ctx, const float* x, std::int64_t n, float* out);                                       \
  void sum_squares(const Context& ctx, const float* x, std::int64_t n, float* out);                               \
  void dropout_csr_values(const Context& ctx, const CsrView& a, bool transposed, const Dropout& dropout,          \
                          float* out);                                                                            \
  void synchronize(const Context& ctx);                                                                            \
  void copy(const Context& ctx, void* dst, const void* src, std::size_t bytes);                                    \
  void memset_zero(const Context& ctx, void* dst, std::size_t bytes);                                              \
  void set_blas_workspace(const Context& ctx, void* workspace, std::size_t bytes);                               \
  void reset_blas_workspace(const Context& ctx);
// clang-format on

namespace gcnpart::kernels::detail {

namespace cpu {
GCNPART_KERNELS_BACKEND_DECLARATIONS
/// The positive mask (kernels::bias_act_dropout_async) of rows x width float values.
void fill_positive_mask(const float* v, std::int64_t rows, std::int64_t width, std::uint8_t* positive);
/// A positive mask as values: 1 where its bit is set, else 0 (h for the backward epilogue's h > 0 test).
std::vector<float> positive_mask_values(const std::uint8_t* positive, std::int64_t rows, std::int64_t width);
}  // namespace cpu

namespace cuda {
GCNPART_KERNELS_BACKEND_DECLARATIONS
/// cuSPARSE SpMM for one call with any leading dimensions (builds and frees a CusparseSpmm-like plan; slow).
void cusparse_spmm_once(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
                        const float* x, std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width,
                        int algorithm);
}  // namespace cuda

/// Adam's bias corrections 1 - beta^step, computed once on the host in double and shared by both backends.
struct AdamCorrections {
  float one_minus_beta1_pow;
  float one_minus_beta2_pow;
};
inline AdamCorrections adam_corrections(const AdamParams& p) {
  const double t = static_cast<double>(p.step);
  return {static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta1), t)),
          static_cast<float>(1.0 - std::pow(static_cast<double>(p.beta2), t))};
}

/// The key of a dropout description: *d.key_at when set (read as the kernel runs), else d.key.
GCNPART_HD std::uint64_t dropout_key(const Dropout& d) { return d.key_at != nullptr ? *d.key_at : d.key; }

/// The bias corrections of an Adam step: *p.corrections_at when set (read as the kernel runs), else from p.step.
GCNPART_HD AdamCorrections adam_corrections_of(const AdamParams& p, const AdamCorrections& from_step) {
  return p.corrections_at != nullptr ? AdamCorrections{p.corrections_at[0], p.corrections_at[1]} : from_step;
}

/// The global node id of local row `row` under a dropout description.
GCNPART_HD std::int64_t dropout_global_node(const Dropout& d, std::int64_t row) {
  return d.global_ids != nullptr ? static_cast<std::int64_t>(d.global_ids[row]) : d.global_offset + row;
}

}  // namespace gcnpart::kernels::detail

#undef GCNPART_KERNELS_BACKEND_DECLARATIONS
