// bench_copy: host <-> device copies at a list of sizes, page-locked and pageable host memory, timed as the other
// harnesses time (CUDA events on the device's stream, median of many after warm-up). What streaming activations
// through host memory (issue 35) is bound by, measured on the machine itself.
#include <chrono>
#include <cstring>
#include <memory>
#include <vector>

#include "base/error.hpp"
#include "bench/bench.hpp"
#include "bench/detail/timing.hpp"
#include "engine/cuda_handles.hpp"
#include "engine/resources.hpp"

namespace gcnpart::bench {

namespace {

const char* direction_name(CopyRun::Direction d) {
  return d == CopyRun::Direction::kHostToDevice ? "host_to_device" : "device_to_host";
}

/// Milliseconds of each of `repeats` calls of `call` after `warmup` untimed ones, by the host clock (CPU devices).
std::vector<double> time_on_host(int warmup, int repeats, const std::function<void()>& call) {
  for (int i = 0; i < warmup; ++i) call();
  std::vector<double> ms;
  ms.reserve(static_cast<std::size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    call();
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return ms;
}

/// Both directions at one size on a CUDA device, from and to `host` (page-locked or not).
void time_cuda(engine::Resources& res, void* host, bool pinned, std::int64_t bytes, const CopyBenchConfig& config,
               std::vector<CopyRun>& out) {
  const cudaStream_t stream = res.stream();
  engine::Buffer<std::uint8_t> device(res.memory(), static_cast<std::size_t>(bytes), MemoryCategory::kWorkspace,
                                      stream);
  detail::fill_bytes_async(device.data(), 0x5a, static_cast<std::size_t>(bytes), stream);
  for (const auto direction : {CopyRun::Direction::kHostToDevice, CopyRun::Direction::kDeviceToHost}) {
    const bool up = direction == CopyRun::Direction::kHostToDevice;
    void* dst = up ? static_cast<void*>(device.data()) : host;
    const void* src = up ? host : static_cast<const void*>(device.data());
    CopyRun run;
    run.direction = direction;
    run.pinned = pinned;
    run.bytes = bytes;
    run.time_ms = Summary::of(detail::time_calls(stream, config.warmup, config.repeats, nullptr, [&] {
      detail::copy_bytes_async(dst, src, static_cast<std::size_t>(bytes), stream);
    }));
    out.push_back(std::move(run));
  }
  detail::synchronize_stream(stream);
}

}  // namespace

void CopyBenchConfig::validate() const {
  if (bytes.empty()) throw InvalidInput::parameter("--bytes", "", "at least one size");
  for (std::int64_t b : bytes)
    if (b <= 0) throw InvalidInput::parameter("--bytes", std::to_string(b), "a positive byte count");
  if (warmup < 0) throw InvalidInput::parameter("--warmup", std::to_string(warmup), ">= 0");
  if (repeats < 3) throw InvalidInput::parameter("--repeats", std::to_string(repeats), ">= 3 (a median)");
}

double CopyRun::GBps() const noexcept {
  return time_ms.median > 0 ? static_cast<double>(bytes) / (time_ms.median * 1e-3) / 1e9 : 0.0;
}

CopyBenchReport bench_copy(const CopyBenchConfig& config) {
  config.validate();
  CopyBenchReport report;
  report.config = config;
  report.date = detail::now_iso();
  report.commit = detail::commit();
  if (!config.device.is_cuda()) {
    report.device = "CPU device (memcpy)";
    for (const std::int64_t bytes : config.bytes) {
      // Both buffers written first, so that the timed copies fault no page in.
      std::vector<std::uint8_t> a(static_cast<std::size_t>(bytes), 0x5a), b(static_cast<std::size_t>(bytes), 0);
      for (const auto direction : {CopyRun::Direction::kHostToDevice, CopyRun::Direction::kDeviceToHost}) {
        const bool up = direction == CopyRun::Direction::kHostToDevice;
        CopyRun run;
        run.direction = direction;
        run.bytes = bytes;
        run.time_ms = Summary::of(time_on_host(config.warmup, config.repeats, [&] {
          std::memcpy(up ? b.data() : a.data(), up ? a.data() : b.data(), static_cast<std::size_t>(bytes));
        }));
        report.runs.push_back(std::move(run));
      }
    }
    return report;
  }
  engine::Resources res(cuda_device(config.device.name()));
  report.device = engine::cuda_device_name(config.device.index);
  for (const std::int64_t bytes : config.bytes) {
    const engine::PinnedAllocation pinned = engine::allocate_pinned(static_cast<std::size_t>(bytes));
    std::memset(pinned.get(), 0x5a, static_cast<std::size_t>(bytes));
    time_cuda(res, pinned.get(), true, bytes, config, report.runs);
    if (config.pageable) {
      std::vector<std::uint8_t> pageable(static_cast<std::size_t>(bytes), 0x5a);
      time_cuda(res, pageable.data(), false, bytes, config, report.runs);
    }
  }
  return report;
}

namespace {
double largest_pinned(const std::vector<CopyRun>& runs, CopyRun::Direction d) {
  const CopyRun* best = nullptr;
  for (const auto& r : runs)
    if (r.direction == d && r.pinned && (best == nullptr || r.bytes > best->bytes)) best = &r;
  return best != nullptr ? best->GBps() : 0.0;
}
}  // namespace

double CopyBenchReport::host_to_device_GBps() const noexcept {
  return largest_pinned(runs, CopyRun::Direction::kHostToDevice);
}

double CopyBenchReport::device_to_host_GBps() const noexcept {
  return largest_pinned(runs, CopyRun::Direction::kDeviceToHost);
}

nlohmann::json CopyBenchReport::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : runs)
    rows.push_back({{"direction", direction_name(r.direction)},
                    {"host_memory", !config.device.is_cuda() ? "host" : r.pinned ? "pinned" : "pageable"},
                    {"bytes", r.bytes},
                    {"time_ms", r.time_ms.to_json()},
                    {"GBps", r.GBps()}});
  return {{"command", "bench copy"},
          {"date", date},
          {"commit", commit},
          {"device", device},
          {"warmup", config.warmup},
          {"repeats", config.repeats},
          {"host_to_device_GBps", host_to_device_GBps()},
          {"device_to_host_GBps", device_to_host_GBps()},
          {"results", rows}};
}

}  // namespace gcnpart::bench
