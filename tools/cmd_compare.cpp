// gcnpart compare: every strategy x K x layers on one graph, priced side by side.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <sstream>

#include "engine/distributed.hpp"
#include "engine/trainer.hpp"
#include "kernels/core/atomic_file.hpp"
#include "kernels/core/error.hpp"
#include "kernels/core/progress.hpp"
#include "partition/plan.hpp"
#include "tools/cli_common.hpp"
#include "tools/html_report.hpp"

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
      [](const partition::StrategyTraits& t) { return t.value != partition::Strategy::kSingle; });
  std::string partitioner = "metis";
  bool train = false;
  int measure_epochs = 3;
  std::string json, html;
  engine::TrainConfig config;
  std::uint64_t partition_seed = 1;
  double imbalance = 1.03;
  std::string objective = "cut";
  std::string metis_sample = "auto";
  std::string balance = "work";
  std::string device = "cpu";
  std::string precision = "fp32";
};

nlohmann::json metrics_json(const partition::PlanMetrics& m) {
  return {{"nodes", m.nodes},
          {"edges", m.edges},
          {"edge_cut", m.edge_cut},
          {"comm_volume", m.comm_volume},
          {"lost_edges", m.lost_edges},
          {"lost_fraction", m.lost_fraction},
          {"inner_nodes", m.inner_nodes},
          {"local_nodes", m.local_nodes},
          {"local_edges", m.local_edges},
          {"halo_per_hop", m.halo_per_hop},
          {"replication_factor", m.replication_factor},
          {"replicated_edges", m.replicated_edges},
          {"table_rows", m.table_rows},
          {"index_bytes", m.index_bytes},
          {"boundary_rows", m.boundary_rows},
          {"node_imbalance", m.node_imbalance},
          {"edge_imbalance", m.edge_imbalance},
          {"work", m.work},
          {"work_imbalance", m.work_imbalance},
          {"plan_seconds", m.plan_seconds},
          {"partition_seconds", m.partition_seconds}};
}

double median_after_warmup(const std::vector<double>& v) {
  std::vector<double> t(v.begin() + (v.size() > 1 ? 1 : 0), v.end());
  if (t.empty()) return 0;
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void run_compare(CompareOptions& o) {
  partition::PartitionOptions popt;
  if (o.partitioner == "metis") popt.method = partition::Partitioner::kMetis;
  else if (o.partitioner == "random") popt.method = partition::Partitioner::kRandom;
  else popt.method = partition::Partitioner::kRange;
  popt.seed = o.partition_seed;
  popt.imbalance = o.imbalance;
  popt.objective = o.objective == "vol" ? partition::Objective::kVolume : partition::Objective::kCut;
  std::vector<partition::Strategy> strategies;
  for (const auto& s : o.strategies) strategies.push_back(from_string<partition::Strategy>(s, "--strategies"));
  for (int k : o.parts)
    if (k < 1) throw InvalidInput::parameter("--parts", std::to_string(k), "device counts >= 1");
  for (int l : o.layers)
    if (l < 1 || l > 16) throw InvalidInput::parameter("--layers", std::to_string(l), "1..16");

  const auto ds = load_data(o.data);
  popt.metis_edge_sample = metis_sample(o.metis_sample, ds.graph.num_edges());
  popt.balance = partition::parse_balance(o.balance, "--balance");
  engine::TrainConfig cfg = o.config;
  cfg.model.precision = from_string<Precision>(o.precision, "--precision");
  // GPUs: single on cuda:0, K devices on GPUs 0..K-1 (one thread each, NCCL); K beyond the visible GPUs is skipped.
  const bool cuda = o.device == "cuda";
  const int gpus = cuda ? engine::cuda_device_count() : 0;
  if (cuda && gpus == 0)
    throw InvalidInput::parameter("--device", "cuda", "a visible CUDA device, but none was found");
  engine::LaunchOptions launch;
  if (cuda) launch.backend = Backend::kCuda;
  if (!o.train) cfg.epochs = o.measure_epochs;
  cfg.evaluate_every_epoch = false;
  cfg.validate();

  nlohmann::json report;
  report["command"] = "compare";
  report["date"] = now_iso();
  report["commit"] = GCNPART_GIT_COMMIT;
  report["dataset"] = dataset_json(ds);
  report["partitioner"] = o.partitioner;
  report["metis_edge_sample"] = popt.metis_edge_sample;
  report["balance"] = partition::balance_name(popt.balance);
  report["parts"] = o.parts;
  report["layers"] = o.layers;
  report["device"] = cuda ? "cuda (" + std::to_string(gpus) + " visible GPU(s), NCCL, one thread each)"
                          : std::string("cpu (virtual devices, one thread each)");
  report["precision"] = o.precision;
  report["epochs"] = cfg.epochs;
  report["trained"] = o.train;
  report["model"] = {{"hidden", cfg.model.hidden}, {"dropout", cfg.model.dropout}, {"lr", cfg.model.lr}};
  nlohmann::json rows = nlohmann::json::array();

  const std::int64_t total = static_cast<std::int64_t>(o.layers.size()) *
                             (1 + static_cast<std::int64_t>(o.parts.size() * strategies.size()));
  Progress progress("compare", total);
  std::int64_t done = 0;
  std::printf("%-7s %3s %2s %12s %12s %8s %7s %12s %12s %12s %10s %9s %15s %8s\n", "strategy", "K", "L",
              "edge cut", "lost edges", "lost %", "repl", "halo/dev", "peak/dev", "sent/epoch", "epoch ms", "comm ms",
              "work imb p/m", "test acc");
  auto print_row = [&](const nlohmann::json& r) {
    const auto& m = r["metrics"];
    std::int64_t peak = 0;
    for (const auto& mem : r["memory"]) peak = std::max(peak, mem["peak_bytes"].get<std::int64_t>());
    std::int64_t sent = 0;
    for (const auto& b : r["bytes_sent_per_epoch"]) sent = std::max(sent, b.get<std::int64_t>());
    double halo = 0;
    const auto& inner = m["inner_nodes"];
    const auto& local = m["local_nodes"];
    for (std::size_t d = 0; d < local.size(); ++d)
      halo += static_cast<double>(local[d].get<std::int64_t>() - inner[d].get<std::int64_t>());
    halo /= std::max<std::size_t>(1, local.size());
    double comm_ms = 0;  // the device that communicates longest
    for (const auto& c : r["comm_ms_per_epoch"]) comm_ms = std::max(comm_ms, c.get<double>());
    char work[32];
    std::snprintf(work, sizeof work, "%.3f/%.3f", m["work_imbalance"].get<double>(),
                  r["work_imbalance_measured"].get<double>());
    char acc[16] = "-";
    if (r.contains("train")) std::snprintf(acc, sizeof acc, "%.2f%%", 100 * r["train"]["test_accuracy"].get<double>());
    std::printf("%-8s %3d %2d %12s %12s %7.2f%% %7.3f %12s %12s %12s %10.3f %9.3f %15s %8s\n",
                r["strategy"].get<std::string>().c_str(), r["parts"].get<int>(), r["layers"].get<int>(),
                with_commas(m["edge_cut"].get<std::int64_t>()).c_str(),
                with_commas(m["lost_edges"].get<std::int64_t>()).c_str(),
                100 * m["lost_fraction"].get<double>(), m["replication_factor"].get<double>(),
                with_commas(static_cast<std::int64_t>(halo)).c_str(), human_bytes(static_cast<double>(peak)).c_str(),
                human_bytes(static_cast<double>(sent)).c_str(), 1e3 * r["epoch_seconds"].get<double>(), comm_ms, work,
                acc);
    std::fflush(stdout);
  };

  // A trained row's measurements: one report type for single and every strategy.
  auto add_run = [&](nlohmann::json& r, const engine::TrainReport& rep) {
    engine::add_device_json(r, rep);
    r["epoch_seconds"] = median_after_warmup(rep.epoch_seconds);
    r["train_loss"] = rep.train_loss;
    if (o.train)
      r["train"] = {{"test_accuracy", rep.accuracy[2]}, {"valid_accuracy", rep.accuracy[1]},
                    {"final_loss", rep.train_loss.back()}, {"epochs", rep.epochs_run}};
  };
  for (int layers : o.layers) {
    engine::TrainConfig c = cfg;
    c.model.layers = layers;
    // Single device: the reference.
    {
      const auto plan = partition::make_plan(ds.graph, partition::Strategy::kSingle, 1, layers, popt);
      const auto problem = engine::single_device_problem(ds, c.normalize_features);
      nlohmann::json r = {{"strategy", "single"}, {"parts", 1}, {"layers", layers},
                          {"metrics", metrics_json(plan.metrics)}, {"work_imbalance_predicted", 1.0}};
      add_run(r, engine::train_single(problem, cuda ? engine::Device::parse("cuda:0") : engine::Device{}, c));
      print_row(r);
      rows.push_back(r);
      progress.update(++done);
    }
    for (int k : o.parts) {
      for (auto s : strategies) {
        if (s == partition::Strategy::kSingle) continue;
        const auto refusal = partition::strategy_refusal(s, k, layers, cfg.model.precision);
        if (refusal && refusal->kind == partition::StrategyRefusal::Kind::kParts) {  // e.g. a stage needs a layer
          progress.update(++done);
          continue;
        }
        // Rows the engine would refuse (bf16 pipeline) or that need more GPUs than there are: said and recorded.
        std::string skip;
        if (refusal) skip = refusal->reason;
        if (cuda && k > gpus) skip = "needs " + std::to_string(k) + " GPUs, " + std::to_string(gpus) + " visible";
        if (!skip.empty()) {
          std::printf("%-8s %3d %2d skipped: %s\n", to_string(s), k, layers, skip.c_str());
          rows.push_back({{"strategy", to_string(s)}, {"parts", k}, {"layers", layers},
                          {"status", "skipped"}, {"reason", skip}});
          progress.update(++done);
          continue;
        }
        const auto plan = partition::make_plan(ds.graph, s, k, layers, popt);
        nlohmann::json r = {{"strategy", to_string(s)}, {"parts", k}, {"layers", layers},
                            {"metrics", metrics_json(plan.metrics)},
                            {"work_imbalance_predicted", plan.metrics.work_imbalance}};
        add_run(r, engine::train_distributed(ds, plan, c, {}, launch));
        print_row(r);
        rows.push_back(r);
        progress.update(++done);
      }
    }
  }
  progress.finish();
  report["rows"] = rows;
  if (!o.json.empty()) write_json(o.json, report);
  if (!o.html.empty()) write_file_atomic(o.html, compare_html(report));
  if (!o.json.empty()) std::printf("wrote %s\n", o.json.c_str());
  if (!o.html.empty()) std::printf("wrote %s\n", o.html.c_str());
}

}  // namespace

Command register_compare(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "compare", "Run every strategy (single, drop, halo, gather, boundary) for each device count and layer count on one graph "
                 "and compare lost edges, halo growth, memory per device, communication, epoch time and accuracy");
  auto o = std::make_shared<CompareOptions>();
  add_data_options(*cmd, o->data);
  cmd->add_option("--parts", o->parts, "Device counts K")->delimiter(',')->capture_default_str();
  cmd->add_option("--layers", o->layers, "GCN layer counts")->delimiter(',')->capture_default_str();
  cmd->add_option("--strategies", o->strategies,
                  "Strategies besides single (pipeline runs where K <= layers: one layer per stage at least)")
      ->delimiter(',')->capture_default_str();
  cmd->add_option("--partitioner", o->partitioner, "How to split the nodes")
      ->check(CLI::IsMember({"metis", "random", "range"}))->capture_default_str();
  cmd->add_option("--partition-seed", o->partition_seed, "Partitioner seed")->capture_default_str();
  cmd->add_option("--imbalance", o->imbalance, "Largest part / mean part (METIS)")->capture_default_str();
  cmd->add_option("--objective", o->objective, "METIS objective")->check(CLI::IsMember({"cut", "vol"}))
      ->capture_default_str();
  cmd->add_option("--balance", o->balance,
                  "What METIS balances across parts: work (each device's Â entries + 8 x rows, refined per "
                  "strategy; default), nodes, edges (node weight 1 + degree) or both")
      ->check(CLI::IsMember({"work", "nodes", "edges", "both"}))
      ->capture_default_str();
  cmd->add_option("--metis-sample", o->metis_sample,
                  "Fraction of edges METIS partitions (auto: all below 20 M directed edges, else 0.1)")
      ->capture_default_str();
  cmd->add_flag("--train", o->train, "Train each configuration fully and report accuracy (otherwise a few epochs "
                                     "measure memory, communication and time)");
  cmd->add_option("--epochs", o->config.epochs, "Epochs with --train")->capture_default_str();
  cmd->add_option("--measure-epochs", o->measure_epochs, "Epochs without --train")->capture_default_str();
  cmd->add_option("--device", o->device,
                  "cpu (K virtual devices) or cuda (single on GPU 0, K devices on GPUs 0..K-1 through NCCL; K above "
                  "the visible GPUs is skipped)")
      ->check(CLI::IsMember({"cpu", "cuda"}))
      ->capture_default_str();
  cmd->add_option("--precision", o->precision, "fp32, tf32 or bf16 (as gcnpart train; bf16 skips pipeline)")
      ->check(CLI::IsMember(enum_names<Precision>()))
      ->capture_default_str();
  cmd->add_option("--hidden", o->config.model.hidden, "Hidden width")->capture_default_str();
  cmd->add_option("--dropout", o->config.model.dropout, "Dropout")->capture_default_str();
  cmd->add_option("--lr", o->config.model.lr, "Learning rate")->capture_default_str();
  cmd->add_option("--seed", o->config.model.seed, "Model seed")->capture_default_str();
  cmd->add_option("--json", o->json, "Write the full comparison as JSON");
  cmd->add_option("--html", o->html, "Write a self-contained HTML report with charts");
  return {cmd, [o] { run_compare(*o); }};
}

}  // namespace gcnpart::cli
