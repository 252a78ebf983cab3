#include "kernels/op_profiler.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <map>

#include "base/error.hpp"
#include "kernels/cuda_event.hpp"

namespace gcnpart::kernels {

struct OpProfiler::Impl {
  struct Record {
    OpClass op = OpClass::kOther;
    std::string_view name;
    bool cuda = false;
    std::unique_ptr<CudaEvent> start, stop;  // CUDA
    std::chrono::steady_clock::time_point t0, t1;  // CPU
  };
  std::deque<Record> records;
  std::size_t used = 0;  // records[0, used) belong to the current profile; the rest are kept for reuse
};

OpProfiler::OpProfiler() : impl_(std::make_unique<Impl>()) {}
OpProfiler::~OpProfiler() = default;

void OpProfiler::begin(std::string_view call, bool cuda, cudaStream_t stream) {
  if (depth_++ > 0) return;
  if (impl_->used == impl_->records.size()) impl_->records.emplace_back();
  Impl::Record& r = impl_->records[impl_->used++];
  r.op = op_class(call);
  r.name = op_name(call);
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
  std::map<std::string_view, OpTime> by_name;
  for (std::size_t i = 0; i < impl_->used; ++i) {
    const Impl::Record& r = impl_->records[i];
    const auto k = static_cast<std::size_t>(r.op);
    const double ms = r.cuda ? elapsed_ms(*r.start, *r.stop)
                             : std::chrono::duration<double, std::milli>(r.t1 - r.t0).count();
    p.ms[k] += ms;
    ++p.calls[k];
    OpTime& t = by_name[r.name];
    t.op = r.op;
    t.ms += ms;
    ++t.calls;
  }
  for (auto& [name, t] : by_name) {
    t.name = std::string(name);
    p.ops.push_back(std::move(t));
  }
  std::stable_sort(p.ops.begin(), p.ops.end(), [](const OpTime& a, const OpTime& b) { return a.ms > b.ms; });
  return p;
}

void OpProfiler::reset() {
  impl_->used = 0;
  depth_ = 0;
}

}  // namespace gcnpart::kernels
