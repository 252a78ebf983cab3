// The one list of what a device allocates to train a GCN: every buffer engine::GcnModel and its aggregation
// allocate (by a stable name, with category, element count, element size and lifetime), plus the largest per-call
// workspaces the kernels take while training. The engine allocates its buffers by name from this list and the
// memory model (estimate_device_memory, what `gcnpart fit` prints) sums the same list, so the two cannot drift.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "partition/memory_model.hpp"

namespace gcnpart::partition {

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
