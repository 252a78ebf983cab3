// gcnpart bench nccl: plain collectives (all-gather, all-reduce, reduce-scatter) at a list of sizes on K GPUs
// through NCCL, timed the way training times its communication (CUDA events around each call, median of many
// after warm-up), reported as nccl-tests does: algorithm and bus bandwidth. One thread per GPU, or one process per
// GPU under mpirun. `--device cpu` runs the in-process communicator instead (a memcpy figure, for checking).
#include <cstdio>
#include <ctime>
#include <memory>
#include <sstream>

#include "engine/link_benchmark.hpp"
#include "engine/mpi_communicator.hpp"
#include "engine/nccl_communicator.hpp"
#include "engine/resources.hpp"
#include "kernels/core/error.hpp"
#include "tools/cli_common.hpp"

#ifndef GCNPART_GIT_COMMIT
#define GCNPART_GIT_COMMIT "unknown"
#endif

namespace gcnpart::cli {

namespace {

struct BenchNcclOptions {
  std::string device = "cuda";
  int gpus = 0;  // 0: every visible GPU, or the mpirun rank count
  std::string bytes = "1MiB,16MiB,256MiB";
  std::vector<std::string> ops{"all_gather", "all_reduce", "reduce_scatter"};
  int warmup = engine::kLinkWarmup;
  int repeats = engine::kLinkRepeats;
  std::string json;
};

engine::CollectiveKind parse_kind(const std::string& name) {
  if (name == "all_gather" || name == "allgather") return engine::CollectiveKind::kAllGather;
  if (name == "all_reduce" || name == "allreduce") return engine::CollectiveKind::kAllReduce;
  if (name == "reduce_scatter" || name == "reducescatter") return engine::CollectiveKind::kReduceScatter;
  throw InvalidInput::parameter("--ops", name, "all_gather, all_reduce or reduce_scatter");
}

std::vector<std::int64_t> parse_sizes(const std::string& list) {
  std::vector<std::int64_t> out;
  std::stringstream in(list);
  std::string item;
  while (std::getline(in, item, ',')) {
    const std::int64_t b = parse_bytes(item, "--bytes");
    if (b <= 0 || b % 4 != 0) throw InvalidInput::parameter("--bytes", item, "a positive multiple of 4 bytes");
    out.push_back(b);
  }
  if (out.empty()) throw InvalidInput::parameter("--bytes", list, "at least one size");
  return out;
}

void run_bench_nccl(BenchNcclOptions& o) {
  // Every argument is checked before a GPU is touched.
  const engine::Device device = engine::Device::parse(o.device);
  std::vector<engine::CollectiveKind> kinds;
  for (const auto& op : o.ops) kinds.push_back(parse_kind(op));
  const std::vector<std::int64_t> sizes = parse_sizes(o.bytes);
  if (o.warmup < 0) throw InvalidInput::parameter("--warmup", std::to_string(o.warmup), ">= 0");
  if (o.repeats < 10) throw InvalidInput::parameter("--repeats", std::to_string(o.repeats), ">= 10 (a median)");
  const bool mpi = engine::launched_under_mpi();
  if (mpi) {
    engine::mpi_init();
    if (o.gpus == 0) o.gpus = engine::mpi_size();
  }
  if (o.gpus == 0) o.gpus = device.is_cuda() ? engine::cuda_device_count() : 2;
  if (o.gpus < 1)
    throw InvalidInput::parameter("--gpus", std::to_string(o.gpus),
                                  "at least one GPU (none is visible: use --device cpu)");
  const bool root = !mpi || engine::mpi_rank() == 0;

  const auto results = engine::sweep_collectives(device.backend, o.gpus, mpi, kinds, sizes, o.warmup, o.repeats);
  if (!root) return;
  const std::string what = device.is_cuda() ? engine::cuda_device_name(0) + ", NCCL " + engine::nccl_version()
                                            : std::string("virtual CPU devices, in-process communicator");
  std::printf("%d x %s%s; median of %d after %d warm-up, slowest rank\n", o.gpus, what.c_str(),
              mpi ? " (one MPI rank each)" : " (one thread each)", o.repeats, o.warmup);
  std::printf("%-15s %14s %12s %12s %12s\n", "collective", "bytes/rank", "median us", "algbw GB/s", "busbw GB/s");
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& t : results) {
    std::printf("%-15s %14s %12.1f %12.2f %12.2f\n", engine::collective_name(t.kind),
                with_commas(t.payload_bytes).c_str(), 1e3 * t.median_ms, t.alg_GBps(), t.bus_GBps());
    rows.push_back({{"collective", engine::collective_name(t.kind)},
                    {"bytes_per_rank", t.payload_bytes},
                    {"bytes_sent_per_call", t.bytes_sent},
                    {"median_ms", t.median_ms},
                    {"min_ms", t.min_ms},
                    {"max_ms", t.max_ms},
                    {"alg_GBps", t.alg_GBps()},
                    {"bus_GBps", t.bus_GBps()}});
  }
  if (!o.json.empty())
    write_json(o.json, {{"command", "bench nccl"},
                        {"date", now_iso()},
                        {"commit", GCNPART_GIT_COMMIT},
                        {"device", what},
                        {"devices", o.gpus},
                        {"launch", mpi ? "mpi" : "threads"},
                        {"nccl_version", device.is_cuda() ? engine::nccl_version() : std::string()},
                        {"warmup", o.warmup},
                        {"repeats", o.repeats},
                        {"results", rows}});
}

}  // namespace

Command register_bench_nccl(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "nccl", "Plain all-gather / all-reduce / reduce-scatter at given sizes on K GPUs: median time, algorithm and "
              "bus bandwidth (the peer `train` compares its communication with)");
  auto o = std::make_shared<BenchNcclOptions>();
  cmd->add_option("--device", o->device, "cuda, or cpu for the in-process communicator")->capture_default_str();
  cmd->add_option("--gpus", o->gpus, "Devices (default: every visible GPU, or the mpirun rank count)");
  cmd->add_option("--bytes", o->bytes, "Bytes per rank and call, comma-separated (e.g. 1MiB,256MiB)")
      ->capture_default_str();
  cmd->add_option("--ops", o->ops, "Collectives")->delimiter(',')->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed calls first")->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "Timed calls (the median is reported)")->capture_default_str();
  cmd->add_option("--json", o->json, "Write the results as JSON");
  return {cmd, [o] { run_bench_nccl(*o); }};
}

}  // namespace gcnpart::cli
