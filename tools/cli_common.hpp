// Shared pieces of the gcnpart subcommands: JSON output, dataset options, formatting.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <functional>
#include <initializer_list>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/loaders.hpp"
#include "engine/problem.hpp"
#include "engine/trainer.hpp"
#include "engine/memory.hpp"
#include "engine/report_json.hpp"
#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "tools/frontend/request.hpp"

namespace gcnpart::cli {

using engine::dataset_json;  // one JSON form of a dataset, the library's

/// Options every subcommand that reads DATA shares.
/// The folder a dataset name is looked up in: `option` (--data-dir) when given, else $GCNPART_DATA, else
/// $XDG_DATA_HOME/gcnpart/datasets (~/.local/share/gcnpart/datasets) when it exists, else the datasets folder the
/// build was configured next to (a checkout's ../shared/datasets) when it exists; empty when none.
std::string data_folder(const std::string& option);

struct DataOptions {
  std::string path;      ///< DATA: a path, a name looked up in data_dir, or "demo"; never defaulted
  std::string data_dir;  ///< --data-dir; empty: data_folder()
  std::string format = "auto";
  std::string split;
  std::int64_t synthetic_features = 0;
  std::int32_t synthetic_classes = 0;
  bool no_symmetrize = false;
  std::uint64_t seed = 1;
  std::string max_host_memory;  ///< --max-host-memory, empty = the loaders' default
};

/// Adds DATA (positional, required unless data_required is false: `fit` can work from statistics) and the loader
/// options, --data-dir among them, to a subcommand. There is no default DATA: the demo is asked for by name.
void add_data_options(CLI::App& cmd, DataOptions& opts, bool data_required = true);

/// Adds --reorder (none, degree, rcm, metis) writing the name into `reorder`.
void add_reorder_option(CLI::App& cmd, std::string& reorder);

/// Adds `gcnpart train`'s options from their table (frontend::train_options), in its order, bound to `settings`:
/// names, help, defaults and checks as the rows say; the own SpMM's tuning options after --spmm.
void add_train_options(CLI::App& cmd, frontend::TrainSettings& settings);

/// Adds --spmm-long-row and --spmm-segment (the own SpMM's tuning, defaults as SpmmTuning) to a subcommand.
void add_spmm_tuning_options(CLI::App& cmd, kernels::SpmmTuning& tuning);

/// Loads DATA as the options say; a DATA name (no '/') that is not a path here is looked up in --data-dir, else in
/// $GCNPART_DATA (datasets::resolve_dataset_path). @throws InvalidInput (also for an empty DATA) / IoError.
datasets::Dataset load_data(const DataOptions& opts);

// The option parsing both front-ends share (tools/frontend/request.hpp).
using frontend::metis_sample;
using frontend::parse_bytes;

/// Writes `j` to `path` atomically (pretty-printed); "-" writes to stdout.
void write_json(const std::string& path, const nlohmann::json& j);

/// A comma-separated list of byte counts ("1MiB,64MiB,1GiB"), each parsed by parse_bytes. @throws InvalidInput
/// naming `parameter` for a bad item or an empty list.
std::vector<std::int64_t> parse_byte_list(const std::string& list, const std::string& parameter);

/// Checks output paths before any work (a long run must not end with its results lost to a typo). Empty paths
/// are skipped. @throws IoError naming the option.
void check_outputs(std::initializer_list<std::pair<const char*, const std::string*>> outputs);
/// check_outputs, and also refuses an output that resolves to the input DATA's file or lies inside its folder (an
/// OGB directory): it would replace the data. @throws InvalidInput naming the option, the path and the input.
void check_outputs(std::initializer_list<std::pair<const char*, const std::string*>> outputs, const DataOptions& data);

/// True for "-" and /dev/stdout: the JSON goes to stdout, so nothing else may.
[[nodiscard]] inline bool json_to_stdout(const std::string& path) { return path == "-" || path == "/dev/stdout"; }

/// While alive with json_to_stdout(json_path), stdout carries only the JSON: the human lines printed meanwhile go to
/// stderr (stdout's descriptor is pointed at stderr's). release() (or the destructor) restores it; write the JSON
/// after.
class JsonOnStdout {
 public:
  explicit JsonOnStdout(const std::string& json_path);
  ~JsonOnStdout();
  JsonOnStdout(const JsonOnStdout&) = delete;
  JsonOnStdout& operator=(const JsonOnStdout&) = delete;
  void release();

 private:
  int saved_ = -1;
};

/// "gcnpart: warning: <text>" on stderr (an option that does nothing here, a value that is suspicious).
void warn(const std::string& text);

/// Refuses a list option that repeats a value (--parts 2,2 would run and report the same configuration twice).
/// @throws InvalidInput naming the parameter and the repeated value.
template <typename T>
void check_distinct(const std::vector<T>& values, const std::string& parameter) {
  for (std::size_t i = 0; i < values.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (values[i] == values[j]) {
        std::ostringstream v;
        v << values[i];
        throw InvalidInput::parameter(parameter, v.str() + " twice", "distinct values");
      }
}

/// The human lines of a multi-device run: per device, peak, bytes sent and time split; balance; memory checks;
/// then the link.
void print_distributed_details(const engine::TrainReport& r, const std::string& device_prefix);
/// "memory check cuda:0: driver ... vs accounted ... (...): +1.2 %, within 5 %"
void print_memory_check(const engine::MemoryCheck& m, const std::string& device_name);

/// A subcommand: its CLI11 app and what to run once the command line is parsed and the global options applied.
struct Command {
  CLI::App* app = nullptr;
  std::function<void()> run;
};

/// Subcommand registration: each adds itself to `app`.
Command register_info(CLI::App& app);
Command register_convert(CLI::App& app);
Command register_generate(CLI::App& app);
Command register_train(CLI::App& app);
Command register_fit(CLI::App& app);
Command register_cards(CLI::App& app);
Command register_bench(CLI::App& app);
/// `gcnpart bench nccl` (tools/cmd_bench_nccl.cpp), a subcommand of `bench`.
Command register_bench_nccl(CLI::App& bench);
/// `gcnpart bench copy` (tools/cmd_bench_copy.cpp).
Command register_bench_copy(CLI::App& bench);
Command register_compare(CLI::App& app);

}  // namespace gcnpart::cli
