// Checkpoints and saved weights: one device's training state written atomically per generation, the index that
// names the latest complete generation, and the trained parameters with their widths. Files carry magic numbers,
// sizes and (version 2) a CRC32 per part; a corrupt, truncated, edited or foreign file, or one holding a NaN or an
// infinity, is refused (InvalidInput).
//
// Both formats are little-endian parts, each followed by the u32 CRC32 (zlib's, Python's zlib.crc32) of its bytes:
//   weights     "GCNPWTS2" i64 n, i64 widths[n] | CRC ; per tensor W0, b0, W1, b1, ...: i64 count, f32[count] | CRC
//   checkpoint  "GCNPCKP2" u64 seed, i64 next_epoch, i64 step, i64 since_best, f64 best_valid | CRC ; then
//               i64 count + values | CRC for: widths (i64), parameters, Adam m, Adam v (f32), train, valid losses (f64)
// Version 1 (GCNPWTS1, GCNPCKP1) is the same without the CRCs: still read, with no checksum to check, only the
// finiteness of the values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/parameters.hpp"

namespace gcnpart::engine {

/// One device's training checkpoint: the model state, the next epoch, the loss history and the early-stopping state.
struct Checkpoint {
  std::vector<std::int64_t> dims;
  std::uint64_t seed = 0;
  int next_epoch = 0;
  ModelState model;
  std::vector<double> train_loss, valid_loss;
  double best_valid = 0;
  int since_best = 0;
};
/// DIR/rank<rank>-of-<parts>.e<next_epoch>.gckpt: one device's checkpoint of one generation.
std::string checkpoint_path(const std::string& dir, int rank, int parts, int next_epoch);
/// The generation DIR/checkpoint.latest names (the next epoch to train), or nothing when there is none.
/// @throws InvalidInput when it was written by a run on another number of devices, or is malformed.
std::optional<int> read_checkpoint_latest(const std::string& dir, int parts);
/// Names generation `next_epoch` of a run on `parts` devices as the latest (atomically).
void write_checkpoint_latest(const std::string& dir, int parts, int next_epoch);
/// Removes this device's checkpoints of generations other than `keep` (best effort: a leftover is harmless).
void remove_checkpoints_except(const std::string& dir, int rank, int parts, int keep);
/// Writes a checkpoint atomically (temporary file, fsync, rename): a crash leaves the previous one intact.
void save_checkpoint(const std::string& path, const Checkpoint& c);
/// Reads version 2 (checksummed) or version 1. @throws InvalidInput (checksum mismatch, truncated, non-finite value,
/// not a checkpoint) / IoError.
Checkpoint load_checkpoint(const std::string& path);

/// Saves parameters (W0, b0, W1, b1, ...) with their layer widths, atomically. @throws IoError.
void save_weights(const std::string& path, const std::vector<std::int64_t>& dims,
                  const std::vector<std::vector<float>>& params);
/// Loads parameters saved by save_weights (version 2, or version 1 without checksums); checks each tensor's CRC32,
/// the widths against `dims` and that every value is finite.
/// @throws InvalidInput naming the file and the tensor or byte / IoError.
std::vector<std::vector<float>> load_weights(const std::string& path, const std::vector<std::int64_t>& dims);

}  // namespace gcnpart::engine
