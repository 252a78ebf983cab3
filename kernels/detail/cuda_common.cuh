// Small helpers shared by the CUDA translation units: launch geometry and the stream/handle binding.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "kernels/context.hpp"
#include "base/cuda_check.hpp"
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

/// Programmatic dependent launch (compute capability 9.0 and up): a kernel launched with launch_kernel(..., true)
/// may start while the kernel before it in the stream still runs, once every block of that kernel has called
/// allow_dependents() or exited; it must call await_predecessor() before it reads what that kernel writes (or
/// writes what it reads), and what it touches without awaiting must have been complete when that kernel started (so
/// that kernel is best launched in stream order). Both are no-ops on older GPUs, where launch_kernel launches in
/// stream order.
__device__ __forceinline__ void allow_dependents() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
__device__ __forceinline__ void await_predecessor() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/// Whether `kernel` may be launched programmatically on the current device: the device has compute capability 9.0
/// or more and the code it runs was compiled for 9.0 or more (PTX version, so that await_predecessor is
/// griddepcontrol.wait and not the no-op: a build for 8.x alone runs JIT-compiled code without it on an H100). Cached
/// per device and kernel.
inline bool programmatic_launch_supported(const void* kernel) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return false;
  static std::mutex mutex;
  static std::map<std::pair<int, const void*>, bool> known;
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(device, kernel);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  int major = 0;
  cudaFuncAttributes attributes{};
  const bool ok = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
                  major >= 9 && cudaFuncGetAttributes(&attributes, kernel) == cudaSuccess &&
                  attributes.ptxVersion >= 90;
  known.emplace(key, ok);
  return ok;
}

/// kernel<<<grid, block, 0, stream>>>(args...), as a programmatic dependent launch of the stream's previous kernel
/// when `programmatic` and programmatic_launch_supported(kernel) (see allow_dependents); errors are thrown.
template <class... Params, class... Args>
void launch_kernel(bool programmatic, void (*kernel)(Params...), unsigned grid, unsigned block, cudaStream_t stream,
                   Args&&... args) {
  const bool supported = programmatic && programmatic_launch_supported(reinterpret_cast<const void*>(kernel));
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(grid);
  config.blockDim = dim3(block);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = supported ? 1 : 0;
  GCNPART_CUDA_TRY(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

/// Whether p may be read or written `bytes` at a time (a vector load or store).
inline bool aligned(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

/// Two bf16 values packed in a 32-bit word (the lower address in the low half), widened exactly.
__device__ __forceinline__ float bf16_low(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_high(unsigned w) { return __uint_as_float(w & 0xffff0000u); }
/// Two floats rounded to bf16 and packed into one word, the first in the low half (the lower address): one
/// hardware conversion (cvt.rn.bf16x2.f32, round to nearest even like float_to_bf16) where the GPU has it, the
/// software rounding for NaNs (it keeps their sign and payload, which the hardware need not) and older GPUs. The
/// epilogues that store bf16 are bound by their instruction issue: this is 1 instruction for 2 values instead of
/// about 12.
__device__ __forceinline__ unsigned pack_bf16(float first, float second) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  if (first == first && second == second) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(first, second);  // .x = first: the low half
    unsigned w;
    memcpy(&w, &h, sizeof w);
    return w;
  }
#endif
  return static_cast<unsigned>(float_to_bf16(first)) | (static_cast<unsigned>(float_to_bf16(second)) << 16);
}

}  // namespace gcnpart::kernels::detail::cuda
