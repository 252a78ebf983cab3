// Checkpoints and saved weights: one device's training state written atomically per generation, the index that
// names the latest complete generation, and the trained parameters with their widths. Files carry magic numbers and
// sizes; a corrupt, truncated or foreign file is refused (InvalidInput).
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
/// @throws InvalidInput (corrupt, truncated, other model) / IoError.
Checkpoint load_checkpoint(const std::string& path);

/// Saves parameters (W0, b0, W1, b1, ...) with their layer widths, atomically. @throws IoError.
void save_weights(const std::string& path, const std::vector<std::int64_t>& dims,
                  const std::vector<std::vector<float>>& params);
/// Loads parameters saved by save_weights; checks the widths against `dims`. @throws InvalidInput / IoError.
std::vector<std::vector<float>> load_weights(const std::string& path, const std::vector<std::int64_t>& dims);

}  // namespace gcnpart::engine
