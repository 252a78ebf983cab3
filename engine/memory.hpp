// Tracked memory: every byte on a device (CPU virtual device or GPU) is allocated through a
// TrackingMemoryResource that keeps current and peak bytes in total and by category, and can refuse
// allocations past a cap (--memory-limit) with the same clear out-of-memory error a real card gives.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/memory.hpp"
#include "kernels/cuda_event.hpp"

namespace gcnpart::engine {

/// Bytes by category.
using CategoryBytes = std::array<std::int64_t, static_cast<std::size_t>(MemoryCategory::kCount)>;

/// A snapshot of what a resource tracks.
struct MemoryStats {
  std::int64_t current = 0;       ///< bytes alive now
  std::int64_t peak = 0;          ///< highest `current` seen
  CategoryBytes current_by{};     ///< current, by category
  CategoryBytes at_peak_by{};     ///< the breakdown at the moment of the peak
  CategoryBytes peak_by{};        ///< each category's own peak (not simultaneous)
  std::int64_t allocations = 0;   ///< number of allocate() calls
  std::int64_t limit = 0;         ///< 0 = none
  std::int64_t cached = 0;        ///< device blocks freed by their owner and kept for reuse (not in `current`)
  std::int64_t reserved_peak = 0; ///< highest `current` + `cached`: what the resource held from the driver at most
  std::int64_t driver_peak = 0;   ///< CUDA: highest cudaMemGetInfo used bytes, sampled after every cudaMalloc
};

/// One GPU's memory as the driver sees it against what gcnpart accounts for, all in bytes: measured should be
/// context + nccl + libraries + tracked_peak + cache_slack. What remains is untracked: lazily loaded kernel code,
/// allocation rounding, library allocations made after set-up.
struct MemoryCheck {
  bool available = false;          ///< false for CPU devices: there is no driver view
  std::int64_t measured = 0;       ///< highest cudaMemGetInfo used bytes sampled over the run
  std::int64_t tracked_peak = 0;   ///< MemoryStats::peak
  std::int64_t cache_slack = 0;    ///< MemoryStats::reserved_peak - peak: freed blocks the cache kept
  std::int64_t context = 0;        ///< in use right after the CUDA context was created, before any allocation
  std::int64_t nccl = 0;           ///< in use after joining the NCCL group minus before (0 on one device)
  std::int64_t libraries = 0;      ///< the stream and the cuBLAS / cuSPARSE handles with their workspaces
  [[nodiscard]] std::int64_t accounted() const noexcept {
    return context + nccl + libraries + tracked_peak + cache_slack;
  }
  /// (measured - accounted) / accounted; 0 when nothing is accounted.
  [[nodiscard]] double rel_error() const noexcept {
    const std::int64_t a = accounted();
    return a > 0 ? static_cast<double>(measured - a) / static_cast<double>(a) : 0.0;
  }
  [[nodiscard]] bool within(double tolerance) const noexcept {
    return available && rel_error() <= tolerance && rel_error() >= -tolerance;
  }
};

/// Allocates host memory (64-byte aligned) or CUDA device memory (cudaMalloc on `device`), tracks it, and
/// enforces an optional cap. Thread-safe. Freed device blocks are cached by exact size and handed out again
/// (cudaFree synchronises the whole device; per-call workspaces would otherwise stall every epoch); cached
/// blocks are not counted as in use and are released when cudaMalloc fails. Reuse is stream-ordered: a block
/// goes back to the stream that freed it as is (stream order), and to another stream only behind an event
/// recorded at the deallocation (cudaStreamWaitEvent: the new stream waits on the device, the host never does).
class TrackingMemoryResource final : public Allocator {
 public:
  /// `name` appears in errors ("cuda:0", "cpu:1"). limit_bytes = 0: no cap.
  TrackingMemoryResource(MemorySpace space, int device, std::string name, std::int64_t limit_bytes = 0);
  ~TrackingMemoryResource() override;
  TrackingMemoryResource(const TrackingMemoryResource&) = delete;
  TrackingMemoryResource& operator=(const TrackingMemoryResource&) = delete;

  /// @throws OutOfMemory naming the device, the bytes asked, the category, bytes in use, tracked peak and cap
  /// (and, for CUDA, the free bytes cudaMemGetInfo reports).
  void* allocate(std::size_t bytes, MemoryCategory category, cudaStream_t stream) override;
  void deallocate(void* p, std::size_t bytes, MemoryCategory category, cudaStream_t stream) noexcept override;
  [[nodiscard]] MemorySpace space() const noexcept override { return space_; }

  [[nodiscard]] MemoryStats stats() const;
  /// Forget the peak (set it to the current figure), e.g. after set-up to measure one epoch's peak.
  void reset_peak();
  void set_limit(std::int64_t limit_bytes);
  /// A hint appended to out-of-memory messages (e.g. what `gcnpart fit` suggests).
  void set_oom_hint(std::string hint);
  [[nodiscard]] std::string oom_hint() const;
  /// Frees the cached device blocks.
  void release_cache() noexcept;
  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] int device() const noexcept { return device_; }

 private:
  MemorySpace space_;
  int device_;
  std::string name_;
  std::string oom_hint_;
  mutable std::mutex mutex_;
  MemoryStats stats_;
  /// A freed device block: the stream that freed it and an ordering event recorded there at the deallocation
  /// (null when the deallocation had to synchronise instead: then the block is free for every stream).
  struct CachedBlock {
    void* p = nullptr;
    cudaStream_t stream = nullptr;
    std::optional<kernels::CudaEvent> freed;
  };
  std::unordered_multimap<std::size_t, CachedBlock> cache_;
  std::vector<kernels::CudaEvent> spare_events_;  ///< events of reused blocks, recorded again at the next free
  void release_cache_locked() noexcept;
  /// A cached block of exactly `bytes` that `stream` may use now (made to wait for its event when another stream
  /// freed it), or null.
  void* reuse_locked(std::size_t bytes, cudaStream_t stream);
};

/// An owning, move-only typed buffer from a TrackingMemoryResource (host or device memory, as the resource),
/// allocated on `stream` and freed on it again (see Allocator; null for CPU devices).
template <typename T>
class Buffer {
 public:
  Buffer() = default;
  Buffer(Allocator& resource, std::int64_t count, MemoryCategory category, cudaStream_t stream)
      : resource_(&resource), count_(count), category_(category), stream_(stream) {
    if (count_ > 0) data_ = static_cast<T*>(resource_->allocate(bytes(), category_, stream_));
  }
  ~Buffer() { release(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& o) noexcept { swap(o); }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      swap(o);
    }
    return *this;
  }

  [[nodiscard]] T* data() noexcept { return data_; }
  [[nodiscard]] const T* data() const noexcept { return data_; }
  [[nodiscard]] std::int64_t size() const noexcept { return count_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return static_cast<std::size_t>(count_) * sizeof(T); }
  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }
  void release() noexcept {
    if (data_ != nullptr) resource_->deallocate(data_, bytes(), category_, stream_);
    data_ = nullptr;
    count_ = 0;
  }

 private:
  void swap(Buffer& o) noexcept {
    std::swap(resource_, o.resource_);
    std::swap(data_, o.data_);
    std::swap(count_, o.count_);
    std::swap(category_, o.category_);
    std::swap(stream_, o.stream_);
  }
  Allocator* resource_ = nullptr;
  T* data_ = nullptr;
  std::int64_t count_ = 0;
  MemoryCategory category_ = MemoryCategory::kWorkspace;
  cudaStream_t stream_ = nullptr;
};

/// "1.23 GiB"
std::string format_bytes(double bytes);

}  // namespace gcnpart::engine
