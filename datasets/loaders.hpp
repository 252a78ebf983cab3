// Loading a dataset from any supported format. Every loader streams its input (large buffered reads,
// std::from_chars) and throws InvalidInput naming file:line:column, the bad value and what was expected,
// or IoError for a missing / unreadable file.
#pragma once

#include <cstdint>
#include <string>

#include "datasets/dataset.hpp"

namespace gcnpart::datasets {

enum class Format { kAuto, kOgb, kSnap, kMetis, kMatrixMarket, kGcsr, kDemo };

struct LoadOptions {
  Format format = Format::kAuto;
  std::string split = {};            ///< OGB split folder name; empty = the only one / "planetoid" / meta.csv's
  bool symmetrize = true;            ///< structure formats: add reverse edges (OGB: as add_inverse_edge says)
  std::int64_t synthetic_features = 0;  ///< > 0: give a structure-only graph synthetic features...
  std::int32_t synthetic_classes = 0;   ///< ...and this many classes
  std::uint64_t seed = 1;
  bool verify_checksum = true;       ///< .gcsr: check the CRC of every section
  /// Host-memory budget of a text loader in bytes (0 = default_max_host_bytes()): a file whose edges or features
  /// would need more (estimated peak of the loader's arrays and the CSR it builds) is refused with OutOfMemory
  /// naming the file, before that memory is allocated. What keeps a small .gz bomb from taking the machine.
  std::int64_t max_host_bytes = 0;
};

/// The host memory this process may use: the tightest of the physical memory (sysconf), the address-space limit
/// (RLIMIT_AS, `ulimit -v`) and the cgroup's limit (v2 memory.max, v1 memory.limit_in_bytes); 0 when unknown.
[[nodiscard]] std::int64_t host_memory_limit();
/// The default host-memory budget: 3/4 of host_memory_limit(), at least 256 MiB.
[[nodiscard]] std::int64_t default_max_host_bytes();

/// Guess the format from the path (directory with raw/ -> OGB; .txt[.gz]/.edges -> SNAP; .graph/.metis -> METIS;
/// .mtx[.gz] -> Matrix Market; .gcsr -> own binary; "demo" -> built-in), else from the first bytes.
Format detect_format(const std::string& path);
[[nodiscard]] const char* format_name(Format f);

/// Load DATA (a path of any format above, or "demo"). Every format's splits are then checked by
/// check_splits_and_labels.
/// Refusals beyond parse errors (each an InvalidInput naming the file): a METIS adjacency that is not symmetric or
/// an edge weight <= 0, a duplicate Matrix Market entry (the format does not say duplicates are summed, so neither
/// summing nor keeping one is safe), weights beyond float32 range, data after the end of a gzip stream.
/// @throws InvalidInput, IoError, OutOfMemory (LoadOptions::max_host_bytes).
Dataset load_dataset(const std::string& path, const LoadOptions& options = {});

/// Refuses a node listed twice in one split or in two of train / valid / test (leakage), and more classes than
/// nodes (one stray label of 999999999 would make a billion-class output layer). @throws InvalidInput.
void check_splits_and_labels(const Dataset& ds);

Dataset load_ogb(const std::string& dir, const LoadOptions& options = {});
Dataset load_snap(const std::string& path, const LoadOptions& options = {});
Dataset load_metis(const std::string& path, const LoadOptions& options = {});
Dataset load_matrix_market(const std::string& path, const LoadOptions& options = {});

}  // namespace gcnpart::datasets
