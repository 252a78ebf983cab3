// Collective communication between the devices of one run. Strategies insert these calls between layers and
// after backward; implementations: in-process (K virtual CPU devices, one thread each), NCCL, MPI.
#pragma once

#include <cstdint>

#include "kernels/context.hpp"

namespace gcnpart::engine {

class Communicator {
 public:
  virtual ~Communicator() = default;
  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  /// In-place element-wise sum over all ranks (buffers in the device's memory space, on ctx's stream).
  virtual void allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) = 0;
  virtual void allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) = 0;
  /// Bytes this rank has sent so far (for the per-epoch communication figure).
  [[nodiscard]] virtual std::int64_t bytes_sent() const noexcept = 0;
};

}  // namespace gcnpart::engine
