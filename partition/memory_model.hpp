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

#include "datasets/dataset.hpp"
#include "base/enums.hpp"
#include "base/memory.hpp"
#include "partition/plan.hpp"

namespace gcnpart::partition {

/// Bytes by MemoryCategory (same layout as engine::CategoryBytes).
using CategoryBytes = std::array<std::int64_t, static_cast<std::size_t>(MemoryCategory::kCount)>;

// Precision (element bytes), Backend (which backend's allocations to mirror: CPU virtual devices track GEMM packing
// and split-k partials; CUDA tracks CUB and column-sum scratch and cuSPARSE plans, while cuBLAS keeps its own
// workspace, part of the fixed per-GPU overhead) and SpmmAlgo (GcnConfig::spmm; kAuto on CUDA may keep a cuSPARSE
// plan per width: the model prices one at every width but ModelSpec::auto_own_widths, plus one candidate alive while
// tuning) are the engine's own enums (base/enums.hpp).

/// The GCN as the memory model sees it: the sizes engine::GcnConfig and the dataset give it.
struct ModelSpec {
  int layers = 2;
  std::int64_t hidden = 16;
  std::int64_t features = 0;
  std::int64_t classes = 0;
  bool dropout = true;                 ///< dropout probability > 0 (keeps the dropped-out inputs for backward)
  double sparse_features_below = 0.1;  ///< GcnConfig::sparse_features_below (0 = never sparse)
  Precision precision = Precision::kFp32;
  SpmmAlgo spmm = SpmmAlgo::kAuto;
  bool spmm_pad = true;  ///< kernels::SpmmTuning::pad: the own CUDA SpMM copies X of unaligned rows into padding
  /// kAuto: widths at which the autotuner is predicted to keep the own kernel (gcnpart fit decides from its time
  /// model, with a margin): no cuSPARSE plan is priced as kept for them, only the candidate alive while tuning.
  /// Empty: the upper bound (a plan kept at every width).
  std::vector<std::int64_t> auto_own_widths;
  /// Pipeline (GcnConfig::pipeline_stages): this device is stage `stage` of `stages` and holds layers
  /// [stage L / stages, (stage + 1) L / stages). 1 stage: every layer.
  int stages = 1;
  int stage = 0;
  /// GcnConfig::cuda_graph (kOff for a device with a communicator): where captures_step() says so, the device
  /// captures its training step and holds the captured GEMMs' cuBLAS workspace (kCudaGraphBlasWorkspace).
  CudaGraphMode cuda_graph = CudaGraphMode::kAuto;

  /// Layer widths: features, hidden x (layers - 1), classes (as GcnConfig::dims).
  [[nodiscard]] std::vector<std::int64_t> dims() const;
  /// The widths the engine stores and computes with: dims() each rounded up to stored_width() (features 100 ->
  /// 104 and classes 47 -> 48 in bf16). The extra columns hold zeros and zero weights throughout training, so
  /// results equal the unpadded model's; every buffer, GEMM, SpMM and message is this wide.
  [[nodiscard]] std::vector<std::int64_t> stored_dims() const;
  /// Parameters: sum over layers of in * out + out.
  [[nodiscard]] std::int64_t parameters() const;
  /// Parameters as stored (stored_dims()): what the weight buffers, Adam state and the gradient all-reduce hold.
  [[nodiscard]] std::int64_t stored_parameters() const;
  /// The layers this device holds: [first_layer(), last_layer()).
  [[nodiscard]] int first_layer() const noexcept { return stage * layers / stages; }
  [[nodiscard]] int last_layer() const noexcept { return (stage + 1) * layers / stages; }
  /// @throws InvalidInput naming the field when a size is out of range.
  void validate() const;
};

/// A width rounded up so that every row of a stored matrix starts on a 16-byte boundary: a multiple of 4 float32
/// or 8 bf16 elements (the own SpMM's vector loads and cuBLAS's tensor-core kernels need it; unaligned bf16 GEMMs
/// at 47 or 100 columns ran 2.5x slower than aligned ones on the H200). float32 widths of 33..47 columns (class
/// counts) are stored as 48: 12 vectors of 4 fill the own SpMM's four-lane layout (SpmmTuning::lanes), which was
/// faster at 48 than at 40 or 44 columns on the H200 (reddit-sized RMAT, degree order: 1.98 ms at 48 against 2.09
/// at 40 and 2.24 at 44; products-sized 3.78 against 3.86 and 4.15), for 9 % more bytes at 41 classes. The rule
/// is by width, whatever the width holds: hidden sizes and dense feature counts of 33..47 take 48 columns too (up
/// to 45 % more bytes at 33; their SpMMs run at 48 as well).
[[nodiscard]] std::int64_t stored_width(std::int64_t width, Precision precision);
/// Every width of `dims` as stored_width() rounds it.
[[nodiscard]] std::vector<std::int64_t> stored_widths(std::vector<std::int64_t> dims, Precision precision);

/// What one device holds, in counts. Rows equal columns for every strategy the engine executes.
struct DeviceShape {
  std::int64_t rows = 0;           ///< local nodes (drop / halo / single), own nodes (gather, boundary)
  std::int64_t graph_entries = 0;  ///< non-zeros of the local Â, self loops included (gather, boundary: the
                                   ///< forward matrix)
  std::int64_t feature_nonzeros = -1;  ///< non-zeros of the local feature rows; < 0: unknown, use feature_density
  double feature_density = 1.0;        ///< fraction of non-zero features, when feature_nonzeros is unknown
  std::array<std::int64_t, 3> split_rows{0, 0, 0};  ///< train, valid, test rows counted on this device
  bool gather = false;
  int parts = 1;                    ///< devices in the group (gather table blocks, collective shares)
  std::int64_t table_block = 0;     ///< gather: table slots per device
  bool boundary = false;
  std::int64_t send_rows = 0;       ///< boundary: rows sent per aggregation, summed over the other devices
  std::int64_t recv_rows = 0;       ///< boundary: rows received per aggregation (columns past the own rows)

  /// Non-zeros used by the model: the exact count, else density * rows * features (rounded).
  [[nodiscard]] std::int64_t nonzeros(std::int64_t features) const;
};

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
/// Whether the sparse input-feature path is taken for these counts (the rule GcnModel follows): the device holds the
/// first layer, at most sparse_features_below of its feature values are non-zero and the first layer narrows.
bool uses_sparse_input(const DeviceShape& shape, const ModelSpec& model);

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
