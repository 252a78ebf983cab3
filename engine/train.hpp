// `train`: everything `gcnpart train` (and the Python package) does, as one library call that returns a report.
// Builds the plan of the strategy, trains `runs` seeds through the one training loop (engine/trainer.hpp) and
// summarises them; the report serialises itself. Front-ends parse options, call train(), print.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "engine/resources.hpp"
#include "engine/trainer.hpp"
#include "partition/plan.hpp"

namespace gcnpart::engine {

struct TrainRequest {
  TrainConfig config;  ///< of run 1; run r trains seed config.model.seed + r - 1
  int runs = 1;
  partition::Strategy strategy = partition::Strategy::kSingle;
  int parts = 1;  ///< devices of a partition strategy (single: 1)
  partition::PartitionOptions partition;
  /// single: the device; strategies: its backend (virtual CPU devices 0..K-1, or GPUs 0..K-1 / one per MPI rank).
  Device device;
  LaunchOptions launch;  ///< backend is taken from `device`
  /// Non-empty: the plan (partition::save_plan, binary) and the node -> part text (partition::save_parts) are
  /// written here once the plan is built, before the first epoch. single saves its one-part plan.
  std::string save_plan, save_parts;
  /// With several runs, run r checkpoints into config.checkpoint_dir/run-r; the folder is created.
  void validate() const;
};

/// Summary of `runs` independent runs: mean and (sample) standard deviation.
struct MeanStd {
  double mean = 0, std = 0;
};

struct TrainSummary {
  TrainRequest request;
  nlohmann::json dataset;                       ///< dataset_json of the data trained on
  std::vector<std::int64_t> dims;               ///< layer widths
  std::vector<TrainReport> runs;                ///< run 1 first
  partition::PlanMetrics plan;                  ///< the partition's price (single: one part)
  MeanStd accuracy[3];                          ///< train / valid / test over the runs
  MeanStd epoch_seconds;                        ///< over every run's epochs after its first (warm-up)
  double epoch_median_seconds = 0;              ///< median of the same (slowest device's step)
  /// The whole report: request (model, strategy, partition), dataset, summary, every run, and run 1's per-device
  /// figures at the top level (memory, time split, memory checks, link). Provenance (command, date, commit) is
  /// the front-end's to add.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Progress: (run index from 0, epoch, train loss, valid loss, valid accuracy) after every epoch of every run.
using TrainProgress = std::function<void(int, int, double, double, double)>;

/// Trains as `request` says. @throws InvalidInput (bad request, data without features / labels / train split),
/// OutOfMemory, DeviceError, IoError (checkpoints, weights).
TrainSummary train(const datasets::Dataset& ds, const TrainRequest& request, const TrainProgress& progress = {});

}  // namespace gcnpart::engine
