// The training loop: epochs of train_step, evaluation, early stopping, timing and memory reporting.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/gcn.hpp"
#include "engine/memory.hpp"

namespace gcnpart::engine {

struct TrainConfig {
  GcnConfig model;
  int epochs = 200;
  int early_stopping = 0;  ///< stop when the validation loss has not improved for this many epochs (0 = off)
  bool normalize_features = true;
  std::int64_t memory_limit = 0;  ///< bytes per device, 0 = none
  std::string load_weights;       ///< start from these weights instead of the initialisation
  std::string oom_hint;           ///< appended to out-of-memory errors (e.g. the `gcnpart fit` command to run)
  bool evaluate_every_epoch = true;  ///< validation loss / accuracy each epoch (forced on by early stopping)
  std::string checkpoint_dir;        ///< write DIR/checkpoint.gckpt (atomically) every checkpoint_every epochs
  int checkpoint_every = 0;
  bool resume = false;               ///< continue from DIR/checkpoint.gckpt when it exists
  void validate() const;
};

/// One training run.
struct RunReport {
  std::uint64_t seed = 0;
  std::vector<double> train_loss;  ///< mean cross-entropy on the training nodes, per epoch (dropout on)
  std::vector<double> valid_loss;  ///< per epoch, dropout off
  double accuracy[3] = {0, 0, 0};  ///< train / valid / test after the last epoch
  double loss[3] = {0, 0, 0};
  int epochs_run = 0;
  std::vector<double> epoch_seconds;  ///< train_step wall time per epoch
  MemoryStats memory;                 ///< tracked memory of the device over the run
  std::int64_t driver_peak_bytes = 0; ///< highest cudaMemGetInfo used bytes: after set-up, each epoch, end (CUDA)
  MemoryCheck memory_check;           ///< the driver's view against the accounted terms (CUDA only; nccl = 0)
  std::vector<std::vector<float>> parameters;  ///< final weights
  std::map<std::int64_t, std::string> spmm_choices;  ///< autotuned SpMM per width (GPU)
};

/// Called after every epoch: (epoch, train loss, valid loss, valid accuracy).
using EpochCallback = std::function<void(int, double, double, double)>;

/// Trains the GCN on one device. Validation is evaluated every epoch (needed for early stopping and reported).
RunReport train_single(const LocalProblem& problem, const Device& device, const TrainConfig& config,
                       const EpochCallback& on_epoch = {});

/// A training checkpoint: the model state, the next epoch, the loss history and the early-stopping state.
struct Checkpoint {
  std::vector<std::int64_t> dims;
  std::uint64_t seed = 0;
  int next_epoch = 0;
  ModelState model;
  std::vector<double> train_loss, valid_loss;
  double best_valid = 0;
  int since_best = 0;
};
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
