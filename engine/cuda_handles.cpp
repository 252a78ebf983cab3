#include "engine/cuda_handles.hpp"

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
#else
void CudaFreeDeleter::operator()(void*) const noexcept {}
DeviceAllocation allocate_device(std::size_t) { throw NoCudaBuild("device memory"); }
void CudaStreamDeleter::operator()(cudaStream_t) const noexcept {}
OwnedStream create_stream(bool) { throw NoCudaBuild("a CUDA stream"); }
#endif

}  // namespace gcnpart::engine
