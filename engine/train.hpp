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
#include "partition/reorder.hpp"

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
  /// Locality reordering of the nodes before anything else (partition/reorder.hpp): exact, reported separately.
  /// Degree order by default: on the H200 it was the fastest order measured on RMAT and the shared real graphs
  /// (bench/README.md, issue 15).
  Reorder reorder = Reorder::kDegree;
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
  /// What went wrong partitioning (partition::Partition::note: METIS retried or replaced); empty: nothing.
  std::string partition_note;
  partition::Partitioner partitioner_used = partition::Partitioner::kMetis;
  MeanStd accuracy[3];                          ///< train / valid / test over the runs
  std::int64_t split_rows[3] = {0, 0, 0};       ///< rows of the train / valid / test splits (0: none, no accuracy)
  MeanStd epoch_seconds;                        ///< over every run's epochs after its first (warm-up)
  double epoch_median_seconds = 0;              ///< median of the same (slowest device's step)
  double reorder_seconds[2] = {0, 0};           ///< computing the locality order, applying it to the dataset
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

/// Logits of every node (num_nodes x classes, row-major, in the dataset's node order) of the GCN `model` with
/// `parameters` (W0, b0, W1, b1, ...: TrainReport::parameters) over the whole graph of `ds`, dropout off, on
/// `device`: what the Python package's TrainResult.predict() returns. Synchronises. @throws InvalidInput (data
/// without features, labels or a train split; parameters of another shape), OutOfMemory, DeviceError.
std::vector<float> predict(const datasets::Dataset& ds, const GcnConfig& model, bool normalize_features,
                           const std::vector<std::vector<float>>& parameters, const Device& device);

}  // namespace gcnpart::engine
