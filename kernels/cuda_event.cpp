#include "kernels/cuda_event.hpp"

#include <utility>

#if GCNPART_HAVE_CUDA
#include "base/cuda_check.hpp"

namespace gcnpart::kernels {

CudaEvent::CudaEvent(Kind kind) {
  GCNPART_CUDA_TRY(
      cudaEventCreateWithFlags(&event_, kind == Kind::kTiming ? cudaEventDefault : cudaEventDisableTiming));
}

CudaEvent::~CudaEvent() {
  if (event_ != nullptr) GCNPART_CUDA_TRY_NO_THROW(cudaEventDestroy(event_));
}

CudaEvent::CudaEvent(CudaEvent&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}

CudaEvent& CudaEvent::operator=(CudaEvent&& o) noexcept {
  if (this != &o) {
    if (event_ != nullptr) GCNPART_CUDA_TRY_NO_THROW(cudaEventDestroy(event_));
    event_ = std::exchange(o.event_, nullptr);
  }
  return *this;
}

void CudaEvent::record(cudaStream_t stream) { GCNPART_CUDA_TRY(cudaEventRecord(event_, stream)); }

void CudaEvent::make_wait(cudaStream_t stream) const { GCNPART_CUDA_TRY(cudaStreamWaitEvent(stream, event_, 0)); }

void CudaEvent::synchronize() const { GCNPART_CUDA_TRY(cudaEventSynchronize(event_)); }

double elapsed_ms(const CudaEvent& start, const CudaEvent& stop) {
  float ms = 0;
  cudaError_t r = cudaEventElapsedTime(&ms, start.get(), stop.get());
  if (r == cudaErrorNotReady) {  // asked before the stream got there: wait for it
    if (cudaPeekAtLastError() == cudaErrorNotReady) (void)cudaGetLastError();  // not an error: leave none behind
    stop.synchronize();
    r = cudaEventElapsedTime(&ms, start.get(), stop.get());
  }
  GCNPART_CUDA_TRY(r);
  return ms;
}

}  // namespace gcnpart::kernels
#else  // a CPU-only build: no event can be made, so the other members never see one

#include "base/error.hpp"

namespace gcnpart::kernels {

CudaEvent::CudaEvent(Kind) { throw NoCudaBuild("a CUDA event"); }
CudaEvent::~CudaEvent() = default;
CudaEvent::CudaEvent(CudaEvent&& o) noexcept : event_(std::exchange(o.event_, nullptr)) {}
CudaEvent& CudaEvent::operator=(CudaEvent&& o) noexcept {
  event_ = std::exchange(o.event_, nullptr);
  return *this;
}
void CudaEvent::record(cudaStream_t) { throw NoCudaBuild("a CUDA event"); }
void CudaEvent::make_wait(cudaStream_t) const { throw NoCudaBuild("a CUDA event"); }
void CudaEvent::synchronize() const { throw NoCudaBuild("a CUDA event"); }
double elapsed_ms(const CudaEvent&, const CudaEvent&) { throw NoCudaBuild("a CUDA event"); }

}  // namespace gcnpart::kernels
#endif
