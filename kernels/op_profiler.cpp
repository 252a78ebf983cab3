#include "kernels/op_profiler.hpp"

#include <chrono>
#include <deque>

#include "kernels/core/error.hpp"
#include "kernels/cuda_event.hpp"

namespace gcnpart::kernels {

struct OpProfiler::Impl {
  struct Record {
    OpClass op = OpClass::kOther;
    bool cuda = false;
    std::unique_ptr<CudaEvent> start, stop;  // CUDA
    std::chrono::steady_clock::time_point t0, t1;  // CPU
  };
  std::deque<Record> records;
  std::size_t used = 0;  // records[0, used) belong to the current profile; the rest are kept for reuse
};

OpProfiler::OpProfiler() : impl_(std::make_unique<Impl>()) {}
OpProfiler::~OpProfiler() = default;

void OpProfiler::begin(OpClass c, bool cuda, cudaStream_t stream) {
  if (depth_++ > 0) return;
  if (impl_->used == impl_->records.size()) impl_->records.emplace_back();
  Impl::Record& r = impl_->records[impl_->used++];
  r.op = c;
  r.cuda = cuda;
  if (cuda) {
    if (!r.start) {
      r.start = std::make_unique<CudaEvent>();
      r.stop = std::make_unique<CudaEvent>();
    }
    r.start->record(stream);
  } else {
    r.t0 = std::chrono::steady_clock::now();
  }
}

void OpProfiler::end(bool cuda, cudaStream_t stream) {
  GCNPART_EXPECTS(depth_ > 0, "OpProfiler::end without begin");
  if (--depth_ > 0) return;
  Impl::Record& r = impl_->records[impl_->used - 1];
  if (cuda) {
    r.stop->record(stream);
  } else {
    r.t1 = std::chrono::steady_clock::now();
  }
}

OpProfile OpProfiler::summary() const {
  OpProfile p;
  for (std::size_t i = 0; i < impl_->used; ++i) {
    const Impl::Record& r = impl_->records[i];
    const auto k = static_cast<std::size_t>(r.op);
    p.ms[k] += r.cuda ? elapsed_ms(*r.start, *r.stop)
                      : std::chrono::duration<double, std::milli>(r.t1 - r.t0).count();
    ++p.calls[k];
  }
  return p;
}

void OpProfiler::reset() {
  impl_->used = 0;
  depth_ = 0;
}

}  // namespace gcnpart::kernels
