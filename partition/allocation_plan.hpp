// The one list of what a device allocates to train a GCN: every buffer engine::GcnModel and its aggregation
// allocate (by a stable name, with category, element count, element size and lifetime), plus the largest per-call
// workspaces the kernels take while training. The engine allocates its buffers by name from this list and the
// memory model (estimate_device_memory, what `gcnpart fit` prints) sums the same list, so the two cannot drift.
// It also holds what the list is computed from, the model (ModelSpec) and one device in counts (DeviceShape), and
// the rules the engine follows (stored widths, the sparse-input path): memory_model.hpp sits on this header, never
// the reverse.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/enums.hpp"
#include "base/memory.hpp"

namespace gcnpart::partition {

// Precision (element bytes), Backend (which backend's allocations to mirror: CPU virtual devices track GEMM packing
// and split-k partials; CUDA tracks CUB and column-sum scratch and cuSPARSE plans, while cuBLAS keeps its own
// workspace, part of the fixed per-GPU overhead) and SpmmAlgo (GcnConfig::spmm; kAuto on CUDA may keep a cuSPARSE
// plan per width: the model prices one at every width but ModelSpec::auto_own_widths, plus one candidate alive while
// tuning) are the engine's own enums (base/enums.hpp).

/// The GCN as the allocation plan and the memory model see it: the sizes engine::GcnConfig and the dataset give it.
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

/// Whether the sparse input-feature path is taken for these counts (the rule GcnModel follows): the device holds the
/// first layer, at most sparse_features_below of its feature values are non-zero and the first layer narrows.
bool uses_sparse_input(const DeviceShape& shape, const ModelSpec& model);

/// When an allocation lives.
enum class Lifetime {
  kPersistent,  ///< allocated at set-up (GcnModel / aggregation constructors), alive through training
  kTransient,   ///< taken and freed inside one kernel call (only the largest one counts towards the peak)
};

/// One allocation of a device.
struct Allocation {
  /// Stable key the engine allocates by: "features", "inputs[1]", "aggregated[0]", "grad_a", "adam_m",
  /// "gather_table", ... (transients: "split_k[0]", "loss_scratch[train]", ...).
  std::string name;
  std::string what;  ///< human description ("input of layer 1")
  MemoryCategory category = MemoryCategory::kWorkspace;
  std::int64_t elements = 0;
  int element_bytes = 1;
  Lifetime lifetime = Lifetime::kPersistent;
  /// false: allocated inside the kernel library (cuSPARSE plans, CUB and GEMM scratch), not by the engine.
  bool engine_buffer = true;

  [[nodiscard]] std::int64_t bytes() const noexcept { return elements * element_bytes; }
};

/// Whether layer l of a model of widths `dims` aggregates before its GEMM: (ÂH)W when in <= out, else Â(HW), so
/// the SpMM runs on the narrower side. (The sparse-input first layer narrows, so it never aggregates first.)
[[nodiscard]] bool aggregates_first(const std::vector<std::int64_t>& dims, int layer);
/// Aggregation (SpMM) width of each layer the device holds (model.first_layer() .. last_layer() - 1).
[[nodiscard]] std::vector<std::int64_t> aggregation_widths(const ModelSpec& model);

/// Every allocation of one device of `shape` training `model` on `backend`: persistent buffers first (in the
/// engine's order: data, parameters, activations, scratch, aggregation), then the transient workspace candidates
/// of one training step and one evaluation. Entries of zero elements are listed (the engine allocates an empty
/// buffer); entries the model does not need (no dropout, dense features, ...) are absent.
/// @throws InvalidInput for negative counts or a bad model.
std::vector<Allocation> allocation_plan(const DeviceShape& shape, const ModelSpec& model, Backend backend);

/// Bytes of the cuBLAS workspace a captured training step's GEMMs use (engine::GcnModel, CUDA, one device): cuBLAS's
/// recommended size on Hopper (32 MiB; 4 MiB before), the same on every GPU so that the plan holds everywhere.
/// Without it cuBLAS allocates a pool of that size for the graph, outside the tracked memory.
inline constexpr std::int64_t kCudaGraphBlasWorkspace = std::int64_t{32} << 20;

/// kAuto captures a step only up to this many elements in its widest activation (rows x widest stored width):
/// replaying saves the launch gaps, tens of microseconds per step (H200, 2 layers, hidden 256: Cora 1.11x,
/// email-Enron 1.07-1.15x, soc-Slashdot0902 1.05-1.08x, an arxiv-sized RMAT of 131 k rows 1.03x), nothing
/// measurable on steps of milliseconds, where the 32 MiB workspace would be memory for nothing.
inline constexpr std::int64_t kCudaGraphAutoElements = std::int64_t{1} << 25;

/// Whether engine::GcnModel captures the training step of a device of `shape` (and holds kCudaGraphBlasWorkspace):
/// CUDA, one device (one part, one stage, no communicator: model.cuda_graph is then kOff), and kOn, or kAuto with
/// rows x widest stored width <= kCudaGraphAutoElements.
[[nodiscard]] bool captures_step(const DeviceShape& shape, const ModelSpec& model, Backend backend);

/// The entry named `name`, or null.
[[nodiscard]] const Allocation* find_allocation(const std::vector<Allocation>& plan, std::string_view name);

}  // namespace gcnpart::partition
