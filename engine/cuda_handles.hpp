// Owners of the few CUDA objects the engine makes outside the tracked memory resource: NCCL's scratch and warm-up
// buffers (measured apart, as NCCL's own memory: NcclCommunicator::init_bytes), the communication streams of the
// overlapping aggregations, and page-locked host memory (the host side of copies at the link's full speed). Move-only; the deleters ignore errors (destructors never throw). In a CPU-only
// build the factories throw NoCudaBuild (no CUDA context is ever made there).
#pragma once

#include <cstddef>
#include <memory>

typedef struct CUstream_st* cudaStream_t;

namespace gcnpart::engine {

/// Frees device memory with cudaFree (errors ignored).
struct CudaFreeDeleter {
  void operator()(void* p) const noexcept;
};
/// Device memory from cudaMalloc, freed with cudaFree.
using DeviceAllocation = std::unique_ptr<void, CudaFreeDeleter>;

/// `bytes` of device memory on the current device (cudaMalloc). @throws DeviceError, NoCudaBuild.
DeviceAllocation allocate_device(std::size_t bytes);

/// Destroys a stream with cudaStreamDestroy (errors ignored).
struct CudaStreamDeleter {
  void operator()(cudaStream_t stream) const noexcept;
};
/// A CUDA stream, destroyed with cudaStreamDestroy.
using OwnedStream = std::unique_ptr<CUstream_st, CudaStreamDeleter>;

/// A non-blocking stream on the current device; high_priority: the device's greatest priority (NCCL's blocks are
/// then scheduled ahead of the kernels they overlap). @throws DeviceError, NoCudaBuild.
OwnedStream create_stream(bool high_priority);

/// Frees page-locked host memory with cudaFreeHost (errors ignored).
struct PinnedFreeDeleter {
  void operator()(void* p) const noexcept;
};
/// Page-locked host memory from cudaHostAlloc, freed with cudaFreeHost.
using PinnedAllocation = std::unique_ptr<void, PinnedFreeDeleter>;

/// `bytes` of page-locked host memory (cudaHostAlloc, portable): copies from and to it run at the host link's full
/// speed and asynchronously. @throws OutOfMemory naming the bytes (the host cannot lock them), NoCudaBuild.
PinnedAllocation allocate_pinned(std::size_t bytes);

}  // namespace gcnpart::engine
