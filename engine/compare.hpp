// `compare`: every strategy x device count x layer count on one graph, priced side by side, as one library call
// that returns a report (what `gcnpart compare` and the Python package's compare() print, write and return).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "engine/trainer.hpp"
#include "partition/plan.hpp"

namespace gcnpart::engine {

struct CompareRequest {
  std::vector<int> parts{2, 4, 8};   ///< device counts K
  std::vector<int> layers{2, 3};     ///< GCN layer counts
  /// Strategies besides single (single is the reference row of every layer count). Empty: every strategy of the
  /// traits table.
  std::vector<partition::Strategy> strategies;
  partition::PartitionOptions partition;
  bool train = false;       ///< train config.epochs and report accuracy; else measure_epochs epochs
  /// Epochs per row without --train: the first is a warm-up, the rest are timed (median, min and max per row).
  int measure_epochs = 4;
  TrainConfig config;       ///< model and optimiser (layers is set per row)
  Backend backend = Backend::kCpu;  ///< CPU: K virtual devices; CUDA: single on GPU 0, K on GPUs 0..K-1 (NCCL)
  /// Non-empty: a folder (created) that receives, per measured configuration, <strategy>-k<K>-l<L>.gplan
  /// (partition::save_plan) and <strategy>-k<K>-l<L>.parts (partition::save_parts, one part per line).
  std::string save_plan_dir;
  /// @throws InvalidInput naming --parts, --layers, --strategies (repeated values), --measure-epochs, --imbalance
  /// or a model option.
  void validate() const;
};

struct CompareReport {
  nlohmann::json header;                ///< dataset, partitioner, device, precision, model, ...
  /// One per (layers, strategy, K): metrics, memory, time split, accuracy, and the epoch time: epoch_seconds (the
  /// median of the timed epochs, those after the first) with its spread epoch_ms_median, epoch_ms_min,
  /// epoch_ms_max (milliseconds) over epoch_ms_samples epochs.
  std::vector<nlohmann::json> rows;
  /// {header..., rows: [...]}; provenance (command, date, commit) is the front-end's to add.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// On CPU devices, what the epoch times of a row with K > 1 are: K threads sharing this machine's cores (the report
/// header's epoch_time_note).
std::string cpu_epoch_time_note();

/// The configurations compare() visits (the progress total): layers x (1 + parts x strategies).
std::int64_t compare_configurations(const CompareRequest& request);

/// Called after every row (measured or skipped) with the row, the rows done and the total.
using CompareProgress = std::function<void(const nlohmann::json& row, std::int64_t done, std::int64_t total)>;

/// Plans and trains every configuration of `request` on `ds`. Rows a strategy's traits refuse for a reason other
/// than K (bf16 pipeline) and K above the visible GPUs are recorded as skipped with the reason; K a strategy cannot
/// take at all (pipeline with K > layers) is left out. @throws InvalidInput, OutOfMemory, DeviceError.
CompareReport compare(const datasets::Dataset& ds, const CompareRequest& request, const CompareProgress& progress = {});

/// The metrics of a plan as the reports give them.
nlohmann::json to_json(const partition::PlanMetrics& m);

}  // namespace gcnpart::engine
