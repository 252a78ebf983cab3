// NCCL collectives on each device's own stream. Two ways to build a group: one process driving K GPUs (one host
// thread each, communicators from one ncclUniqueId), or one process per GPU (mpirun / Slurm) with the unique id
// broadcast by the launcher (see MpiBootstrap).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "engine/communicator.hpp"

typedef struct ncclComm* ncclComm_t;

namespace gcnpart::engine {

/// The 128 opaque bytes of an ncclUniqueId.
using NcclId = std::array<char, 128>;
/// A fresh unique id (call on one rank, share with the others).
NcclId nccl_unique_id();

class NcclCommunicator final : public Communicator {
 public:
  /// Joins the group `id` as `rank` of `size` on CUDA device `device` (collective: every rank must call it).
  /// @throws DeviceError naming the NCCL call and message.
  NcclCommunicator(const NcclId& id, int rank, int size, int device);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return size_; }
  void allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) override;
  void allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) override;
  void all_gather(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) override;
  void reduce_scatter_sum(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) override;
  void barrier(const kernels::Context& ctx) override;
  void send(const kernels::Context& ctx, const float* data, std::int64_t count, int peer) override;
  void recv(const kernels::Context& ctx, float* data, std::int64_t count, int peer) override;
  /// Polls the stream and ncclCommGetAsyncError; after GCNPART_NCCL_TIMEOUT seconds (default 300) without
  /// progress, or on an asynchronous NCCL error, aborts the communicator and throws DeviceError.
  void synchronize(const kernels::Context& ctx) override;
  [[nodiscard]] std::int64_t bytes_sent() const noexcept override { return bytes_sent_; }
  /// In one process driving several GPUs: a flag another rank's thread raises when it fails, so that this rank
  /// aborts its communicator instead of waiting for the timeout.
  void set_abort_flag(const std::atomic<bool>* flag) noexcept { abort_flag_ = flag; }

 private:
  const std::atomic<bool>* abort_flag_ = nullptr;
  ncclComm_t comm_ = nullptr;
  int rank_, size_, device_;
  std::int64_t bytes_sent_ = 0;
  float* scratch_ = nullptr;  // one float for barrier()
  bool aborted_ = false;
};

}  // namespace gcnpart::engine
