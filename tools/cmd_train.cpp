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
#include "engine/trainer.hpp"
#include "base/error.hpp"
#include "base/progress.hpp"
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
  std::string cuda_graph = "auto";
  bool tf32 = false;  ///< --tf32, the same as --precision tf32
  std::string json, save, load, memory_limit, save_plan, save_parts;
  bool parts_given = false;  ///< --parts on the command line (0 there is refused, not "automatic")
  bool no_normalize = false;
  engine::TrainConfig config;
  std::string strategy = "single";
  int parts = 0;  // 0: --gpus, the MPI world size, or 1
  std::string partitioner = "metis";
  std::string metis_sample = "auto";
  std::string balance = "work";
  int gpus = 0;
  bool gpus_given = false;
  std::string link_bench = "auto";
  std::string fault;  // tests: RANK:EPOCH, that device SIGKILLs the process after that epoch's train step
  std::string fault_fail;  // tests: RANK:EPOCH, that device throws FaultInjected after that epoch's train step
  double nccl_timeout = engine::kDefaultNcclTimeoutSeconds;
  std::string reorder = "degree";
};

/// The request `gcnpart train` makes of the library, from its options. @throws InvalidInput.
engine::TrainRequest make_request(TrainOptions& o, const datasets::Dataset& ds) {
  engine::TrainRequest q;
  o.config.model.spmm = from_string<SpmmAlgo>(o.spmm, "--spmm");
  if (o.tf32 && o.precision != "tf32" && o.precision != "fp32")
    throw InvalidInput::parameter("--tf32", "with --precision " + o.precision, "--precision tf32 alone");
  if (o.tf32) o.precision = "tf32";
  o.config.model.precision = from_string<Precision>(o.precision, "--precision");
  o.config.model.cuda_graph = from_string<CudaGraphMode>(o.cuda_graph, "--cuda-graph");
  if (o.config.model.cuda_graph == CudaGraphMode::kOn &&
      (!engine::Device::parse(o.device).is_cuda() || o.strategy != "single"))
    throw InvalidInput::parameter("--cuda-graph", "on",
                                  "auto or off with --device " + o.device + " --strategy " + o.strategy +
                                      " (a captured step needs --device cuda and --strategy single)");
  o.config.normalize_features = !o.no_normalize;
  // Tests: --fault-kill SIGKILLs the process of device RANK (an MPI rank; in threads mode the whole process),
  // --fault-fail makes device RANK's thread fail with an error, as a device that dies in threads mode.
  for (const auto& [option, text, kind] :
       {std::tuple{"--fault-kill", &o.fault, engine::FaultInjection::Kind::kKill},
        std::tuple{"--fault-fail", &o.fault_fail, engine::FaultInjection::Kind::kThrow}}) {
    if (text->empty()) continue;
    int rank = -1, epoch = -1;
    char tail = 0;
    if (std::sscanf(text->c_str(), "%d:%d%c", &rank, &epoch, &tail) != 2 || rank < 0 || epoch < 0)
      throw InvalidInput::parameter(option, *text, "RANK:EPOCH, two non-negative integers");
    o.config.fault = {kind, rank, epoch};
  }
  if (!o.memory_limit.empty()) o.config.memory_limit = parse_bytes(o.memory_limit, "--memory-limit");
  o.config.load_weights = o.load;
  o.config.oom_hint = "To see which cards and strategies fit this graph and model, run: gcnpart fit " + o.data.path +
                      " --layers " + std::to_string(o.config.model.layers) + " --hidden " +
                      std::to_string(o.config.model.hidden) + " (and try --strategy halo|gather|boundary --parts K)";
  q.config = o.config;
  q.runs = o.runs;
  q.device = engine::Device::parse(o.device);
  q.strategy = from_string<partition::Strategy>(o.strategy, "--strategy");
  q.reorder = from_string<Reorder>(o.reorder, "--reorder");
  q.launch.mpi = engine::launched_under_mpi();
  q.launch.nccl_timeout_s = o.nccl_timeout;
  q.launch.link = o.link_bench == "on"    ? engine::LaunchOptions::Link::kAlways
                  : o.link_bench == "off" ? engine::LaunchOptions::Link::kNever
                                          : engine::LaunchOptions::Link::kAuto;
  if (q.launch.mpi) {
    engine::mpi_init();
    if (partition::traits(q.strategy).parts == partition::PartsRule::kOne && engine::mpi_size() > 1) {
      const auto any_k = partition::strategy_names_where(
          [](const partition::StrategyTraits& t) { return t.parts == partition::PartsRule::kAny; });
      throw InvalidInput::parameter("--strategy", to_string(q.strategy), or_list(any_k) + " when started by mpirun with " +
                                                                           std::to_string(engine::mpi_size()) + " ranks");
    }
    if (o.parts == 0) o.parts = engine::mpi_size();
  }
  if (o.parts_given && o.parts < 1) throw InvalidInput::parameter("--parts", std::to_string(o.parts), ">= 1 devices");
  if (o.gpus < 0 || (o.gpus == 0 && o.gpus_given))
    throw InvalidInput::parameter("--gpus", std::to_string(o.gpus), ">= 1");
  if (o.parts == 0) o.parts = o.gpus > 0 ? o.gpus : 1;
  q.parts = q.strategy == partition::Strategy::kSingle ? 1 : o.parts;
  q.partition.method = o.partitioner == "random" ? partition::Partitioner::kRandom
                       : o.partitioner == "range" ? partition::Partitioner::kRange
                                                  : partition::Partitioner::kMetis;
  q.partition.metis_edge_sample = metis_sample(o.metis_sample, ds.graph.num_edges());
  q.partition.balance = partition::parse_balance(o.balance, "--balance");
  q.save_plan = o.save_plan;
  q.save_parts = o.save_parts;
  q.validate();
  return q;
}

/// "cpu:0" or "cuda:0 (NVIDIA H200)". @throws InvalidInput for a CUDA device that is not there.
std::string device_label(const engine::Device& device, const std::string& spec) {
  std::string name = device.name();
  if (!device.is_cuda()) return name;
  engine::expect_cuda_build("--device " + spec);
  const int n = engine::cuda_device_count();
  if (device.index >= n)
    throw InvalidInput::parameter("--device", spec,
                                  n == 0 ? std::string("a visible CUDA device, but none was found: use --device cpu")
                                         : "cuda:0..cuda:" + std::to_string(n - 1));
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
  std::printf("accuracy     train %.2f ± %.2f %%   valid %.2f ± %.2f %%   test %.2f ± %.2f %%   (%d run%s)\n",
              100 * a[0].mean, 100 * a[0].std, 100 * a[1].mean, 100 * a[1].std, 100 * a[2].mean, 100 * a[2].std,
              s.request.runs, s.request.runs > 1 ? "s" : "");
  std::printf("final loss   train %.4f   valid %.4f   test %.4f   (run 1)\n", first.loss[0], first.loss[1],
              first.loss[2]);
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
void warn_no_ops(const TrainOptions& o, const engine::Device& device) {
  if (device.is_cuda()) return;
  if (o.spmm != "auto")
    warn("--spmm " + o.spmm + " has no effect on the CPU (its SpMM is the reference kernel)");
  if (o.precision == "tf32" || o.tf32) warn("--precision tf32 has no effect on the CPU (fp32 GEMMs there)");
  if (o.config.model.gather_chunks != 1) warn("--gather-chunks has no effect on the CPU (GPU streams only)");
  if (o.gpus_given) warn("--gpus has no effect with --device cpu (use --parts for virtual CPU devices)");
}

void run_train(TrainOptions& o) {
  const engine::Device device = engine::Device::parse(o.device);
  const std::string device_name = device_label(device, o.device);
  // Everything the run will write, checked before the data is even loaded.
  check_outputs({{"--json", &o.json}, {"--save", &o.save}, {"--save-plan", &o.save_plan},
                 {"--save-parts", &o.save_parts}});
  if (!o.config.checkpoint_dir.empty()) check_output_folder(o.config.checkpoint_dir, "--checkpoint");
  o.config.validate();  // --checkpoint without --checkpoint-every, --resume without --checkpoint, model options
  JsonOnStdout json_only(o.json);
  const auto ds = load_data(o.data);
  const engine::TrainRequest request = make_request(o, ds);
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
  if (request.strategy == partition::Strategy::kSingle) print_single(summary, device);
  else print_distributed(summary, request.launch.mpi ? "rank " : device.is_cuda() ? "cuda:" : "cpu:", o.partitioner);
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
      ->check(CLI::IsMember(enum_names<SpmmAlgo>()))
      ->capture_default_str();
  add_spmm_tuning_options(*cmd, m.spmm_tuning);
  cmd->add_option("--cuda-graph", o->cuda_graph,
                  "Replay the training step as a CUDA Graph captured on the second epoch (one launch per epoch instead "
                  "of one per kernel; holds a 32 MiB cuBLAS workspace): auto = on one GPU with the single strategy "
                  "when rows x widest width <= 2^25 (small steps, where launches matter); on = whatever the size, an "
                  "error where it cannot; off = launch every kernel")
      ->check(CLI::IsMember(enum_names<CudaGraphMode>()))
      ->capture_default_str();
  cmd->add_option("--boundary-overlap", m.boundary_overlap,
                  "Boundary strategy: aggregate the interior rows while the boundary rows travel (true/false)")
      ->capture_default_str();
  cmd->add_option("--gather-chunks", m.gather_chunks,
                  "Gather strategy on GPUs: column chunks per collective, overlapping communication with the SpMM "
                  "(1 = no overlap)")
      ->check(CLI::Range(1, engine::kMaxGatherChunks))
      ->capture_default_str();
  cmd->add_option("--nccl-timeout", o->nccl_timeout,
                  "GPUs: seconds a rank waits on a collective without progress before it aborts the run")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--precision", o->precision, precisions_help())
      ->check(CLI::IsMember(enum_names<Precision>()))
      ->capture_default_str();
  cmd->add_flag("--tf32", o->tf32, "Same as --precision tf32");
  cmd->add_option("--memory-limit", o->memory_limit,
                  "Refuse device allocations past this many bytes (e.g. 24GB) to emulate a smaller card");
  cmd->add_option("--save", o->save, "Save the trained weights (run 1) to this file");
  cmd->add_option("--checkpoint", o->config.checkpoint_dir,
                  "Folder for training checkpoints (model, Adam state, losses), written atomically; needs "
                  "--checkpoint-every (or --resume)");
  cmd->add_option("--checkpoint-every", o->config.checkpoint_every, "Epochs between checkpoints (>= 1)");
  cmd->add_flag("--resume", o->config.resume,
                "Continue from the checkpoint in --checkpoint (bit-exact, every strategy and launch mode); a folder "
                "without one is refused");
  cmd->add_option("--fault-kill", o->fault, "Tests: device RANK kills the process in EPOCH (RANK:EPOCH)")
      ->group("");  // hidden
  cmd->add_option("--fault-fail", o->fault_fail, "Tests: device RANK fails with an error in EPOCH (RANK:EPOCH)")
      ->group("")  // hidden
      ->excludes("--fault-kill");
  cmd->add_option("--load", o->load, "Start from weights saved with --save");
  add_reorder_option(*cmd, o->reorder);
  cmd->add_option("--json", o->json, "Write the full report as JSON ('-' for stdout: then stdout carries only the "
                                     "JSON, the human lines go to stderr)");
  cmd->add_option("--save-plan", o->save_plan,
                  "Write the partition plan (binary .gplan: parts, per-device nodes, metrics; partition::load_plan "
                  "reads it) before the first epoch");
  cmd->add_option("--save-parts", o->save_parts,
                  "Write the node -> part mapping as text, one part id per line (line i = node i; "
                  "numpy.loadtxt(FILE, dtype=int) reads it) before the first epoch");
  cmd->add_option("--strategy", o->strategy, "How to split the graph over --parts devices:\n" +
                                                 partition::strategies_help())
      ->check(CLI::IsMember(enum_names<partition::Strategy>()))->capture_default_str();
  cmd->add_option("--parts", o->parts, "Number of devices for --strategy (default: --gpus, or the mpirun rank count)")
      ->each([o](const std::string&) { o->parts_given = true; });
  cmd->add_option("--gpus", o->gpus, "GPUs to use with --device cuda and a multi-device --strategy (one thread each)")
      ->each([o](const std::string&) { o->gpus_given = true; });
  cmd->add_option("--link-bench", o->link_bench,
                  "After multi-device training, time a plain all-gather (gather) / all-reduce (drop, halo) of the "
                  "training's size on the same communicator and report the bandwidth ratio (auto: on GPUs)")
      ->check(CLI::IsMember({"auto", "on", "off"}))->capture_default_str();
  cmd->add_option("--partitioner", o->partitioner, "metis, random or range")
      ->check(CLI::IsMember({"metis", "random", "range"}))->capture_default_str();
  cmd->add_option("--balance", o->balance,
                  "What METIS balances across parts: work (each device's Â entries + 8 x rows, refined; default), "
                  "nodes, edges (node weight 1 + degree) or both")
      ->check(CLI::IsMember({"work", "nodes", "edges", "both"}))
      ->capture_default_str();
  cmd->add_option("--metis-sample", o->metis_sample,
                  "Fraction of edges METIS partitions (auto: all below 20 M directed edges, else 0.1)")
      ->capture_default_str();
  return {cmd, [o] { run_train(*o); }};
}

}  // namespace gcnpart::cli
