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
};

/// Guess the format from the path (directory with raw/ -> OGB; .txt[.gz]/.edges -> SNAP; .graph/.metis -> METIS;
/// .mtx[.gz] -> Matrix Market; .gcsr -> own binary; "demo" -> built-in), else from the first bytes.
Format detect_format(const std::string& path);
[[nodiscard]] const char* format_name(Format f);

/// Load DATA (a path of any format above, or "demo").
Dataset load_dataset(const std::string& path, const LoadOptions& options = {});

Dataset load_ogb(const std::string& dir, const LoadOptions& options = {});
Dataset load_snap(const std::string& path, const LoadOptions& options = {});
Dataset load_metis(const std::string& path, const LoadOptions& options = {});
Dataset load_matrix_market(const std::string& path, const LoadOptions& options = {});

}  // namespace gcnpart::datasets
