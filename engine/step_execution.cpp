#include "engine/step_execution.hpp"

#include <exception>

#include "base/error.hpp"
#include "kernels/ops.hpp"

namespace gcnpart::engine {

StepExecution::StepExecution(Resources& res, const AllocationPlan& plan, CudaGraphMode mode, bool multi_device)
    : res_(res), mode_(mode) {
  const kernels::Context& ctx = res_.context();
  blas_workspace_ = take_if_planned<std::byte>(res_, plan, "cublas_graph_workspace");
  const bool possible = blas_workspace_.size() > 0;
  GCNPART_EXPECTS(!possible || (ctx.is_cuda() && !multi_device),
                  "the allocation plan and the model agree on when a step is captured");
  if (possible) {
    kernels::set_blas_workspace(ctx, blas_workspace_.data(), static_cast<std::size_t>(blas_workspace_.size()));
    blas_bound_ = true;
  }
  if (mode_ == CudaGraphMode::kOn && !possible)
    throw InvalidInput::parameter("--cuda-graph", "on",
                                  "auto or off here: a captured step covers one CUDA device without a communicator "
                                  "(the single strategy)");
  capture_pending_ = possible && mode_ != CudaGraphMode::kOff;
  status_ = mode_ == CudaGraphMode::kOff ? "off"
            : possible                   ? "pending"
            : !ctx.is_cuda()             ? "off: CPU device"
            : multi_device               ? "off: a multi-device strategy"
                                         : "off: auto, a large step (rows x width above 2^25: launches are a small "
                                           "part of it; --cuda-graph on)";
}

StepExecution::~StepExecution() {
  try {
    res_.synchronize();
  } catch (...) {
  }
  // Our arena, if it is still the allocator; cuBLAS's own workspace pool (cublasSetStream resets it) instead of
  // our buffer, which is freed with this object.
  if (arena_ != nullptr && res_.context().allocator == arena_.get()) res_.set_workspace_allocator(nullptr);
  if (blas_bound_) {
    try {
      kernels::reset_blas_workspace(res_.context());
    } catch (...) {
    }
  }
  graph_.reset();
  arena_.reset();
}

bool StepExecution::run(const std::function<void()>& enqueue, const std::function<void()>& sync, bool profiled) {
  // The second step (the first tuned the SpMMs and built their plans) runs eagerly, measured, then is captured.
  const bool capture = capture_pending_ && !profiled && ++calls_ == 2;
  if (graph_ != nullptr && !profiled) {
    graph_->launch(res_.stream());
  } else if (capture) {
    capture_pending_ = false;
    arena_ = std::make_unique<StackArena>(res_.memory());
    res_.set_workspace_allocator(arena_.get());
    try {
      enqueue();
      sync();
    } catch (const std::exception& e) {
      res_.set_workspace_allocator(nullptr);
      arena_.reset();
      status_ = std::string("off: the step before the capture failed: ") + e.what();
      throw;
    }
  } else {
    enqueue();
  }
  return capture;
}

void StepExecution::capture(const std::function<void()>& enqueue) {
  GCNPART_EXPECTS(arena_ != nullptr, "StepExecution::capture follows a run() that returned true");
  // The eager step just measured is done (synchronised), every workspace released: serve the same requests from
  // one block, with no parent allocation while capturing.
  std::string why;
  try {
    res_.memory().release_cache();  // the measured step's blocks: the arena takes their place
    arena_->reserve(res_.stream());
    graph_ = std::make_unique<StepGraph>();
    // Bound at construction; again here, in case another model on the same Resources bound its own since: the
    // graph keeps the address it captures.
    kernels::set_blas_workspace(res_.context(), blas_workspace_.data(),
                                static_cast<std::size_t>(blas_workspace_.size()));
    arena_->set_fallback(false);
    why = graph_->capture(res_.stream(), enqueue);
  } catch (const std::exception& e) {
    why = e.what();
  }
  arena_->set_fallback(true);
  if (!why.empty()) {
    graph_.reset();
    res_.set_workspace_allocator(nullptr);
    arena_.reset();
    status_ = "off: " + why;
    if (mode_ == CudaGraphMode::kOn)
      throw DeviceError("CUDA", "CUDA Graph capture of the training step (--cuda-graph on)", "GcnModel::train_step",
                        why);
    return;
  }
  status_ = "on (" + std::to_string(graph_->nodes()) + " nodes, workspace " + std::to_string(arena_->capacity()) +
            " bytes)";
}

}  // namespace gcnpart::engine
