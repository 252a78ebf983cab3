// Layers of a model too large for its device, streamed through it by row parts (partition/streamed_plan.hpp): the
// seed's "serial" split used for memory rather than speed. Per layer one matrix is whole on the device (the SpMM
// operand); every row-wise product (GEMMs, epilogues, the SpMM's rows, dW and db sums) runs part by part, the parts'
// inputs uploaded on one copy stream and their outputs downloaded on another while the previous part computes
// (double-buffered slots, ordered by events). Each row's values are what the resident model computes; only the
// sums over rows (dW, db) are added part by part, and long rows' segments in another order.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/aggregation.hpp"
#include "engine/cuda_handles.hpp"
#include "engine/parameters.hpp"
#include "engine/planned_buffer.hpp"
#include "engine/problem.hpp"
#include "engine/resources.hpp"
#include "kernels/cuda_event.hpp"
#include "kernels/ops.hpp"
#include "partition/streamed_plan.hpp"

namespace gcnpart::engine {

/// Bytes moved and time spent by the streamed executor (engine/streamed_layers.hpp), per training step.
struct StreamStats {
  std::int64_t h2d_bytes = 0;  ///< host -> device bytes issued since construction (steps and evaluations)
  std::int64_t d2h_bytes = 0;
  std::int64_t step_h2d_bytes = 0;  ///< of the last training step (forward and backward)
  std::int64_t step_d2h_bytes = 0;
};

class StreamedLayers {
 public:
  /// The dropout of layer `layer`'s input with probability p for the step being run (GcnModel::layer_dropout):
  /// its global_ids point at row 0; the executor offsets them by each part's first row.
  using DropoutOf = std::function<kernels::Dropout(int layer, float p)>;

  /// Takes the plan's device buffers by name (plan.device), allocates the host-tier matrices (page-locked on CUDA)
  /// and stores the features (rows widened to the stored width, bf16 rounded) in their tier. dims: stored widths.
  /// @throws OutOfMemory naming the bytes when the host cannot hold (or lock) its matrices.
  StreamedLayers(Resources& res, const LocalProblem& problem, const partition::StreamedPlan& plan,
                 const std::vector<std::int64_t>& dims, bool bf16, Aggregation& aggregation, ModelParameters& params);
  ~StreamedLayers();
  StreamedLayers(const StreamedLayers&) = delete;
  StreamedLayers& operator=(const StreamedLayers&) = delete;

  /// Forward of every layer into `logits` (rows x classes stored, float): training saves what backward reads and
  /// applies dropout; evaluation does neither. The output layer's bias is left to the loss in training (as the
  /// resident model). No host synchronisation.
  void forward_async(bool training, const DropoutOf& dropout, float dropout_p, float* logits);
  /// Backward from grad_logits() (filled by the loss, with the output bias gradient): weight and bias gradients of
  /// every layer. No host synchronisation.
  void backward_async(const DropoutOf& dropout, float dropout_p);
  /// The gradient of the logits, rows x classes in the storage type (float* or kernels::Bf16*).
  [[nodiscard]] void* grad_logits();
  [[nodiscard]] const partition::StreamedPlan& plan() const noexcept { return plan_; }
  [[nodiscard]] const StreamStats& stats() const noexcept { return stats_; }
  /// Page-locked copy bandwidth in GB/s, host -> device and device -> host, over one part's upload slot (the copies'
  /// real size), the median of 5 after a warm-up, each direction alone. {0, 0} on a CPU device. Synchronises.
  [[nodiscard]] std::pair<double, double> measure_copy_bandwidth();
  /// Leaves the host copies out of the following passes (to time the kernels alone: the values computed then are
  /// not the model's; train again after turning it off).
  void skip_copies(bool skip) noexcept { skip_copies_ = skip; }

 private:
  struct Saved;
  /// Rows of a matrix a part reads: a host-tier matrix is uploaded into a slot, a device-tier one read in place.
  struct Source {
    const Saved* saved = nullptr;
    std::int64_t row_bytes = 0;
  };
  /// Rows a part writes: into a slot then downloaded (host tier), or in place (device tier).
  struct Sink {
    Saved* saved = nullptr;
    std::int64_t row_bytes = 0;
  };
  using PartBody = std::function<void(std::int64_t begin, std::int64_t end, std::uint8_t* const* in, std::uint8_t* const* out)>;

  template <class T>
  void forward_stored_async(bool training, const DropoutOf& dropout, float p, float* logits);
  template <class T>
  void backward_stored_async(const DropoutOf& dropout, float p);
  /// Runs body over every part, its sources' rows on the device and its sinks' rows writable (up to 3 each).
  void for_each_part(const std::vector<Source>& in, const std::vector<Sink>& out, const PartBody& body);
  /// The whole of a host-tier matrix (row_bytes per row) uploaded into layer `layer`'s operand; a device-tier one as
  /// it is.
  const std::uint8_t* whole_on_device(const Saved& s, std::int64_t row_bytes, int layer);
  /// Layer `layer`'s SpMM operand (partition::StreamedFlow::operand_of).
  [[nodiscard]] std::uint8_t* operand(int layer) noexcept { return operand_[plan_.flow.operand_of(layer)].data(); }
  /// Â (or Â^T) of T rows x for rows [begin, end) into T rows y (bf16: rounded by the SpMM, part_float the scratch).
  template <class T>
  void aggregate_part(Pass pass, const T* x, T* y, std::int64_t width, std::int64_t begin, std::int64_t end);
  /// Adds the part's column sums (bias_partial) to a layer's bias gradient (the first part writes it).
  void add_bias_partial(float* bias_gradient, std::int64_t width, bool first);
  Saved& saved(const std::string& name);
  [[nodiscard]] kernels::Dropout part_dropout(const DropoutOf& dropout, int layer, float p, std::int64_t begin) const;

  Resources& res_;
  partition::StreamedPlan plan_;
  std::vector<std::int64_t> dims_;
  bool bf16_;
  Aggregation& aggregation_;
  ModelParameters& params_;
  std::int64_t rows_;
  std::vector<std::unique_ptr<Saved>> saved_;
  Buffer<std::uint8_t> operand_[2], part_float_, part_scratch_[2], bias_partial_;
  Buffer<std::uint8_t> stage_in_[3][2], stage_out_[3][2];
  // CUDA: the copy streams and the events that order them with the compute stream.
  OwnedStream up_stream_, down_stream_;
  kernels::Context up_ctx_, down_ctx_;
  std::vector<kernels::CudaEvent> uploaded_, computed_, downloaded_;
  std::unique_ptr<kernels::CudaEvent> phase_done_, operand_free_;
  StreamStats stats_;
  StreamStats step_start_;
  bool skip_copies_ = false;
};

}  // namespace gcnpart::engine
