#include "tools/frontend/request.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "base/error.hpp"
#include "engine/aggregation.hpp"
#include "engine/mpi_communicator.hpp"
#include "partition/strategy.hpp"

namespace gcnpart::frontend {

namespace {

template <class Enum>
std::vector<std::string> names_of() {
  return enum_names<Enum>();
}

std::vector<TrainOption> make_train_options() {
  using S = TrainSettings;
  // Help lines as `gcnpart train --help` prints them; rows in that order.
  std::vector<TrainOption> t;
  auto row = [&](const char* cli, const char* python, std::string help, Target (*field)(S&)) -> TrainOption& {
    return t.emplace_back(TrainOption{cli, python, std::move(help), field});
  };
  row("--device", "device", "cpu or cuda[:N]", [](S& s) -> Target { return &s.device; }).show_default = true;
  t.back().py_expected = "a str such as 'cpu' or 'cuda:0'";
  row("--layers", "layers", "GCN layers", [](S& s) -> Target { return &s.config.model.layers; }).show_default = true;
  row("--hidden", "hidden", "Hidden width", [](S& s) -> Target { return &s.config.model.hidden; }).show_default = true;
  row("--epochs", "epochs", "Training epochs", [](S& s) -> Target { return &s.config.epochs; }).show_default = true;
  row("--lr", "lr", "Adam learning rate", [](S& s) -> Target { return &s.config.model.lr; }).show_default = true;
  row("--dropout", "dropout", "Dropout probability on every layer's input",
      [](S& s) -> Target { return &s.config.model.dropout; })
      .show_default = true;
  row("--weight-decay", "weight_decay", "L2 weight decay", [](S& s) -> Target { return &s.config.model.weight_decay; })
      .show_default = true;
  row("--weight-decay-all", "weight_decay_all_layers",
      "Decay every layer's weights (default: the first layer's, as in the paper)",
      [](S& s) -> Target { return &s.config.model.weight_decay_all_layers; })
      .flag = true;
  row("--early-stopping", "early_stopping",
      "Stop when the validation loss has not improved for this many epochs (0 = off)",
      [](S& s) -> Target { return &s.config.early_stopping; })
      .show_default = true;
  row("--no-normalize", nullptr, "Do not row-normalise the input features",
      [](S& s) -> Target { return &s.no_normalize; })
      .flag = true;
  row(nullptr, "normalize_features", "", [](S& s) -> Target { return &s.config.normalize_features; });
  row("--seed", "seed", "Seed of run 1 (run r uses seed + r - 1)", [](S& s) -> Target { return &s.config.model.seed; })
      .show_default = true;
  row("--runs", "runs", "Independent runs (mean and std are reported)", [](S& s) -> Target { return &s.runs; })
      .show_default = true;
  {
    auto& r = row("--spmm", "spmm",
                  "SpMM implementation: auto times own vs cuSPARSE once per width on the GPU and keeps the faster",
                  [](S& s) -> Target { return &s.spmm; });
    r.show_default = true, r.check = CliCheck::kNames, r.names = names_of<SpmmAlgo>;
  }
  row(nullptr, "spmm_long_row", "", [](S& s) -> Target { return &s.config.model.spmm_tuning.long_row; });
  row(nullptr, "spmm_segment", "", [](S& s) -> Target { return &s.config.model.spmm_tuning.segment; });
  row(nullptr, "spmm_lanes", "", [](S& s) -> Target { return &s.config.model.spmm_tuning.lanes; });
  {
    auto& r = row("--cuda-graph", "cuda_graph",
                  "Replay the training step as a CUDA Graph captured on the second epoch (one launch per epoch instead "
                  "of one per kernel; holds a 32 MiB cuBLAS workspace): auto = on one GPU with the single strategy "
                  "when rows x widest width <= 2^25 (small steps, where launches matter); on = whatever the size, an "
                  "error where it cannot; off = launch every kernel",
                  [](S& s) -> Target { return &s.cuda_graph; });
    r.show_default = true, r.check = CliCheck::kNames, r.names = names_of<CudaGraphMode>;
  }
  row("--boundary-overlap", "boundary_overlap",
      "Boundary strategy: aggregate the interior rows while the boundary rows travel (true/false)",
      [](S& s) -> Target { return &s.config.model.boundary_overlap; })
      .show_default = true;
  {
    auto& r = row("--gather-chunks", "gather_chunks",
                  "Gather strategy on GPUs: column chunks per collective, overlapping communication with the SpMM "
                  "(1 = no overlap)",
                  [](S& s) -> Target { return &s.config.model.gather_chunks; });
    r.show_default = true, r.check = CliCheck::kGatherChunks;
  }
  {
    auto& r = row("--nccl-timeout", nullptr,
                  "GPUs: seconds a rank waits on a collective without progress before it aborts the run",
                  [](S& s) -> Target { return &s.nccl_timeout; });
    r.show_default = true, r.check = CliCheck::kPositive;
  }
  {
    auto& r = row("--precision", "precision", precisions_help(), [](S& s) -> Target { return &s.precision; });
    r.show_default = true, r.check = CliCheck::kNames, r.names = names_of<Precision>;
  }
  row("--tf32", nullptr, "Same as --precision tf32", [](S& s) -> Target { return &s.tf32; }).flag = true;
  row("--memory-limit", "memory_limit",
      "Refuse device allocations past this many bytes (e.g. 24GB) to emulate a smaller card",
      [](S& s) -> Target { return &s.memory_limit; });
  t.back().py = PyValue::kIntOrText, t.back().py_expected = "an int or a str such as '24GB'";
  {
    auto& r = row("--offload", "offload",
                  "Stream the layers through host memory by row parts when the model does not fit the device "
                  "(exact: the same losses): auto = only when the resident model does not fit (--memory-limit, or "
                  "the GPU's free memory); host = always, every saved activation in host memory; off = never "
                  "(refuse a model that does not fit). The single strategy only",
                  [](S& s) -> Target { return &s.offload; });
    r.show_default = true, r.check = CliCheck::kNames, r.names = names_of<OffloadMode>;
    r.py_expected = "'auto', 'off' or 'host'";
  }
  row("--offload-part-rows", "offload_part_rows",
      "Rows per streamed part with --offload (0: chosen from the device's memory)",
      [](S& s) -> Target { return &s.config.model.offload_part_rows; })
      .show_default = true;
  row("--save", nullptr, "Save the trained weights (run 1) to this file", [](S& s) -> Target { return &s.save; });
  row("--checkpoint", "checkpoint_dir",
      "Folder for training checkpoints (model, Adam state, losses), written atomically; needs --checkpoint-every (or "
      "--resume)",
      [](S& s) -> Target { return &s.config.checkpoint_dir; });
  row("--checkpoint-every", "checkpoint_every", "Epochs between checkpoints (>= 1)",
      [](S& s) -> Target { return &s.config.checkpoint_every; });
  row("--resume", "resume",
      "Continue from the checkpoint in --checkpoint (bit-exact, every strategy and launch mode); a folder without one "
      "is refused",
      [](S& s) -> Target { return &s.config.resume; })
      .flag = true;
  row("--fault-kill", nullptr, "Tests: device RANK kills the process in EPOCH (RANK:EPOCH)",
      [](S& s) -> Target { return &s.fault_kill; })
      .hidden = true;
  row("--fault-fail", nullptr, "Tests: device RANK fails with an error in EPOCH (RANK:EPOCH)",
      [](S& s) -> Target { return &s.fault_fail; })
      .hidden = true;
  row("--load", "load_weights", "Start from weights saved with --save",
      [](S& s) -> Target { return &s.config.load_weights; });
  {
    auto& r = row("--reorder", "reorder", reorder_help(), [](S& s) -> Target { return &s.reorder; });
    r.show_default = true, r.check = CliCheck::kNames, r.names = names_of<Reorder>;
    r.py_expected = "'none', 'degree', 'rcm' or 'metis'";
  }
  row("--json", nullptr,
      "Write the full report as JSON ('-' for stdout: then stdout carries only the JSON, the human lines go to "
      "stderr)",
      [](S& s) -> Target { return &s.json; });
  row("--save-plan", nullptr,
      "Write the partition plan (binary .gplan: parts, per-device nodes, metrics; partition::load_plan reads it) "
      "before the first epoch",
      [](S& s) -> Target { return &s.save_plan; });
  row("--save-parts", nullptr,
      "Write the node -> part mapping as text, one part id per line (line i = node i; numpy.loadtxt(FILE, "
      "dtype=int) reads it) before the first epoch",
      [](S& s) -> Target { return &s.save_parts; });
  {
    auto& r = row("--strategy", "strategy", "How to split the graph over --parts devices:\n" + partition::strategies_help(),
                  [](S& s) -> Target { return &s.strategy; });
    r.show_default = true, r.check = CliCheck::kNames, r.names = names_of<partition::Strategy>;
  }
  row("--parts", "parts", "Number of devices for --strategy (default: --gpus, or the mpirun rank count)",
      [](S& s) -> Target { return &s.parts; });
  t.back().given = [](S& s) { return &s.parts_given; };
  row("--gpus", nullptr, "GPUs to use with --device cuda and a multi-device --strategy (one thread each)",
      [](S& s) -> Target { return &s.gpus; });
  t.back().given = [](S& s) { return &s.gpus_given; };
  {
    auto& r = row("--link-bench", "link_bench",
                  "After multi-device training, time a plain all-gather (gather) / all-reduce (drop, halo) of the "
                  "training's size on the same communicator and report the bandwidth ratio (auto: on GPUs)",
                  [](S& s) -> Target { return &s.link_bench; });
    r.show_default = true, r.check = CliCheck::kNames, r.names = names_of<engine::LaunchOptions::Link>;
    r.py_expected = "'auto', 'on' or 'off'";
  }
  {
    auto& r = row("--partitioner", "partitioner", "metis, random or range",
                  [](S& s) -> Target { return &s.partitioner; });
    r.show_default = true, r.check = CliCheck::kNames, r.names = names_of<partition::Partitioner>;
  }
  {
    auto& r = row("--balance", "balance",
                  "What METIS balances across parts: work (each device's Â entries + 8 x rows, refined; default), "
                  "nodes, edges (node weight 1 + degree) or both",
                  [](S& s) -> Target { return &s.balance; });
    r.show_default = true, r.check = CliCheck::kNames, r.names = names_of<partition::Balance>;
  }
  row("--metis-sample", "metis_sample",
      "Fraction of edges METIS partitions (auto: all below 20 M directed edges, else 0.1)",
      [](S& s) -> Target { return &s.metis_sample; })
      .show_default = true;
  t.back().py = PyValue::kAnyAsText;
  return t;
}

}  // namespace

const std::vector<TrainOption>& train_options() {
  static const std::vector<TrainOption> table = make_train_options();
  return table;
}

const TrainOption& train_option(std::string_view cli) {
  for (const auto& row : train_options())
    if (row.cli != nullptr && cli == row.cli) return row;
  throw LogicError("no train option " + std::string(cli));
}

std::string train_parameter(std::string_view cli, Spelling spelling) {
  const TrainOption& row = train_option(cli);
  return spelling == Spelling::kPython && row.python != nullptr ? row.python : row.cli;
}

const char* python_type_name(const Target& target) {
  struct Name {
    const char* operator()(int*) const { return "an int"; }
    const char* operator()(std::int64_t*) const { return "an int"; }
    const char* operator()(std::uint64_t*) const { return "a non-negative int"; }
    const char* operator()(float*) const { return "a float"; }
    const char* operator()(double*) const { return "a float"; }
    const char* operator()(bool*) const { return "a bool"; }
    const char* operator()(std::string*) const { return "a str"; }
  };
  return std::visit(Name{}, target);
}

std::string oom_hint(const std::string& data, int layers, std::int64_t hidden, Spelling spelling) {
  const std::string l = std::to_string(layers), h = std::to_string(hidden);
  const std::string ask = spelling == Spelling::kCli
                              ? "run: gcnpart fit " + data + " --layers " + l + " --hidden " + h +
                                    " (and try --strategy halo|gather|boundary --parts K)"
                              : "call gcnpart.fit(ds, layers=" + l + ", hidden=" + h +
                                    ") (and try strategy='halo'|'gather'|'boundary', parts=K)";
  return "To see which cards and strategies fit this graph and model, " + ask;
}

engine::Device parse_device(const std::string& spec, Spelling spelling) {
  const std::string parameter = train_parameter("--device", spelling);
  const auto device = engine::Device::parse(spec, parameter);
  if (!device.is_cuda()) return device;
  const int n = engine::cuda_device_count();
  if (device.index >= n)
    throw InvalidInput::parameter(parameter, spec,
                                  n == 0 ? "a visible CUDA device, but none was found: use " +
                                               (spelling == Spelling::kCli ? parameter + " cpu" : parameter + "='cpu'")
                                         : "cuda:0..cuda:" + std::to_string(n - 1));
  return device;
}

engine::TrainRequest make_train_request(TrainSettings& o, std::int64_t num_edges, Spelling spelling) {
  const auto name = [spelling](std::string_view cli) { return train_parameter(cli, spelling); };
  engine::TrainRequest q;
  engine::TrainConfig& config = o.config;
  config.model.spmm = from_string<SpmmAlgo>(o.spmm, name("--spmm"));
  if (o.tf32 && o.precision != "tf32" && o.precision != "fp32")
    throw InvalidInput::parameter("--tf32", "with --precision " + o.precision, "--precision tf32 alone");
  if (o.tf32) o.precision = "tf32";
  config.model.precision = from_string<Precision>(o.precision, name("--precision"));
  config.model.cuda_graph = from_string<CudaGraphMode>(o.cuda_graph, name("--cuda-graph"));
  config.model.offload = from_string<OffloadMode>(o.offload, name("--offload"));
  if (config.model.offload_part_rows < 0)
    throw InvalidInput::parameter(name("--offload-part-rows"), std::to_string(config.model.offload_part_rows),
                                  ">= 0 (0: chosen from the device's memory)");
  if (config.model.offload == OffloadMode::kHost && o.strategy != "single")
    throw InvalidInput::parameter(name("--offload"), "host",
                                  "--strategy single (one device streams its rows through host memory; the "
                                  "multi-device strategies keep theirs resident), not --strategy " + o.strategy);
  // The CLI says early why "on" cannot be; Python leaves it to the model, which refuses it naming --cuda-graph.
  if (spelling == Spelling::kCli && config.model.cuda_graph == CudaGraphMode::kOn &&
      (!engine::Device::parse(o.device).is_cuda() || o.strategy != "single"))
    throw InvalidInput::parameter("--cuda-graph", "on",
                                  "auto or off with --device " + o.device + " --strategy " + o.strategy +
                                      " (a captured step needs --device cuda and --strategy single)");
  if (o.no_normalize) config.normalize_features = false;
  // Tests: --fault-kill SIGKILLs the process of device RANK (an MPI rank; in threads mode the whole process),
  // --fault-fail makes device RANK's thread fail with an error, as a device that dies in threads mode.
  for (const auto& [option, text, kind] :
       {std::tuple{"--fault-kill", &o.fault_kill, engine::FaultInjection::Kind::kKill},
        std::tuple{"--fault-fail", &o.fault_fail, engine::FaultInjection::Kind::kThrow}}) {
    if (text->empty()) continue;
    int rank = -1, epoch = -1;
    char tail = 0;
    if (std::sscanf(text->c_str(), "%d:%d%c", &rank, &epoch, &tail) != 2 || rank < 0 || epoch < 0)
      throw InvalidInput::parameter(option, *text, "RANK:EPOCH, two non-negative integers");
    config.fault = {kind, rank, epoch};
  }
  if (!o.memory_limit.empty()) config.memory_limit = parse_bytes(o.memory_limit, name("--memory-limit"));
  config.oom_hint = oom_hint(o.data, config.model.layers, config.model.hidden, spelling);
  q.config = config;
  q.runs = o.runs;
  q.device = parse_device(o.device, spelling);
  q.strategy = from_string<partition::Strategy>(o.strategy, name("--strategy"));
  q.reorder = from_string<Reorder>(o.reorder, name("--reorder"));
  q.launch.mpi = o.mpi;
  q.launch.nccl_timeout_s = o.nccl_timeout;
  q.launch.link = from_string<engine::LaunchOptions::Link>(o.link_bench, name("--link-bench"));
  if (q.launch.mpi) {
    engine::mpi_init();
    if (partition::traits(q.strategy).parts == partition::PartsRule::kOne && engine::mpi_size() > 1) {
      const auto any_k = partition::strategy_names_where(
          [](const partition::StrategyTraits& t) { return t.parts == partition::PartsRule::kAny; });
      throw InvalidInput::parameter(name("--strategy"), to_string(q.strategy),
                                    or_list(any_k) + " when started by mpirun with " +
                                        std::to_string(engine::mpi_size()) + " ranks");
    }
    if (o.parts == 0) o.parts = engine::mpi_size();
  }
  if (o.parts_given && o.parts < 1)
    throw InvalidInput::parameter(name("--parts"), std::to_string(o.parts), ">= 1 devices");
  if (o.gpus < 0 || (o.gpus == 0 && o.gpus_given))
    throw InvalidInput::parameter("--gpus", std::to_string(o.gpus), ">= 1");
  // A device count asked for a one-device strategy is refused, not ignored (the CLI and Python agree).
  if (o.parts_given && o.parts > 1 && partition::one_device(q.strategy)) {
    const auto any_k = partition::strategy_names_where(
        [](const partition::StrategyTraits& t) { return !partition::one_device(t.value); });
    throw InvalidInput::parameter(name("--parts"), std::to_string(o.parts),
                                  std::string("1 with ") + name("--strategy") + " " + to_string(q.strategy) +
                                      " (one device); " + name("--strategy") + " " + or_list(any_k) + " to train on " +
                                      std::to_string(o.parts) + " devices");
  }
  // --gpus counts GPUs: on CPU devices it says nothing (the CLI warns), so the count comes from --parts alone.
  if (o.parts == 0) o.parts = o.gpus > 0 && q.device.is_cuda() ? o.gpus : 0;
  if (o.parts == 0 && !partition::one_device(q.strategy))
    throw InvalidInput::parameter(name("--parts"), "not given",
                                  std::string("a device count for ") + name("--strategy") + " " +
                                      to_string(q.strategy) + ": " + name("--parts") + " K (virtual CPU devices or " +
                                      "GPUs), or " + name("--gpus") + " K with --device cuda");
  q.parts = partition::one_device(q.strategy) ? 1 : o.parts;
  q.partition.method = from_string<partition::Partitioner>(o.partitioner, name("--partitioner"));
  q.partition.metis_edge_sample = metis_sample(o.metis_sample, num_edges, name("--metis-sample"));
  q.partition.balance = from_string<partition::Balance>(o.balance, name("--balance"));
  q.save_plan = o.save_plan;
  q.save_parts = o.save_parts;
  q.validate();
  return q;
}

std::int64_t parse_bytes(const std::string& text, const std::string& parameter) {
  double value = 0;
  const char* b = text.data();
  const char* e = b + text.size();
  const auto r = std::from_chars(b, e, value);
  const std::string expected = "a byte count such as 24000000000, 24GB, 24GiB or 512MiB";
  if (r.ec != std::errc() || !(value >= 0) || !std::isfinite(value)) throw InvalidInput::parameter(parameter, text, expected);
  const std::string unit(r.ptr, e);
  double mult = 1;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "KB" || unit == "kB") mult = 1e3;
  else if (unit == "MB") mult = 1e6;
  else if (unit == "GB") mult = 1e9;
  else if (unit == "TB") mult = 1e12;
  else if (unit == "KiB") mult = 1024.0;
  else if (unit == "MiB") mult = 1024.0 * 1024;
  else if (unit == "GiB") mult = 1024.0 * 1024 * 1024;
  else if (unit == "TiB") mult = 1024.0 * 1024 * 1024 * 1024;
  else throw InvalidInput::parameter(parameter, text, expected);
  // Past 2^62 bytes (4 EiB) the count cannot be a memory size, and the conversion would overflow.
  if (value * mult > 4.6e18) throw InvalidInput::parameter(parameter, text, "at most 4 EiB (" + expected + ")");
  return static_cast<std::int64_t>(value * mult);
}

double metis_sample(const std::string& option, std::int64_t directed_edges, const std::string& parameter) {
  if (option == "auto") return directed_edges > kMetisSampleAboveEntries ? 0.1 : 1.0;
  double v = 0;
  const auto r = std::from_chars(option.data(), option.data() + option.size(), v);
  if (r.ec != std::errc() || r.ptr != option.data() + option.size() || !(v > 0.0 && v <= 1.0))
    throw InvalidInput::parameter(parameter, option, "auto or a fraction in (0, 1]");
  return v;
}

std::string reorder_help() {
  std::string help = "Renumber nodes for memory locality first (exact; outputs stay in your node order; time "
                     "reported apart):";
  for (const auto& r : kReorders) help += std::string(" ") + r.name + " (" + r.description + ");";
  help.back() = '.';
  return help;
}

}  // namespace gcnpart::frontend
