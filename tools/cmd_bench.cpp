// gcnpart bench spmm|epoch: parses the options, calls bench::bench_spmm / bench_epoch (bench/bench.hpp), prints
// the table and writes the report's JSON. All arguments are checked before the data is read or a GPU is touched.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <memory>
#include <set>

#include "bench/bench.hpp"
#include "base/error.hpp"
#include "partition/fit/cards.hpp"
#include "partition/fit/cost_model.hpp"
#include "tools/cli_common.hpp"

namespace gcnpart::cli {

namespace {

// ------------------------------------------------------------------------------------------------ options

struct BenchOptions {
  DataOptions data;
  std::string device = "cuda";
  std::string widths = "16,64,128,256";
  std::string precision = "fp32";
  std::string spmm = "all";
  int warmup = 5;
  int repeats = 20;
  std::string json;
  bool no_flush_l2 = false;
  kernels::SpmmTuning spmm_tuning;  ///< own kernel: --spmm-long-row, --spmm-segment, --spmm-slab, --spmm-pad, --spmm-lanes
  std::string reorder = "degree";
  // epoch
  int layers = 2;
  std::int64_t hidden = 256;
  bool no_normalize = false;
  std::uint64_t seed = 1;
  std::string cuda_graph = "auto";
};

/// "16,64,128,256" -> {16, 64, 128, 256}. @throws InvalidInput naming --widths.
std::vector<std::int64_t> parse_widths(const std::string& text) {
  const std::string expected = "comma-separated positive integers up to " + std::to_string(bench::kMaxWidth) +
                               " without repeats, e.g. 16,64,128,256";
  std::vector<std::int64_t> out;
  std::set<std::int64_t> seen;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    std::int64_t w = 0;
    const auto r = std::from_chars(item.data(), item.data() + item.size(), w);
    if (item.empty() || r.ec != std::errc() || r.ptr != item.data() + item.size() || w < 1 || w > bench::kMaxWidth ||
        !seen.insert(w).second)
      throw InvalidInput::parameter("--widths", text, expected + " (bad item '" + item + "')");
    out.push_back(w);
    begin = end + 1;
  }
  return out;
}

// ------------------------------------------------------------------------------------------------ spmm

bench::SpmmBenchConfig spmm_config(const BenchOptions& o) {
  bench::SpmmBenchConfig c;
  c.device = o.device;
  c.widths = parse_widths(o.widths);
  c.precision = o.precision;
  c.spmm_tuning = o.spmm_tuning;
  c.reorder = from_string<Reorder>(o.reorder, "--reorder");
  c.spmm = o.spmm;
  c.warmup = o.warmup;
  c.repeats = o.repeats;
  c.flush_l2 = !o.no_flush_l2;
  c.seed = o.seed;
  c.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  return c;
}

void print_spmm_width(const bench::SpmmWidth& width, double copy_gbs) {
  const auto w = static_cast<long long>(width.width);
  for (const auto& r : width.results) {
    if (r.status != "ok") {
      std::printf("%-6lld %-14s %s\n", w, r.name.c_str(), r.status.c_str());
      continue;
    }
    char err[32] = "-";
    if (r.rel_max) std::snprintf(err, sizeof err, "%.2e", *r.rel_max);
    std::printf("%-6lld %-14s %10.4f %10.4f %10.4f %9.1f %6.1f%% %9.1f %11s\n", w, r.name.c_str(), r.time_ms.median,
                r.time_ms.min, r.time_ms.p90, r.gbs, copy_gbs > 0 ? 100 * r.gbs / copy_gbs : 0.0, r.gflops, err);
  }
  const bench::SpmmRun *best = width.best_cusparse(), *own = width.own(), *own_bf16 = width.own_bf16();
  if (own != nullptr && best != nullptr) {
    const double own_ms = own->time_ms.median, best_ms = best->time_ms.median;
    std::printf("%-6lld own vs best cuSPARSE (%s): %.2fx %s\n", w, best->name.c_str(),
                own_ms <= best_ms ? best_ms / own_ms : own_ms / best_ms, own_ms <= best_ms ? "faster" : "SLOWER");
  }
  if (own_bf16 != nullptr && best != nullptr) {
    const double ratio = best->time_ms.median / own_bf16->time_ms.median;
    std::printf("%-6lld own-bf16 vs best fp32 cuSPARSE (%s): %.2fx (target >= %.1fx: %s)\n", w, best->name.c_str(),
                ratio, bench::kBf16SpeedupTarget, ratio >= bench::kBf16SpeedupTarget ? "met" : "NOT MET");
  }
}

void run_bench_spmm(const BenchOptions& o) {
  const bench::SpmmBenchConfig config = spmm_config(o);
  config.validate();  // every argument, before the data is read or a GPU is touched
  const auto report = bench::bench_spmm(load_data(o.data), config);
  std::printf("%-6s %-14s %10s %10s %10s %9s %7s %9s %11s\n", "width", "spmm", "median ms", "min ms", "p90 ms", "GB/s",
              "% copy", "GFLOP/s", "rel error");
  for (const auto& width : report.widths) print_spmm_width(width, report.copy_gbs);
  if (report.config.reorder != Reorder::kNone)
    std::printf("reorder %s: order %.3f s, apply %.3f s\n", to_string(report.config.reorder),
                report.reorder_seconds[0], report.reorder_seconds[1]);
  std::printf("copy bandwidth %.1f GB/s (D2D, read + write); Â %s rows, %s entries; %s\n", report.copy_gbs,
              with_commas(report.rows).c_str(), with_commas(report.entries).c_str(),
              report.all_verified ? "outputs agree" : "OUTPUTS DISAGREE");
  if (!o.json.empty()) write_json(o.json, report.to_json());
  if (!report.all_verified)
    throw Error("gcnpart bench spmm: implementations disagree beyond rel_l2 " + std::to_string(bench::kMaxRelL2) +
                " / rel_max " + std::to_string(bench::kMaxRelMax) + " or left non-finite outputs (see the table" +
                (o.json.empty() ? std::string(")") : " and " + o.json + ")"));
}

// ------------------------------------------------------------------------------------------------ epoch

void run_bench_epoch(const BenchOptions& o) {
  bench::EpochBenchConfig config;
  config.device = o.device;
  config.precision = o.precision;
  config.spmm_tuning = o.spmm_tuning;
  config.reorder = from_string<Reorder>(o.reorder, "--reorder");
  config.spmm = o.spmm;
  config.warmup = o.warmup;
  config.repeats = o.repeats;
  config.layers = o.layers;
  config.hidden = o.hidden;
  config.normalize_features = !o.no_normalize;
  config.seed = o.seed;
  config.cuda_graph = o.cuda_graph;
  config.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  config.validate();  // every argument, before the data is read or a GPU is touched
  const auto report = bench::bench_epoch(load_data(o.data), config);
  std::printf("%-9s %10s %10s %10s %10s %12s %12s\n", "spmm", "median ms", "min ms", "p90 ms", "wall ms", "peak tracked",
              "driver used");
  for (const auto& run : report.runs) {
    if (run.status != "ok") {
      std::printf("%-9s %s: %s\n", run.spmm.c_str(), run.status.c_str(), run.message.c_str());
      continue;
    }
    std::printf("%-9s %10.3f %10.3f %10.3f %10.3f %12s %12s\n", run.spmm.c_str(), run.epoch_ms.median,
                run.epoch_ms.min, run.epoch_ms.p90, run.wall_ms.median,
                human_bytes(static_cast<double>(run.memory.peak)).c_str(),
                human_bytes(static_cast<double>(std::max(run.driver_after_setup, run.driver_after_training))).c_str());
  }
  for (const auto& run : report.runs) {
    if (run.status != "ok" || run.profiled_epoch_ms <= 0) continue;
    std::printf("%-9s profiled epoch %.3f ms:", run.spmm.c_str(), run.profiled_epoch_ms);
    for (std::size_t k = 0; k < kernels::kOpClassNames.size(); ++k)
      std::printf(" %s %.3f ms (%.1f%%, %lld calls)", kernels::kOpClassNames[k], run.profile.ms[k],
                  100 * run.profile.ms[k] / run.profiled_epoch_ms, static_cast<long long>(run.profile.calls[k]));
    std::printf(", unattributed %.3f ms\n", run.profiled_epoch_ms - run.profile.total_ms());
    for (const auto& op : run.profile.ops)
      std::printf("  %-34s %9.3f ms %5.1f%% %4lld calls\n", op.name.c_str(), op.ms, 100 * op.ms / run.profiled_epoch_ms,
                  static_cast<long long>(op.calls));
  }
  if (report.config.reorder != Reorder::kNone)
    std::printf("reorder %s: order %.3f s, apply %.3f s (not in the epoch times)\n",
                to_string(report.config.reorder), report.reorder_seconds[0], report.reorder_seconds[1]);
  if (report.speedup_own_vs_cusparse) std::printf("own vs cuSPARSE epoch: %.2fx\n", *report.speedup_own_vs_cusparse);
  if (!o.json.empty()) write_json(o.json, report.to_json());
}

// ------------------------------------------------------------------------------------------------ calibrate

struct CalibrateOptions {
  bench::CalibrateConfig config;
  /// The graphs of the built-in partition/fit/calibration.json, by family (bench::parse_calibration_graph).
  std::string graphs =
      "15:16,16:8,17:32,19:16,19:48,20:24,21:16,"
      "rmat-mild=rmat:17:16:0.45:0.22:0.22,rmat-mild=rmat:20:16:0.45:0.22:0.22,"
      "uniform=sbm:300000:16:2:0.5,uniform=sbm:2000000:24:2:0.5,"
      "community=sbm:500000:20:256:0.9,community=sbm:1500000:12:1024:0.95,"
      "mesh=grid:700:2,mesh=grid:120:3,"
      "mesh-ordered=grid:1400:2:natural,mesh-ordered=grid:60:3:natural,"
      "snap=file:email-Enron,metis=file:4elt",
      widths = "8,16,32,40,48,64,104,128,256,512", json, cards_file;
  bool no_gemm = false;
};

void run_bench_calibrate(CalibrateOptions& o) {
  o.config.graphs.clear();
  std::size_t at = 0;
  while (at <= o.graphs.size()) {
    const std::size_t end = std::min(o.graphs.find(',', at), o.graphs.size());
    o.config.graphs.push_back(bench::parse_calibration_graph(o.graphs.substr(at, end - at)));
    at = end + 1;
  }
  o.config.widths = parse_widths(o.widths);
  o.config.data_dir = data_folder("");
  o.config.gemm = !o.no_gemm;
  o.config.log = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  const partition::CardCatalogue cat = partition::load_cards(o.cards_file);
  const partition::Card& card = cat.find(o.config.card);
  o.config.validate();
  const nlohmann::json doc = bench::bench_calibrate(o.config);
  // What fit will make of it: the efficiencies per kernel.
  const auto data = partition::parse_calibration_data(doc.dump(), "the measured calibration");
  const partition::Calibration cal = partition::calibrate(card, data);
  std::printf("calibration of %s (%s)\n", card.id.c_str(), card.name.c_str());
  const auto provenance = [&](const std::string& factor) {
    for (const auto& [name, where] : cal.provenance)
      if (name == factor) return where;
    return std::string();
  };
  std::printf("SpMM: DRAM efficiency of gathered / streamed bytes, L2 GB/s per SM, by width\n");
  for (const auto* t : {&cal.spmm_own, &cal.spmm_cusparse, &cal.spmm_bf16}) {
    const bool own = t == &cal.spmm_own, cus = t == &cal.spmm_cusparse;
    std::printf("%-14s", own ? "spmm own" : cus ? "spmm cusparse" : "spmm own-bf16");
    for (const auto& [w, e] : t->gathered.points)
      std::printf(" w%g %.2f/%.2f/%.0f", w, e, t->stream.at(w), t->l2_per_sm.at(w) / 1e9);
    std::printf(" fixed %.1f us (%s)\n", t->fixed_seconds * 1e6,
                provenance(own ? "spmm_own" : cus ? "spmm_cusparse" : "spmm_bf16").c_str());
  }
  std::printf("stream %.3f, gemm fp32 %.3f tf32 %.3f bf16 %.3f, launch %.2f us\n", cal.stream_efficiency,
              cal.gemm_fp32_efficiency, cal.gemm_tf32_efficiency, cal.gemm_bf16_efficiency, cal.launch_seconds * 1e6);
  if (!o.json.empty()) write_json(o.json, doc);
}

void add_shared_options(CLI::App& cmd, BenchOptions& o, const std::vector<std::string>& spmm_choices) {
  add_data_options(cmd, o.data);
  cmd.add_option("--device", o.device, "CUDA device: cuda or cuda:N (GPU only)")->capture_default_str();
  cmd.add_option("--precision", o.precision,
                 "fp32, tf32 (TF32 GEMMs) or bf16 (spmm: bf16 X, fp32 accumulation, beside the fp32 peers; epoch: "
                 "bf16 features and activations, bf16 GEMMs, fp32 accumulation and master weights)")
      ->check(CLI::IsMember(enum_names<Precision>()))
      ->capture_default_str();
  cmd.add_option("--spmm", o.spmm, "Which SpMM to measure")->check(CLI::IsMember(spmm_choices))->capture_default_str();
  add_spmm_tuning_options(cmd, o.spmm_tuning);
  add_reorder_option(cmd, o.reorder);
  cmd.add_option("--warmup", o.warmup, "Untimed runs first")->capture_default_str();
  cmd.add_option("--repeats", o.repeats, "Timed runs (the median is reported)")->capture_default_str();
  cmd.add_option("--seed", o.seed, "Seed (random X for spmm, weights and dropout for epoch)")->capture_default_str();
  cmd.add_option("--json", o.json, "Write the full report as JSON");
}

}  // namespace

Command register_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure the SpMM against cuSPARSE, the GCN training epoch, collectives or host <-> device copies");
  cmd->require_subcommand(1);
  auto spmm_opts = std::make_shared<BenchOptions>();
  auto epoch_opts = std::make_shared<BenchOptions>();

  auto* s = cmd->add_subcommand(
      "spmm", "Â X for each width: own kernel and every cusparseSpMM algorithm (time, GB/s, GFLOP/s, agreement)");
  add_shared_options(*s, *spmm_opts, {"own", "cusparse", "all"});
  s->add_option("--widths", spmm_opts->widths, "Dense widths, comma-separated")->capture_default_str();
  s->add_flag("--no-flush-l2", spmm_opts->no_flush_l2, "Do not write an L2-sized buffer before each timed run");

  auto* e = cmd->add_subcommand("epoch", "GCN training epochs (forward, backward, Adam): time and peak memory");
  add_shared_options(*e, *epoch_opts, {"own", "cusparse", "auto", "all"});
  e->add_option("--layers", epoch_opts->layers, "GCN layers")->capture_default_str();
  e->add_option("--hidden", epoch_opts->hidden, "Hidden width")->capture_default_str();
  e->add_flag("--no-normalize", epoch_opts->no_normalize, "Do not row-normalise the input features");
  e->add_option("--cuda-graph", epoch_opts->cuda_graph,
                "Timed epochs replay a CUDA Graph of the step captured on the second epoch (on; auto: when rows x "
                "widest width <= 2^25) or launch every kernel (off); the profiled epoch is always launched kernel by "
                "kernel")
      ->check(CLI::IsMember(enum_names<CudaGraphMode>()))
      ->capture_default_str();

  auto cal_opts = std::make_shared<CalibrateOptions>();
  auto* c = cmd->add_subcommand("calibrate",
                                "Measure gcnpart fit's per-kernel efficiencies on this GPU (SpMM by width, GEMM by math, "
                                "copy, launches) and write a calibration JSON for gcnpart fit --calibration");
  c->add_option("--device", cal_opts->config.device, "CUDA device: cuda or cuda:N")->capture_default_str();
  c->add_option("--card", cal_opts->config.card, "Catalogue id of this GPU (gcnpart cards)")->capture_default_str();
  c->add_option("--cards", cal_opts->cards_file, "Extra card file (JSON like partition/fit/cards.json; merged by id)");
  c->add_option("--graphs", cal_opts->graphs,
                "Graphs for the SpMMs, comma-separated FAMILY=SPEC (SPEC: rmat:SCALE:EDGE_FACTOR[:A:B:C], "
                "sbm:NODES:DEGREE:CLASSES:P_INTRA, grid:SIDE:DIMS[:natural], file:DATA) or SCALE:EDGE_FACTOR "
                "(Graph500 RMAT)")
      ->capture_default_str();
  c->add_option("--widths", cal_opts->widths, "SpMM widths")->capture_default_str();
  c->add_option("--repeats", cal_opts->config.repeats, "Timed runs per call (median)")->capture_default_str();
  c->add_flag("--no-gemm", cal_opts->no_gemm, "Leave the GEMM efficiencies at their defaults");
  c->add_option("--json", cal_opts->json, "Write the calibration document here")->required();

  const Command nccl = register_bench_nccl(*cmd);  // tools/cmd_bench_nccl.cpp
  const Command copy = register_bench_copy(*cmd);  // tools/cmd_bench_copy.cpp

  return {cmd, [s, c, spmm_opts, epoch_opts, cal_opts, nccl, copy] {
            if (nccl.app->parsed())
              nccl.run();
            else if (copy.app->parsed())
              copy.run();
            else if (c->parsed())
              run_bench_calibrate(*cal_opts);
            else if (s->parsed())
              run_bench_spmm(*spmm_opts);
            else
              run_bench_epoch(*epoch_opts);
          }};
}

}  // namespace gcnpart::cli
