// Finding the non-zeros of a float array quickly on the CPU (vector compares, 32 entries per step). GCN input
// features are bag-of-words rows with about 1% non-zeros: the GEMM and the input dropout only touch those.
#pragma once

#include <bit>
#include <cstdint>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace gcnpart::kernels::detail::cpu {

/// Bit u set when p[u] != 0 (NaN counts as non-zero, -0 as zero), for 32 consecutive floats.
inline std::uint32_t nonzero_mask32(const float* p) {
#if defined(__AVX__)
  const __m256 zero = _mm256_setzero_ps();
  std::uint32_t mask = 0;
  for (int q = 0; q < 4; ++q) {
    const __m256 v = _mm256_loadu_ps(p + 8 * q);
    mask |= static_cast<std::uint32_t>(_mm256_movemask_ps(_mm256_cmp_ps(v, zero, _CMP_NEQ_UQ))) << (8 * q);
  }
  return mask;
#elif defined(__SSE2__)
  const __m128 zero = _mm_setzero_ps();
  __m128 ne[8];
  __m128 any = zero;
  for (int q = 0; q < 8; ++q) {
    ne[q] = _mm_cmpneq_ps(_mm_loadu_ps(p + 4 * q), zero);
    any = _mm_or_ps(any, ne[q]);
  }
  if (_mm_movemask_ps(any) == 0) return 0;  // the common case for 1%-dense rows
  std::uint32_t mask = 0;
  for (int q = 0; q < 8; ++q) mask |= static_cast<std::uint32_t>(_mm_movemask_ps(ne[q])) << (4 * q);
  return mask;
#else
  std::uint32_t mask = 0;
  for (int u = 0; u < 32; ++u) mask |= static_cast<std::uint32_t>(p[u] != 0.0f) << u;
  return mask;
#endif
}

/// Calls f(t, p[t]) for every t in [0, len) with p[t] != 0, in increasing t. Finds the non-zeros 32 at a time
/// with vector compares, so a 1%-dense row costs little more than reading it. f may modify p[] at or before the
/// current 32-entry window (the window's mask is taken before f runs).
template <class F>
inline void for_each_nonzero(const float* p, std::int64_t len, F&& f) {
  std::int64_t t = 0;
  for (; t + 32 <= len; t += 32) {
    for (std::uint32_t mask = nonzero_mask32(p + t); mask != 0; mask &= mask - 1) {
      const int u = std::countr_zero(mask);
      f(t + u, p[t + u]);
    }
  }
  for (; t < len; ++t) {
    const float v = p[t];
    if (v != 0.0f) f(t, v);
  }
}

}  // namespace gcnpart::kernels::detail::cpu
