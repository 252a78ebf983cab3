// The streamed (offloaded) plan of one device: what engine::StreamedLayers keeps on the device, what it keeps in
// page-locked host memory and streams through the device by row parts, and the bytes that cross the host link per
// epoch. A model whose resident plan (allocation_plan) does not fit the device trains under this plan, exactly: the
// rows are cut into contiguous parts of `part_rows`; per layer one matrix (the SpMM operand: X W, the layer's input,
// the backward's G or G W^T) is held whole on the device and every other row-wise product runs part by part, with
// the parts' inputs uploaded and outputs downloaded on copy streams while the previous part computes. The matrices
// saved for backward (layer inputs, aggregated inputs, positive masks, activation gradients) each live on the device
// or on the host, whichever the device budget allows, most-used first. Like allocation_plan, the engine allocates by
// this list and the memory model sums it, so `fit` prices exactly what `train --offload` allocates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "partition/allocation_plan.hpp"

namespace gcnpart::partition {

/// Where a saved matrix of the streamed plan lives.
enum class Tier { kDevice, kHost };

/// One matrix of rows x row_bytes that the streamed plan saves between phases of a step.
struct StreamedMatrix {
  std::string name;  ///< "features", "inputs[1]", "positive[2]", "aggregated[0]", "grad[0]" (the device buffer's name)
  std::string what;
  MemoryCategory category = MemoryCategory::kActivations;
  std::int64_t rows = 0;
  std::int64_t width = 0;  ///< elements per row (positive masks: bytes)
  int element_bytes = 4;
  Tier tier = Tier::kHost;

  [[nodiscard]] std::int64_t bytes() const noexcept { return rows * width * element_bytes; }
};

/// How the layers of a streamed plan hand rows to each other: one rule for the plan (its matrices and traffic) and
/// the executor (engine/streamed_layers.cpp). Layer l's SpMM operand (its input when it aggregates first, else X W;
/// in backward G or G W^T, the same width) is operand[l % 2] with two operands, else the one.
struct StreamedFlow {
  bool two_operands = false;
  /// [l]: layer l's input is written whole into its operand by layer l - 1's epilogue, part by part, so it is never
  /// stored (l > 0, layer l aggregates first and reads another operand than layer l - 1).
  std::vector<bool> direct_input;
  /// [l]: the gradient of layer l's input goes from layer l's backward straight into layer l - 1's first backward
  /// pass (dW = (Â X)^T G and G W^T), part by part, never stored: layer l - 1 aggregates first and that pass writes
  /// no operand layer l's pass reads (l - 1 == 0 writes none; two operands; or layer l is the output layer and
  /// multiplies first, reading the logits' gradient).
  std::vector<bool> fused_gradient;
  /// [l]: layer l's input is stored (a saved matrix): read by its backward (layers that multiply first) or uploaded
  /// whole for its forward (layers that aggregate first without a direct input). l = 0: the features, always.
  std::vector<bool> stored_input;
  [[nodiscard]] int operand_of(int layer) const noexcept { return two_operands ? layer % 2 : 0; }
};
/// The flow of a model of stored widths `dims`.
[[nodiscard]] StreamedFlow streamed_flow(const std::vector<std::int64_t>& dims, bool two_operands);

/// One pass of a training step over the parts, or a whole matrix uploaded before the kernels that read it, with the
/// bytes it moves between the host-tier matrices and the device (engine/streamed_layers.cpp's passes, in order).
struct StreamedPhase {
  std::string what;  ///< "forward 1: aggregate", "backward 0: whole G upload", ...
  std::int64_t h2d_bytes = 0, d2h_bytes = 0;
  bool whole_upload = false;  ///< the kernels wait for it (no overlap)
};

/// The streamed plan of one device.
struct StreamedPlan {
  std::int64_t part_rows = 0;  ///< rows per part (the last part may be shorter)
  std::int64_t parts = 0;
  StreamedFlow flow;
  std::int64_t operand_widths[2] = {0, 0};  ///< operand[k]'s width (0: absent)
  std::int64_t operand_width = 0;  ///< the widest operand
  std::vector<StreamedMatrix> matrices;
  /// Every device allocation (the same entry type as allocation_plan: persistent first, then transients), the
  /// device-tier matrices among them by their names.
  std::vector<Allocation> device;
  std::int64_t host_bytes = 0;       ///< page-locked host memory: the host-tier matrices
  std::int64_t step_h2d_bytes = 0;   ///< host -> device bytes of one training step
  std::int64_t step_d2h_bytes = 0;   ///< device -> host bytes of one training step
  std::vector<StreamedPhase> step_phases;  ///< a training step's passes (their bytes sum to step_*_bytes)

  /// Seconds of a step's copies on a host link of h2d_gbs / d2h_gbs GB/s: the whole uploads (`serial`, which the
  /// kernels wait for), and the passes (`passes`: each its larger direction, the two directions overlapping within a
  /// pass while the passes follow each other). A step then takes about serial + max(kernels, passes).
  struct CopySeconds {
    double serial = 0, passes = 0;
  };
  [[nodiscard]] CopySeconds copy_seconds(double h2d_gbs, double d2h_gbs) const;

  [[nodiscard]] const StreamedMatrix* find(const std::string& name) const;
  [[nodiscard]] bool on_device(const std::string& name) const;
};

/// Whether a model can train under a streamed plan: one device holding every layer (no pipeline stage, no
/// gather table or boundary exchange), dense input features (the plan keeps them dense).
[[nodiscard]] bool streams(const DeviceShape& shape, const ModelSpec& model);

/// The streamed plan of a device of `shape` training `model` (dense features: model.sparse_features_below is
/// ignored) whose tracked memory may reach `device_budget` bytes. part_rows > 0: that many rows per part; 0: chosen
/// (the parts' buffers 1/16, 1/32 or 1/64 of the budget, at least 1,024 rows, at most all). Saved matrices go to the
/// device by bytes moved per byte held while the plan's peak stays within the budget; the rest live on the host.
/// Of one or two operands and the part sizes, the plan that fits and moves the fewest bytes per step.
/// The returned plan may exceed the budget (the resident minimum alone may): check with estimate_plan_memory.
/// @throws InvalidInput for a bad model or shape, a negative part_rows, or a model that cannot stream (streams()).
/// all_host: every saved matrix on the host whatever the budget (`--offload host`).
StreamedPlan streamed_plan(const DeviceShape& shape, const ModelSpec& model, Backend backend,
                           std::int64_t device_budget, std::int64_t part_rows = 0, bool all_host = false);

}  // namespace gcnpart::partition
