// The one translation of front-end options into the library's requests, shared by the CLI (tools/cmd_*.cpp) and
// the Python module (tools/python/gcnpart_module.cpp). A setting is one row of train_options(): its CLI spelling,
// its Python keyword, its --help line and the TrainSettings field it fills. The CLI registers its CLI11 options
// from the rows, Python maps its keyword arguments through the same rows, and make_train_request turns the filled
// TrainSettings into an engine::TrainRequest with the same checks and messages, the parameter spelled as the
// calling front-end spells it. No CLI11 or nanobind here: both front-ends link this library.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/enum_names.hpp"
#include "base/enums.hpp"
#include "engine/resources.hpp"
#include "engine/train.hpp"
#include "partition/plan.hpp"

namespace gcnpart::frontend {

/// Which front-end is asking: parameters in messages are spelled as it spells them ("--strategy" / "strategy").
enum class Spelling { kCli, kPython };

/// Everything `gcnpart train` and `gcnpart.train` can set, as the user gave it (enum options by name), with the
/// CLI's defaults. A front-end fills it (through train_options()) and calls make_train_request.
struct TrainSettings {
  engine::TrainConfig config;  ///< the typed knobs (model, epochs, checkpoints, ...), filled in place
  int runs = 1;
  std::string device = "cpu";
  std::string spmm = "auto", precision = "fp32", cuda_graph = "auto", offload = "auto";
  bool tf32 = false;  ///< CLI --tf32, the same as --precision tf32
  bool no_normalize = false;  ///< CLI --no-normalize (Python: config.normalize_features)
  std::string memory_limit;   ///< empty: none; else parse_bytes' forms ("24GB", "1e9")
  std::string strategy = "single";
  int parts = 0;  ///< 0 (not given): --gpus, the MPI world size, or 1
  int gpus = 0;
  bool parts_given = false, gpus_given = false;  ///< 0 given is refused, not "automatic"
  std::string partitioner = "metis", balance = "work", metis_sample = "auto";
  std::string reorder = "degree";
  std::string link_bench = "auto";
  double nccl_timeout = engine::kDefaultNcclTimeoutSeconds;
  std::string fault_kill, fault_fail;  ///< tests: RANK:EPOCH
  bool mpi = false;                    ///< started by mpirun (the CLI: engine::launched_under_mpi())
  std::string save_plan, save_parts;
  std::string json, save;  ///< CLI outputs of the report and the weights (not part of the request)
  std::string data;        ///< the DATA the user named (the out-of-memory hint repeats it)
};

/// Where a row's value goes (a field of TrainSettings, its type the value's type).
using Target = std::variant<int*, std::int64_t*, std::uint64_t*, float*, double*, bool*, std::string*>;

/// A check the CLI applies while parsing (CLI11 validators); make_train_request checks the rest for both.
enum class CliCheck { kNone, kNames, kPositive, kGatherChunks };

/// How a Python value becomes the field: as its type says, or also an int for a text field (bytes), or any value
/// as its str() (metis_sample: 0.5 or "auto").
enum class PyValue { kTyped, kIntOrText, kAnyAsText };

/// One setting.
struct TrainOption {
  const char* cli;     ///< "--layers"; nullptr: Python only
  const char* python;  ///< "layers"; nullptr: CLI only
  std::string help;    ///< the --help line
  Target (*field)(TrainSettings&);
  bool flag = false;           ///< a CLI flag (no value)
  bool show_default = false;   ///< --help shows the default
  bool hidden = false;         ///< tests only: not in --help
  CliCheck check = CliCheck::kNone;
  std::vector<std::string> (*names)() = nullptr;  ///< the allowed names (enum options), for kNames
  bool* (*given)(TrainSettings&) = nullptr;       ///< set when the option appears (0 then means 0)
  PyValue py = PyValue::kTyped;
  const char* py_expected = nullptr;  ///< what a Python value of the wrong type is told (nullptr: by type)
};

/// Every train setting, in the order `gcnpart train --help` lists them (DATA and the loader options come first,
/// from the CLI). The own SpMM's tuning options sit after --spmm: the CLI spells them once for train and bench
/// (add_spmm_tuning_options), so their rows here carry Python names only.
[[nodiscard]] const std::vector<TrainOption>& train_options();

/// The row whose CLI spelling is `cli`. @throws LogicError for an unknown one.
[[nodiscard]] const TrainOption& train_option(std::string_view cli);

/// The parameter as `spelling` spells it: "--memory-limit" or "memory_limit".
[[nodiscard]] std::string train_parameter(std::string_view cli, Spelling spelling);

/// "an int", "a float", "a bool", "a str", "a non-negative int" (uint64): what a Python value of another type is told.
[[nodiscard]] const char* python_type_name(const Target& target);

/// The request, from filled settings; `num_edges` (directed) prices --metis-sample auto. Under MPI (settings.mpi)
/// it initialises MPI to read the world size. @throws InvalidInput naming the parameter as `spelling` spells it.
[[nodiscard]] engine::TrainRequest make_train_request(TrainSettings& settings, std::int64_t num_edges,
                                                      Spelling spelling);

/// What an out-of-memory error adds: how to ask `fit` which cards and strategies fit, in the front-end's words.
[[nodiscard]] std::string oom_hint(const std::string& data, int layers, std::int64_t hidden, Spelling spelling);

/// The device `spec` names, a CUDA one checked against the visible devices. @throws InvalidInput.
[[nodiscard]] engine::Device parse_device(const std::string& spec, Spelling spelling);

/// "24GB", "24GiB", "1e9" -> bytes. @throws InvalidInput naming the parameter.
[[nodiscard]] std::int64_t parse_bytes(const std::string& text, const std::string& parameter);

/// Directed edges above which "--metis-sample auto" partitions a sample (train, compare) and fit samples its splits.
inline constexpr std::int64_t kMetisSampleAboveEntries = 20'000'000;

/// The fraction of edges METIS sees: "auto" = all of them below 20 M directed edges, 10 % above (METIS 5.1 needs
/// ~18x the CSR and minutes on large power-law graphs; the cut is always measured on the full graph).
/// @throws InvalidInput naming `parameter`.
[[nodiscard]] double metis_sample(const std::string& option, std::int64_t directed_edges,
                                  const std::string& parameter = "--metis-sample");

/// --reorder's help: every order with its description.
[[nodiscard]] std::string reorder_help();

}  // namespace gcnpart::frontend
