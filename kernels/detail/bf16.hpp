// bfloat16 as raw bits (the top 16 bits of an IEEE float32), shared by the CPU and CUDA backends so that both
// round identically. Plain bit operations: host code needs no CUDA headers, and the device code compiles to the
// same shifts that __bfloat162float / __float2bfloat16_rn do.
#pragma once

#include <cstdint>
#include <cstring>

#include "base/dense_view.hpp"
#include "base/host_device.hpp"

namespace gcnpart::kernels::detail {

GCNPART_HD std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

GCNPART_HD float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/// bf16 -> float: exact (bf16 is a truncated float).
GCNPART_HD float bf16_to_float(std::uint16_t b) { return bits_float(static_cast<std::uint32_t>(b) << 16); }

/// float -> bf16, round to nearest, ties to even. Overflow rounds to infinity as IEEE asks; a NaN stays a NaN of
/// the same sign (quiet bit set, so that truncating its payload cannot turn it into an infinity).
GCNPART_HD std::uint16_t float_to_bf16(float f) {
  const std::uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  const std::uint32_t round = 0x7fffu + ((u >> 16) & 1u);  // half an ulp, plus one when the kept lsb is odd
  return static_cast<std::uint16_t>((u + round) >> 16);
}

/// The same two conversions on the typed storage (kernels::Bf16).
GCNPART_HD float bf16_to_float(Bf16 b) { return bf16_to_float(b.raw); }
GCNPART_HD Bf16 round_to_bf16(float f) { return Bf16{float_to_bf16(f)}; }

}  // namespace gcnpart::kernels::detail
