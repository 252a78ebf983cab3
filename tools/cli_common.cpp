#include "tools/cli_common.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "datasets/dataset_path.hpp"
#include "engine/aggregation.hpp"
#include "base/atomic_file.hpp"
#include "base/error.hpp"

namespace gcnpart::cli {

std::string data_folder(const std::string& option) {
  if (!option.empty()) return option;
  if (const char* env = std::getenv("GCNPART_DATA"); env != nullptr && *env != '\0') return env;
  std::error_code ec;
  // The user's data folder, then the one the build was configured next to (a source checkout's ../shared/datasets).
  std::string user;
  if (const char* xdg = std::getenv("XDG_DATA_HOME"); xdg != nullptr && *xdg != '\0')
    user = std::string(xdg) + "/gcnpart/datasets";
  else if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    user = std::string(home) + "/.local/share/gcnpart/datasets";
  if (!user.empty() && std::filesystem::is_directory(user, ec)) return user;
#ifdef GCNPART_DEFAULT_DATA_DIR
  if (std::filesystem::is_directory(GCNPART_DEFAULT_DATA_DIR, ec)) return GCNPART_DEFAULT_DATA_DIR;
#endif
  return {};
}

void add_spmm_tuning_options(CLI::App& cmd, kernels::SpmmTuning& tuning) {
  cmd.add_option("--spmm-long-row", tuning.long_row,
                 "Own SpMM: rows with more entries than this are split into segments over the whole GPU (0: by the "
                 "product: about half the entries per resident lane group (the share), at least 128; 8 x the share, "
                 "within 32..128, below 64 entries (twice the share, at least 32, for layouts that launch long rows "
                 "apart); twice the share above 4096)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd.add_option("--spmm-segment", tuning.segment,
                 "Own SpMM: entries per segment of a long row (0: by the product: 64 below a share of 128 entries, 512 "
                 "above 4096, else 256)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd.add_option("--spmm-slab", tuning.slab,
                 "Own SpMM: columns per slab, computed over all rows before the next slab (L2 reuse); 0 = whole width")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd.add_option("--spmm-lanes", tuning.lanes,
                 "Own SpMM: lanes per row of vectors of 4 (32: sized to the row, one vector per lane; 4: four lanes "
                 "with 2..4 vectors each for rows of 5..16 vectors; 0: four lanes for rows of 9..12 vectors "
                 "(widths 33..48), else sized to the row)")
      ->check(CLI::IsMember({0, 4, 32}))
      ->capture_default_str();
  cmd.add_option("--spmm-pad", tuning.pad,
                 "Own SpMM: copy X whose rows do not start on 4 elements into a padded workspace so that lanes "
                 "load whole vectors (true|false); training stores every width padded to whole vectors already, so "
                 "this matters for `bench spmm` at unaligned widths")
      ->capture_default_str();
}

void add_reorder_option(CLI::App& cmd, std::string& reorder) {
  cmd.add_option("--reorder", reorder, frontend::reorder_help())
      ->check(CLI::IsMember(enum_names<Reorder>()))
      ->capture_default_str();
}

namespace {

/// The --help section of a train option: the basics first, then the model, several devices, memory, outputs and
/// checkpoints, and the performance knobs (the SpMM's tuning follows --spmm there); tests' options are hidden.
const char* help_group(std::string_view cli) {
  static const std::pair<const char*, std::vector<std::string_view>> kGroups[] = {
      {"Basic", {"--device", "--epochs", "--seed", "--runs", "--precision", "--tf32"}},
      {"Model", {"--layers", "--hidden", "--lr", "--dropout", "--weight-decay", "--weight-decay-all",
                 "--early-stopping", "--no-normalize"}},
      {"Several devices", {"--strategy", "--parts", "--gpus", "--partitioner", "--balance", "--metis-sample",
                           "--link-bench", "--nccl-timeout", "--gather-chunks", "--boundary-overlap", "--save-plan",
                           "--save-parts"}},
      {"Memory", {"--memory-limit", "--offload", "--offload-part-rows"}},
      {"Outputs and checkpoints", {"--json", "--save", "--load", "--checkpoint", "--checkpoint-every", "--resume"}},
      {"Performance tuning", {"--spmm", "--cuda-graph", "--reorder"}},
  };
  for (const auto& [group, names] : kGroups)
    for (std::string_view n : names)
      if (n == cli) return group;
  return "Other";
}

}  // namespace

void add_train_options(CLI::App& cmd, frontend::TrainSettings& settings) {
  for (const frontend::TrainOption& row : frontend::train_options()) {
    if (row.cli == nullptr) continue;  // Python only
    CLI::Option* opt = std::visit(
        [&](auto* field) {
          if constexpr (std::is_same_v<decltype(field), bool*>)
            if (row.flag) return cmd.add_flag(row.cli, *field, row.help);
          return cmd.add_option(row.cli, *field, row.help);
        },
        row.field(settings));
    switch (row.check) {
      case frontend::CliCheck::kNone: break;
      case frontend::CliCheck::kNames: opt->check(CLI::IsMember(row.names())); break;
      case frontend::CliCheck::kPositive: opt->check(CLI::PositiveNumber); break;
      case frontend::CliCheck::kGatherChunks: opt->check(CLI::Range(1, engine::kMaxGatherChunks)); break;
    }
    if (row.show_default) opt->capture_default_str();
    opt->group(row.hidden ? "" : help_group(row.cli));
    if (row.given != nullptr) {
      bool* given = row.given(settings);
      opt->each([given](const std::string&) { *given = true; });
    }
    // The own SpMM's tuning, spelled once for train and bench, follows --spmm.
    if (std::string_view(row.cli) == "--spmm") {
      add_spmm_tuning_options(cmd, settings.config.model.spmm_tuning);
      for (const char* knob : {"--spmm-long-row", "--spmm-segment", "--spmm-slab", "--spmm-lanes", "--spmm-pad"})
        if (CLI::Option* o = cmd.get_option_no_throw(knob); o != nullptr) o->group("Performance tuning");
    }
  }
  cmd.get_option("--fault-fail")->excludes("--fault-kill");
}

void add_data_options(CLI::App& cmd, DataOptions& opts, bool data_required) {
  auto* data = cmd.add_option("DATA", opts.path,
                              "Dataset: an OGB node-property directory, SNAP edge list (.txt[.gz]), METIS graph "
                              "(.graph), Matrix Market (.mtx[.gz]), CSV edge list (.csv), .gcsr file, a dataset name looked up in "
                              "--data-dir (e.g. 'cora'), or 'demo' (built-in SBM, 10,000 nodes)");
  if (data_required) data->required();
  cmd.add_option("--data-dir", opts.data_dir,
                 "Folder in which a DATA name is looked up: DIR/NAME[.gcsr|.txt.gz|.mtx|...], also one folder down "
                 "(default: $GCNPART_DATA)");
  cmd.add_option("--format", opts.format, "Force the input format instead of detecting it")
      ->check(CLI::IsMember({"auto", "ogb", "snap", "metis", "mtx", "gcsr", "demo"}))
      ->capture_default_str();
  cmd.add_option("--split", opts.split, "OGB split folder name (default: meta.csv's, or the only one)");
  cmd.add_option("--synthetic-features", opts.synthetic_features,
                 "Give a structure-only graph this many synthetic features (needs --synthetic-classes)")
      ->check(CLI::NonNegativeNumber);
  cmd.add_option("--synthetic-classes", opts.synthetic_classes, "Number of synthetic classes")
      ->check(CLI::NonNegativeNumber);
  cmd.add_flag("--no-symmetrize", opts.no_symmetrize, "Keep edge directions as stored (GCN expects symmetric)");
  cmd.add_option("--data-seed", opts.seed, "Seed for synthetic features")->capture_default_str();
  cmd.add_option("--max-host-memory", opts.max_host_memory,
                 "Refuse a text input whose edges or features would need more host memory than this (e.g. 8GB; "
                 "default 3/4 of the physical memory): a small .gz can hold billions of lines");
  for (const char* name : {"--data-dir", "--format", "--split", "--synthetic-features", "--synthetic-classes",
                           "--no-symmetrize", "--data-seed", "--max-host-memory"})
    cmd.get_option(name)->group("Data");
}

datasets::Dataset load_data(const DataOptions& opts) {
  datasets::LoadOptions lo;
  static const std::pair<const char*, datasets::Format> kFormats[] = {
      {"auto", datasets::Format::kAuto},  {"ogb", datasets::Format::kOgb},
      {"snap", datasets::Format::kSnap},  {"metis", datasets::Format::kMetis},
      {"mtx", datasets::Format::kMatrixMarket}, {"gcsr", datasets::Format::kGcsr},
      {"demo", datasets::Format::kDemo}};
  for (const auto& [name, f] : kFormats)
    if (opts.format == name) lo.format = f;
  lo.split = opts.split;
  lo.symmetrize = !opts.no_symmetrize;
  if ((opts.synthetic_features > 0) != (opts.synthetic_classes > 0))
    throw InvalidInput::parameter("--synthetic-features/--synthetic-classes",
                                  std::to_string(opts.synthetic_features) + "/" +
                                      std::to_string(opts.synthetic_classes),
                                  "both set (features > 0 and classes >= 2) or neither");
  lo.synthetic_features = opts.synthetic_features;
  lo.synthetic_classes = opts.synthetic_classes;
  lo.seed = opts.seed;
  if (!opts.max_host_memory.empty()) {
    lo.max_host_bytes = parse_bytes(opts.max_host_memory, "--max-host-memory");
    if (lo.max_host_bytes < 1) throw InvalidInput::parameter("--max-host-memory", opts.max_host_memory, "> 0 bytes");
  }
  const std::string data_dir = data_folder(opts.data_dir);
  if (opts.path.empty())  // only `fit` leaves DATA optional (statistics instead); a forgotten one is not the demo
    throw InvalidInput::parameter("DATA", "", "a dataset: a path, a name found in --data-dir / GCNPART_DATA, or "
                                              "'demo' for the built-in one");
  return datasets::load_dataset(lo.format == datasets::Format::kDemo ? opts.path
                                                                     : datasets::resolve_dataset_path(opts.path, data_dir),
                                lo);
}

void write_json(const std::string& path, const nlohmann::json& j) {
  // Invalid UTF-8 from an input (a dataset name) is replaced, not a reason to throw after the work is done.
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  if (path == "-") {
    std::cout << text << std::flush;
    // A full disk or a closed pipe behind stdout is an error, not a report that was never written (exit 0).
    if (!std::cout.good()) {
      std::cout.clear();
      throw IoError("standard output (--json -)", "writing the JSON report failed (" + std::string(std::strerror(errno)) +
                                                      ")");
    }
    return;
  }
  write_file_atomic(path, text);
}

namespace {
/// Where a path leads: absolute, normalised, through symbolic links as far as they exist.
std::filesystem::path resolved_path(const std::string& path) {
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(path, ec).lexically_normal();
  const std::filesystem::path resolved = std::filesystem::weakly_canonical(absolute, ec);
  return ec ? absolute : resolved;
}
}  // namespace

std::vector<std::int64_t> parse_byte_list(const std::string& list, const std::string& parameter) {
  std::vector<std::int64_t> out;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t end = std::min(list.find(',', begin), list.size());
    if (end > begin) out.push_back(parse_bytes(list.substr(begin, end - begin), parameter));
    begin = end + 1;
  }
  if (out.empty()) throw InvalidInput::parameter(parameter, list, "at least one size");
  return out;
}

void check_outputs(std::initializer_list<std::pair<const char*, const std::string*>> outputs) {
  // Two outputs on one path would leave only the last one written: refused before any work.
  std::vector<std::pair<const char*, std::filesystem::path>> seen;
  for (const auto& [parameter, path] : outputs) {
    if (path->empty()) continue;
    check_output_path(*path, parameter);
    if (json_to_stdout(*path)) continue;
    const std::filesystem::path key = resolved_path(*path);
    for (const auto& [other, other_key] : seen)
      if (other_key == key)
        throw InvalidInput::parameter(parameter, *path, std::string("a path other than ") + other + "'s (" +
                                                           other + " writes the same file)");
    seen.emplace_back(parameter, key);
  }
}

void check_outputs(std::initializer_list<std::pair<const char*, const std::string*>> outputs, const DataOptions& data) {
  check_outputs(outputs);
  if (data.path.empty() || data.path == "demo") return;
  const std::string data_dir = data_folder(data.data_dir);
  std::string input;
  try {
    input = datasets::resolve_dataset_path(data.path, data_dir);
  } catch (const Error&) {
    return;  // the loader reports a DATA it cannot find, in its own words
  }
  std::error_code ec;
  if (!std::filesystem::exists(input, ec)) return;
  const std::filesystem::path in = resolved_path(input);
  const bool folder = std::filesystem::is_directory(in, ec);
  for (const auto& [parameter, path] : outputs) {
    if (path->empty() || json_to_stdout(*path)) continue;
    const std::filesystem::path out = resolved_path(*path);
    const auto [mismatch, rest] = std::mismatch(in.begin(), in.end(), out.begin(), out.end());
    (void)rest;
    if (out == in || (folder && mismatch == in.end()))
      throw InvalidInput::parameter(parameter, *path,
                                    std::string("a path that is not ") + (folder ? "inside " : "") + "the input DATA (" +
                                        in.string() + "): it would replace the data");
  }
}

JsonOnStdout::JsonOnStdout(const std::string& json_path) {
  if (!json_to_stdout(json_path)) return;
  std::fflush(stdout);
  std::cout.flush();
  saved_ = ::dup(1);
  if (saved_ >= 0) ::dup2(2, 1);
}

JsonOnStdout::~JsonOnStdout() { release(); }

void JsonOnStdout::release() {
  if (saved_ < 0) return;
  std::fflush(stdout);
  std::cout.flush();
  ::dup2(saved_, 1);
  ::close(saved_);
  saved_ = -1;
}

void warn(const std::string& text) { std::fprintf(stderr, "gcnpart: warning: %s\n", escape_text(text).c_str()); }


void print_memory_check(const engine::MemoryCheck& m, const std::string& device_name) {
  if (!m.available) return;
  std::printf("memory check %s: driver %s vs accounted %s (context %s + NCCL %s + libraries %s + tracked peak %s + "
              "cache slack %s): %+.1f %%, %s\n",
              device_name.c_str(), human_bytes(static_cast<double>(m.measured)).c_str(),
              human_bytes(static_cast<double>(m.accounted())).c_str(),
              human_bytes(static_cast<double>(m.context)).c_str(), human_bytes(static_cast<double>(m.nccl)).c_str(),
              human_bytes(static_cast<double>(m.libraries)).c_str(),
              human_bytes(static_cast<double>(m.tracked_peak)).c_str(),
              human_bytes(static_cast<double>(m.cache_slack)).c_str(), 100 * m.rel_error(),
              m.within(0.05) ? "within 5 %" : "NOT within 5 %");
}

void print_distributed_details(const engine::TrainReport& r, const std::string& device_prefix) {
  for (std::size_t d = 0; d < r.memory.size(); ++d)
    std::printf("device %zu     peak %s, sent %s per epoch; epoch %.3f ms = compute %.3f + comm %.3f + waiting %.3f ms\n",
                d, human_bytes(static_cast<double>(r.memory[d].peak)).c_str(),
                human_bytes(static_cast<double>(r.bytes_sent_per_epoch[d])).c_str(), r.epoch_ms_per_epoch[d],
                r.compute_ms_per_epoch[d], r.comm_ms_per_epoch[d], r.wait_ms_per_epoch[d]);
  if (r.memory.size() > 1)
    std::printf("balance      compute imbalance %.3f (max / mean), exposed communication %.1f %% of the epoch\n",
                r.compute_imbalance(), 100 * r.exposed_communication());
  for (std::size_t d = 0; d < r.memory_check.size(); ++d)
    print_memory_check(r.memory_check[d], device_prefix + std::to_string(d));
  if (!r.has_link) return;
  const auto& l = r.link;
  std::printf("link         %s of %s per call and GPU (%lld per epoch): training %.1f GB/s (these calls %.1f GB/s), "
              "plain %s %.1f GB/s: ratio %.2f (%.2f); bus bandwidth, median of %d\n",
              engine::collective_name(l.collective), human_bytes(static_cast<double>(l.payload_bytes)).c_str(),
              static_cast<long long>(l.calls_per_epoch), l.train_GBps(), l.train_same_GBps(),
              engine::collective_name(l.collective), l.plain_GBps(), l.ratio(), l.same_ratio(), l.repeats);
}

}  // namespace gcnpart::cli
