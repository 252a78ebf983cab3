// The pieces every benchmark report shares: summaries, the GPU, the dataset, memory, CUDA-event timing.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <utility>

#include "bench/bench.hpp"
#include "bench/detail/timing.hpp"
#include "base/error.hpp"
#include "base/format.hpp"

#if GCNPART_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "base/cuda_check.hpp"
#endif

#ifndef GCNPART_GIT_COMMIT
#define GCNPART_GIT_COMMIT "unknown"
#endif

namespace gcnpart::bench {

Summary Summary::of(std::vector<double> values) {
  Summary s;
  s.all = values;
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  s.median = n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
  s.min = values.front();
  s.p90 = values[static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(n))) - 1];
  double sum = 0;
  for (double x : values) sum += x;
  s.mean = sum / static_cast<double>(n);
  return s;
}

nlohmann::json Summary::to_json() const {
  return {{"median", median}, {"min", min}, {"p90", p90}, {"mean", mean}, {"runs", all.size()}, {"all", all}};
}

#if GCNPART_HAVE_CUDA
GpuInfo GpuInfo::query(int device) {
  cudaDeviceProp p{};
  GCNPART_CUDA_TRY(cudaGetDeviceProperties(&p, device));
  int sm_khz = 0, mem_khz = 0;
  GpuInfo g;
  GCNPART_CUDA_TRY(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device));
  GCNPART_CUDA_TRY(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
  GCNPART_CUDA_TRY(cudaDeviceGetAttribute(&g.memory_bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  GCNPART_CUDA_TRY(cudaRuntimeGetVersion(&g.cuda_runtime));
  GCNPART_CUDA_TRY(cudaDriverGetVersion(&g.cuda_driver));
  g.device = device;
  g.name = p.name;
  g.compute_capability = std::to_string(p.major) + "." + std::to_string(p.minor);
  g.multiprocessors = p.multiProcessorCount;
  g.memory_bytes = static_cast<std::int64_t>(p.totalGlobalMem);
  g.l2_bytes = p.l2CacheSize;
  g.sm_clock_max_mhz = sm_khz / 1000.0;
  g.memory_clock_max_mhz = mem_khz / 1000.0;
  g.theoretical_bandwidth_gbs = 2.0 * mem_khz * 1e3 * (g.memory_bus_bits / 8.0) / 1e9;
  return g;
}
#else
GpuInfo GpuInfo::query(int) { throw NoCudaBuild("a GPU's properties"); }
#endif

nlohmann::json GpuInfo::to_json() const {
  return {{"device", device},
          {"name", name},
          {"compute_capability", compute_capability},
          {"multiprocessors", multiprocessors},
          {"memory_bytes", memory_bytes},
          {"l2_bytes", l2_bytes},
          {"sm_clock_max_mhz", sm_clock_max_mhz},
          {"memory_clock_max_mhz", memory_clock_max_mhz},
          {"memory_bus_bits", memory_bus_bits},
          {"theoretical_bandwidth_gbs", theoretical_bandwidth_gbs},
          {"cuda_runtime", cuda_runtime},
          {"cuda_driver", cuda_driver}};
}

engine::Device cuda_device(const std::string& spec) {
  const engine::Device d = engine::Device::parse(spec, "--device");
  if (!d.is_cuda())
    throw InvalidInput::parameter("--device", spec,
                                  "a CUDA device (cuda or cuda:N): gcnpart bench times GPU kernels only (CPU "
                                  "training is measured by `gcnpart train --device cpu`)");
  if (!kernels::kHaveCuda) throw NoCudaBuild("gcnpart bench --device " + spec);
  const int n = engine::cuda_device_count();
  if (d.index >= n)
    throw InvalidInput::parameter("--device", spec,
                                  n == 0 ? std::string("a visible CUDA device, but none was found (gcnpart bench "
                                                       "runs on the GPU machine)")
                                         : "cuda:0..cuda:" + std::to_string(n - 1));
  return d;
}

namespace detail {

std::vector<double> time_calls(cudaStream_t stream, int warmup, int repeats, engine::Buffer<std::uint8_t>* flush,
                               const std::function<void()>& call) {
  for (int i = 0; i < warmup; ++i) call();
  std::vector<Event> start, stop;
  start.reserve(static_cast<std::size_t>(repeats));
  stop.reserve(static_cast<std::size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    start.emplace_back();
    stop.emplace_back();
  }
  for (int i = 0; i < repeats; ++i) {
    if (flush != nullptr && !flush->empty())
      fill_bytes_async(flush->data(), i & 0xff, flush->bytes(), stream);
    start[static_cast<std::size_t>(i)].record(stream);
    call();
    stop[static_cast<std::size_t>(i)].record(stream);
  }
  synchronize_stream(stream);
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i)
    ms.push_back(elapsed_ms(start[static_cast<std::size_t>(i)], stop[static_cast<std::size_t>(i)]));
  return ms;
}

#if GCNPART_HAVE_CUDA
void fill_bytes_async(void* p, int value, std::size_t bytes, cudaStream_t stream) {
  GCNPART_CUDA_TRY(cudaMemsetAsync(p, value, bytes, stream));
}
void copy_bytes_async(void* dst, const void* src, std::size_t bytes, cudaStream_t stream) {
  GCNPART_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream));
}
void synchronize_stream(cudaStream_t stream) { GCNPART_CUDA_TRY(cudaStreamSynchronize(stream)); }
void clear_cuda_error() noexcept { (void)cudaGetLastError(); }
#else
void fill_bytes_async(void*, int, std::size_t, cudaStream_t) { throw NoCudaBuild("a CUDA memset"); }
void copy_bytes_async(void*, const void*, std::size_t, cudaStream_t) { throw NoCudaBuild("a CUDA copy"); }
void synchronize_stream(cudaStream_t) { throw NoCudaBuild("a CUDA stream"); }
void clear_cuda_error() noexcept {}
#endif

std::string now_iso() { return gcnpart::now_iso(); }

std::string commit() { return GCNPART_GIT_COMMIT; }

std::string commas(std::int64_t v) { return with_commas(v); }

}  // namespace detail

}  // namespace gcnpart::bench
