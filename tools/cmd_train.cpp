// gcnpart train: GCN node classification on one device.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <numeric>
#include <tuple>

#include "engine/problem.hpp"
#include "engine/trainer.hpp"
#include "engine/mpi_communicator.hpp"
#include "engine/resources.hpp"
#include "engine/train.hpp"
#include "base/error.hpp"
#include "base/progress.hpp"
#include "tools/cli_common.hpp"
#include "tools/frontend/request.hpp"

#ifndef GCNPART_GIT_COMMIT
#define GCNPART_GIT_COMMIT "unknown"
#endif

namespace gcnpart::cli {

namespace {

/// `gcnpart train`'s options: the loader's and the request's (tools/frontend/request.hpp, shared with Python).
struct TrainOptions {
  DataOptions data;
  frontend::TrainSettings settings;
};

/// "cpu:0" or "cuda:0 (NVIDIA H200)". @throws InvalidInput for a CUDA device that is not there.
std::string device_label(const engine::Device& device, const std::string& spec) {
  std::string name = device.name();
  if (!device.is_cuda()) return name;
  engine::expect_cuda_build("--device " + spec);
  (void)frontend::parse_device(spec, frontend::Spelling::kCli);  // a CUDA device that is there
  return name + " (" + engine::cuda_device_name(device.index) + ")";
}

std::string memory_breakdown(const engine::MemoryStats& mem) {
  std::string breakdown;
  for (int c = 0; c < static_cast<int>(MemoryCategory::kCount); ++c) {
    const auto b = mem.at_peak_by[static_cast<std::size_t>(c)];
    if (b > 0)
      breakdown += std::string(breakdown.empty() ? "" : ", ") + memory_category_name(static_cast<MemoryCategory>(c)) +
                   " " + human_bytes(static_cast<double>(b));
  }
  return breakdown;
}

void print_single(const engine::TrainSummary& s, const engine::Device& device) {
  const engine::TrainReport& first = s.runs.front();
  const auto& a = s.accuracy;
  // A split without rows has no accuracy: "-", not 0.00 %.
  auto acc = [&](int i) {
    if (s.split_rows[i] == 0) return std::string("- (no rows)");
    char b[64];
    std::snprintf(b, sizeof b, "%.2f ± %.2f %%", 100 * a[i].mean, 100 * a[i].std);
    return std::string(b);
  };
  std::printf("accuracy     train %s   valid %s   test %s   (%d run%s)\n", acc(0).c_str(), acc(1).c_str(),
              acc(2).c_str(), s.request.runs, s.request.runs > 1 ? "s" : "");
  auto loss = [&](int i) {
    if (s.split_rows[i] == 0) return std::string("-");
    char b[32];
    std::snprintf(b, sizeof b, "%.4f", first.loss[i]);
    return std::string(b);
  };
  std::printf("final loss   train %s   valid %s   test %s   (run 1)\n", loss(0).c_str(), loss(1).c_str(),
              loss(2).c_str());
  std::size_t timed = 0;
  for (const auto& r : s.runs) timed += r.epoch_seconds.size() > 1 ? r.epoch_seconds.size() - 1 : r.epoch_seconds.size();
  std::printf("epoch time   %.3f ms mean, %.3f ms median (train step: forward, backward, Adam; %zu epochs)\n",
              1e3 * s.epoch_seconds.mean, 1e3 * s.epoch_median_seconds, timed);
  const auto& mem = first.memory.front();
  std::printf("peak memory  %s tracked on %s (%s)\n", human_bytes(static_cast<double>(mem.peak)).c_str(),
              device.name().c_str(), memory_breakdown(mem).c_str());
  if (!first.spmm_choices.empty()) {
    std::string c;
    for (const auto& [w, name] : first.spmm_choices) c += (c.empty() ? "" : ", ") + std::string("width ") + std::to_string(w) + ": " + name;
    std::printf("spmm         %s (autotuned)\n", c.c_str());
  }
  if (device.is_cuda()) std::printf("cuda graph   %s\n", first.cuda_graph.c_str());
  if (const engine::OffloadReport& o = first.offload; o.streamed) {
    std::string host, dev;
    for (const auto& n : o.on_host) host += (host.empty() ? "" : ", ") + n;
    for (const auto& n : o.on_device) dev += (dev.empty() ? "" : ", ") + n;
    std::printf("offload      streamed through host memory (--offload %s): %lld parts of %lld rows, %d SpMM "
                "operand%s; %s on the host (%s), on the device: %s\n",
                o.mode.c_str(), static_cast<long long>(o.parts), static_cast<long long>(o.part_rows), o.operands,
                o.operands == 1 ? "" : "s",
                human_bytes(static_cast<double>(o.host_bytes)).c_str(), host.empty() ? "none" : host.c_str(),
                dev.empty() ? "none" : dev.c_str());
    std::printf("             per step %s host->device, %s device->host",
                human_bytes(static_cast<double>(o.step_h2d_bytes)).c_str(),
                human_bytes(static_cast<double>(o.step_d2h_bytes)).c_str());
    if (o.lower_bound_ms > 0)
      std::printf("; copies at %.1f / %.1f GB/s, kernels alone %.1f ms: lower bound %.1f ms per step (the epoch "
                  "takes %.2f x)",
                  o.h2d_GBps, o.d2h_GBps, o.compute_ms, o.lower_bound_ms,
                  s.epoch_median_seconds * 1e3 / o.lower_bound_ms);
    std::printf("\n");
  }
  if (device.is_cuda()) {
    std::printf("driver view  %s in use on the device at most (cudaMemGetInfo, includes CUDA context and "
                "libraries)\n",
                human_bytes(static_cast<double>(first.driver_bytes.front())).c_str());
    print_memory_check(first.memory_check.front(), device.name());
  }
}

void print_distributed(const engine::TrainSummary& s, const std::string& device_prefix, const std::string& partitioner) {
  const engine::TrainRequest& q = s.request;
  const engine::TrainReport& last = s.runs.back();
  const std::string where = std::string(q.device.is_cuda() ? "GPUs" : "virtual CPU devices") +
                            (q.launch.mpi ? " (one MPI rank each)" : " (one thread each)");
  std::printf("strategy     %s on %d %s, %s partition: %s lost edges (%.2f %%), replication %.3f\n",
              to_string(q.strategy), q.parts, where.c_str(), partitioner.c_str(),
              with_commas(s.plan.lost_edges).c_str(), 100 * s.plan.lost_fraction, s.plan.replication_factor);
  std::printf("balance      %s: predicted work imbalance %.3f (max / mean device work), measured %.3f (compute), "
              "edge cut %s\n",
              partition::balance_name(q.partition.balance), s.plan.work_imbalance, last.compute_imbalance(),
              with_commas(s.plan.edge_cut).c_str());
  std::printf("accuracy     test %.2f ± %.2f %%   (last run: train %.2f %%, valid %.2f %%)\n", 100 * s.accuracy[2].mean,
              100 * s.accuracy[2].std, 100 * last.accuracy[0], 100 * last.accuracy[1]);
  std::printf("epoch time   %.3f ms median (slowest device); per device below: means over epochs 2..%d\n",
              1e3 * s.epoch_median_seconds, last.epochs_run);
  print_distributed_details(last, device_prefix);
}

/// Options that change nothing on the chosen device: said once, not silently ignored.
void warn_no_ops(const frontend::TrainSettings& o, const engine::Device& device) {
  if (device.is_cuda()) return;
  if (o.spmm != "auto")
    warn("--spmm " + o.spmm + " has no effect on the CPU (its SpMM is the reference kernel)");
  if (o.precision == "tf32" || o.tf32) warn("--precision tf32 has no effect on the CPU (fp32 GEMMs there)");
  if (o.config.model.gather_chunks != 1) warn("--gather-chunks has no effect on the CPU (GPU streams only)");
  if (o.gpus_given) warn("--gpus has no effect with --device cpu (use --parts for virtual CPU devices)");
}

void run_train(TrainOptions& options) {
  frontend::TrainSettings& o = options.settings;
  const engine::Device device = engine::Device::parse(o.device);
  const std::string device_name = device_label(device, o.device);
  // Everything the run will write, checked before the data is even loaded.
  check_outputs({{"--json", &o.json}, {"--save", &o.save}, {"--save-plan", &o.save_plan},
                 {"--save-parts", &o.save_parts}},
                options.data);
  if (!o.config.checkpoint_dir.empty()) check_output_folder(o.config.checkpoint_dir, "--checkpoint");
  o.config.validate();  // --checkpoint without --checkpoint-every, --resume without --checkpoint, model options
  JsonOnStdout json_only(o.json);
  const auto ds = load_data(options.data);
  o.data = options.data.path;
  o.mpi = engine::launched_under_mpi();
  const engine::TrainRequest request = frontend::make_train_request(o, ds.graph.num_edges(), frontend::Spelling::kCli);
  engine::check_trainable(ds);  // before the run's first line: an error is the last thing printed
  warn_no_ops(o, device);
  const bool root = !request.launch.mpi || engine::mpi_rank() == 0;
  if (!root) std::freopen("/dev/null", "w", stdout);
  std::string arch;
  for (auto d : request.config.model.dims(ds.num_features, ds.num_classes))
    arch += (arch.empty() ? "" : "-") + std::to_string(d);
  std::fprintf(stderr, "gcnpart train: %s (%s nodes, %s edges) on %s, GCN %s, %d epochs x %d run%s\n",
               escape_text(ds.name).c_str(), with_commas(ds.num_nodes()).c_str(),
               with_commas(ds.graph.num_edges()).c_str(), device_name.c_str(), arch.c_str(), o.config.epochs, o.runs, o.runs > 1 ? "s" : "");
  Progress progress("train", static_cast<std::int64_t>(o.config.epochs) * o.runs);
  const auto summary = engine::train(ds, request, [&](int r, int epoch, double loss, double vloss, double vacc) {
    char status[160];
    std::snprintf(status, sizeof status, "run %d/%d epoch %d loss %.4f val loss %.4f val acc %.1f%%", r + 1, o.runs,
                  epoch + 1, loss, vloss, 100 * vacc);
    progress.update(static_cast<std::int64_t>(r) * o.config.epochs + epoch + 1, status);
  });
  progress.finish();
  if (partition::one_device(request.strategy)) print_single(summary, device);
  else print_distributed(summary, request.launch.mpi ? "rank " : device.is_cuda() ? "cuda:" : "cpu:",
                         partition::partitioner_name(summary.partitioner_used));
  if (!summary.partition_note.empty()) std::printf("partition    %s\n", summary.partition_note.c_str());
  if (request.reorder != Reorder::kNone)
    std::printf("reorder      %s: order %.3f s, applying it %.3f s (before training; not in the epoch times)\n",
                to_string(request.reorder), summary.reorder_seconds[0], summary.reorder_seconds[1]);
  if (!root) return;
  if (!o.save.empty()) {
    engine::save_weights(o.save, summary.dims, summary.runs.front().parameters);
    std::printf("saved        weights of run 1 to %s\n", escape_text(o.save).c_str());
  }
  if (!o.save_plan.empty()) std::printf("saved        plan to %s\n", escape_text(o.save_plan).c_str());
  if (!o.save_parts.empty())
    std::printf("saved        node -> part mapping to %s (one part per line)\n", escape_text(o.save_parts).c_str());
  if (o.json.empty()) return;
  nlohmann::json j = {{"command", "train"}, {"date", now_iso()}, {"commit", GCNPART_GIT_COMMIT}};
  j.update(summary.to_json());
  j["device"] = device_name;
  json_only.release();
  write_json(o.json, j);
}

}  // namespace

Command register_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a GCN (Kipf & Welling) for node classification on one device");
  auto o = std::make_shared<TrainOptions>();
  add_data_options(*cmd, o->data);
  add_train_options(*cmd, o->settings);
  return {cmd, [o] { run_train(*o); }};
}

}  // namespace gcnpart::cli
