// CPU reference SpMM: Y = diag(row_scale) A diag(col_scale) X, one row per loop iteration, accumulated in float
// in entry order (deterministic for any thread count). The bf16-storage variant widens each X element exactly and
// then does the very same float arithmetic, so it equals the fp32 SpMM of the bf16-rounded X bit for bit.
#include <omp.h>

#include "kernels/detail/backends.hpp"
#include "kernels/detail/bf16.hpp"

namespace gcnpart::kernels::detail::cpu {
namespace {
// Rows per dynamic chunk: small enough that one very long row does not hold up a large share of the rest.
constexpr int kRowsPerChunk = 32;
// Products with fewer (rows + entries) x width than this run on the calling thread.
constexpr std::int64_t kParallelMinWork = 1 << 15;

/// Shared by the fp32 and bf16 entry points: `load` widens one stored X element to float.
template <class Elem, class Load>
void spmm_rows(const CsrView& a, const float* row_scale, const float* col_scale, const Elem* x, std::int64_t ldx,
               float* y, std::int64_t ldy, std::int64_t width, Load load) {
  const RowOffset* const offsets = a.row_offsets;
  const NodeId* const cols = a.col_ids;
  const float* const values = a.values;
#pragma omp parallel for schedule(dynamic, kRowsPerChunk) if ((a.num_rows + a.num_entries()) * width > kParallelMinWork)
  for (std::int64_t i = 0; i < a.num_rows; ++i) {
    float* __restrict yr = y + i * ldy;
    for (std::int64_t c = 0; c < width; ++c) yr[c] = 0.0f;
    for (RowOffset e = offsets[i]; e < offsets[i + 1]; ++e) {
      const NodeId j = cols[e];
      float w = values != nullptr ? values[e] : 1.0f;
      if (col_scale != nullptr) w *= col_scale[j];
      const Elem* __restrict xr = x + static_cast<std::int64_t>(j) * ldx;
#pragma omp simd
      for (std::int64_t c = 0; c < width; ++c) yr[c] += w * load(xr[c]);
    }
    if (row_scale != nullptr) {
      const float s = row_scale[i];
#pragma omp simd
      for (std::int64_t c = 0; c < width; ++c) yr[c] *= s;
    }
  }
}

}  // namespace

void spmm(const Context&, const CsrView& a, const float* row_scale, const float* col_scale, const float* x,
          std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width, const SpmmTuning&) {
  spmm_rows(a, row_scale, col_scale, x, ldx, y, ldy, width, [](float v) { return v; });
}

void spmm_bf16(const Context&, const CsrView& a, const float* row_scale, const float* col_scale,
               const Bf16* x, std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width,
               const SpmmTuning&) {
  spmm_rows(a, row_scale, col_scale, x, ldx, y, ldy, width, [](Bf16 v) { return bf16_to_float(v); });
}

void spmm_bf16_out(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
                   const Bf16* x, std::int64_t ldx, Bf16* y, std::int64_t ldy, std::int64_t width, float* scratch,
                   std::int64_t ld_scratch, const SpmmTuning& tuning) {
  // The float rows in the scratch, then each rounded once: what the float-output SpMM and a rounding pass give.
  spmm_bf16(ctx, a, row_scale, col_scale, x, ldx, scratch, ld_scratch, width, tuning);
  for (std::int64_t i = 0; i < a.num_rows; ++i) convert_to_bf16(ctx, scratch + i * ld_scratch, width, y + i * ldy);
}

void convert_to_bf16(const Context&, const float* x, std::int64_t n, Bf16* out) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMinWork)
  for (std::int64_t i = 0; i < n; ++i) out[i] = round_to_bf16(x[i]);
}

void convert_from_bf16(const Context&, const Bf16* x, std::int64_t n, float* out) {
#pragma omp parallel for simd schedule(static) if (n > kParallelMinWork)
  for (std::int64_t i = 0; i < n; ++i) out[i] = bf16_to_float(x[i]);
}

}  // namespace gcnpart::kernels::detail::cpu
