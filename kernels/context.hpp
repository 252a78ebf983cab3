// How a kernel call knows where to run: the backend, the stream, library handles and a workspace allocator.
// The engine's Resources owns all of these and hands out a Context; kernels never create handles themselves.
#pragma once

#include <cstdint>

#include "base/enums.hpp"
#include "base/memory.hpp"

// Opaque CUDA types, so host code includes this without the CUDA headers.
typedef struct CUstream_st* cudaStream_t;
typedef struct cublasContext* cublasHandle_t;
typedef struct cusparseContext* cusparseHandle_t;

#ifndef GCNPART_HAVE_CUDA
#error "GCNPART_HAVE_CUDA (1 or 0) comes with gcnpart::kernels: link it"
#endif

namespace gcnpart::kernels {

/// Whether this build has the CUDA backend. False for a CPU-only build (configured where no nvcc was found, or
/// with -DGCNPART_CUDA=OFF): a Context with Backend::kCuda is then refused with gcnpart::NoCudaBuild.
inline constexpr bool kHaveCuda = GCNPART_HAVE_CUDA != 0;

class OpProfiler;

/// Execution context of one device. For kCpu, stream and handles are null and work runs on OpenMP threads
/// synchronously. For kCuda, every call is asynchronous on `stream` unless its name says otherwise.
struct Context {
  Backend backend = Backend::kCpu;
  int device = -1;                  ///< CUDA device ordinal (kCuda)
  cudaStream_t stream = nullptr;    ///< required for kCuda
  cublasHandle_t cublas = nullptr;  ///< bound to `stream`
  cusparseHandle_t cusparse = nullptr;
  Allocator* allocator = nullptr;   ///< workspaces come from here (tracked)
  Precision precision = Precision::kFp32;  ///< float GEMMs on TF32 tensor cores when traits(precision).tf32_gemm
  OpProfiler* profiler = nullptr;  ///< when set, every operation is timed by class (kernels/op_profiler.hpp)

  [[nodiscard]] bool is_cuda() const noexcept { return backend == Backend::kCuda; }
};

/// Blocks until all work queued on ctx.stream has finished (no-op on CPU). @throws DeviceError.
void synchronize(const Context& ctx);

/// Copies bytes between host and device memory as the spaces say (cudaMemcpyAsync on ctx.stream, or memcpy).
void copy_async(const Context& ctx, void* dst, const void* src, std::size_t bytes);
/// Sets bytes to zero.
void memset_zero_async(const Context& ctx, void* dst, std::size_t bytes);
/// CUDA: the GEMMs of ctx's cuBLAS handle use `workspace` (device memory of `bytes`, kept alive by the caller while
/// the handle may use it) from now on instead of cuBLAS's own pool (cublasSetWorkspace); a captured CUDA Graph then
/// allocates none (engine::GcnModel's captured step). CPU: no-op.
void set_blas_workspace(const Context& ctx, void* workspace, std::size_t bytes);
/// CUDA: the handle's GEMMs use cuBLAS's own workspace pool again (before the buffer given to set_blas_workspace is
/// freed). CPU: no-op.
void reset_blas_workspace(const Context& ctx);

}  // namespace gcnpart::kernels
