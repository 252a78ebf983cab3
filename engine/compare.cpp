#include "engine/compare.hpp"

#include <filesystem>

#include <algorithm>
#include <map>
#include <thread>
#include <utility>

#include "engine/problem.hpp"
#include "base/stats.hpp"
#include "engine/trainer.hpp"
#include "engine/report_json.hpp"
#include "engine/resources.hpp"
#include "base/error.hpp"

namespace gcnpart::engine {

nlohmann::json to_json(const partition::PlanMetrics& m) {
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

namespace {

/// A measured row: the run's per-device figures, its epoch, and accuracy when trained.
nlohmann::json measured_row(partition::Strategy s, int k, int layers, const partition::PlanMetrics& metrics,
                            const TrainReport& rep, bool trained) {
  nlohmann::json r = {{"strategy", to_string(s)}, {"parts", k}, {"layers", layers}, {"metrics", to_json(metrics)},
                      {"work_imbalance_predicted", metrics.work_imbalance}};
  add_device_json(r, rep);
  // epoch_seconds: the median of the timed epochs (as train's summary computes it); the spread says how far one
  // run's epochs lie from it, so that two rows a few percent apart are not read as a ranking.
  const auto t = timed_epochs(rep.epoch_seconds);
  r["epoch_seconds"] = median(t);
  r["epoch_ms_median"] = 1e3 * median(t);
  r["epoch_ms_min"] = t.empty() ? 0.0 : 1e3 * t.front();
  r["epoch_ms_max"] = t.empty() ? 0.0 : 1e3 * t.back();
  r["epoch_ms_samples"] = t.size();
  r["train_loss"] = rep.train_loss;
  if (trained)
    r["train"] = {{"test_accuracy", rep.accuracy[2]}, {"valid_accuracy", rep.accuracy[1]},
                  {"final_loss", rep.train_loss.back()}, {"epochs", rep.epochs_run}};
  return r;
}

std::vector<partition::Strategy> strategies_of(const CompareRequest& q) {
  if (!q.strategies.empty()) return q.strategies;
  std::vector<partition::Strategy> all;
  for (const auto& t : partition::kStrategies)
    if (!partition::one_device(t.value)) all.push_back(t.value);
  return all;
}

}  // namespace

namespace {
/// A repeated value would measure and report one configuration twice.
template <typename T, typename Name>
void refuse_repeats(const std::vector<T>& values, const char* parameter, Name name) {
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (values[i] == values[j])
        throw InvalidInput::parameter(parameter, name(values[i]) + " twice", "distinct values");
}
}  // namespace

void CompareRequest::validate() const {
  for (int k : parts)
    if (k < 1) throw InvalidInput::parameter("--parts", std::to_string(k), "device counts >= 1");
  refuse_repeats(parts, "--parts", [](int v) { return std::to_string(v); });
  refuse_repeats(layers, "--layers", [](int v) { return std::to_string(v); });
  refuse_repeats(strategies, "--strategies", [](partition::Strategy v) { return std::string(to_string(v)); });
  for (int l : layers)
    if (l < 1 || l > 16) throw InvalidInput::parameter("--layers", std::to_string(l), "1..16");
  if (!train && measure_epochs < 1)
    throw InvalidInput::parameter("--measure-epochs", std::to_string(measure_epochs), ">= 1");
  partition::check_imbalance(partition.imbalance, "--imbalance");  // before the reference rows, not after them
  config.validate();
}

std::string cpu_epoch_time_note() {
  return "the K virtual CPU devices are K threads sharing this machine's " +
         std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
         " cores: epoch times at K > 1 include that contention and are not what K separate devices would take";
}

std::int64_t compare_configurations(const CompareRequest& request) {
  return static_cast<std::int64_t>(request.layers.size()) *
         (1 + static_cast<std::int64_t>(request.parts.size() * strategies_of(request).size()));
}

nlohmann::json CompareReport::to_json() const {
  nlohmann::json j = header;
  j["rows"] = rows;
  return j;
}

CompareReport compare(const datasets::Dataset& ds, const CompareRequest& request, const CompareProgress& progress) {
  request.validate();
  const bool cuda = request.backend == Backend::kCuda;
  if (cuda) expect_cuda_build("--device cuda");
  const int gpus = cuda ? cuda_device_count() : 0;
  if (cuda && gpus == 0) throw InvalidInput::parameter("--device", "cuda", "a visible CUDA device, but none was found");
  TrainConfig cfg = request.config;
  if (!request.train) cfg.epochs = request.measure_epochs;
  cfg.evaluate_every_epoch = false;
  LaunchOptions launch;
  launch.backend = request.backend;
  const partition::PartitionOptions& popt = request.partition;
  const auto strategies = strategies_of(request);
  if (!request.save_plan_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(request.save_plan_dir, ec);
    if (ec) throw IoError(request.save_plan_dir, "cannot create the --save-plan folder: " + ec.message());
  }

  CompareReport report;
  nlohmann::json& h = report.header;
  h["dataset"] = dataset_json(ds);
  h["partitioner"] = partition::partitioner_name(popt.method);
  h["metis_edge_sample"] = popt.metis_edge_sample;
  h["balance"] = partition::balance_name(popt.balance);
  h["parts"] = request.parts;
  h["layers"] = request.layers;
  h["device"] = cuda ? "cuda (" + std::to_string(gpus) + " visible GPU(s), NCCL, one thread each)"
                     : std::string("cpu (virtual devices, one thread each)");
  if (!cuda) h["epoch_time_note"] = cpu_epoch_time_note();
  h["precision"] = to_string(cfg.model.precision);
  h["epochs"] = cfg.epochs;
  h["trained"] = request.train;
  h["model"] = {{"hidden", cfg.model.hidden}, {"dropout", cfg.model.dropout}, {"lr", cfg.model.lr}};

  const std::int64_t total = compare_configurations(request);
  std::int64_t done = 0;
  auto add = [&](nlohmann::json row) {
    report.rows.push_back(std::move(row));
    if (progress) progress(report.rows.back(), ++done, total);
  };
  // One partition per device count and balance target, shared by every strategy and layer count that balances
  // the same work (drop its own; every other node-splitting strategy gather's): METIS and the refinement are the
  // slow part of planning a large graph.
  std::map<std::pair<int, bool>, partition::Partition> partitions;
  auto plan_of = [&](partition::Strategy s, int k, int layers) {
    if (!partition::traits(s).splits_nodes) return partition::make_plan(ds.graph, s, k, layers, popt);
    // drop (the inexact split) balances its own subgraph's work, the exact splits the shared one.
    const std::pair<int, bool> key{k, !partition::traits(s).exact};
    auto it = partitions.find(key);
    if (it == partitions.end()) {
      partition::PartitionOptions own = popt;
      own.work_strategy = s;
      it = partitions.emplace(key, partition::partition_graph(ds.graph, k, own)).first;
    }
    return partition::make_plan(ds.graph, s, it->second, layers);
  };
  for (int layers : request.layers) {
    TrainConfig c = cfg;
    c.model.layers = layers;
    {  // single device: the reference
      const auto metrics = partition::plan_metrics(ds.graph, partition::Strategy::kSingle,
                                                   partition::partition_graph(ds.graph, 1, popt), layers);
      const auto problem = single_device_problem(ds, c.normalize_features);
      auto r = measured_row(partition::Strategy::kSingle, 1, layers, metrics,
                            train_single(problem, Device{request.backend, 0}, c), request.train);
      r["work_imbalance_predicted"] = 1.0;
      add(std::move(r));
    }
    for (int k : request.parts) {
      for (auto s : strategies) {
        if (partition::one_device(s)) continue;
        // What the engine would refuse (pipeline at K > layers: a stage needs a layer; bf16 pipeline), or more
        // GPUs than there are: a "skipped" row that says why, so no configuration vanishes without a word.
        const auto refusal = partition::strategy_refusal(s, k, layers, cfg.model.precision);
        std::string skip;
        if (refusal) skip = refusal->reason;
        if (refusal && refusal->kind == partition::StrategyRefusal::Kind::kParts)
          skip += " (needs " + refusal->expected + ")";
        if (cuda && k > gpus) skip = "needs " + std::to_string(k) + " GPUs, " + std::to_string(gpus) + " visible";
        if (!skip.empty()) {
          add({{"strategy", to_string(s)}, {"parts", k}, {"layers", layers}, {"status", "skipped"}, {"reason", skip}});
          continue;
        }
        const auto plan = plan_of(s, k, layers);
        if (!request.save_plan_dir.empty()) {
          const std::string stem = request.save_plan_dir + "/" + to_string(s) + "-k" + std::to_string(k) + "-l" +
                                   std::to_string(layers);
          partition::save_plan(plan, stem + ".gplan");
          partition::save_parts(plan.partition, stem + ".parts");
        }
        auto row = measured_row(s, k, layers, plan.metrics, train_distributed(ds, plan, c, {}, launch), request.train);
        if (!plan.partition.note.empty()) {
          row["partition_note"] = plan.partition.note;
          row["partitioner_used"] = partition::partitioner_name(plan.partition.method);
        }
        add(std::move(row));
      }
    }
  }
  return report;
}

}  // namespace gcnpart::engine
