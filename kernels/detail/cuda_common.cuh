// Small helpers shared by the CUDA translation units: launch geometry and the stream/handle binding.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/context.hpp"
#include "kernels/core/cuda_check.hpp"
#include "kernels/detail/bf16.hpp"

namespace gcnpart::kernels::detail::cuda {

inline constexpr int kElementwiseThreads = 256;
/// Grid-stride kernels never launch more blocks than this; each thread then handles several elements.
inline constexpr std::int64_t kMaxElementwiseBlocks = 1 << 16;

inline unsigned elementwise_blocks(std::int64_t n, int threads = kElementwiseThreads) {
  const std::int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(std::clamp<std::int64_t>(blocks, 1, kMaxElementwiseBlocks));
}

/// Index of the calling thread and the grid's stride, in 64 bits.
__device__ __forceinline__ std::int64_t global_thread() {
  return static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ std::int64_t grid_stride() { return static_cast<std::int64_t>(gridDim.x) * blockDim.x; }

/// Whether p may be read or written `bytes` at a time (a vector load or store).
inline bool aligned(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

/// Two bf16 values packed in a 32-bit word (the lower address in the low half), widened exactly.
__device__ __forceinline__ float bf16_low(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_high(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
/// Two floats rounded to bf16 and packed into one word, the first in the low half (the lower address).
__device__ __forceinline__ unsigned pack_bf16(float first, float second) {
  return static_cast<unsigned>(float_to_bf16(first)) | (static_cast<unsigned>(float_to_bf16(second)) << 16);
}

}  // namespace gcnpart::kernels::detail::cuda
