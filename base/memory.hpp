// The allocation interface kernels see. The engine's tracking memory resource implements it, so every byte a
// kernel asks for (cuSPARSE / cuBLAS / CUB workspaces) is counted by category and can be refused at a cap.
#pragma once

#include <cstddef>
#include <cstdint>

// Opaque CUDA stream, so host code includes this without the CUDA headers.
typedef struct CUstream_st* cudaStream_t;

namespace gcnpart {

/// What a byte is for; peak memory is reported broken down by these.
enum class MemoryCategory : int {
  kGraph = 0,      ///< CSR arrays, normalisation vectors, index tables, plans
  kFeatures,       ///< input features and labels
  kActivations,    ///< layer outputs saved for backward
  kGradients,      ///< activation and weight gradients
  kWeights,        ///< parameters
  kOptimizer,      ///< Adam moments
  kWorkspace,      ///< library and kernel scratch
  kCommunication,  ///< gather tables, send / receive buffers
  kCount
};

[[nodiscard]] const char* memory_category_name(MemoryCategory c) noexcept;

/// Where memory lives.
enum class MemorySpace : int { kHost = 0, kDevice = 1 };

/// Abstract allocator: host memory for CPU devices, cudaMalloc'd memory for CUDA devices. Stream-ordered (RMM's
/// allocate(bytes, stream)): memory allocated on `stream` may be used by work queued on `stream` from then on;
/// deallocate on `stream` once the last work using it has been queued there (not necessarily finished). A block is
/// handed to another stream only after the work queued before its deallocation is done. CPU devices: stream null.
class Allocator {
 public:
  virtual ~Allocator() = default;
  /// @throws OutOfMemory with bytes asked, device, bytes in use and tracked peak.
  virtual void* allocate(std::size_t bytes, MemoryCategory category, cudaStream_t stream) = 0;
  virtual void deallocate(void* p, std::size_t bytes, MemoryCategory category, cudaStream_t stream) noexcept = 0;
  [[nodiscard]] virtual MemorySpace space() const noexcept = 0;
};

}  // namespace gcnpart
