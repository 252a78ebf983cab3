// Collective communication between the devices of one run. Strategies insert these calls between layers and
// after backward; implementations: in-process (K virtual CPU devices, one thread each), NCCL, MPI.
#pragma once

#include <cstdint>

#include "kernels/context.hpp"

namespace gcnpart::engine {

/// All buffers live in the calling device's memory space and calls are ordered on ctx's stream. Every rank must
/// make the same sequence of calls with the same counts.
class Communicator {
 public:
  virtual ~Communicator() = default;
  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  /// In-place element-wise sum over all ranks; every rank gets the identical result.
  virtual void allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) = 0;
  virtual void allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) = 0;
  /// recv[r * count + i] = send_of_rank_r[i]; recv holds size() * count elements.
  virtual void all_gather(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) = 0;
  /// recv[i] = sum over ranks r of send_of_rank_r[rank() * count + i]; send holds size() * count elements.
  virtual void reduce_scatter_sum(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) = 0;
  virtual void barrier(const kernels::Context& ctx) = 0;
  /// Point to point (the pipeline strategy): blocks until `peer` has received / sent the same count.
  virtual void send(const kernels::Context& ctx, const float* data, std::int64_t count, int peer) = 0;
  virtual void recv(const kernels::Context& ctx, float* data, std::int64_t count, int peer) = 0;
  /// Waits for the work queued on ctx's stream, watching for a failed peer: a communicator whose peer died
  /// aborts and throws within a bounded time instead of hanging.
  virtual void synchronize(const kernels::Context& ctx) { kernels::synchronize(ctx); }
  /// Bytes this rank has sent so far, as a ring implementation sends them (allreduce 2(K-1)/K of the buffer,
  /// all-gather and reduce-scatter (K-1)/K of the gathered buffer).
  [[nodiscard]] virtual std::int64_t bytes_sent() const noexcept = 0;
};

}  // namespace gcnpart::engine
