#include "engine/cuda_handles.hpp"

#include <string>

#include "base/error.hpp"

#if GCNPART_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "base/cuda_check.hpp"
#endif

namespace gcnpart::engine {

#if GCNPART_HAVE_CUDA
void CudaFreeDeleter::operator()(void* p) const noexcept {
  if (p != nullptr) GCNPART_CUDA_TRY_NO_THROW(cudaFree(p));
}

DeviceAllocation allocate_device(std::size_t bytes) {
  void* p = nullptr;
  GCNPART_CUDA_TRY(cudaMalloc(&p, bytes));
  return DeviceAllocation(p);
}

void CudaStreamDeleter::operator()(cudaStream_t stream) const noexcept {
  if (stream != nullptr) GCNPART_CUDA_TRY_NO_THROW(cudaStreamDestroy(stream));
}

OwnedStream create_stream(bool high_priority) {
  int least = 0, greatest = 0;
  if (high_priority) GCNPART_CUDA_TRY(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  cudaStream_t stream = nullptr;
  GCNPART_CUDA_TRY(cudaStreamCreateWithPriority(&stream, cudaStreamNonBlocking, high_priority ? greatest : 0));
  return OwnedStream(stream);
}
void PinnedFreeDeleter::operator()(void* p) const noexcept {
  if (p != nullptr) GCNPART_CUDA_TRY_NO_THROW(cudaFreeHost(p));
}

PinnedAllocation allocate_pinned(std::size_t bytes) {
  void* p = nullptr;
  const cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();  // not sticky: the next call starts clean
    throw OutOfMemory("out of page-locked host memory: cudaHostAlloc of " + std::to_string(bytes) + " bytes failed (" +
                      cudaGetErrorString(err) + "); the host may limit locked memory (ulimit -l)");
  }
  return PinnedAllocation(p);
}
#else
void PinnedFreeDeleter::operator()(void*) const noexcept {}
PinnedAllocation allocate_pinned(std::size_t) { throw NoCudaBuild("page-locked host memory"); }
void CudaFreeDeleter::operator()(void*) const noexcept {}
DeviceAllocation allocate_device(std::size_t) { throw NoCudaBuild("device memory"); }
void CudaStreamDeleter::operator()(cudaStream_t) const noexcept {}
OwnedStream create_stream(bool) { throw NoCudaBuild("a CUDA stream"); }
#endif

}  // namespace gcnpart::engine
