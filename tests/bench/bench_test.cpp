// bench/bench.hpp: the benchmarks as library calls. On the CPU: argument checks, summaries, report serialisation
// and bench_nccl on virtual devices; bench_spmm / bench_epoch on a GPU in TEST_SUITE("gpu").
#include "bench/bench.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <string>

#include "dataset_fixtures.hpp"
#include "engine/report_json.hpp"
#include "base/error.hpp"

using namespace gcnpart;

namespace {

/// The parameter an InvalidInput names, or "" when `f` throws nothing.
template <typename F>
std::string rejected_parameter(F&& f) {
  try {
    f();
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return {};
}

bool names(const std::string& message, const std::string& parameter) {
  return message.find(parameter) != std::string::npos;
}

/// Every key path of `j` ("/widths[]/results[]/time_ms/median"); arrays of objects contribute their elements' keys.
void key_paths(const nlohmann::json& j, const std::string& at, std::set<std::string>& out) {
  if (j.is_object()) {
    for (const auto& [key, value] : j.items()) {
      out.insert(at + "/" + key);
      key_paths(value, at + "/" + key, out);
    }
  } else if (j.is_array()) {
    for (const auto& e : j) key_paths(e, at + "[]", out);
  }
}

/// The key paths of a report that bench/ scripts and earlier results were written against (copies of two H200
/// reports in tests/data/bench: the raw results left the working tree, see bench/results/README.md).
std::set<std::string> recorded_paths(const std::string& relative) {
  std::ifstream in(std::string(GCNPART_TEST_DATA) + "/bench/" + relative);
  REQUIRE_MESSAGE(in.good(), relative);
  std::set<std::string> out;
  key_paths(nlohmann::json::parse(in), "", out);
  return out;
}

bench::SpmmRun ok_run(const std::string& name, double median, bool bf16 = false) {
  bench::SpmmRun r;
  r.name = name;
  r.bf16 = bf16;
  r.time_ms = bench::Summary::of(std::vector<double>(10, median));
  if (name != "own") {
    r.rel_l2 = 1e-7;
    r.rel_max = 1e-6;
    r.error_against = "own";
  }
  return r;
}

}  // namespace

TEST_CASE("a summary gives the median, minimum, nearest-rank 90th percentile and mean, and keeps every value") {
  const auto s = bench::Summary::of({5, 1, 4, 2, 3, 10, 6, 7, 8, 9});
  CHECK(s.median == doctest::Approx(5.5));
  CHECK(s.min == 1);
  CHECK(s.p90 == 9);
  CHECK(s.mean == doctest::Approx(5.5));
  const auto j = s.to_json();
  CHECK(j["runs"] == 10);
  CHECK(j["all"][0] == 5);  // in measured order
  CHECK(bench::Summary::of({}).median == 0);
}

TEST_CASE("bench configs reject bad widths, counts and CPU devices before any data or GPU is touched") {
  bench::SpmmBenchConfig spmm;
  spmm.widths = {16, 0};
  CHECK(names(rejected_parameter([&] { spmm.validate(); }), "--widths"));
  spmm.widths = {16, 16};
  CHECK(names(rejected_parameter([&] { spmm.validate(); }), "--widths"));
  spmm.widths = {16};
  spmm.repeats = bench::kMinSpmmRepeats - 1;
  CHECK(names(rejected_parameter([&] { spmm.validate(); }), "--repeats"));
  spmm.repeats = bench::kMinSpmmRepeats;
  spmm.device = "cpu";
  CHECK(names(rejected_parameter([&] { spmm.validate(); }), "--device"));

  bench::EpochBenchConfig epoch;
  epoch.warmup = -1;
  CHECK(names(rejected_parameter([&] { epoch.validate(); }), "--warmup"));
  epoch.warmup = 0;
  epoch.spmm = "fast";
  CHECK(names(rejected_parameter([&] { epoch.validate(); }), "--spmm"));
  epoch.spmm = "own";
  epoch.device = "cpu:1";
  CHECK(names(rejected_parameter([&] { epoch.validate(); }), "--device"));

  bench::NcclBenchConfig nccl;
  nccl.bytes = {6};
  CHECK(names(rejected_parameter([&] { nccl.validate(); }), "--bytes"));
  nccl.bytes = {64};
  nccl.repeats = 9;
  CHECK(names(rejected_parameter([&] { nccl.validate(); }), "--repeats"));
}

TEST_CASE("an SpMM width serialises its rows, verification and the ratios to the best cuSPARSE algorithm") {
  bench::SpmmWidth w;
  w.width = 64;
  auto run = [](const std::string& name, double median) {
    bench::SpmmRun r;
    r.name = name;
    r.time_ms = bench::Summary::of(std::vector<double>(10, median));
    return r;
  };
  w.results = {run("own", 1.0), run("cusparse-alg0", 3.0), run("cusparse-alg2", 2.0)};
  w.results[1].rel_l2 = 1e-7;
  w.results[1].rel_max = 1e-6;
  w.results[1].error_against = "own";
  bench::SpmmRun failed;
  failed.name = "cusparse-alg3";
  failed.status = "unsupported";
  failed.message = "no";
  w.results.push_back(failed);
  w.compared = w.verified = true;
  w.reference = "own";
  const auto j = w.to_json();
  CHECK(j["best_cusparse"] == "cusparse-alg2");
  CHECK(j["speedup_vs_best_cusparse"].get<double>() == doctest::Approx(2.0));
  CHECK(j["verification"]["against"] == "own");
  REQUIRE(j["results"].size() == 4);
  CHECK(j["results"][1]["error"]["rel_max"].get<double>() == doctest::Approx(1e-6));
  CHECK_FALSE(j["results"][0].contains("error"));
  CHECK(j["results"][3]["status"] == "unsupported");
  CHECK_FALSE(j["results"][3].contains("time_ms"));
  CHECK_FALSE(j.contains("bf16_speedup_vs_own_fp32"));
}

TEST_CASE("the spmm and epoch reports keep every key of the H200 reports recorded before the harness moved") {
  bench::SpmmBenchReport spmm;
  spmm.config.precision = "bf16";
  spmm.dataset = engine::dataset_json(datasets::Dataset{});
  bench::SpmmWidth w;
  w.width = 64;
  w.results = {ok_run("own-bf16", 0.5, true), ok_run("own", 1.0), ok_run("cusparse-alg2", 2.0)};
  w.compared = w.verified = true;
  w.reference = "own";
  spmm.widths = {w};
  std::set<std::string> have;
  key_paths(spmm.to_json(), "", have);
  for (const auto& path : recorded_paths("spmm-h200-2026-11-29-bf16-arxiv.json"))
    CHECK_MESSAGE(have.count(path) == 1, path);

  bench::EpochBenchReport epoch;
  epoch.dataset = engine::dataset_json(datasets::Dataset{});
  bench::EpochRun run;
  run.spmm = "own";
  epoch.runs = {run};
  have.clear();
  key_paths(epoch.to_json(), "", have);
  for (const auto& path : recorded_paths("epoch-h200x2-2026-11-29b-rmat18-bf16.json"))
    CHECK_MESSAGE(have.count(path) == 1, path);
}

TEST_CASE("bench_nccl on two virtual CPU devices times every collective at every size") {
  bench::NcclBenchConfig c;
  c.device = engine::Device::parse("cpu");
  c.devices = 2;
  c.bytes = {4096, 65536};
  c.kinds = {engine::CollectiveKind::kAllGather, engine::CollectiveKind::kReduceScatter};
  const auto report = bench::bench_nccl(c);
  CHECK(report.root);
  CHECK_FALSE(report.mpi);
  REQUIRE(report.results.size() == 4);
  const auto j = report.to_json();
  CHECK(j["command"] == "bench nccl");
  CHECK(j["devices"] == 2);
  CHECK(j["launch"] == "threads");
  CHECK(j["results"][1]["collective"] == "reduce_scatter");  // every collective at one size, then the next size
  CHECK(j["results"][2]["bytes_per_rank"] == 65536);
  for (const auto& r : j["results"]) {
    CHECK(r["median_ms"].get<double>() > 0.0);
    CHECK(r["bus_GBps"].get<double>() > 0.0);
  }
}

TEST_SUITE("gpu") {
  TEST_CASE("bench_spmm on a small graph measures own and cuSPARSE, and they agree") {
    const datasets::Dataset& ds = testing::sbm_3000();
    bench::SpmmBenchConfig c;
    c.widths = {16, 40};
    c.repeats = bench::kMinSpmmRepeats;
    c.warmup = 1;
    const auto report = bench::bench_spmm(ds, c);
    CHECK(report.all_verified);
    REQUIRE(report.widths.size() == 2);
    CHECK(report.widths[0].own() != nullptr);
    CHECK(report.copy_gbs > 0);
    CHECK(report.scratch_memory.peak >= std::int64_t{2} << 30);  // the copy buffers, tracked apart
    CHECK(report.memory.peak < report.scratch_memory.peak);
    const auto j = report.to_json();
    CHECK(j["widths"][1]["width"] == 40);
    CHECK(j["widths"][0]["verified"] == true);
  }

  TEST_CASE("bench_epoch trains the requested epochs for each SpMM choice") {
    const datasets::Dataset& ds = testing::sbm_3000();
    bench::EpochBenchConfig c;
    c.warmup = 1;
    c.repeats = 3;
    c.hidden = 32;
    const auto report = bench::bench_epoch(ds, c);
    REQUIRE(report.runs.size() == 3);  // own, cusparse, auto
    for (const auto& r : report.runs) {
      CHECK(r.status == "ok");
      CHECK(r.train_loss.size() == 4);
      CHECK(r.epoch_ms.all.size() == 3);
    }
    CHECK(report.speedup_own_vs_cusparse.has_value());
    CHECK(report.to_json()["runs"][0]["epoch_ms"]["runs"] == 3);
  }
}

TEST_CASE("bench_copy on a CPU device times both directions at every size and reports GB/s") {
  bench::CopyBenchConfig config;
  config.device = engine::Device{Backend::kCpu, 0};
  config.bytes = {4096, std::int64_t{1} << 20};
  config.repeats = 5;
  config.warmup = 1;
  const bench::CopyBenchReport report = bench::bench_copy(config);
  REQUIRE(report.runs.size() == 4);  // 2 sizes x 2 directions (pageable is a CUDA-only row)
  for (const auto& r : report.runs) {
    CHECK(r.time_ms.all.size() == 5);
    CHECK(r.GBps() > 0);
    CHECK(r.pinned);
  }
  CHECK(report.runs[2].bytes == (std::int64_t{1} << 20));
  // The figures offload planning reads: the largest size, each direction.
  CHECK(report.host_to_device_GBps() == doctest::Approx(report.runs[2].GBps()));
  CHECK(report.device_to_host_GBps() == doctest::Approx(report.runs[3].GBps()));
  const auto j = report.to_json();
  CHECK(j["command"] == "bench copy");
  CHECK(j["results"].size() == 4);
  CHECK(j["results"][1]["direction"] == "device_to_host");
  CHECK(j["results"][0]["host_memory"] == "host");  // a CPU device's memory is host memory
  CHECK(j["host_to_device_GBps"].get<double>() > 0);
}

TEST_CASE("bench_copy refuses an empty or non-positive size and too few repeats, naming the option") {
  bench::CopyBenchConfig config;
  config.device = engine::Device{Backend::kCpu, 0};
  config.bytes = {};
  CHECK_THROWS_WITH_AS(bench::bench_copy(config), doctest::Contains("--bytes"), InvalidInput);
  config.bytes = {0};
  CHECK_THROWS_WITH_AS(bench::bench_copy(config), doctest::Contains("--bytes"), InvalidInput);
  config.bytes = {1024};
  config.repeats = 2;
  CHECK_THROWS_WITH_AS(bench::bench_copy(config), doctest::Contains("--repeats"), InvalidInput);
}

TEST_SUITE("gpu") {
TEST_CASE("bench_copy on the GPU moves page-locked memory at a link's speed both ways, and pageable memory too") {
  bench::CopyBenchConfig config;
  config.device = engine::Device{Backend::kCuda, 0};
  config.bytes = {std::int64_t{1} << 20, std::int64_t{64} << 20};
  config.repeats = 5;
  const bench::CopyBenchReport report = bench::bench_copy(config);
  REQUIRE(report.runs.size() == 8);  // 2 sizes x (pinned, pageable) x 2 directions
  int pageable = 0;
  for (const auto& r : report.runs) {
    CHECK(r.GBps() > 0);
    pageable += r.pinned ? 0 : 1;
  }
  CHECK(pageable == 4);
  // Any PCIe 3 x16 link or better moves 64 MiB of locked memory at over 5 GB/s each way (an H200: about 50).
  MESSAGE("host->device " << report.host_to_device_GBps() << " GB/s, device->host " << report.device_to_host_GBps()
                          << " GB/s");
  CHECK(report.host_to_device_GBps() > 5);
  CHECK(report.device_to_host_GBps() > 5);
}
}
