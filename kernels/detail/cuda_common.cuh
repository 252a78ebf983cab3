// Small helpers shared by the CUDA translation units: launch geometry and the stream/handle binding.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/context.hpp"
#include "kernels/core/cuda_check.hpp"

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

}  // namespace gcnpart::kernels::detail::cuda
