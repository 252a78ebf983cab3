// gcnpart bench nccl: parses the options, calls bench::bench_nccl (bench/bench.hpp), prints the table and writes
// the report's JSON. One thread per GPU, or one process per GPU under mpirun; `--device cpu` runs the in-process
// communicator instead (a memcpy figure, for checking).
#include <cstdio>
#include <memory>
#include <sstream>

#include "bench/bench.hpp"
#include "base/error.hpp"
#include "tools/cli_common.hpp"

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
  std::vector<std::int64_t> out = parse_byte_list(list, "--bytes");
  for (const std::int64_t b : out)
    if (b <= 0 || b % 4 != 0)
      throw InvalidInput::parameter("--bytes", std::to_string(b), "a positive multiple of 4 bytes");
  return out;
}

void run_bench_nccl(const BenchNcclOptions& o) {
  // Every argument is checked before a GPU is touched.
  bench::NcclBenchConfig config;
  config.device = engine::Device::parse(o.device);
  config.kinds.clear();
  for (const auto& op : o.ops) config.kinds.push_back(parse_kind(op));
  config.bytes = parse_sizes(o.bytes);
  config.devices = o.gpus;
  config.warmup = o.warmup;
  config.repeats = o.repeats;
  const bench::NcclBenchReport report = bench::bench_nccl(config);
  if (!report.root) return;
  std::printf("%d x %s%s; median of %d after %d warm-up, slowest rank\n", report.config.devices,
              report.device.c_str(), report.mpi ? " (one MPI rank each)" : " (one thread each)", o.repeats, o.warmup);
  std::printf("%-15s %14s %12s %12s %12s\n", "collective", "bytes/rank", "median us", "algbw GB/s", "busbw GB/s");
  for (const auto& t : report.results)
    std::printf("%-15s %14s %12.1f %12.2f %12.2f\n", engine::collective_name(t.kind),
                with_commas(t.payload_bytes).c_str(), 1e3 * t.median_ms, t.alg_GBps(), t.bus_GBps());
  if (!o.json.empty()) write_json(o.json, report.to_json());
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
