#include "tools/frontend/request.hpp"

#include <doctest/doctest.h>

#include "enum_round_trip.hpp"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "tools/cli_common.hpp"

using namespace gcnpart;
using frontend::Spelling;
using frontend::TrainSettings;

namespace {

using gcnpart::testing::check_round_trip;

/// The CLI's path: `gcnpart train` arguments parsed by CLI11 with the options the table registers.
TrainSettings cli_settings(std::vector<std::string> args) {
  TrainSettings s;
  CLI::App app;
  cli::add_train_options(app, s);
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
  return s;
}

/// The Python path: keyword values assigned through the rows' Python names, as gcnpart_module.cpp does.
template <class T>
void set_python(TrainSettings& s, const char* keyword, const T& value) {
  for (const auto& row : frontend::train_options())
    if (row.python != nullptr && std::string(row.python) == keyword) {
      const frontend::Target target = row.field(s);
      REQUIRE(std::holds_alternative<T*>(target));
      *std::get<T*>(target) = value;
      return;
    }
  FAIL("no Python keyword " << keyword);
}

std::string invalid_message(TrainSettings s, Spelling spelling) {
  try {
    (void)frontend::make_train_request(s, 100, spelling);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("every enum a front-end parses round-trips through its one name table") {
  check_round_trip<Backend>("--device");
  check_round_trip<Precision>("--precision");
  check_round_trip<SpmmAlgo>("--spmm");
  check_round_trip<Reorder>("--reorder");
  check_round_trip<CudaGraphMode>("--cuda-graph");
  check_round_trip<partition::Strategy>("--strategy");
  check_round_trip<partition::Partitioner>("--partitioner");
  check_round_trip<partition::Objective>("--objective");
  check_round_trip<partition::Balance>("--balance");
  check_round_trip<engine::LaunchOptions::Link>("--link-bench");
}

TEST_CASE("the partition enums keep the names reports and plans have always printed") {
  CHECK(std::string(to_string(partition::Partitioner::kMetis)) == "metis");
  CHECK(std::string(to_string(partition::Partitioner::kRange)) == "range");
  CHECK(std::string(to_string(partition::Objective::kVolume)) == "vol");
  CHECK(std::string(to_string(partition::Balance::kWork)) == "work");
  CHECK(std::string(partition::balance_name(partition::Balance::kNodes)) == "nodes");
  CHECK(enum_names<partition::Balance>() == std::vector<std::string>{"work", "nodes", "edges", "both"});
  CHECK(enum_names<engine::LaunchOptions::Link>() == std::vector<std::string>{"auto", "on", "off"});
  CHECK(from_string<engine::LaunchOptions::Link>("on", "--link-bench") == engine::LaunchOptions::Link::kAlways);
}

TEST_CASE("every train option has a distinct CLI spelling and a distinct Python keyword") {
  std::set<std::string> cli, python;
  for (const auto& row : frontend::train_options()) {
    CHECK((row.cli != nullptr || row.python != nullptr));
    if (row.cli != nullptr) {
      CHECK(cli.insert(row.cli).second);
      CHECK(!row.help.empty());
    }
    if (row.python != nullptr) CHECK(python.insert(row.python).second);
    if (row.check == frontend::CliCheck::kNames) CHECK((row.names != nullptr));
  }
  // What gcnpart.train accepts, no more, no less.
  const std::set<std::string> keywords{
      "device", "layers", "hidden", "epochs", "lr", "dropout", "weight_decay", "weight_decay_all_layers",
      "early_stopping", "normalize_features", "seed", "runs", "spmm", "spmm_long_row", "spmm_segment", "spmm_lanes",
      "cuda_graph", "boundary_overlap", "gather_chunks", "precision", "memory_limit", "checkpoint_dir",
      "checkpoint_every", "resume", "load_weights", "reorder", "strategy", "parts", "link_bench", "partitioner",
      "balance", "metis_sample", "offload", "offload_part_rows"};
  CHECK(python == keywords);
  CHECK(frontend::train_parameter("--memory-limit", Spelling::kPython) == "memory_limit");
  CHECK(frontend::train_parameter("--load", Spelling::kPython) == "load_weights");
  CHECK(frontend::train_parameter("--gpus", Spelling::kPython) == "--gpus");  // CLI only
  CHECK(frontend::train_parameter("--load", Spelling::kCli) == "--load");
}

TEST_CASE("the CLI and Python paths give equal train requests for the same settings") {
  const TrainSettings c = cli_settings({"--layers", "3", "--hidden", "32", "--epochs", "7", "--lr", "0.02",
                                        "--dropout", "0.25", "--seed", "5", "--runs", "2", "--precision", "bf16",
                                        "--spmm", "own", "--spmm-long-row", "64", "--cuda-graph", "off",
                                        "--strategy", "halo", "--parts", "3", "--partitioner", "random", "--balance",
                                        "edges", "--metis-sample", "0.5", "--reorder", "rcm", "--link-bench", "on",
                                        "--memory-limit", "2GiB", "--no-normalize", "--weight-decay-all",
                                        "--boundary-overlap", "false"});
  TrainSettings p;
  set_python<int>(p, "layers", 3);
  set_python<std::int64_t>(p, "hidden", 32);
  set_python<int>(p, "epochs", 7);
  set_python<float>(p, "lr", 0.02f);
  set_python<float>(p, "dropout", 0.25f);
  set_python<std::uint64_t>(p, "seed", 5);
  set_python<int>(p, "runs", 2);
  set_python<std::string>(p, "precision", "bf16");
  set_python<std::string>(p, "spmm", "own");
  set_python<std::int64_t>(p, "spmm_long_row", 64);
  set_python<std::string>(p, "cuda_graph", "off");
  set_python<std::string>(p, "strategy", "halo");
  set_python<int>(p, "parts", 3);
  set_python<std::string>(p, "partitioner", "random");
  set_python<std::string>(p, "balance", "edges");
  set_python<std::string>(p, "metis_sample", "0.5");
  set_python<std::string>(p, "reorder", "rcm");
  set_python<std::string>(p, "link_bench", "on");
  set_python<std::string>(p, "memory_limit", "2GiB");
  set_python<bool>(p, "normalize_features", false);
  set_python<bool>(p, "weight_decay_all_layers", true);
  set_python<bool>(p, "boundary_overlap", false);

  TrainSettings cc = c, pp = p;
  const engine::TrainRequest a = frontend::make_train_request(cc, 1000, Spelling::kCli);
  const engine::TrainRequest b = frontend::make_train_request(pp, 1000, Spelling::kPython);
  const auto& ma = a.config.model;
  const auto& mb = b.config.model;
  CHECK(ma.layers == 3);
  CHECK(ma.layers == mb.layers);
  CHECK(ma.hidden == mb.hidden);
  CHECK(ma.lr == mb.lr);
  CHECK(ma.dropout == mb.dropout);
  CHECK(ma.weight_decay == mb.weight_decay);
  CHECK(ma.weight_decay_all_layers == mb.weight_decay_all_layers);
  CHECK(ma.seed == mb.seed);
  CHECK(ma.precision == Precision::kBf16);
  CHECK(ma.precision == mb.precision);
  CHECK(ma.spmm == mb.spmm);
  CHECK(ma.spmm_tuning.long_row == 64);
  CHECK(ma.spmm_tuning.long_row == mb.spmm_tuning.long_row);
  CHECK(ma.cuda_graph == mb.cuda_graph);
  CHECK(ma.boundary_overlap == mb.boundary_overlap);
  CHECK(ma.gather_chunks == mb.gather_chunks);
  CHECK(a.config.epochs == b.config.epochs);
  CHECK(!a.config.normalize_features);
  CHECK(a.config.normalize_features == b.config.normalize_features);
  CHECK(a.config.memory_limit == std::int64_t{2} << 30);
  CHECK(a.config.memory_limit == b.config.memory_limit);
  CHECK(a.runs == b.runs);
  CHECK(a.strategy == partition::Strategy::kHalo);
  CHECK(a.strategy == b.strategy);
  CHECK(a.parts == 3);
  CHECK(a.parts == b.parts);
  CHECK(a.partition.method == b.partition.method);
  CHECK(a.partition.balance == partition::Balance::kEdges);
  CHECK(a.partition.balance == b.partition.balance);
  CHECK(a.partition.metis_edge_sample == 0.5);
  CHECK(a.partition.metis_edge_sample == b.partition.metis_edge_sample);
  CHECK(a.reorder == b.reorder);
  CHECK(a.launch.link == engine::LaunchOptions::Link::kAlways);
  CHECK(a.launch.link == b.launch.link);
  CHECK(a.device.name() == b.device.name());
}

TEST_CASE("the defaults of both paths are the same request") {
  TrainSettings c = cli_settings({});
  TrainSettings p;
  const engine::TrainRequest a = frontend::make_train_request(c, 30'000'000, Spelling::kCli);
  const engine::TrainRequest b = frontend::make_train_request(p, 30'000'000, Spelling::kPython);
  CHECK(a.strategy == partition::Strategy::kSingle);
  CHECK(a.parts == 1);
  CHECK(b.parts == 1);
  CHECK(a.reorder == Reorder::kDegree);
  CHECK(a.partition.balance == partition::Balance::kWork);
  CHECK(a.partition.metis_edge_sample == 0.1);  // auto above 20 M directed edges
  CHECK(a.launch.link == engine::LaunchOptions::Link::kAuto);
  CHECK(a.config.model.precision == b.config.model.precision);
  CHECK(a.config.epochs == b.config.epochs);
  CHECK(a.config.model.hidden == b.config.model.hidden);
}

TEST_CASE("a bad value names the parameter as its front-end spells it, the value and the allowed names") {
  TrainSettings s;
  s.balance = "vertices";
  const std::string cli = invalid_message(s, Spelling::kCli);
  CHECK(cli.find("--balance") != std::string::npos);
  CHECK(cli.find("vertices") != std::string::npos);
  CHECK(cli.find("work, nodes, edges or both") != std::string::npos);
  const std::string py = invalid_message(s, Spelling::kPython);
  CHECK(py.find("parameter balance") != std::string::npos);
  CHECK(py.find("--balance") == std::string::npos);

  s = {};
  s.link_bench = "sometimes";
  CHECK(invalid_message(s, Spelling::kPython).find("auto, on or off") != std::string::npos);
  s = {};
  s.partitioner = "kahypar";
  CHECK(invalid_message(s, Spelling::kCli).find("metis, random or range") != std::string::npos);
  s = {};
  s.memory_limit = "lots";
  CHECK(invalid_message(s, Spelling::kPython).find("memory_limit") != std::string::npos);
  s = {};
  s.parts = 0;
  s.parts_given = true;
  CHECK(invalid_message(s, Spelling::kCli).find("--parts") != std::string::npos);
  s = {};
  s.tf32 = true;
  s.precision = "bf16";
  CHECK(invalid_message(s, Spelling::kCli).find("--tf32") != std::string::npos);
  s = {};
  s.cuda_graph = "on";  // needs --device cuda --strategy single
  CHECK(invalid_message(s, Spelling::kCli).find("a captured step needs --device cuda") != std::string::npos);
}

TEST_CASE("the out-of-memory hint is one sentence in each front-end's words") {
  const std::string cli = frontend::oom_hint("cora", 3, 64, Spelling::kCli);
  CHECK(cli ==
        "To see which cards and strategies fit this graph and model, run: gcnpart fit cora --layers 3 --hidden 64 "
        "(and try --strategy halo|gather|boundary --parts K)");
  const std::string py = frontend::oom_hint("cora", 3, 64, Spelling::kPython);
  CHECK(py ==
        "To see which cards and strategies fit this graph and model, call gcnpart.fit(ds, layers=3, hidden=64) (and "
        "try strategy='halo'|'gather'|'boundary', parts=K)");
  TrainSettings s;
  s.data = "cora";
  CHECK(frontend::make_train_request(s, 10, Spelling::kCli).config.oom_hint ==
        frontend::oom_hint("cora", 2, 16, Spelling::kCli));
}

TEST_CASE("a Python-only or CLI-only option stays with its front-end") {
  // --gpus, --tf32, --json, --fault-kill: the CLI's; normalize_features and the SpMM tuning keywords: Python's rows.
  for (const char* cli : {"--gpus", "--tf32", "--json", "--save", "--nccl-timeout", "--fault-kill", "--fault-fail"})
    CHECK(frontend::train_option(cli).python == nullptr);
  CHECK_THROWS_AS((void)frontend::train_option("--no-such-option"), LogicError);
}

TEST_CASE("a device count for a one-device strategy is refused by both front-ends, naming the strategies that split") {
  const std::string cli = invalid_message(cli_settings({"--parts", "4"}), Spelling::kCli);
  CHECK(cli.find("--parts") != std::string::npos);
  CHECK(cli.find("'4'") != std::string::npos);
  CHECK(cli.find("--strategy single") != std::string::npos);
  CHECK(cli.find("halo") != std::string::npos);
  TrainSettings p;
  set_python(p, "parts", 4);
  p.parts_given = true;  // gcnpart_module.cpp marks a keyword it was given
  const std::string py = invalid_message(p, Spelling::kPython);
  CHECK(py.find("parts") != std::string::npos);
  CHECK(py.find("--parts") == std::string::npos);
  CHECK(py.find("strategy single") != std::string::npos);
  // One device asked for explicitly, or a multi-device strategy, still trains.
  CHECK(invalid_message(cli_settings({"--parts", "1"}), Spelling::kCli).empty());
  CHECK(invalid_message(cli_settings({"--parts", "4", "--strategy", "halo"}), Spelling::kCli).empty());
}

TEST_CASE("a multi-device strategy without a device count is refused; --gpus counts only GPUs") {
  const std::string none = invalid_message(cli_settings({"--strategy", "halo"}), Spelling::kCli);
  CHECK(none.find("--parts") != std::string::npos);
  CHECK(none.find("--strategy halo") != std::string::npos);
  // --gpus with CPU devices (the default) does not become the device count (the CLI warns that it has no effect).
  CHECK(invalid_message(cli_settings({"--strategy", "gather", "--gpus", "3"}), Spelling::kCli).find("--parts") !=
        std::string::npos);
  CHECK(invalid_message(cli_settings({"--strategy", "gather", "--parts", "3"}), Spelling::kCli).empty());
}
