// gcnpart bench copy: parses the options, calls bench::bench_copy (bench/bench.hpp), prints the table and writes the
// report's JSON. Host <-> device bandwidth at each size, page-locked and pageable host memory; `--device cpu` times
// memcpy (a check of the harness, not a link).
#include <cstdio>
#include <memory>
#include <sstream>

#include "base/error.hpp"
#include "bench/bench.hpp"
#include "tools/cli_common.hpp"

namespace gcnpart::cli {

namespace {

struct BenchCopyOptions {
  std::string device = "cuda";
  std::string bytes = "1MiB,64MiB,1GiB";
  int warmup = 3;
  int repeats = 20;
  bool no_pageable = false;
  std::string json;
};

void run_bench_copy(const BenchCopyOptions& o) {
  // Every argument is checked before a GPU is touched.
  bench::CopyBenchConfig config;
  config.device = engine::Device::parse(o.device);
  config.bytes = parse_byte_list(o.bytes, "--bytes");
  config.warmup = o.warmup;
  config.repeats = o.repeats;
  config.pageable = !o.no_pageable;
  config.validate();
  check_outputs({{"--json", &o.json}});
  const bench::CopyBenchReport report = bench::bench_copy(config);
  if (!json_to_stdout(o.json)) {  // "--json -": stdout carries only the JSON
    std::printf("%s; median of %d after %d warm-up\n", report.device.c_str(), config.repeats, config.warmup);
    std::printf("%-15s %-9s %16s %12s %10s\n", "direction", "host", "bytes", "median ms", "GB/s");
    for (const auto& r : report.runs)
      std::printf("%-15s %-9s %16s %12.3f %10.2f\n",
                  r.direction == bench::CopyRun::Direction::kHostToDevice ? "host->device" : "device->host",
                  !config.device.is_cuda() ? "host" : r.pinned ? "pinned" : "pageable", with_commas(r.bytes).c_str(), r.time_ms.median, r.GBps());
    std::printf("%s, largest size: host->device %.2f GB/s, device->host %.2f GB/s\n",
                config.device.is_cuda() ? "page-locked" : "memcpy",
                report.host_to_device_GBps(), report.device_to_host_GBps());
  }
  if (!o.json.empty()) write_json(o.json, report.to_json());
}

}  // namespace

Command register_bench_copy(CLI::App& bench) {
  auto* cmd = bench.add_subcommand(
      "copy", "Host <-> device copy bandwidth at given sizes, page-locked and pageable host memory (what streaming "
              "activations through host memory is bound by)");
  auto o = std::make_shared<BenchCopyOptions>();
  cmd->add_option("--device", o->device, "cuda[:N], or cpu to time memcpy")->capture_default_str();
  cmd->add_option("--bytes", o->bytes, "Bytes per copy, comma-separated (e.g. 1MiB,1GiB)")->capture_default_str();
  cmd->add_option("--warmup", o->warmup, "Untimed copies first")->capture_default_str();
  cmd->add_option("--repeats", o->repeats, "Timed copies (the median is reported)")->capture_default_str();
  cmd->add_flag("--no-pageable", o->no_pageable, "Only page-locked host memory");
  cmd->add_option("--json", o->json, "Write the results as JSON ('-' for stdout)");
  return {cmd, [o] { run_bench_copy(*o); }};
}

}  // namespace gcnpart::cli
