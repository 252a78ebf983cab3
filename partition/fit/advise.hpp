// advise(): does a graph and a GCN fit one card, and which cards, GPU counts and strategies would run it best.
// Memory from memory_model, epoch time from cost_model (calibrated on the H200), cards from the catalogue
// (cards.hpp). What `gcnpart fit` prints; the report serialises itself (FitReport::to_json).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "datasets/dataset.hpp"
#include "partition/fit/cards.hpp"
#include "partition/fit/cost_model.hpp"
#include "partition/memory_model.hpp"
#include "partition/plan.hpp"

namespace gcnpart::partition {

/// What advise() is asked.
/// Whether fit prices K > 1 devices for a strategy: the memory model covers it and it runs on several devices.
[[nodiscard]] bool priced_for_many(Strategy s);

struct FitRequest {
  /// The graph: a dataset (exact statistics and, for K > 1, exact plan metrics or sampled halos), or, when null,
  /// `stats` alone (the count model of the split). Not owned; must outlive the call.
  const datasets::Dataset* dataset = nullptr;
  /// Statistics when `dataset` is null: name, nodes, edges, features, classes, feature_density, split_sizes,
  /// degree_second_moment, isolated. degree_mean is derived (2 E / N). Validated by advise().
  GraphStats stats;
  /// The model: layers, hidden, dropout, sparse_features_below, precision, spmm. features and classes are taken
  /// from the graph.
  ModelSpec model;
  bool tf32 = false;  ///< GEMMs on TF32 tensor cores
  /// The catalogue: ranked in full; configurations and the calibration card (h200) are looked up in it.
  CardCatalogue catalogue;
  /// Configurations to compare (card id, GPUs), in order; the first two make the verdict. An empty id means
  /// rtx3080; none at all, or one with an empty id, means one rtx3090 against K (default 2) rtx3080.
  std::vector<std::pair<std::string, int>> configs;
  std::vector<int> rank_gpus{1, 2, 4};  ///< GPU counts every catalogue card is ranked at
  /// Priced for K > 1 (pipeline where K <= layers and the precision is fp32 / tf32).
  std::vector<Strategy> strategies{Strategy::kDrop, Strategy::kHalo, Strategy::kGather, Strategy::kPipeline};
  /// The calibration to use; none: the built-in one (partition/fit/calibration.json, measured on the H200). The card
  /// it names must be in the catalogue.
  std::optional<CalibrationData> calibration;
  Partitioner partitioner = Partitioner::kMetis;  ///< with a dataset
  std::int64_t samples = 0;  ///< with a dataset: > 0 estimates halos by BFS from this many seeds (else exact)
  /// With a dataset: the fraction of the edges METIS partitions (PartitionOptions::metis_edge_sample; the cut and
  /// the plan metrics are always the full graph's). `gcnpart fit` passes --metis-sample (auto: 0.1 above 20 M
  /// directed entries, as train).
  double metis_edge_sample = 1.0;
  std::uint64_t seed = 1;    ///< partition and sampling seed
  /// Host RAM the offload plan may use (bytes); 0: this machine's (datasets::host_memory_limit: the tightest of RAM,
  /// ulimit -v and the cgroup's limit). A card whose offload plan needs more host RAM than this is a "no".
  std::int64_t host_ram_bytes = 0;
  /// Rank and recommend drop even where it loses more than kDropMaxLostFraction of the edges (`--allow-lossy-drop`).
  bool allow_lossy_drop = false;
};

/// A split of the graph over `parts` devices under one strategy, with its memory and communication.
struct StrategyFit {
  Strategy strategy = Strategy::kSingle;
  int parts = 1;
  std::string method;              ///< where the split figures come from
  PlanMetrics metrics;
  std::vector<DeviceShape> shapes;
  std::vector<MemoryEstimate> memory;
  int worst = 0;                   ///< device with the largest peak
  std::int64_t peak = 0;           ///< largest tracked peak over devices, bytes
  std::int64_t peak_error = 0;     ///< +- bytes from the split estimate's error
  std::int64_t comm_bytes = 0;     ///< largest bytes sent per epoch over devices
  double halo_factor = 1;          ///< replication factor: local nodes summed / N
  double halo_error = 0;           ///< relative

  /// The tracked peak plus the card's fixed overhead plus the margin (fit_margin) fits the card's memory.
  [[nodiscard]] bool fits(const Card& card) const;
  /// Fits without the margin but not with it: the estimate's error or the allocator's slack may tip it over.
  [[nodiscard]] bool tight(const Card& card) const;
};

/// One strategy of a K-GPU configuration on its card.
struct StrategyOnCard {
  StrategyFit fit;
  bool fits = false;
  EpochTime epoch;
};

/// A change that would make a configuration fit that does not: the smallest of its kind.
struct FitChange {
  std::string kind;     ///< "hidden", "layers", "precision", "gpus", "card"
  std::string change;   ///< "hidden 180 (from 256)", "2 layers (from 3)", "bf16", "4 x rtx3080 (halo)", "1 x a100-80gb"
  std::int64_t per_card_bytes = 0;  ///< memory per card after the change, fixed overhead included
  double seconds = 0;   ///< predicted epoch after the change
};

/// Streaming through host memory on one card (`train --offload`, partition/streamed_plan.hpp) where the model does
/// not fit resident: the plan for the card's memory, its host RAM and its predicted epoch.
struct OffloadFit {
  bool priced = false;             ///< a streamed plan was priced (the single strategy, resident does not fit)
  bool fits = false;               ///< the plan fits the card and the host RAM
  bool fits_card = false;          ///< its device peak fits the card
  std::int64_t peak = 0;           ///< tracked device peak of the plan
  std::int64_t part_rows = 0, parts = 0;
  int operands = 0;
  std::int64_t host_bytes = 0;     ///< page-locked host memory of its saved matrices
  /// Host RAM of the process: the saved matrices, the dataset twice (as loaded and as the engine's problem) and
  /// kHostProcessBytes.
  std::int64_t host_ram_bytes = 0;
  std::int64_t host_ram_limit = 0;  ///< what the host may use (FitRequest::host_ram_bytes or this machine's)
  std::int64_t h2d_bytes = 0, d2h_bytes = 0;  ///< per epoch
  double kernel_seconds = 0;  ///< resident epoch (own SpMM) x kStreamedKernelFactor + parts x layers x kStreamedPartSeconds
  double copy_seconds = 0;    ///< whole uploads + passes at the card's host link (x kHostLinkEfficiency)
  double seconds = 0;         ///< predicted epoch: whole uploads + max(kernels, passes)
};

/// Headroom a configuration must leave to "fit": 2 % of the card's memory or 256 MiB, whichever is larger; below it a
/// configuration that would fit is "tight" (not recommended, not ranked).
[[nodiscard]] std::int64_t fit_margin(const Card& card);
/// Drop is ranked and recommended only while it loses at most this share of the edges (unless asked for:
/// FitRequest::allow_lossy_drop); every row that uses drop shows its lost share.
inline constexpr double kDropMaxLostFraction = 0.10;

/// A streamed step's kernels alone = kStreamedKernelFactor x fit's own resident epoch prediction + kStreamedPartSeconds
/// per part and layer (each part's launches and the waits between its copies and kernels), fitted on four H200 runs
/// under a 24 GiB and a 10 GiB cap (bench/results/h200-2026-12-04-offload): products-sized SBM 3 x 1024 fp32 (806 ms
/// measured, 798 modelled), 10 M nodes 3 x 256 fp32 (582 / 576), products-sized 3 x 512 fp32 (333 / 312) and 2 x 1024
/// bf16 (67.5 / 67.5). The factor also carries the resident model's own optimism on these uniform-degree graphs (issue
/// 36): refit both with the resident model.
inline constexpr double kStreamedKernelFactor = 1.40;
/// Host memory of a GPU training process beside its data (CUDA context and libraries, allocator slack): peak RSS
/// less the model's bytes was 0.54-0.86 GB in the four runs above.
inline constexpr std::int64_t kHostProcessBytes = 700'000'000;
inline constexpr double kStreamedPartSeconds = 0.1035e-3;
/// Page-locked copies reached 55.3 GB/s each way over the H200's PCIe 5 x16 (64 GB/s): 0.86 of the catalogue's figure.
inline constexpr double kHostLinkEfficiency = 0.86;

/// One configuration asked for: `gpus` of `card`.
struct FitConfiguration {
  Card card;
  int gpus = 1;
  // gpus == 1: the whole graph on one card.
  bool fits = false;
  MemoryEstimate memory;
  EpochTime epoch;
  std::int64_t largest_hidden = 0;  ///< widest hidden (with the model's layers) that fits; 0: none
  int largest_layers = 0;           ///< most layers (with the model's hidden) that fit
  OffloadFit offload;               ///< when it does not fit resident
  std::string refusal;              ///< why the model cannot run on this card at all (then fits is false)
  // gpus > 1: every strategy asked for, and how the cards talk.
  std::vector<StrategyOnCard> strategies;
  std::string link;
  /// When it does not fit: the smallest change of each kind that would (narrower, fewer layers, bf16, more cards
  /// with a strategy, a larger card); empty when it fits.
  std::vector<FitChange> would_fit;
};

/// One option of the ranking: a card, a GPU count and the strategy that runs it best.
struct FitOption {
  Card card;
  int gpus = 1;
  Strategy strategy = Strategy::kSingle;
  bool fits = false, exact = true;
  bool tight = false;               ///< would fit, but within the margin (fit_margin): not ranked
  std::string refusal;              ///< why the model cannot run on this card at all (bf16 without bf16 support)
  bool offload = false;             ///< one card streaming through host memory (the model does not fit resident)
  std::int64_t resident_peak = 0;   ///< offload: the tracked peak it would need resident (peak: the streamed plan's)
  bool priced = true;               ///< false: no strategy asked for runs on this many cards (left out of rankings)
  double seconds = 0;               ///< predicted epoch
  std::string link;
  std::int64_t peak = 0;            ///< tracked peak per card
  std::int64_t comm_bytes = 0;      ///< per epoch
  bool measured = false;            ///< the epoch time is on the calibration card (else extrapolated)
  /// Memory per card as printed everywhere: tracked peak plus the card's fixed overhead (CUDA context, handles).
  [[nodiscard]] std::int64_t per_card_bytes() const { return peak + card.fixed_overhead_bytes; }
  double lost_fraction = 0;         ///< of the edges (drop)
  /// Launch price of all the cards, USD; none when the card has no published price.
  [[nodiscard]] std::optional<double> price() const;
  /// Epochs per hour per 1000 USD of launch price.
  [[nodiscard]] std::optional<double> per_kusd() const;
  /// "2 x rtx3080 (halo)"
  [[nodiscard]] std::string label() const;
};

/// What advise() answers.
struct FitReport {
  GraphStats graph;
  bool from_data = false;          ///< statistics of a dataset (else statistics alone)
  ModelSpec model;
  bool tf32 = false;
  Calibration calibration;
  /// Where this graph lies against what the time model was calibrated on: how its L2 reuse was known, and a note
  /// for each way it lies outside (a size or a reuse never calibrated). Empty notes: inside.
  std::string reuse_source;
  std::vector<std::string> outside_calibration;
  std::string split_method;        ///< where the K > 1 split figures come from (empty: no K > 1 asked)
  std::vector<int> rank_gpus;
  std::vector<FitConfiguration> configurations;
  std::vector<FitOption> options;            ///< every catalogue card at every rank_gpus count, catalogue order
  std::vector<std::size_t> by_epoch_time;    ///< indices of the options that fit, fastest first
  std::vector<std::size_t> by_epochs_per_dollar;  ///< of those, the ones with a price, most epochs per dollar first
  std::string verdict;             ///< one paragraph: the first two configurations side by side

  /// {command: "fit", graph, model, calibration, configurations, ranking, verdict}: what `gcnpart fit --json` writes.
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Widest hidden width (with `model`'s other settings) whose predicted tracked peak on `backend` plus
/// `fixed_bytes` stays within `budget_bytes` for every shape (pipeline: every stage when model.stages > 1); 0 when
/// none does. Searches 1..2^24.
std::int64_t largest_hidden_within(const std::vector<DeviceShape>& shapes, ModelSpec model, std::int64_t budget_bytes,
                                   std::int64_t fixed_bytes, Backend backend);

/// Predicts memory and epoch time of the request's configurations and ranks the catalogue.
/// @throws InvalidInput for bad statistics, a bad model, an unknown card id, a GPU count out of 1..1024 or above
///         the number of nodes, or a strategy other than drop, halo, gather, pipeline; whatever the partitioner
///         throws.
FitReport advise(const FitRequest& request);

/// The fit report's number formats: "12.3 ms" (3 decimals below 10 ms), "12.3 %", "1.23 GiB" (smaller: KiB/MiB).
std::string format_ms(double seconds);
std::string format_pct(double fraction, int digits = 1);
std::string format_gib(double bytes);

}  // namespace gcnpart::partition
