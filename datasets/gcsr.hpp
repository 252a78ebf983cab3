// The own binary format `.gcsr`: a versioned header with counts, flags and a checksum, then 64-byte-aligned
// little-endian arrays (row offsets, column ids, values, features, labels, splits). datasets/README.md gives
// the exact layout, enough for a short numpy reader (bench/peer/gcsr.py).
#pragma once

#include <string>

#include "datasets/dataset.hpp"

namespace gcnpart::datasets {

/// Writes `ds` to `path` atomically (temporary file, fsync, rename). @throws IoError.
void save_gcsr(const Dataset& ds, const std::string& path);

/// Reads a .gcsr file. @throws InvalidInput (bad magic, version, counts, checksum, truncation) or IoError.
Dataset load_gcsr(const std::string& path, bool verify_checksum = true);

}  // namespace gcnpart::datasets
