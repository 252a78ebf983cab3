// bench_epoch: GCN training epochs (forward, backward, Adam) on one GPU per SpMM choice: CUDA-event and wall
// time (median after warm-up), training loss, set-up time, tracked peak memory and what the driver reports.
#include <chrono>

#include "bench/bench.hpp"
#include "bench/detail/timing.hpp"
#include "engine/problem.hpp"
#include "engine/report_json.hpp"
#include "partition/reorder.hpp"
#include "base/error.hpp"

namespace gcnpart::bench {

namespace {

std::vector<std::pair<std::string, SpmmAlgo>> variants(const EpochBenchConfig& c) {
  std::vector<std::pair<std::string, SpmmAlgo>> out;
  if (c.spmm == "own" || c.spmm == "all") out.emplace_back("own", SpmmAlgo::kOwn);
  if ((c.spmm == "cusparse" || c.spmm == "all") && c.precision != "bf16")  // bf16 SpMM is the own kernel only
    out.emplace_back("cusparse", SpmmAlgo::kCusparse);
  if (c.spmm == "auto" || c.spmm == "all") out.emplace_back("auto", SpmmAlgo::kAuto);
  return out;
}

EpochRun run_epochs(const engine::Device& device, const engine::LocalProblem& problem, engine::GcnConfig cfg,
                    const EpochBenchConfig& c) {
  EpochRun run;
  const auto t0 = std::chrono::steady_clock::now();
  engine::Resources res(device);
  engine::GcnModel gcn(res, problem, cfg);
  run.setup_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  run.driver_after_setup = res.driver_used_bytes();
  const cudaStream_t stream = res.context().stream;
  detail::Event start, stop;
  std::vector<double> event_ms, wall_ms;
  for (int epoch = 0; epoch < c.warmup + c.repeats; ++epoch) {
    const auto w0 = std::chrono::steady_clock::now();
    start.record(stream);
    const double loss_sum = gcn.train_step(epoch);  // synchronises
    stop.record(stream);
    stop.synchronize();
    const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
    run.train_loss.push_back(problem.global_train > 0 ? loss_sum / static_cast<double>(problem.global_train) : 0.0);
    if (epoch < c.warmup) continue;
    event_ms.push_back(detail::elapsed_ms(start, stop));
    wall_ms.push_back(wall);
  }
  run.cuda_graph = gcn.cuda_graph_status();
  // One profiled epoch (eager: a captured step cannot time its kernels): every operation timed by class.
  kernels::OpProfiler profiler;
  res.set_profiler(&profiler);
  start.record(stream);
  (void)gcn.train_step(c.warmup + c.repeats);
  stop.record(stream);
  stop.synchronize();
  res.set_profiler(nullptr);
  run.profiled_epoch_ms = detail::elapsed_ms(start, stop);
  run.profile = profiler.summary();
  run.memory = res.memory().stats();
  run.driver_after_training = res.driver_used_bytes();
  run.epoch_ms = Summary::of(event_ms);
  run.wall_ms = Summary::of(wall_ms);
  return run;
}

}  // namespace

engine::GcnConfig EpochBenchConfig::model() const {
  engine::GcnConfig m;
  m.layers = layers;
  m.hidden = hidden;
  m.seed = seed;
  m.precision = from_string<Precision>(precision, "--precision");
  m.spmm_tuning = spmm_tuning;
  m.cuda_graph = from_string<CudaGraphMode>(cuda_graph, "--cuda-graph");
  return m;
}

void EpochBenchConfig::validate() const {
  if (warmup < 0) throw InvalidInput::parameter("--warmup", std::to_string(warmup), ">= 0");
  if (repeats < 1) throw InvalidInput::parameter("--repeats", std::to_string(repeats), ">= 1");
  if (precision != "fp32" && precision != "tf32" && precision != "bf16")
    throw InvalidInput::parameter("--precision", precision, "fp32, tf32 or bf16");
  if (spmm != "own" && spmm != "cusparse" && spmm != "auto" && spmm != "all")
    throw InvalidInput::parameter("--spmm", spmm, "own, cusparse, auto or all");
  model().validate();
  (void)cuda_device(device);
  if (spmm == "cusparse" && precision == "bf16")
    throw InvalidInput::parameter("--spmm", "cusparse", "own, auto or all with --precision bf16 (own kernel only)");
}

EpochBenchReport bench_epoch(const datasets::Dataset& user_data, const EpochBenchConfig& config) {
  config.validate();
  const engine::Device device = cuda_device(config.device);
  EpochBenchReport report;
  report.config = config;
  report.config.log = nullptr;
  report.date = detail::now_iso();
  report.commit = detail::commit();
  report.dataset = engine::dataset_json(user_data);
  report.model = config.model();
  partition::Reordering reordering;
  datasets::Dataset reordered;
  // The feature rows stay in the user's order until the problem gathers (and normalises) them: one copy.
  const datasets::Dataset& data = partition::reorder_dataset(user_data, config.reorder, reordering, reordered,
                                                             partition::PermuteFeatures::kLeave);
  report.reorder_seconds[0] = reordering.order_seconds;
  report.reorder_seconds[1] = reordering.apply_seconds;
  const engine::LocalProblem problem =
      engine::single_device_problem(data, config.normalize_features, user_data, reordering);
  report.dims = report.model.dims(problem.num_features, problem.num_classes);
  if (config.log) {
    std::string arch;
    for (auto d : report.dims) arch += (arch.empty() ? "" : "-") + std::to_string(d);
    config.log("gcnpart bench epoch: " + data.name + " (" + detail::commas(data.num_nodes()) + " nodes, " +
               detail::commas(data.graph.num_edges()) + " edges) on " + device.name() + " (" +
               engine::cuda_device_name(device.index) + "), GCN " + arch + ", " + config.precision + ", " +
               std::to_string(config.warmup) + " + " + std::to_string(config.repeats) + " epochs");
  }
  report.gpu = GpuInfo::query(device.index);
  double own_ms = 0, cusparse_ms = 0;
  for (const auto& [name, algo] : variants(config)) {
    engine::GcnConfig cfg = report.model;
    cfg.spmm = algo;
    EpochRun run;
    try {
      run = run_epochs(device, problem, cfg, config);
    } catch (const OutOfMemory& e) {
      run.status = "out of memory";
      run.message = e.what();
    }
    run.spmm = name;
    if (run.status == "ok" && name == "own") own_ms = run.epoch_ms.median;
    if (run.status == "ok" && name == "cusparse") cusparse_ms = run.epoch_ms.median;
    report.runs.push_back(std::move(run));
  }
  if (own_ms > 0 && cusparse_ms > 0) report.speedup_own_vs_cusparse = cusparse_ms / own_ms;
  return report;
}

nlohmann::json EpochRun::to_json() const {
  nlohmann::json run = {{"spmm", spmm}};
  if (status != "ok") {
    run["status"] = status;
    run["message"] = message;
    return run;
  }
  run["status"] = "ok";
  run["epoch_ms"] = epoch_ms.to_json();
  run["wall_ms"] = wall_ms.to_json();
  run["train_loss"] = train_loss;
  run["setup_seconds"] = setup_seconds;
  run["cuda_graph"] = cuda_graph;
  nlohmann::json classes = nlohmann::json::object();
  for (std::size_t k = 0; k < kernels::kOpClassNames.size(); ++k)
    classes[kernels::kOpClassNames[k]] = {{"ms", profile.ms[k]},
                                          {"calls", profile.calls[k]},
                                          {"share", profiled_epoch_ms > 0 ? profile.ms[k] / profiled_epoch_ms : 0.0}};
  nlohmann::json ops = nlohmann::json::array();
  for (const auto& op : profile.ops)
    ops.push_back({{"name", op.name},
                   {"class", kernels::kOpClassNames[static_cast<std::size_t>(op.op)]},
                   {"ms", op.ms},
                   {"calls", op.calls},
                   {"share", profiled_epoch_ms > 0 ? op.ms / profiled_epoch_ms : 0.0}});
  run["breakdown"] = {{"profiled_epoch_ms", profiled_epoch_ms},
                      {"classes", classes},
                      {"operations", ops},
                      {"unattributed_ms", profiled_epoch_ms - profile.total_ms()},
                      {"note", "one extra epoch with CUDA events around every kernels:: operation; unattributed = "
                               "launch gaps, host work and operations outside kernels:: (cuSPARSE plans)"}};
  run["memory"] = engine::to_json(memory);
  run["peak_tracked_bytes"] = memory.peak;
  run["driver_used_bytes"] = {{"after_setup", driver_after_setup}, {"after_training", driver_after_training},
                              {"note", "cudaMemGetInfo total - free: includes the CUDA context and libraries"}};
  return run;
}

nlohmann::json EpochBenchReport::to_json() const {
  nlohmann::json j;
  j["command"] = "bench epoch";
  j["date"] = date;
  j["commit"] = commit;
  j["gpu"] = gpu.to_json();
  j["dataset"] = dataset;
  j["model"] = {{"dims", dims},
                {"stored_dims", dims.empty() ? dims : model.stored_dims(dims.front(), dims.back())},
                {"layers", model.layers},
                {"hidden", model.hidden},
                {"dropout", model.dropout},
                {"lr", model.lr},
                {"weight_decay", model.weight_decay},
                {"weight_decay_all_layers", model.weight_decay_all_layers},
                {"optimizer", "Adam"},
                {"normalize_features", config.normalize_features}};
  j["precision"] = config.precision;
  j["reorder"] = {{"method", to_string(config.reorder)},
                  {"order_seconds", reorder_seconds[0]},
                  {"apply_seconds", reorder_seconds[1]}};
  j["settings"] = {{"warmup", config.warmup},
                   {"repeats", config.repeats},
                   {"timing", "CUDA events around GcnModel::train_step (forward, backward, Adam; it synchronises), "
                              "wall time alongside"},
                   {"seed", config.seed}};
  engine::add_spmm_tuning_json(j["settings"], config.spmm_tuning);
  j["runs"] = nlohmann::json::array();
  for (const auto& r : runs) j["runs"].push_back(r.to_json());
  if (speedup_own_vs_cusparse) j["speedup_own_vs_cusparse"] = *speedup_own_vs_cusparse;
  return j;
}

}  // namespace gcnpart::bench
