// gcnpart compare: every strategy x K x layers on one graph, priced side by side.
#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "engine/compare.hpp"
#include "engine/problem.hpp"
#include "engine/trainer.hpp"
#include "engine/trainer.hpp"
#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "base/progress.hpp"
#include "partition/plan.hpp"
#include "tools/cli_common.hpp"
#include "tools/report/report_html.hpp"

#ifndef GCNPART_GIT_COMMIT
#define GCNPART_GIT_COMMIT "unknown"
#endif

namespace gcnpart::cli {

namespace {

struct CompareOptions {
  DataOptions data;
  std::vector<int> parts{2, 4, 8};
  std::vector<int> layers{2, 3};
  /// Every strategy besides single (the reference row of every layer count).
  std::vector<std::string> strategies = partition::strategy_names_where(
      [](const partition::StrategyTraits& t) { return !partition::one_device(t.value); });
  std::string partitioner = "metis";
  bool train = false;
  int measure_epochs = engine::CompareRequest{}.measure_epochs;
  std::string json, html, save_plan;
  engine::TrainConfig config;
  std::uint64_t partition_seed = 1;
  double imbalance = 1.03;
  std::string objective = "cut";
  std::string metis_sample = "auto";
  std::string balance = "work";
  std::string device = "cpu";
  std::string precision = "fp32";
};

/// The request `gcnpart compare` makes of the library. @throws InvalidInput.
engine::CompareRequest make_request(const CompareOptions& o, const datasets::Dataset& ds) {
  engine::CompareRequest q;
  q.parts = o.parts;
  q.layers = o.layers;
  for (const auto& s : o.strategies) q.strategies.push_back(from_string<partition::Strategy>(s, "--strategies"));
  q.partition.method = from_string<partition::Partitioner>(o.partitioner, "--partitioner");
  q.partition.seed = o.partition_seed;
  q.partition.imbalance = o.imbalance;
  q.partition.objective = from_string<partition::Objective>(o.objective, "--objective");
  q.partition.metis_edge_sample = metis_sample(o.metis_sample, ds.graph.num_edges());
  q.partition.balance = from_string<partition::Balance>(o.balance, "--balance");
  q.train = o.train;
  q.measure_epochs = o.measure_epochs;
  q.config = o.config;
  q.config.model.precision = from_string<Precision>(o.precision, "--precision");
  q.backend = from_string<Backend>(o.device, "--device");
  q.save_plan_dir = o.save_plan;
  q.validate();
  return q;
}

/// The column headings; on CPU devices with K > 1 first the line that says the K devices share the host's cores,
/// so no reader of the table takes a K > 1 epoch time for K separate devices'.
void print_header(const engine::CompareRequest& q) {
  const bool shared = q.backend == Backend::kCpu &&
                      std::any_of(q.parts.begin(), q.parts.end(), [](int k) { return k > 1; });
  if (shared) std::printf("epoch ms on cpu: %s\n", engine::cpu_epoch_time_note().c_str());
  std::printf("%-7s %3s %2s %12s %12s %8s %7s %12s %12s %12s %25s %9s %9s %15s %8s\n", "strategy", "K", "L",
              "edge cut", "lost edges", "lost %", "repl", "halo/dev", "peak/dev", "sent/ep all",
              shared ? "epoch ms (min-max) shared" : "epoch ms (min-max)", "comm ms", "wait ms", "work imb p/m",
              "test acc");
}

/// "12.34 (11.90-13.01)": the median epoch and the fastest and slowest timed epoch, in ms.
std::string epoch_cell(const nlohmann::json& r) {
  char text[64];
  std::snprintf(text, sizeof text, "%.2f (%.2f-%.2f)", r["epoch_ms_median"].get<double>(),
                r["epoch_ms_min"].get<double>(), r["epoch_ms_max"].get<double>());
  return text;
}

/// The largest of a per-device series in a row.
template <typename T>
T row_max(const nlohmann::json& series) {
  T m{};
  for (const auto& v : series) m = std::max(m, v.get<T>());
  return m;
}

/// The sum of a per-device series in a row (bytes sent by all devices: the HTML report's "sent per epoch").
template <typename T>
T row_sum(const nlohmann::json& series) {
  T s{};
  for (const auto& v : series) s += v.get<T>();
  return s;
}

void print_row(const nlohmann::json& r) {
  if (r.contains("status")) {
    std::printf("%-8s %3d %2d skipped: %s\n", r["strategy"].get<std::string>().c_str(), r["parts"].get<int>(),
                r["layers"].get<int>(), r["reason"].get<std::string>().c_str());
    return;
  }
  const auto& m = r["metrics"];
  std::int64_t peak = 0;
  for (const auto& mem : r["memory"]) peak = std::max(peak, mem["peak_bytes"].get<std::int64_t>());
  double halo = 0;
  const auto& inner = m["inner_nodes"];
  const auto& local = m["local_nodes"];
  for (std::size_t d = 0; d < local.size(); ++d)
    halo += static_cast<double>(local[d].get<std::int64_t>() - inner[d].get<std::int64_t>());
  halo /= static_cast<double>(std::max<std::size_t>(1, local.size()));
  char work[32];
  std::snprintf(work, sizeof work, "%.3f/%.3f", m["work_imbalance"].get<double>(),
                r["work_imbalance_measured"].get<double>());
  char acc[16] = "-";
  if (r.contains("train")) std::snprintf(acc, sizeof acc, "%.2f%%", 100 * r["train"]["test_accuracy"].get<double>());
  std::printf("%-8s %3d %2d %12s %12s %7.2f%% %7.3f %12s %12s %12s %25s %9.3f %9.3f %15s %8s\n",
              r["strategy"].get<std::string>().c_str(), r["parts"].get<int>(), r["layers"].get<int>(),
              with_commas(m["edge_cut"].get<std::int64_t>()).c_str(),
              with_commas(m["lost_edges"].get<std::int64_t>()).c_str(), 100 * m["lost_fraction"].get<double>(),
              m["replication_factor"].get<double>(), with_commas(std::llround(halo)).c_str(),
              human_bytes(static_cast<double>(peak)).c_str(),
              human_bytes(static_cast<double>(row_sum<std::int64_t>(r["bytes_sent_per_epoch"]))).c_str(),
              epoch_cell(r).c_str(), row_max<double>(r["comm_ms_per_epoch"]),
              row_max<double>(r["wait_ms_per_epoch"]), work, acc);
  std::fflush(stdout);
}

/// What the table's columns mean where a reader could misread them: printed once, after the rows.
void print_notes(const engine::CompareReport& report) {
  bool gather = false, multi = false, drop = false, trained = false;
  for (const auto& r : report.rows) {
    if (r.contains("status")) continue;
    gather = gather || r["strategy"] == "gather";
    drop = drop || r["strategy"] == "drop";
    multi = multi || r["parts"].get<int>() > 1;
    trained = trained || r.contains("train");
  }
  std::printf("columns: repl = nodes held by all devices / nodes; halo/dev = halo nodes per device (mean, rounded); "
              "peak/dev = largest peak over the devices; sent/ep all = bytes all devices send per epoch; epoch ms = "
              "the median of the timed epochs (those after the first) and their fastest-slowest; comm ms, "
              "wait ms = the largest over the devices; work imb p/m = the largest device's work / the mean, "
              "predicted by the plan / measured (compute time)\n");
  if (drop && multi)
    std::printf("drop: its edge cut can differ from the exact strategies' because drop balances the work of its own "
                "subgraph, a partition of its own; theirs is shared\n");
  if (!trained)
    std::printf("test acc: '-' without --train (add --train to train each configuration to convergence and report "
                "its test accuracy)\n");
  if (gather)
    std::printf("gather: repl counts the rows a device computes (its own, 1.00); its table of K x largest-part rows "
                "is memory, counted in peak/dev (category gather_table)\n");
  std::set<std::string> partition_notes;  // a partitioner that failed and what stood in (each said once)
  for (const auto& r : report.rows)
    if (r.contains("partition_note")) partition_notes.insert(r["partition_note"].get<std::string>());
  for (const auto& n : partition_notes) std::printf("partition: %s\n", n.c_str());
}

void run_compare(const CompareOptions& o) {
  check_outputs({{"--json", &o.json}, {"--html", &o.html}}, o.data);
  if (!o.save_plan.empty()) check_output_folder(o.save_plan, "--save-plan");
  check_distinct(o.strategies, "--strategies");
  if (o.device == "cpu" && o.precision == "tf32") warn("--precision tf32 has no effect on the CPU (fp32 GEMMs there)");
  JsonOnStdout json_only(o.json);
  const auto ds = load_data(o.data);
  const engine::CompareRequest request = make_request(o, ds);
  Progress progress("compare", engine::compare_configurations(request));
  // The header comes with the first row: an error before any row (no GPU, a bad option the engine refuses) is then
  // the last thing printed, not followed by a table that never fills.
  bool header = false;
  const auto report = engine::compare(ds, request, [&](const nlohmann::json& row, std::int64_t done, std::int64_t) {
    if (!std::exchange(header, true)) print_header(request);
    print_row(row);
    progress.update(done);
  });
  progress.finish();
  print_notes(report);
  nlohmann::json j = {{"command", "compare"}, {"date", now_iso()}, {"commit", GCNPART_GIT_COMMIT}};
  j.update(report.to_json());
  if (!o.html.empty()) write_file_atomic(o.html, report::compare_html(j));
  const bool to_stdout = json_to_stdout(o.json);
  if (!o.json.empty() && !to_stdout) write_json(o.json, j);
  if (!o.json.empty() && !to_stdout) std::printf("wrote %s\n", escape_text(o.json).c_str());
  if (!o.html.empty()) std::printf("wrote %s\n", escape_text(o.html).c_str());
  if (!o.save_plan.empty())
    std::printf("wrote plans and node -> part files to %s/\n", escape_text(o.save_plan).c_str());
  json_only.release();
  if (to_stdout) write_json(o.json, j);
}

}  // namespace

Command register_compare(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compare", "Run every strategy (single, drop, halo, gather, boundary, pipeline) for each device count and layer "
                 "count on one graph and compare lost edges, halo growth, memory per device, communication, epoch time "
                 "and accuracy. pipeline (one stage of whole layers per device) runs where K <= layers; at K > layers "
                 "its row says 'skipped'");
  auto o = std::make_shared<CompareOptions>();
  add_data_options(*cmd, o->data);
  cmd->add_option("--parts", o->parts, "Device counts K (distinct)")->delimiter(',')->capture_default_str();
  cmd->add_option("--layers", o->layers, "GCN layer counts")->delimiter(',')->capture_default_str();
  cmd->add_option("--strategies", o->strategies,
                  "Strategies besides single (default: all; pipeline runs where K <= layers, one layer per stage at "
                  "least, and prints a 'skipped' row at K > layers)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--partitioner", o->partitioner, "How to split the nodes")
      ->check(CLI::IsMember(enum_names<partition::Partitioner>()))->capture_default_str();
  cmd->add_option("--partition-seed", o->partition_seed, "Partitioner seed")->capture_default_str();
  cmd->add_option("--imbalance", o->imbalance,
                  "Target largest part / mean part for METIS (its ufactor; the weights --balance names). A target, "
                  "not a bound: METIS moves whole nodes, so a part can exceed it by about one node's weight (e.g. "
                  "1.030049 x mean for 1.03 at K = 8); --balance work then moves nodes until the largest device's "
                  "work is within it or no move helps")
      ->capture_default_str();
  cmd->add_option("--objective", o->objective, "METIS objective")->check(CLI::IsMember(enum_names<partition::Objective>()))
      ->capture_default_str();
  cmd->add_option("--balance", o->balance,
                  "What METIS balances across parts: work (each device's Â entries + 8 x rows, refined per "
                  "strategy; default), nodes, edges (node weight 1 + degree) or both")
      ->check(CLI::IsMember(enum_names<partition::Balance>()))
      ->capture_default_str();
  cmd->add_option("--metis-sample", o->metis_sample,
                  "Fraction of edges METIS partitions (auto: all below 20 M directed edges, else 0.1)")
      ->capture_default_str();
  cmd->add_flag("--train", o->train, "Train each configuration fully and report accuracy (otherwise a few epochs "
                                     "measure memory, communication and time)");
  cmd->add_option("--epochs", o->config.epochs, "Epochs with --train")->capture_default_str();
  cmd->add_option("--measure-epochs", o->measure_epochs,
                  "Epochs without --train: the first warms up, the rest are timed (median and min-max per row)")->capture_default_str();
  cmd->add_option("--device", o->device,
                  "cpu (K virtual devices) or cuda (single on GPU 0, K devices on GPUs 0..K-1 through NCCL; K above "
                  "the visible GPUs is skipped)")
      ->check(CLI::IsMember(enum_names<Backend>()))
      ->capture_default_str();
  cmd->add_option("--precision", o->precision, "fp32, tf32 or bf16 (as gcnpart train; bf16 skips pipeline)")
      ->check(CLI::IsMember(enum_names<Precision>()))
      ->capture_default_str();
  cmd->add_option("--hidden", o->config.model.hidden, "Hidden width")->capture_default_str();
  cmd->add_option("--boundary-overlap", o->config.model.boundary_overlap,
                  "Boundary strategy: aggregate the interior rows while the boundary rows travel (true/false)")
      ->capture_default_str();
  cmd->add_option("--dropout", o->config.model.dropout, "Dropout")->capture_default_str();
  cmd->add_option("--lr", o->config.model.lr, "Learning rate")->capture_default_str();
  cmd->add_option("--seed", o->config.model.seed, "Model seed")->capture_default_str();
  cmd->add_option("--json", o->json, "Write the full comparison as JSON ('-' for stdout: then stdout carries only "
                                     "the JSON, the table goes to stderr)");
  cmd->add_option("--save-plan", o->save_plan,
                  "Folder (created) for each measured configuration's plan, <strategy>-k<K>-l<L>.gplan, and its node "
                  "-> part mapping, <strategy>-k<K>-l<L>.parts (one part id per line; numpy.loadtxt reads it)");
  cmd->add_option("--html", o->html, "Write a self-contained HTML report with charts");
  return {cmd, [o] { run_compare(*o); }};
}

}  // namespace gcnpart::cli
