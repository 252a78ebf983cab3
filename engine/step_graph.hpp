// A training step captured once as a CUDA Graph and replayed every epoch: one launch instead of one per kernel
// (about 35 for two layers), which is most of an epoch on small graphs. Two pieces: StackArena, the workspace
// allocator that gives a step's scratch buffers the same addresses every time (a graph bakes its addresses in), and
// StepGraph, the capture and the executable graph. engine::StepExecution (step_execution.hpp) decides when to use them for
// GcnModel (GcnConfig::cuda_graph).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "base/memory.hpp"

namespace gcnpart::engine {

/// Workspace requests served as a stack inside one block: a request takes the space after the last live one
/// (256-byte aligned, as cudaMalloc), a release frees its space (any order; space is reused once everything above
/// it is free). Kernel workspaces are scoped objects, so a step's requests nest and the stack is never deeper
/// than the step's largest set of live workspaces.
///  - measuring (the start): every request goes to the parent allocator; the arena follows the stack the
///    requests would have formed and keeps its high-water mark;
///  - reserve(): takes one block of that size from the parent (category kWorkspace) and serves from it from then
///    on; the same sequence of requests gets the same addresses every time. A request that does not fit goes to
///    the parent while fallback is on and is refused (LogicError) while it is off (during a capture, where a parent
///    allocation could call cudaMalloc or hand out a block the graph does not own).
class StackArena final : public Allocator {
 public:
  static constexpr std::size_t kAlignment = 256;

  explicit StackArena(Allocator& parent) : parent_(parent) {}
  ~StackArena() override;
  StackArena(const StackArena&) = delete;
  StackArena& operator=(const StackArena&) = delete;

  /// Ends measuring: one parent block of high_water() bytes (at least kAlignment) on `stream`.
  /// @throws LogicError while requests are live; OutOfMemory from the parent.
  void reserve(cudaStream_t stream);
  /// Whether requests that do not fit the block go to the parent (default true).
  void set_fallback(bool on) noexcept { fallback_ = on; }
  [[nodiscard]] bool reserved() const noexcept { return block_ != nullptr; }
  /// The deepest the stack has been (measuring and serving).
  [[nodiscard]] std::size_t high_water() const noexcept { return high_water_; }
  /// Bytes of the block (0 before reserve()).
  [[nodiscard]] std::size_t capacity() const noexcept { return capacity_; }
  /// Requests served by the parent since reserve() (they did not fit).
  [[nodiscard]] std::int64_t fallbacks() const noexcept { return fallbacks_; }

  void* allocate(std::size_t bytes, MemoryCategory category, cudaStream_t stream) override;
  void deallocate(void* p, std::size_t bytes, MemoryCategory category, cudaStream_t stream) noexcept override;
  [[nodiscard]] MemorySpace space() const noexcept override { return parent_.space(); }

 private:
  struct Entry {
    void* p = nullptr;
    std::size_t offset = 0, end = 0;  ///< the space it takes in the stack (end == offset: served by the parent)
    bool parent = false;              ///< the parent's memory (measuring, or a fallback)
  };
  [[nodiscard]] std::size_t top() const noexcept { return entries_.empty() ? 0 : entries_.back().end; }

  Allocator& parent_;
  std::vector<Entry> entries_;  ///< live requests, oldest first
  void* block_ = nullptr;
  std::size_t capacity_ = 0, high_water_ = 0;
  cudaStream_t block_stream_ = nullptr;
  bool fallback_ = true;
  std::int64_t fallbacks_ = 0;
};

/// An executable CUDA Graph of the work one function enqueues on a stream. CPU-only builds: capture() always
/// fails with a reason.
class StepGraph {
 public:
  StepGraph() = default;
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  /// Records what `body` enqueues on `stream` (executing none of it) and instantiates it. Returns "" on success,
  /// else why not (an exception or CUDA error inside body, e.g. a synchronisation or an allocation the capture does
  /// not allow); then nothing is kept and the stream is usable as before. Thread-local capture mode: other threads'
  /// CUDA calls are not affected.
  std::string capture(cudaStream_t stream, const std::function<void()>& body);
  /// Enqueues the graph on `stream`. @throws DeviceError; LogicError before a successful capture.
  void launch(cudaStream_t stream);
  [[nodiscard]] bool ready() const noexcept { return exec_ != nullptr; }
  /// Nodes of the captured graph, of every kind (0 before capture).
  [[nodiscard]] std::size_t nodes() const noexcept { return nodes_; }
  /// Replays so far.
  [[nodiscard]] std::int64_t launches() const noexcept { return launches_; }

 private:
  void* exec_ = nullptr;  ///< cudaGraphExec_t
  std::size_t nodes_ = 0;
  std::int64_t launches_ = 0;
};

}  // namespace gcnpart::engine
