#include "engine/train.hpp"

#include "base/atomic_file.hpp"

#include <algorithm>
#include <optional>
#include <cmath>
#include <filesystem>
#include <numeric>

#include "engine/problem.hpp"
#include "base/stats.hpp"
#include "engine/trainer.hpp"
#include "engine/gcn.hpp"
#include "engine/report_json.hpp"
#include "base/error.hpp"

namespace gcnpart::engine {

namespace {

MeanStd mean_std(const std::vector<double>& v) {
  MeanStd r;
  if (v.empty()) return r;
  r.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  r.std = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  return r;
}

nlohmann::json mean_std_json(const MeanStd& m) { return {{"mean", m.mean}, {"std", m.std}}; }

nlohmann::json accuracy_json(const double (&a)[3]) { return {{"train", a[0]}, {"valid", a[1]}, {"test", a[2]}}; }

/// Creates a checkpoint folder (and its parents) if missing. @throws IoError naming it.
void create_checkpoint_folder(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw IoError(dir, "cannot create the checkpoint folder: " + ec.message());
}

/// Run r's configuration: its seed, and its own checkpoint folder (created) when there are several runs.
TrainConfig run_config(const TrainRequest& req, int r) {
  TrainConfig cfg = req.config;
  cfg.model.seed = req.config.model.seed + static_cast<std::uint64_t>(r);
  if (!req.config.checkpoint_dir.empty() && req.runs > 1) {
    cfg.checkpoint_dir = req.config.checkpoint_dir + "/run-" + std::to_string(r + 1);
    create_checkpoint_folder(cfg.checkpoint_dir);
  }
  return cfg;
}

}  // namespace

void TrainRequest::validate() const {
  config.validate();
  if (runs < 1) throw InvalidInput::parameter("--runs", std::to_string(runs), ">= 1");
  if (parts < 1) throw InvalidInput::parameter("--parts", std::to_string(parts), ">= 1");
  if (partition::one_device(strategy) && parts != 1)
    throw InvalidInput::parameter("--parts", std::to_string(parts), std::string("1 with --strategy ") + to_string(strategy));
  if (!save_plan.empty() && reorder != Reorder::kNone)
    throw InvalidInput::parameter("--save-plan", save_plan,
                                  "--reorder none alongside (a plan names nodes by id, and a reordered run partitions "
                                  "the renumbered graph); --save-parts writes the mapping in your node order either "
                                  "way");
}

TrainSummary train(const datasets::Dataset& user_ds, const TrainRequest& request, const TrainProgress& progress) {
  request.validate();
  TrainSummary s;
  s.request = request;
  s.dataset = dataset_json(user_ds);
  // Reordered data trains in place of the user's (nodes keep their user ids: the same masks, the same model).
  partition::Reordering reordering;
  datasets::Dataset reordered;
  const bool single = partition::one_device(request.strategy);
  // single: the feature rows stay in the user's order until the problem gathers (and normalises) them.
  const auto features = single ? partition::PermuteFeatures::kLeave : partition::PermuteFeatures::kCopy;
  const datasets::Dataset& ds = partition::reorder_dataset(user_ds, request.reorder, reordering, reordered, features);
  {
    const char* names[3] = {"train", "valid", "test"};
    for (int i = 0; i < 3; ++i)
      if (auto it = ds.splits.find(names[i]); it != ds.splits.end())
        s.split_rows[i] = static_cast<std::int64_t>(it->second.size());
  }
  s.reorder_seconds[0] = reordering.order_seconds;
  s.reorder_seconds[1] = reordering.apply_seconds;
  s.dims = request.config.model.dims(ds.num_features, ds.num_classes);
  // single trains the dataset as one problem (no plan copy of a large graph); its plan gives the metrics only.
  const partition::Plan plan = single ? partition::Plan{}
                                      : partition::make_plan(ds.graph, request.strategy, request.parts,
                                                             request.config.model.layers, request.partition);
  s.plan = single ? partition::plan_metrics(ds.graph, request.strategy,
                                            partition::partition_graph(ds.graph, 1, request.partition),
                                            request.config.model.layers)
                  : plan.metrics;
  s.partition_note = plan.partition.note;
  s.partitioner_used = single ? request.partition.method : plan.partition.method;
  if (!request.save_plan.empty() || !request.save_parts.empty()) {
    const partition::Plan one_part =
        single ? partition::make_plan(ds.graph, request.strategy, 1, request.config.model.layers, request.partition)
               : partition::Plan{};
    const partition::Plan& saved = single ? one_part : plan;
    if (!request.save_plan.empty()) partition::save_plan(saved, request.save_plan);
    if (!request.save_parts.empty()) {  // in the user's node order
      partition::Partition user_order = saved.partition;
      if (!reordering.identity())
        for (std::size_t u = 0; u < user_order.part_of.size(); ++u)
          user_order.part_of[u] = saved.partition.part_of[reordering.rank[u]];
      partition::save_parts(user_order, request.save_parts);
    }
  }
  const LocalProblem problem =
      single ? single_device_problem(ds, request.config.normalize_features, user_ds, reordering) : LocalProblem{};
  LaunchOptions launch = request.launch;
  launch.backend = request.device.backend;
  // The checkpoint folder is this run's from the start: a second training pointed at it is refused at once instead
  // of both deleting each other's generations (under mpirun the ranks of one job share it; each file keeps its lock).
  std::optional<FolderClaim> claim;
  if (!request.config.checkpoint_dir.empty()) {
    create_checkpoint_folder(request.config.checkpoint_dir);
    if (!launch.mpi) claim.emplace(request.config.checkpoint_dir, "checkpoints (--checkpoint)");
  }
  for (int r = 0; r < request.runs; ++r) {
    const TrainConfig cfg = run_config(request, r);
    EpochCallback on_epoch;
    if (progress) on_epoch = [&, r](int e, double l, double vl, double va) { progress(r, e, l, vl, va); };
    s.runs.push_back(single ? train_single(problem, request.device, cfg, on_epoch)
                            : train_distributed(ds, plan, cfg, on_epoch, launch));
  }
  std::vector<double> acc[3], times;
  for (const auto& rep : s.runs) {
    for (int k = 0; k < 3; ++k) acc[k].push_back(rep.accuracy[k]);
    const std::vector<double> t = timed_epochs(rep.epoch_seconds);
    times.insert(times.end(), t.begin(), t.end());
  }
  for (int k = 0; k < 3; ++k) s.accuracy[k] = mean_std(acc[k]);
  s.epoch_seconds = mean_std(times);
  s.epoch_median_seconds = median(times);
  return s;
}

nlohmann::json TrainSummary::to_json() const {
  const TrainRequest& q = request;
  const GcnConfig& m = q.config.model;
  const TrainReport& first = runs.front();
  nlohmann::json j;
  j["dataset"] = dataset;
  j["device"] = q.device.name();
  j["strategy"] = to_string(q.strategy);
  j["parts"] = q.parts;
  j["launch"] = q.launch.mpi ? "mpi" : "threads";
  j["partitioner"] = partition::partitioner_name(partitioner_used);
  if (!partition_note.empty()) j["partition_note"] = partition_note;
  j["balance"] = partition::balance_name(q.partition.balance);
  j["model"] = {{"dims", dims},
                {"stored_dims", dims.empty() ? dims : m.stored_dims(dims.front(), dims.back())},
                {"layers", m.layers},
                {"hidden", m.hidden},
                {"dropout", m.dropout},
                {"lr", m.lr},
                {"weight_decay", m.weight_decay},
                {"weight_decay_all_layers", m.weight_decay_all_layers},
                {"normalize_features", q.config.normalize_features},
                {"spmm", to_string(m.spmm)},
                {"gather_chunks", m.gather_chunks},
                {"boundary_overlap", m.boundary_overlap},
                {"cuda_graph", to_string(m.cuda_graph)},
                {"precision", to_string(m.precision)},
                {"epochs", q.config.epochs},
                {"early_stopping", q.config.early_stopping}};
  add_spmm_tuning_json(j["model"], m.spmm_tuning);
  j["reorder"] = {{"method", to_string(q.reorder)},
                  {"order_seconds", reorder_seconds[0]},
                  {"apply_seconds", reorder_seconds[1]}};
  j["lost_edges"] = plan.lost_edges;
  if (!plan.boundary_rows.empty()) j["boundary_rows"] = plan.boundary_rows;  // boundary: rows sent per aggregation
  j["edge_cut"] = plan.edge_cut;
  j["work"] = plan.work;
  j["work_imbalance_predicted"] = plan.work_imbalance;
  j["test_accuracy"] = mean_std_json(accuracy[2]);
  j["split_rows"] = {{"train", split_rows[0]}, {"valid", split_rows[1]}, {"test", split_rows[2]}};
  j["summary"] = {{"accuracy", {{"train", mean_std_json(accuracy[0])},
                                {"valid", mean_std_json(accuracy[1])},
                                {"test", mean_std_json(accuracy[2])}}},
                  {"epoch_seconds", {{"mean", epoch_seconds.mean}, {"std", epoch_seconds.std},
                                     {"median", epoch_median_seconds}}},
                  {"memory", engine::to_json(first.memory.front())},
                  {"driver_used_bytes", first.driver_bytes.front()},
                  {"memory_check", engine::to_json(first.memory_check.front())}};
  nlohmann::json choices = nlohmann::json::object();
  for (const auto& [w, c] : first.spmm_choices) choices[std::to_string(w)] = c;
  j["spmm_choices"] = choices;
  j["cuda_graph"] = first.cuda_graph;  // "on (...)", "off", "off: <why>"; run 1, device 0
  {
    const OffloadReport& o = first.offload;
    j["offload"] = {{"mode", o.mode},
                    {"streamed", o.streamed},
                    {"part_rows", o.part_rows},
                    {"parts", o.parts},
                    {"operands", o.operands},
                    {"host_bytes", o.host_bytes},
                    {"on_host", o.on_host},
                    {"on_device", o.on_device},
                    {"step_h2d_bytes", o.step_h2d_bytes},
                    {"step_d2h_bytes", o.step_d2h_bytes},
                    {"plan_step_h2d_bytes", o.plan_h2d_bytes},
                    {"plan_step_d2h_bytes", o.plan_d2h_bytes},
                    {"h2d_GBps", o.h2d_GBps},
                    {"d2h_GBps", o.d2h_GBps},
                    {"compute_ms", o.compute_ms},
                    {"lower_bound_ms", o.lower_bound_ms}};
  }
  // Run 1 at the top level, as one report: losses, epoch times and the per-device figures.
  j["train_loss"] = first.train_loss;
  j["valid_loss"] = first.valid_loss;
  j["epoch_seconds"] = first.epoch_seconds;
  add_device_json(j, first);
  nlohmann::json all = nlohmann::json::array();
  for (const auto& rep : runs)
    all.push_back({{"seed", rep.seed},
                   {"epochs_run", rep.epochs_run},
                   {"resumed_at", rep.resumed_at},
                   {"accuracy", accuracy_json(rep.accuracy)},
                   {"loss", accuracy_json(rep.loss)},
                   {"train_loss", rep.train_loss},
                   {"valid_loss", rep.valid_loss},
                   {"epoch_seconds", rep.epoch_seconds}});
  j["runs"] = all;
  return j;
}

std::vector<float> predict(const datasets::Dataset& ds, const GcnConfig& model, bool normalize_features,
                           const std::vector<std::vector<float>>& parameters, const Device& device) {
  model.validate();
  const LocalProblem problem = single_device_problem(ds, normalize_features);
  Resources res(device);
  GcnModel gcn(res, problem, model);
  gcn.set_parameters(parameters);
  (void)gcn.evaluate();  // the forward without dropout
  return gcn.logits();
}

}  // namespace gcnpart::engine
