#include "engine/step_graph.hpp"

#if GCNPART_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "base/cuda_check.hpp"
#endif

#include <algorithm>
#include <exception>

#include "base/error.hpp"

namespace gcnpart::engine {

namespace {
constexpr std::size_t align_up(std::size_t bytes) {
  return (bytes + StackArena::kAlignment - 1) / StackArena::kAlignment * StackArena::kAlignment;
}
}  // namespace

StackArena::~StackArena() {
  if (block_ != nullptr) parent_.deallocate(block_, capacity_, MemoryCategory::kWorkspace, block_stream_);
}

void StackArena::reserve(cudaStream_t stream) {
  GCNPART_EXPECTS(block_ == nullptr, "StackArena::reserve is called once");
  GCNPART_EXPECTS(entries_.empty(), "StackArena::reserve needs every measured request released");
  const std::size_t bytes = std::max(align_up(high_water_), kAlignment);
  block_ = parent_.allocate(bytes, MemoryCategory::kWorkspace, stream);
  capacity_ = bytes;
  block_stream_ = stream;
}

void* StackArena::allocate(std::size_t bytes, MemoryCategory category, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  const std::size_t offset = align_up(top());
  Entry e;
  e.offset = offset;
  e.end = offset + bytes;
  if (block_ == nullptr) {  // measuring: the parent's memory, the stack followed
    e.p = parent_.allocate(bytes, category, stream);
    e.parent = true;
  } else if (e.end <= capacity_) {
    e.p = static_cast<char*>(block_) + offset;
  } else {
    if (!fallback_)
      throw LogicError("workspace arena: a request of " + std::to_string(bytes) + " bytes at offset " +
                       std::to_string(offset) + " exceeds its " + std::to_string(capacity_) +
                       " bytes while parent allocations are off (a captured step asked for more scratch than the "
                       "eager step it was measured on)");
    e.p = parent_.allocate(bytes, category, stream);
    e.parent = true;
    e.end = e.offset = top();  // takes no stack space
    ++fallbacks_;
  }
  high_water_ = std::max(high_water_, e.end);
  entries_.push_back(e);
  return e.p;
}

void StackArena::deallocate(void* p, std::size_t bytes, MemoryCategory category, cudaStream_t stream) noexcept {
  if (p == nullptr) return;
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->p != p) continue;
    if (it->parent) parent_.deallocate(p, bytes, category, stream);
    entries_.erase(std::next(it).base());
    return;
  }
  // Not ours (cannot happen for a Workspace, which releases to the allocator it came from): the parent's.
  parent_.deallocate(p, bytes, category, stream);
}

#if GCNPART_HAVE_CUDA

StepGraph::~StepGraph() {
  if (exec_ != nullptr) cudaGraphExecDestroy(static_cast<cudaGraphExec_t>(exec_));
}

std::string StepGraph::capture(cudaStream_t stream, const std::function<void()>& body) {
  GCNPART_EXPECTS(exec_ == nullptr, "StepGraph::capture is called once");
  std::string why;
  cudaError_t err = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal);
  if (err != cudaSuccess) {
    (void)cudaGetLastError();
    return std::string("cudaStreamBeginCapture: ") + cudaGetErrorString(err);
  }
  try {
    body();
  } catch (const std::exception& e) {
    why = e.what();
  } catch (...) {
    why = "an exception that is not a std::exception";
  }
  cudaGraph_t graph = nullptr;
  err = cudaStreamEndCapture(stream, &graph);
  if (why.empty() && err != cudaSuccess) why = std::string("cudaStreamEndCapture: ") + cudaGetErrorString(err);
  if (why.empty()) {
    cudaGraphExec_t exec = nullptr;
    err = cudaGraphInstantiate(&exec, graph, 0);
    if (err == cudaSuccess) {
      exec_ = exec;
      std::size_t n = 0;
      if (cudaGraphGetNodes(graph, nullptr, &n) == cudaSuccess) nodes_ = n;
    } else {
      why = std::string("cudaGraphInstantiate: ") + cudaGetErrorString(err);
    }
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  if (!why.empty()) (void)cudaGetLastError();  // a failed capture's error is not sticky: clear it
  return why;
}

void StepGraph::launch(cudaStream_t stream) {
  GCNPART_EXPECTS(exec_ != nullptr, "StepGraph::launch needs a captured graph");
  GCNPART_CUDA_TRY(cudaGraphLaunch(static_cast<cudaGraphExec_t>(exec_), stream));
  ++launches_;
}

#else  // CPU-only build

StepGraph::~StepGraph() = default;
std::string StepGraph::capture(cudaStream_t, const std::function<void()>&) { return "this build has no CUDA"; }
void StepGraph::launch(cudaStream_t) { throw NoCudaBuild("a CUDA Graph"); }

#endif

}  // namespace gcnpart::engine
