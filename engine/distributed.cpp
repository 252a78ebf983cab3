#include "engine/distributed.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <thread>

#include "engine/inprocess_communicator.hpp"
#include "kernels/core/error.hpp"

namespace gcnpart::engine {

LocalProblem device_problem(const datasets::Dataset& ds, const partition::Plan& plan, int device,
                            bool normalize_features) {
  GCNPART_EXPECTS(device >= 0 && device < static_cast<int>(plan.devices.size()), "device out of the plan's range");
  if (!ds.has_features() || !ds.has_labels())
    throw InvalidInput(InputLocation{ds.name, 0, 0}, "dataset has no features or labels",
                       std::to_string(ds.num_features) + " features", "features and labels");
  const partition::DevicePlan& dp = plan.devices[static_cast<std::size_t>(device)];
  LocalProblem p;
  p.name = ds.name + "@" + std::to_string(device);
  const std::int64_t f = ds.num_features;
  const bool gather = plan.strategy == partition::Strategy::kGather;
  // Rows (and, except for gather, columns) are the local nodes: own part first.
  const std::int64_t n_local = gather ? dp.num_inner : static_cast<std::int64_t>(dp.local_nodes.size());
  p.num_rows = p.num_cols = n_local;
  p.global_ids.assign(dp.local_nodes.begin(), dp.local_nodes.begin() + n_local);
  p.num_features = f;
  p.features.resize(static_cast<std::size_t>(n_local * f));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < n_local; ++i)
    std::copy_n(ds.features.begin() + static_cast<std::int64_t>(p.global_ids[i]) * f, f, p.features.begin() + i * f);
  if (normalize_features) row_normalize(p.features, n_local, f);
  p.labels.resize(static_cast<std::size_t>(n_local));
  for (std::int64_t i = 0; i < n_local; ++i) p.labels[i] = ds.labels[p.global_ids[i]];
  p.num_classes = ds.num_classes;

  // Split rows: own nodes only, so that every node's loss is counted exactly once over the devices.
  std::vector<std::int32_t> local_of(static_cast<std::size_t>(ds.num_nodes()), -1);
  for (std::int64_t i = 0; i < dp.num_inner; ++i) local_of[dp.local_nodes[i]] = static_cast<std::int32_t>(i);
  auto rows_of = [&](const char* name, std::vector<NodeId>& rows, std::int64_t& global) {
    const auto it = ds.splits.find(name);
    if (it == ds.splits.end()) return;
    global = static_cast<std::int64_t>(it->second.size());
    for (NodeId v : it->second)
      if (local_of[v] >= 0) rows.push_back(local_of[v]);
    std::sort(rows.begin(), rows.end());
  };
  if (ds.splits.find("train") == ds.splits.end()) (void)ds.split("train");  // throws, naming the splits there are
  rows_of("train", p.train_rows, p.global_train);
  rows_of("valid", p.valid_rows, p.global_valid);
  rows_of("test", p.test_rows, p.global_test);

  if (gather) {
    p.gather = true;
    p.parts = plan.parts;
    p.table_block = plan.table_block;
    p.gather_forward = dp.gather_forward;
    p.gather_backward = dp.gather_backward;
    p.table_dinv = plan.table_dinv;
    p.dinv_row = dp.dinv_own;
    p.dinv_col = dp.dinv_own;
  } else {
    p.graph = dp.local_graph;
    p.dinv_row = dp.dinv;
    p.dinv_col = dp.dinv;
  }
  return p;
}

DistributedReport train_distributed(const datasets::Dataset& ds, const partition::Plan& plan,
                                    const TrainConfig& config, const EpochCallback& on_epoch) {
  config.validate();
  if (plan.strategy == partition::Strategy::kPipeline)
    throw InvalidInput::parameter("--strategy", "pipeline", "drop, halo or gather (pipeline is not executable yet)");
  const int k = plan.parts;
  GCNPART_EXPECTS(static_cast<int>(plan.devices.size()) == k, "plan has one DevicePlan per part");
  auto group = std::make_shared<InProcessGroup>(k);
  DistributedReport report;
  report.strategy = plan.strategy;
  report.parts = k;
  report.memory.resize(static_cast<std::size_t>(k));
  report.bytes_sent.resize(static_cast<std::size_t>(k));
  report.bytes_sent_per_epoch.resize(static_cast<std::size_t>(k));
  std::vector<std::vector<double>> step_seconds(static_cast<std::size_t>(k));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(k));
  const int threads_each = std::max(1, omp_get_max_threads() / k);

  auto worker = [&](int rank) {
    try {
      omp_set_num_threads(threads_each);
      const LocalProblem problem = device_problem(ds, plan, rank, config.normalize_features);
      InProcessCommunicator comm(group, rank);
      Resources res(Device{kernels::Backend::kCpu, rank}, config.memory_limit);
      GcnModel model(res, problem, config.model, &comm);
      if (!config.load_weights.empty()) model.set_parameters(load_weights(config.load_weights, model.dims()));
      auto mean = [](double sum, std::int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };
      double best = std::numeric_limits<double>::infinity();
      int since_best = 0;
      for (int epoch = 0; epoch < config.epochs; ++epoch) {
        const std::int64_t sent_before = comm.bytes_sent();
        const auto t0 = std::chrono::steady_clock::now();
        const double loss_sum = model.train_step(epoch);
        step_seconds[rank].push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        if (epoch == 0) report.bytes_sent_per_epoch[rank] = comm.bytes_sent() - sent_before;
        double vloss = 0, vacc = 0;
        const bool eval = config.evaluate_every_epoch || config.early_stopping > 0;
        if (eval) {
          const EvalResult ev = model.evaluate();
          vloss = mean(ev.loss_sum[1], problem.global_valid);
          vacc = mean(static_cast<double>(ev.correct[1]), problem.global_valid);
        }
        if (rank == 0) {
          report.train_loss.push_back(mean(loss_sum, problem.global_train));
          if (eval) report.valid_loss.push_back(vloss);
          report.epochs_run = epoch + 1;
          if (on_epoch) on_epoch(epoch, report.train_loss.back(), vloss, vacc);
        }
        if (config.early_stopping > 0) {  // every device sees the same vloss, so all stop together
          if (vloss < best) {
            best = vloss;
            since_best = 0;
          } else if (++since_best >= config.early_stopping) {
            break;
          }
        }
      }
      const EvalResult ev = model.evaluate();
      auto params = model.parameters();
      report.memory[rank] = res.memory().stats();
      report.bytes_sent[rank] = comm.bytes_sent();
      if (rank == 0) {
        const std::int64_t totals[3] = {problem.global_train, problem.global_valid, problem.global_test};
        for (int s = 0; s < 3; ++s) {
          report.accuracy[s] = mean(static_cast<double>(ev.correct[s]), totals[s]);
          report.loss[s] = mean(ev.loss_sum[s], totals[s]);
        }
        report.parameters = std::move(params);
      }
    } catch (...) {
      errors[rank] = std::current_exception();
      group->abort(rank);
    }
  };

  std::vector<std::thread> pool;
  for (int r = 1; r < k; ++r) pool.emplace_back(worker, r);
  worker(0);
  for (auto& t : pool) t.join();
  // Report the root cause: the first device whose error is not the abort it caused in the others.
  for (int r = 0; r < k; ++r) {
    if (!errors[r]) continue;
    try {
      std::rethrow_exception(errors[r]);
    } catch (const Error& e) {
      if (std::string(e.what()).rfind("collective aborted", 0) == 0) continue;
      throw;
    }
  }
  for (int r = 0; r < k; ++r)
    if (errors[r]) std::rethrow_exception(errors[r]);

  const std::size_t epochs = step_seconds[0].size();
  for (std::size_t e = 0; e < epochs; ++e) {
    double slowest = 0;
    for (int r = 0; r < k; ++r)
      if (e < step_seconds[r].size()) slowest = std::max(slowest, step_seconds[r][e]);
    report.epoch_seconds.push_back(slowest);
  }
  return report;
}

}  // namespace gcnpart::engine
