// gcnpart train: GCN node classification on one device.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <numeric>

#include "engine/distributed.hpp"
#include "engine/mpi_communicator.hpp"
#include "engine/resources.hpp"
#include "engine/trainer.hpp"
#include "kernels/core/error.hpp"
#include "kernels/core/progress.hpp"
#include "tools/cli_common.hpp"

#ifndef GCNPART_GIT_COMMIT
#define GCNPART_GIT_COMMIT "unknown"
#endif

namespace gcnpart::cli {

namespace {

struct TrainOptions {
  DataOptions data;
  std::string device = "cpu";
  int runs = 1;
  std::string spmm = "auto";
  std::string precision = "fp32";
  std::string json, save, load, memory_limit;
  bool no_normalize = false;
  engine::TrainConfig config;
  std::string strategy = "single";
  int parts = 0;  // 0: --gpus, the MPI world size, or 1
  std::string partitioner = "metis";
  std::string metis_sample = "auto";
  std::string balance = "nodes";
  int gpus = 0;
  std::string link_bench = "auto";
};

struct MeanStd {
  double mean = 0, std = 0;
};
MeanStd mean_std(const std::vector<double>& v) {
  MeanStd r;
  if (v.empty()) return r;
  r.mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - r.mean) * (x - r.mean);
  r.std = v.size() > 1 ? std::sqrt(ss / static_cast<double>(v.size() - 1)) : 0.0;
  return r;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

nlohmann::json memory_json(const engine::MemoryStats& m) {
  nlohmann::json at_peak = nlohmann::json::object();
  for (int c = 0; c < static_cast<int>(MemoryCategory::kCount); ++c)
    at_peak[memory_category_name(static_cast<MemoryCategory>(c))] = m.at_peak_by[static_cast<std::size_t>(c)];
  return {{"peak_bytes", m.peak}, {"at_peak_by_category", at_peak}, {"allocations", m.allocations},
          {"limit_bytes", m.limit}};
}

void run_train(TrainOptions& o) {
  o.config.model.spmm = o.spmm == "cusparse" ? kernels::SpmmAlgo::kCusparse
                        : o.spmm == "own"    ? kernels::SpmmAlgo::kOwn
                                             : kernels::SpmmAlgo::kAuto;
  if (o.precision == "tf32") o.config.model.tf32 = true;
  if (o.precision == "bf16") o.config.model.bf16 = true;
  if (o.config.model.tf32 && o.precision != "tf32" && o.precision != "fp32")
    throw InvalidInput::parameter("--tf32", "with --precision " + o.precision, "--precision tf32 alone");
  if (o.config.model.tf32) o.precision = "tf32";
  o.config.normalize_features = !o.no_normalize;
  if (!o.memory_limit.empty()) o.config.memory_limit = parse_bytes(o.memory_limit, "--memory-limit");
  if (o.runs < 1) throw InvalidInput::parameter("--runs", std::to_string(o.runs), ">= 1");
  o.config.validate();
  const engine::Device device = engine::Device::parse(o.device);
  std::string device_name = device.name();
  if (device.is_cuda()) {
    const int n = engine::cuda_device_count();
    if (device.index >= n)
      throw InvalidInput::parameter("--device", o.device,
                                    n == 0 ? std::string("a visible CUDA device, but none was found: use --device cpu")
                                           : "cuda:0..cuda:" + std::to_string(n - 1));
    device_name += " (" + engine::cuda_device_name(device.index) + ")";
  }

  const auto ds = load_data(o.data);
  o.config.oom_hint = "To see which cards and strategies fit this graph and model, run: gcnpart fit " + o.data.path +
                      " --layers " + std::to_string(o.config.model.layers) + " --hidden " +
                      std::to_string(o.config.model.hidden) + " (and try --strategy halo|gather|boundary --parts K)";
  const engine::LocalProblem problem = engine::single_device_problem(ds, o.config.normalize_features);
  const auto dims = o.config.model.dims(problem.num_features, problem.num_classes);
  std::string arch;
  for (auto d : dims) arch += (arch.empty() ? "" : "-") + std::to_string(d);
  std::fprintf(stderr, "gcnpart train: %s (%s nodes, %s edges) on %s, GCN %s, %d epochs x %d run%s\n",
               ds.name.c_str(), with_commas(ds.num_nodes()).c_str(), with_commas(ds.graph.num_edges()).c_str(),
               device_name.c_str(), arch.c_str(), o.config.epochs, o.runs, o.runs > 1 ? "s" : "");

  const partition::Strategy strategy = partition::parse_strategy(o.strategy);
  engine::LaunchOptions launch;
  launch.backend = device.backend;
  launch.mpi = engine::launched_under_mpi();
  launch.link = o.link_bench == "on"    ? engine::LaunchOptions::Link::kAlways
                : o.link_bench == "off" ? engine::LaunchOptions::Link::kNever
                                        : engine::LaunchOptions::Link::kAuto;
  if (launch.mpi) {
    engine::mpi_init();
    if (strategy == partition::Strategy::kSingle && engine::mpi_size() > 1)
      throw InvalidInput::parameter("--strategy", "single", "drop, halo, gather or boundary when started by mpirun with " +
                                                               std::to_string(engine::mpi_size()) + " ranks");
    if (o.parts == 0) o.parts = engine::mpi_size();
  }
  if (o.parts == 0) o.parts = o.gpus > 0 ? o.gpus : 1;
  const bool root = !launch.mpi || engine::mpi_rank() == 0;
  if (strategy != partition::Strategy::kSingle) {
    if (o.parts < 1) throw InvalidInput::parameter("--parts", std::to_string(o.parts), ">= 1");
    if (!root) std::freopen("/dev/null", "w", stdout);
    partition::PartitionOptions popt;
    popt.method = o.partitioner == "random" ? partition::Partitioner::kRandom
                  : o.partitioner == "range" ? partition::Partitioner::kRange
                                             : partition::Partitioner::kMetis;
    popt.metis_edge_sample = metis_sample(o.metis_sample, ds.graph.num_edges());
    popt.balance = partition::parse_balance(o.balance, "--balance");
    const auto plan = partition::make_plan(ds.graph, strategy, o.parts, o.config.model.layers, popt);
    std::vector<double> acc;
    Progress progress("train", static_cast<std::int64_t>(o.config.epochs) * o.runs);
    engine::DistributedReport last;
    for (int r = 0; r < o.runs; ++r) {
      engine::TrainConfig cfg = o.config;
      cfg.model.seed = o.config.model.seed + static_cast<std::uint64_t>(r);
      cfg.load_weights = o.load;
      last = engine::train_distributed(
          ds, plan, cfg,
          [&](int epoch, double loss, double, double vacc) {
            char status[128];
            std::snprintf(status, sizeof status, "run %d/%d loss %.4f val acc %.1f%%", r + 1, o.runs, loss,
                          100 * vacc);
            progress.update(static_cast<std::int64_t>(r) * o.config.epochs + epoch + 1, status);
          },
          launch);
      acc.push_back(last.accuracy[2]);
    }
    progress.finish();
    const MeanStd a = mean_std(acc);
    const std::string where = std::string(device.is_cuda() ? "GPUs" : "virtual CPU devices") +
                              (launch.mpi ? " (one MPI rank each)" : " (one thread each)");
    std::printf("strategy     %s on %d %s, %s partition: %s lost edges (%.2f %%), replication %.3f\n",
                o.strategy.c_str(), o.parts, where.c_str(), o.partitioner.c_str(),
                with_commas(plan.metrics.lost_edges).c_str(),
                100 * plan.metrics.lost_fraction, plan.metrics.replication_factor);
    std::printf("accuracy     test %.2f ± %.2f %%   (last run: train %.2f %%, valid %.2f %%)\n", 100 * a.mean,
                100 * a.std, 100 * last.accuracy[0], 100 * last.accuracy[1]);
    std::printf("epoch time   %.3f ms median (slowest device); per device below: means over epochs 2..%d\n",
                1e3 * median(last.epoch_seconds), last.epochs_run);
    print_distributed_details(last, launch.mpi ? "rank " : device.is_cuda() ? "cuda:" : "cpu:");
    if (!root) return;
    if (!o.save.empty()) engine::save_weights(o.save, dims, last.parameters);
    if (!o.json.empty()) {
      nlohmann::json mem = nlohmann::json::array();
      for (const auto& m : last.memory) mem.push_back(memory_json(m));
      nlohmann::json j = {{"command", "train"}, {"date", now_iso()}, {"commit", GCNPART_GIT_COMMIT},
                          {"dataset", ds.name}, {"strategy", o.strategy}, {"parts", o.parts},
                          {"device", device_name}, {"launch", launch.mpi ? "mpi" : "threads"},
                          {"driver_bytes", last.driver_bytes}, {"valid_loss", last.valid_loss},
                          {"partitioner", o.partitioner}, {"balance", o.balance}, {"test_accuracy", {{"mean", a.mean}, {"std", a.std}}},
                          {"train_loss", last.train_loss}, {"epoch_seconds", last.epoch_seconds},
                          {"memory", mem}, {"bytes_sent_per_epoch", last.bytes_sent_per_epoch},
                          {"lost_edges", plan.metrics.lost_edges}};
      if (strategy == partition::Strategy::kBoundary) j["boundary_rows"] = plan.metrics.boundary_rows;
      add_distributed_json(j, last);
      write_json(o.json, j);
    }
    return;
  }

  std::vector<engine::RunReport> reports;
  Progress progress("train", static_cast<std::int64_t>(o.config.epochs) * o.runs);
  for (int r = 0; r < o.runs; ++r) {
    engine::TrainConfig cfg = o.config;
    cfg.model.seed = o.config.model.seed + static_cast<std::uint64_t>(r);
    cfg.load_weights = o.load;
    if (!o.config.checkpoint_dir.empty()) {
      cfg.checkpoint_dir = o.runs > 1 ? o.config.checkpoint_dir + "/run-" + std::to_string(r + 1) : o.config.checkpoint_dir;
      std::error_code ec;
      std::filesystem::create_directories(cfg.checkpoint_dir, ec);
      if (ec) throw IoError(cfg.checkpoint_dir, "cannot create the checkpoint folder: " + ec.message());
    }
    auto on_epoch = [&](int epoch, double loss, double vloss, double vacc) {
      char status[160];
      std::snprintf(status, sizeof status, "run %d/%d epoch %d loss %.4f val loss %.4f val acc %.1f%%", r + 1, o.runs,
                    epoch + 1, loss, vloss, 100 * vacc);
      progress.update(static_cast<std::int64_t>(r) * o.config.epochs + epoch + 1, status);
    };
    reports.push_back(engine::train_single(problem, device, cfg, on_epoch));
  }
  progress.finish();

  std::vector<double> acc[3], times;
  for (const auto& rep : reports) {
    for (int s = 0; s < 3; ++s) acc[s].push_back(rep.accuracy[s]);
    // Skip the first epoch of each run (warm-up: allocations, library initialisation).
    for (std::size_t e = rep.epoch_seconds.size() > 1 ? 1 : 0; e < rep.epoch_seconds.size(); ++e)
      times.push_back(rep.epoch_seconds[e]);
  }
  const MeanStd a_train = mean_std(acc[0]), a_valid = mean_std(acc[1]), a_test = mean_std(acc[2]);
  const MeanStd t = mean_std(times);
  const auto& mem = reports.front().memory;
  std::printf("accuracy     train %.2f ± %.2f %%   valid %.2f ± %.2f %%   test %.2f ± %.2f %%   (%d run%s)\n",
              100 * a_train.mean, 100 * a_train.std, 100 * a_valid.mean, 100 * a_valid.std, 100 * a_test.mean,
              100 * a_test.std, o.runs, o.runs > 1 ? "s" : "");
  std::printf("final loss   train %.4f   valid %.4f   test %.4f   (run 1)\n", reports.front().loss[0],
              reports.front().loss[1], reports.front().loss[2]);
  std::printf("epoch time   %.3f ms mean, %.3f ms median (train step: forward, backward, Adam; %zu epochs)\n",
              1e3 * t.mean, 1e3 * median(times), times.size());
  std::string breakdown;
  for (int c = 0; c < static_cast<int>(MemoryCategory::kCount); ++c) {
    const auto b = mem.at_peak_by[static_cast<std::size_t>(c)];
    if (b > 0)
      breakdown += std::string(breakdown.empty() ? "" : ", ") + memory_category_name(static_cast<MemoryCategory>(c)) +
                   " " + human_bytes(static_cast<double>(b));
  }
  std::printf("peak memory  %s tracked on %s (%s)\n", human_bytes(static_cast<double>(mem.peak)).c_str(),
              device.name().c_str(), breakdown.c_str());
  if (!reports.front().spmm_choices.empty()) {
    std::string s;
    for (const auto& [w, c] : reports.front().spmm_choices) s += (s.empty() ? "" : ", ") + std::string("width ") + std::to_string(w) + ": " + c;
    std::printf("spmm         %s (autotuned)\n", s.c_str());
  }
  if (device.is_cuda()) {
    std::printf("driver view  %s in use on the device at most (cudaMemGetInfo, includes CUDA context and "
                "libraries)\n",
                human_bytes(static_cast<double>(reports.front().driver_peak_bytes)).c_str());
    print_memory_check(reports.front().memory_check, device.name());
  }

  if (!o.save.empty()) {
    engine::save_weights(o.save, dims, reports.front().parameters);
    std::printf("saved        weights of run 1 to %s\n", o.save.c_str());
  }
  if (!o.json.empty()) {
    nlohmann::json j;
    j["command"] = "train";
    j["date"] = now_iso();
    j["commit"] = GCNPART_GIT_COMMIT;
    j["dataset"] = dataset_json(ds);
    j["device"] = device_name;
    j["model"] = {{"dims", dims},
                  {"layers", o.config.model.layers},
                  {"hidden", o.config.model.hidden},
                  {"dropout", o.config.model.dropout},
                  {"lr", o.config.model.lr},
                  {"weight_decay", o.config.model.weight_decay},
                  {"weight_decay_all_layers", o.config.model.weight_decay_all_layers},
                  {"normalize_features", o.config.normalize_features},
                  {"spmm", o.spmm},
                  {"precision", o.precision},
                  {"epochs", o.config.epochs},
                  {"early_stopping", o.config.early_stopping}};
    j["summary"] = {{"accuracy", {{"train", {{"mean", a_train.mean}, {"std", a_train.std}}},
                                  {"valid", {{"mean", a_valid.mean}, {"std", a_valid.std}}},
                                  {"test", {{"mean", a_test.mean}, {"std", a_test.std}}}}},
                    {"epoch_seconds", {{"mean", t.mean}, {"std", t.std}, {"median", median(times)}}},
                    {"memory", memory_json(mem)},
                    {"driver_used_bytes", reports.front().driver_peak_bytes},
                    {"memory_check", memory_check_json(reports.front().memory_check)}};
    nlohmann::json choices = nlohmann::json::object();
    for (const auto& [w, c] : reports.front().spmm_choices) choices[std::to_string(w)] = c;
    j["spmm_choices"] = choices;
    nlohmann::json runs = nlohmann::json::array();
    for (const auto& rep : reports)
      runs.push_back({{"seed", rep.seed},
                      {"epochs_run", rep.epochs_run},
                      {"accuracy", {{"train", rep.accuracy[0]}, {"valid", rep.accuracy[1]}, {"test", rep.accuracy[2]}}},
                      {"train_loss", rep.train_loss},
                      {"valid_loss", rep.valid_loss},
                      {"epoch_seconds", rep.epoch_seconds}});
    j["runs"] = runs;
    write_json(o.json, j);
  }
}

}  // namespace

Command register_train(CLI::App& app) {
  auto* cmd = app.add_subcommand("train", "Train a GCN (Kipf & Welling) for node classification on one device");
  auto o = std::make_shared<TrainOptions>();
  add_data_options(*cmd, o->data);
  auto& m = o->config.model;
  cmd->add_option("--device", o->device, "cpu or cuda[:N]")->capture_default_str();
  cmd->add_option("--layers", m.layers, "GCN layers")->capture_default_str();
  cmd->add_option("--hidden", m.hidden, "Hidden width")->capture_default_str();
  cmd->add_option("--epochs", o->config.epochs, "Training epochs")->capture_default_str();
  cmd->add_option("--lr", m.lr, "Adam learning rate")->capture_default_str();
  cmd->add_option("--dropout", m.dropout, "Dropout probability on every layer's input")->capture_default_str();
  cmd->add_option("--weight-decay", m.weight_decay, "L2 weight decay")->capture_default_str();
  cmd->add_flag("--weight-decay-all", m.weight_decay_all_layers,
                "Decay every layer's weights (default: the first layer's, as in the paper)");
  cmd->add_option("--early-stopping", o->config.early_stopping,
                  "Stop when the validation loss has not improved for this many epochs (0 = off)")
      ->capture_default_str();
  cmd->add_flag("--no-normalize", o->no_normalize, "Do not row-normalise the input features");
  cmd->add_option("--seed", m.seed, "Seed of run 1 (run r uses seed + r - 1)")->capture_default_str();
  cmd->add_option("--runs", o->runs, "Independent runs (mean and std are reported)")->capture_default_str();
  cmd->add_option("--spmm", o->spmm,
                  "SpMM implementation: auto times own vs cuSPARSE once per width on the GPU and keeps the faster")
      ->check(CLI::IsMember({"auto", "own", "cusparse"}))
      ->capture_default_str();
  cmd->add_option("--precision", o->precision,
                  "fp32; tf32 (TF32 tensor-core GEMMs); bf16 (bf16 features, activations and their gradients, bf16 "
                  "tensor-core GEMMs, fp32 accumulation, master weights and Adam)")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  cmd->add_flag("--tf32", m.tf32, "Same as --precision tf32");
  cmd->add_option("--memory-limit", o->memory_limit,
                  "Refuse device allocations past this many bytes (e.g. 24GB) to emulate a smaller card");
  cmd->add_option("--save", o->save, "Save the trained weights (run 1) to this file");
  cmd->add_option("--checkpoint", o->config.checkpoint_dir,
                  "Folder for training checkpoints (model, Adam state, losses), written atomically");
  cmd->add_option("--checkpoint-every", o->config.checkpoint_every, "Epochs between checkpoints")
      ->check(CLI::NonNegativeNumber);
  cmd->add_flag("--resume", o->config.resume, "Continue from the checkpoint in --checkpoint (bit-exact on one device)");
  cmd->add_option("--load", o->load, "Start from weights saved with --save");
  cmd->add_option("--json", o->json, "Write the full report as JSON");
  cmd->add_option("--strategy", o->strategy, "How to split the graph over --parts devices")
      ->check(CLI::IsMember({"single", "drop", "halo", "gather", "boundary", "pipeline"}))->capture_default_str();
  cmd->add_option("--parts", o->parts, "Number of devices for --strategy (default: --gpus, or the mpirun rank count)");
  cmd->add_option("--gpus", o->gpus, "GPUs to use with --device cuda and a multi-device --strategy (one thread each)");
  cmd->add_option("--link-bench", o->link_bench,
                  "After multi-device training, time a plain all-gather (gather) / all-reduce (drop, halo) of the "
                  "training's size on the same communicator and report the bandwidth ratio (auto: on GPUs)")
      ->check(CLI::IsMember({"auto", "on", "off"}))->capture_default_str();
  cmd->add_option("--partitioner", o->partitioner, "metis, random or range")
      ->check(CLI::IsMember({"metis", "random", "range"}))->capture_default_str();
  cmd->add_option("--balance", o->balance,
                  "What METIS balances across parts: nodes, edges (node weight 1 + degree: SpMM work) or both")
      ->check(CLI::IsMember({"nodes", "edges", "both"}))
      ->capture_default_str();
  cmd->add_option("--metis-sample", o->metis_sample,
                  "Fraction of edges METIS partitions (auto: all below 20 M directed edges, else 0.1)")
      ->capture_default_str();
  return {cmd, [o] { run_train(*o); }};
}

}  // namespace gcnpart::cli
