// How GcnModel::train_step runs a step's device work (`--cuda-graph`, engine/gcn.hpp): eagerly, or on one CUDA
// device without a communicator captured once as a CUDA Graph (step_graph.hpp) and replayed from then on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/enums.hpp"
#include "engine/planned_buffer.hpp"
#include "engine/resources.hpp"
#include "engine/step_graph.hpp"

namespace gcnpart::engine {

/// The execution mode of a model's training steps: owns the cuBLAS workspace a capture needs, the StackArena and the
/// captured graph, and says which mode runs and why (status()).
class StepExecution {
 public:
  /// The plan holds `cublas_graph_workspace` exactly where a step can be captured (one CUDA device, no
  /// communicator, one stage, a small step under kAuto: partition::captures_step); it is then bound to the shared
  /// cuBLAS handle for every GEMM of the model, eager or captured (one workspace, the same algorithms).
  /// multi_device: the model trains with a communicator or in pipeline stages (for the status line).
  /// @throws InvalidInput for CudaGraphMode::kOn where no capture is possible.
  StepExecution(Resources& res, const AllocationPlan& plan, CudaGraphMode mode, bool multi_device);
  /// Leaves the shared Resources as found: its allocator and cuBLAS's own workspace pool.
  ~StepExecution();
  StepExecution(const StepExecution&) = delete;
  StepExecution& operator=(const StepExecution&) = delete;

  /// Runs one step's device work (`enqueue`, no host sync inside) this call's way: replays the graph, or runs it
  /// eagerly (the second call measured by a StackArena, to be captured by finish()). profiled: eager whatever the
  /// mode (events per operation). `sync` waits for the step. Returns whether finish() must capture.
  bool run(const std::function<void()>& enqueue, const std::function<void()>& sync, bool profiled);
  /// After a step that run() said to capture is done and counted: captures `enqueue` (kOn: a failure throws; else
  /// the steps stay eager and the status says why).
  void capture(const std::function<void()>& enqueue);

  /// "on (N nodes, workspace B bytes)", "pending", "off", "off: CPU device", "off: a multi-device strategy", ...
  [[nodiscard]] const std::string& status() const noexcept { return status_; }
  [[nodiscard]] std::int64_t replays() const noexcept { return graph_ ? graph_->launches() : 0; }

 private:
  Resources& res_;
  CudaGraphMode mode_;
  Buffer<std::byte> blas_workspace_;  ///< the GEMMs' cuBLAS workspace (planned: single CUDA device, graph possible)
  bool blas_bound_ = false;           ///< bound to the shared cuBLAS handle
  std::unique_ptr<StackArena> arena_;
  std::unique_ptr<StepGraph> graph_;
  std::string status_;
  bool capture_pending_ = false;  ///< still to be captured (on the second call)
  int calls_ = 0;
};

}  // namespace gcnpart::engine
