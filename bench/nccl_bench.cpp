// bench_nccl: plain collectives (all-gather, all-reduce, reduce-scatter) at a list of sizes on K devices, timed
// the way training times its communication (CUDA events around each call, median of many after warm-up),
// reported as nccl-tests does: algorithm and bus bandwidth. CPU devices run the in-process communicator.
#include "bench/bench.hpp"
#include "bench/detail/timing.hpp"
#include "engine/mpi_communicator.hpp"
#include "engine/nccl_communicator.hpp"
#include "base/error.hpp"

namespace gcnpart::bench {

void NcclBenchConfig::validate() const {
  if (bytes.empty()) throw InvalidInput::parameter("--bytes", "", "at least one size");
  for (std::int64_t b : bytes)
    if (b <= 0 || b % 4 != 0)
      throw InvalidInput::parameter("--bytes", std::to_string(b), "a positive multiple of 4 bytes");
  if (warmup < 0) throw InvalidInput::parameter("--warmup", std::to_string(warmup), ">= 0");
  if (repeats < 10) throw InvalidInput::parameter("--repeats", std::to_string(repeats), ">= 10 (a median)");
  if (devices < 0) throw InvalidInput::parameter("--gpus", std::to_string(devices), ">= 1, or 0 for every one");
}

NcclBenchReport bench_nccl(const NcclBenchConfig& config) {
  config.validate();
  NcclBenchReport report;
  report.config = config;
  report.mpi = engine::launched_under_mpi();
  int& devices = report.config.devices;
  if (report.mpi) {
    engine::mpi_init();
    if (devices == 0) devices = engine::mpi_size();
  }
  const bool cuda = config.device.is_cuda();
  if (cuda) engine::expect_cuda_build("gcnpart bench nccl --device cuda");
  if (devices == 0) devices = cuda ? engine::cuda_device_count() : 2;
  if (devices < 1)
    throw InvalidInput::parameter("--gpus", std::to_string(devices),
                                  "at least one GPU (none is visible: use --device cpu)");
  report.root = !report.mpi || engine::mpi_rank() == 0;
  report.date = detail::now_iso();
  report.commit = detail::commit();
  report.results = engine::sweep_collectives(config.device.backend, devices, report.mpi, config.kinds, config.bytes,
                                             config.warmup, config.repeats);
  if (!report.root) {
    report.results.clear();
    return report;
  }
  report.nccl_version = cuda ? engine::nccl_version() : std::string();
  report.device = cuda ? engine::cuda_device_name(0) + ", NCCL " + report.nccl_version
                       : std::string("virtual CPU devices, in-process communicator");
  return report;
}

nlohmann::json NcclBenchReport::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& t : results)
    rows.push_back({{"collective", engine::collective_name(t.kind)},
                    {"bytes_per_rank", t.payload_bytes},
                    {"bytes_sent_per_call", t.bytes_sent},
                    {"median_ms", t.median_ms},
                    {"min_ms", t.min_ms},
                    {"max_ms", t.max_ms},
                    {"alg_GBps", t.alg_GBps()},
                    {"bus_GBps", t.bus_GBps()}});
  return {{"command", "bench nccl"},
          {"date", date},
          {"commit", commit},
          {"device", device},
          {"devices", config.devices},
          {"launch", mpi ? "mpi" : "threads"},
          {"nccl_version", nccl_version},
          {"warmup", config.warmup},
          {"repeats", config.repeats},
          {"results", rows}};
}

}  // namespace gcnpart::bench
