// One device's resources: id, stream, library handles (created on first use) and the tracking memory resource.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/memory.hpp"
#include "kernels/context.hpp"
#include "base/error.hpp"

namespace gcnpart::engine {

/// A device: a CPU (virtual) device or CUDA device N.
struct Device {
  Backend backend = Backend::kCpu;
  int index = 0;  ///< CUDA ordinal, or the virtual CPU device number

  /// "cpu", "cpu:2", "cuda", "cuda:1". @throws InvalidInput naming the parameter.
  static Device parse(const std::string& spec, const std::string& parameter = "--device");
  [[nodiscard]] std::string name() const;
  [[nodiscard]] bool is_cuda() const noexcept { return backend == Backend::kCuda; }
};

/// Number of CUDA devices visible (0 when there is no driver or no GPU, and in a CPU-only build; never throws).
int cuda_device_count() noexcept;
/// Where CUDA devices are asked for (`what_asked`, e.g. "--device cuda"): throws NoCudaBuild in a CPU-only build,
/// so that the user reads "this build has no CUDA" rather than "no GPU is visible". No-op otherwise.
inline void expect_cuda_build(const std::string& what_asked) {
  if (!kernels::kHaveCuda) throw NoCudaBuild(what_asked);
}
/// "NVIDIA H200" or "" when unavailable.
std::string cuda_device_name(int device);

/// Owns the stream, cuBLAS / cuSPARSE handles and the memory resource of one device. Not copyable.
class Resources {
 public:
  /// @throws InvalidInput if a CUDA device is asked for that does not exist (with the count found).
  explicit Resources(Device device, std::int64_t memory_limit = 0);
  ~Resources();
  Resources(const Resources&) = delete;
  Resources& operator=(const Resources&) = delete;

  [[nodiscard]] const Device& device() const noexcept { return device_; }
  [[nodiscard]] TrackingMemoryResource& memory() noexcept { return *memory_; }
  /// The kernels' context (creates the handles on first call for CUDA).
  [[nodiscard]] const kernels::Context& context();
  /// The device's stream, on which its buffers are allocated and freed (null for CPU). Creates the handles like
  /// context().
  [[nodiscard]] cudaStream_t stream() { return context().stream; }
  /// Times every kernels:: operation on this device by class from now on (null: stop). The profiler must outlive
  /// its use; see kernels/op_profiler.hpp.
  void set_profiler(kernels::OpProfiler* profiler) noexcept { ctx_.profiler = profiler; }
  /// Kernel workspaces come from `allocator` from now on (it must outlive that use, and forward what it does not
  /// serve to memory()); null: from memory() again. GcnModel's captured step uses a StackArena (step_graph.hpp).
  void set_workspace_allocator(Allocator* allocator) noexcept {
    ctx_.allocator = allocator != nullptr ? allocator : static_cast<Allocator*>(memory_.get());
  }
  /// Makes this device current for the calling thread (CUDA).
  void activate() const;
  /// Blocks until the stream is idle.
  void synchronize();
  /// Device memory in use as the driver reports it (cudaMemGetInfo total - free); 0 for CPU.
  [[nodiscard]] std::int64_t driver_used_bytes() const;
  /// Device memory free as the driver reports it (cudaMemGetInfo); 0 for CPU.
  [[nodiscard]] std::int64_t driver_free_bytes() const;
  /// CUDA: driver_used_bytes() when this object was built, its CUDA context created (the context and whatever
  /// else was on the device then); 0 for CPU.
  [[nodiscard]] std::int64_t used_at_construction() const noexcept { return used_at_construction_; }
  /// CUDA: device bytes the stream and the cuBLAS / cuSPARSE handles took when context() created them (cuBLAS
  /// allocates its default workspace there); 0 before that and for CPU.
  [[nodiscard]] std::int64_t library_bytes() const noexcept { return library_bytes_; }

 private:
  Device device_;
  std::unique_ptr<TrackingMemoryResource> memory_;
  kernels::Context ctx_;
  bool handles_ready_ = false;
  std::int64_t used_at_construction_ = 0, library_bytes_ = 0;
};

/// A device buffer holding a copy of `host`, allocated on the device's stream (asynchronous on it; keep `host`
/// alive until the stream is synchronised).
template <typename T, typename Alloc>
Buffer<T> upload(Resources& res, const std::vector<T, Alloc>& host, MemoryCategory category) {
  Buffer<T> b(res.memory(), static_cast<std::int64_t>(host.size()), category, res.stream());
  if (!host.empty()) kernels::copy_async(res.context(), b.data(), host.data(), host.size() * sizeof(T));
  return b;
}

}  // namespace gcnpart::engine
