#include "engine/memory.hpp"
#include "base/format.hpp"

#if GCNPART_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "kernels/context.hpp"
#include "base/error.hpp"

namespace gcnpart::engine {

namespace {
constexpr std::size_t kHostAlignment = 64;
std::size_t idx(MemoryCategory c) { return static_cast<std::size_t>(c); }
}  // namespace

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 4) {
    bytes /= 1024.0;
    ++u;
  }
  return format_fixed(bytes, u == 0 ? 0 : 2) + " " + units[u];  // '.' whatever the locale
}

TrackingMemoryResource::TrackingMemoryResource(MemorySpace space, int device, std::string name,
                                               std::int64_t limit_bytes)
    : space_(space), device_(device), name_(std::move(name)) {
  if (!kernels::kHaveCuda && space_ == MemorySpace::kDevice) throw NoCudaBuild("device memory on " + name_);
  stats_.limit = limit_bytes;
}

TrackingMemoryResource::~TrackingMemoryResource() { release_cache(); }

void TrackingMemoryResource::release_cache() noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cache_locked();
}

void TrackingMemoryResource::release_cache_locked() noexcept {
  if (cache_.empty()) return;
#if GCNPART_HAVE_CUDA  // (only device resources cache blocks, and a CPU-only build has none)
  cudaSetDevice(device_);
  cudaDeviceSynchronize();
  for (auto& [bytes, block] : cache_) cudaFree(block.p);
#endif
  cache_.clear();
  stats_.cached = 0;
}

void* TrackingMemoryResource::reuse_locked(std::size_t bytes, cudaStream_t stream) {
  const auto [first, last] = cache_.equal_range(bytes);
  if (first == last) return nullptr;
  auto pick = first;  // a block of this stream needs no wait; else the first of another stream
  for (auto it = first; it != last; ++it)
    if (it->second.stream == stream) {
      pick = it;
      break;
    }
  CachedBlock block = std::move(pick->second);
  cache_.erase(pick);
  if (block.stream != stream && block.freed) {
    try {
      block.freed->make_wait(stream);
    } catch (...) {
      cache_.emplace(bytes, std::move(block));
      throw;
    }
  }
  if (block.freed) spare_events_.push_back(std::move(*block.freed));
  return block.p;
}

void* TrackingMemoryResource::allocate(std::size_t bytes, MemoryCategory category, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto b = static_cast<std::int64_t>(bytes);
  auto oom = [&](const std::string& why) -> OutOfMemory {
    std::string msg = "out of memory on " + name_ + ": asked " + format_bytes(static_cast<double>(b)) + " (" +
                      std::to_string(b) + " bytes) for " + memory_category_name(category) + "; in use " +
                      format_bytes(static_cast<double>(stats_.current)) + ", tracked peak " +
                      format_bytes(static_cast<double>(stats_.peak));
    if (stats_.limit > 0) msg += ", limit " + format_bytes(static_cast<double>(stats_.limit));
    msg += "; " + why;
    if (!oom_hint_.empty()) msg += ". " + oom_hint_;
    return OutOfMemory(msg);
  };
  if (stats_.limit > 0 && stats_.current + b > stats_.limit) throw oom("the --memory-limit cap would be exceeded");
  void* p = nullptr;
  if (space_ == MemorySpace::kHost) {
    p = std::aligned_alloc(kHostAlignment, (bytes + kHostAlignment - 1) / kHostAlignment * kHostAlignment);
    if (p == nullptr) throw oom("the host allocator refused");
  } else if (void* reused = reuse_locked(bytes, stream); reused != nullptr) {
    p = reused;
    stats_.cached -= b;
  } else {
#if GCNPART_HAVE_CUDA
    cudaSetDevice(device_);
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess && !cache_.empty()) {
      (void)cudaGetLastError();
      release_cache_locked();
      err = cudaMalloc(&p, bytes);
    }
    if (err != cudaSuccess) {
      (void)cudaGetLastError();  // clear the sticky-free error state of a failed allocation
      std::size_t free_b = 0, total_b = 0;
      cudaMemGetInfo(&free_b, &total_b);
      throw oom(std::string("cudaMalloc failed (") + cudaGetErrorString(err) + "), device free " +
                format_bytes(static_cast<double>(free_b)) + " of " + format_bytes(static_cast<double>(total_b)));
    }
    // The driver's use grows only here (the cache hands blocks back to nobody else), so sampling it after each
    // cudaMalloc catches its peak at the cost of one cudaMemGetInfo per cache miss.
    std::size_t free_b = 0, total_b = 0;
    if (cudaMemGetInfo(&free_b, &total_b) == cudaSuccess) {
      stats_.driver_peak = std::max(stats_.driver_peak, static_cast<std::int64_t>(total_b - free_b));
    } else {
      (void)cudaGetLastError();
    }
#endif
  }
  stats_.current += b;
  stats_.current_by[idx(category)] += b;
  stats_.allocations += 1;
  if (stats_.current_by[idx(category)] > stats_.peak_by[idx(category)])
    stats_.peak_by[idx(category)] = stats_.current_by[idx(category)];
  if (stats_.current > stats_.peak) {
    stats_.peak = stats_.current;
    stats_.at_peak_by = stats_.current_by;
  }
  stats_.reserved_peak = std::max(stats_.reserved_peak, stats_.current + stats_.cached);
  return p;
}

void TrackingMemoryResource::deallocate(void* p, std::size_t bytes, MemoryCategory category,
                                        cudaStream_t stream) noexcept {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.current -= static_cast<std::int64_t>(bytes);
  stats_.current_by[idx(category)] -= static_cast<std::int64_t>(bytes);
  if (space_ == MemorySpace::kHost) {
    std::free(p);
  } else {
#if GCNPART_HAVE_CUDA
    CachedBlock block{p, stream, std::nullopt};
    try {
      if (spare_events_.empty()) {
        cudaSetDevice(device_);  // events belong to the device current when they are created
        block.freed.emplace(kernels::CudaEvent::Kind::kOrdering);
      } else {
        block.freed.emplace(std::move(spare_events_.back()));
        spare_events_.pop_back();
      }
      block.freed->record(stream);
    } catch (...) {
      // No event: wait for the stream here instead, after which the block is free for every stream.
      block.freed.reset();
      (void)cudaGetLastError();
      cudaStreamSynchronize(stream);
    }
    cache_.emplace(bytes, std::move(block));
    stats_.cached += static_cast<std::int64_t>(bytes);
#endif
  }
}

MemoryStats TrackingMemoryResource::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

void TrackingMemoryResource::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.peak = stats_.current;
  stats_.reserved_peak = stats_.current + stats_.cached;
  stats_.at_peak_by = stats_.current_by;
  stats_.peak_by = stats_.current_by;
}

void TrackingMemoryResource::set_limit(std::int64_t limit_bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  stats_.limit = limit_bytes;
}

std::string TrackingMemoryResource::oom_hint() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return oom_hint_;
}

void TrackingMemoryResource::set_oom_hint(std::string hint) {
  std::lock_guard<std::mutex> lock(mutex_);
  oom_hint_ = std::move(hint);
}

}  // namespace gcnpart::engine
