// One CUDA event type for timing and for ordering streams: RAII, move-only, the event destroyed with the
// _NO_THROW check. Host code includes this without the CUDA headers (the implementation is cuda_event.cpp).
#pragma once

typedef struct CUstream_st* cudaStream_t;
typedef struct CUevent_st* cudaEvent_t;

namespace gcnpart::kernels {

class CudaEvent {
 public:
  /// kTiming events measure elapsed time; kOrdering events (cudaEventDisableTiming) only order streams, cheaper.
  enum class Kind { kTiming, kOrdering };
  /// Creates the event on the current CUDA device. @throws DeviceError.
  explicit CudaEvent(Kind kind = Kind::kTiming);
  ~CudaEvent();
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  CudaEvent(CudaEvent&& o) noexcept;
  CudaEvent& operator=(CudaEvent&& o) noexcept;

  /// Records the event at the current end of `stream`'s work. Does not synchronise. @throws DeviceError.
  void record(cudaStream_t stream);
  /// Makes `stream` wait (on the device) until the last record() has completed. Does not block the host.
  void make_wait(cudaStream_t stream) const;
  /// Blocks the host until the last record() has completed. @throws DeviceError.
  void synchronize() const;
  [[nodiscard]] cudaEvent_t get() const noexcept { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

/// Milliseconds between two recorded timing events; waits for `stop` first when it has not completed yet.
/// @throws DeviceError (e.g. an ordering event, or one never recorded).
double elapsed_ms(const CudaEvent& start, const CudaEvent& stop);

}  // namespace gcnpart::kernels
