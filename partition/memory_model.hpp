// Analytic peak device memory of GCN training, for `single` and for every strategy x K x layers, from counts alone
// (local rows, local matrix entries, feature non-zeros, split rows, gather table sizes) and the model's widths.
// It sums allocation_plan() (partition/allocation_plan.hpp), the list engine::GcnModel and its aggregation allocate
// from, buffer by buffer and by MemoryCategory, plus the largest per-call workspace a kernel takes while training
// (which differs between the CPU and CUDA backends), so on virtual CPU devices it reproduces the tracked peak to the
// byte when the counts are exact. Figures for graphs that are not at hand come from estimates of the counts (halo
// growth, edge cut) whose error is carried along.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "base/enums.hpp"
#include "base/memory.hpp"
#include "datasets/dataset.hpp"
#include "partition/allocation_plan.hpp"  // ModelSpec, DeviceShape and the list this model sums
#include "partition/plan.hpp"
#include "partition/reuse.hpp"

namespace gcnpart::partition {

/// Bytes by MemoryCategory (same layout as engine::CategoryBytes).
using CategoryBytes = std::array<std::int64_t, static_cast<std::size_t>(MemoryCategory::kCount)>;

/// One allocation of the model (for explanations and tests): the bytes of an entry of allocation_plan()
/// (partition/allocation_plan.hpp).
struct AllocationItem {
  std::string what;
  MemoryCategory category = MemoryCategory::kWorkspace;
  std::int64_t bytes = 0;
};

/// Predicted memory of one device.
struct MemoryEstimate {
  CategoryBytes persistent{};  ///< allocated at set-up, alive through training, by category
  CategoryBytes at_peak{};     ///< persistent plus the largest transient workspace (MemoryStats::at_peak_by)
  std::int64_t peak = 0;       ///< the tracked peak: sum of at_peak
  std::int64_t transient = 0;  ///< the largest per-call workspace taken while training or evaluating
  std::string transient_what;  ///< which call takes it
  /// CUDA: bytes the caching allocator keeps after freeing (one block per distinct transient size), which the
  /// driver counts as used although the tracker does not. 0 on CPU.
  std::int64_t cached = 0;
  bool sparse_input = false;   ///< the sparse input-feature path is taken
  std::vector<AllocationItem> items;  ///< every persistent allocation, then the transient candidates
};

/// Predicted memory of one device of `shape` training `model` on `backend`: the sum of allocation_plan() (its
/// persistent entries plus the largest transient one). Exact for the CPU backend when the shape's counts are exact; on CUDA the CUB temporary sizes and the cuSPARSE buffer are estimates (a few KiB).
/// @throws InvalidInput for negative counts or a bad model.
MemoryEstimate estimate_device_memory(const DeviceShape& shape, const ModelSpec& model, Backend backend);
/// The same sum over any list of allocations (allocation_plan's, or a streamed plan's device list).
MemoryEstimate estimate_plan_memory(const std::vector<Allocation>& plan, Backend backend);

/// Bytes one device sends in one training epoch (forward, backward, gradient all-reduce), counted as the engine's
/// communicators count them: a ring all-reduce of B bytes sends 2 B (k-1)/k, an all-gather or reduce-scatter of a
/// k-block table sends its (k-1)/k share, boundary its rows (forward: send_rows, in the precision's elements;
/// backward: the received rows' float32 gradients). Single device (parts == 1): 0.
std::int64_t comm_bytes_per_epoch(const DeviceShape& shape, const ModelSpec& model);

/// Aggregation (SpMM) calls of one training epoch: (width, transposed) per call, forward then backward.
struct SpmmCall {
  std::int64_t width = 0;
  bool backward = false;
};
/// (aggregates_first decides each layer's order; the sparse-input first layer narrows, so it never aggregates first.)
std::vector<SpmmCall> spmm_calls_per_epoch(const ModelSpec& model);

// ---------------------------------------------------------------------------------------------------------
// Counts from data, plans, metrics or statistics

/// A graph and its data summarised by counts.
struct GraphStats {
  std::string name;
  std::int64_t nodes = 0;
  std::int64_t edges = 0;              ///< undirected, self loops excluded
  std::int64_t self_loops = 0;         ///< nodes that already carry a self loop (Â adds the others)
  std::int64_t features = 0;
  std::int64_t classes = 0;
  double feature_density = 1.0;        ///< fraction of non-zero feature values
  std::array<std::int64_t, 3> split_sizes{-1, -1, -1};  ///< train, valid, test; -1 = unknown (all nodes train)
  double degree_mean = 0;              ///< 2 E / N
  double degree_second_moment = 0;     ///< E[d^2]; 0 = unknown (a Poisson degree distribution is assumed)
  std::int64_t isolated = -1;          ///< nodes without edges; -1 = unknown (then none are set apart)
  std::int64_t degree_max = 0;
  /// The aggregation's L2 reuse measured on the graph (partition/reuse.hpp); empty = unknown (the time model then
  /// infers it from the degree distribution).
  ReuseProfile reuse;

  /// Splits with unknowns resolved: unknown -> train = all nodes, valid = test = 0.
  [[nodiscard]] std::array<std::int64_t, 3> splits() const;
  /// @throws InvalidInput naming the field when a count is out of range.
  void validate() const;
};

/// Exact statistics of a dataset (features counted, degrees summed). O(N F + E).
GraphStats graph_stats(const datasets::Dataset& ds);

/// The single-device shape of a dataset (exact).
DeviceShape single_device_shape(const datasets::Dataset& ds);
/// Single device from counts only.
DeviceShape single_device_shape(const GraphStats& stats);

/// Exact per-device shapes of a plan: local matrix entries from the plan, feature non-zeros and split rows from the
/// dataset (the same nodes engine::device_problem gives each device).
std::vector<DeviceShape> device_shapes(const Plan& plan, const datasets::Dataset& ds);

/// Per-device shapes from plan metrics and graph statistics: feature non-zeros from the density, split rows in
/// proportion to the device's own nodes. drop / halo: rows = local nodes, entries = local entries + rows; gather:
/// rows = own nodes, entries = local entries + rows, table block = table rows / parts.
std::vector<DeviceShape> device_shapes(const PlanMetrics& metrics, Strategy strategy, int parts,
                                       const GraphStats& stats);

// ---------------------------------------------------------------------------------------------------------
// Halo and cut estimates without a plan

/// Per-device figures of a split, estimated. Each figure carries a relative error (1 sigma) next to it: the
/// sampling error for the sampled estimate, the model error measured on reference graphs for the count model.
struct SplitEstimate {
  std::string method;                      ///< "sampled BFS (S seeds, partitioner)" or "degree expansion (...)"
  int parts = 1, layers = 2;
  double inner_nodes = 0;                  ///< mean own nodes per device
  double max_inner_nodes = 0;              ///< largest part (table block for gather)
  std::vector<double> halo_per_hop;        ///< mean nodes per device first reached at hop 1..layers
  std::vector<double> halo_per_hop_error;  ///< relative error of each
  double local_entries_halo = 0;           ///< mean directed entries of a halo device's local matrix (no loops)
  double local_entries_halo_error = 0;
  double local_entries_drop = 0;           ///< mean directed entries inside a part (drop)
  double own_degree_sum = 0;               ///< mean directed entries of a part's rows in the full graph (gather)
  double edge_cut = 0;                     ///< undirected edges between parts
  double edge_cut_error = 0;               ///< relative
  /// Largest device / mean for local nodes (halo): applied to get the per-card worst case. Estimated from the
  /// per-device sampled figures, or 1 for the count model (random splits are balanced).
  double halo_imbalance = 1;

  [[nodiscard]] double halo_nodes() const;  ///< sum over hops
  /// Plan metrics as the estimate predicts them (every device equal to the mean, except the first device, which
  /// carries the imbalance), for device_shapes(PlanMetrics, ...).
  [[nodiscard]] PlanMetrics metrics(Strategy strategy, const GraphStats& stats) const;
};

/// Sampled estimate on the real graph: BFS to `layers` hops from `samples` uniformly drawn seed nodes gives each
/// seed's hop distance to every part (and so the device rings it falls in), its local degree on each device and
/// its cut edges; scaled by N / samples. Error: the standard error of the scaled sums. Deterministic for a seed.
/// @throws InvalidInput for samples < 1, parts < 1, layers < 1 or a partition that does not fit the graph.
SplitEstimate estimate_split_sampled(const datasets::Csr& graph, const Partition& partition, int layers,
                                     std::int64_t samples, std::uint64_t seed = 1);

/// Count model for a random split when only N, E (and optionally E[d^2]) are known: a node lies within h hops of
/// another device's part with probability 1 - E[(1 - 1/K)^{d_v S_h}], where S_h is the expected number of nodes
/// within h - 1 further hops of a neighbour (mean excess degree to the power, with a collision correction
/// N (1 - exp(-x / N))), averaged over a Poisson (or, given E[d^2], a negative-binomial) degree distribution; when
/// the isolated nodes are known they are set apart and the others' degree minus one follows that distribution
/// (power-law graphs such as RMAT have many isolated nodes, which no single two-parameter law captures).
/// It describes random and hash splits; METIS cuts fewer edges on graphs with locality, so for a METIS split it
/// is an upper bound. The error carried is kCountModelErrorWithMoments or kCountModelErrorCountsOnly.
SplitEstimate estimate_split_from_counts(const GraphStats& stats, int parts, int layers);

/// Relative error the count model reports for its halo and entry figures, as measured on the reference graphs
/// (Cora, an SBM and an RMAT graph; random split, K = 2..8, layers 2..3), and enforced by
/// tests/partition/memory_model_test.cpp: with E[d^2] and the isolated nodes known, and from N and E alone.
inline constexpr double kCountModelErrorWithMoments = 0.15;
inline constexpr double kCountModelErrorCountsOnly = 0.40;

}  // namespace gcnpart::partition
