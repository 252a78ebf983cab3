// NCCL collectives on each device's own stream. Two ways to build a group: one process driving K GPUs (one host
// thread each, communicators from one ncclUniqueId), or one process per GPU (mpirun / Slurm) with the unique id
// broadcast by the launcher (see MpiBootstrap).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/communicator.hpp"
#include "engine/cuda_handles.hpp"
#include "kernels/cuda_event.hpp"

typedef struct ncclComm* ncclComm_t;

namespace gcnpart::engine {

/// The 128 opaque bytes of an ncclUniqueId.
using NcclId = std::array<char, 128>;
/// A fresh unique id (call on one rank, share with the others).
NcclId nccl_unique_id();

/// What NCCL connects while the communicator is built. NCCL 2.22 and later connect an algorithm's channels (and
/// allocate their buffers) on its first use; connecting up front puts that memory inside init_bytes(), so that a
/// device's memory is accounted for in one place (see MemoryCheck).
struct NcclConnect {
  bool collectives = true;      ///< all-reduce, all-gather, reduce-scatter at a small and a large size
  bool point_to_point = false;  ///< send / recv to both ring neighbours (the pipeline strategy)
};

/// Seconds synchronize() waits without progress before it aborts the communicator (a peer rank probably died).
inline constexpr double kDefaultNcclTimeoutSeconds = 300;

/// NCCL's version as "2.27.3"; "" when it cannot be asked.
std::string nccl_version();

class NcclCommunicator final : public Communicator {
 public:
  /// Joins the group `id` as `rank` of `size` on CUDA device `device` (collective: every rank must call it).
  /// Creates the device's CUDA context first and measures the driver's used bytes before and after joining.
  /// timeout_s: see synchronize(). @throws DeviceError naming the NCCL call and message; InvalidInput for a
  /// timeout that is not > 0.
  NcclCommunicator(const NcclId& id, int rank, int size, int device, NcclConnect connect = {},
                   double timeout_s = kDefaultNcclTimeoutSeconds);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return size_; }
  void barrier(const kernels::Context& ctx) override;
  /// Polls the stream and ncclCommGetAsyncError; after the constructor's timeout_s seconds without progress, or on an asynchronous NCCL error, aborts the communicator and throws DeviceError.
  void synchronize(const kernels::Context& ctx) override;
  /// In one process driving several GPUs: a flag another rank's thread raises when it fails, so that this rank
  /// aborts its communicator instead of waiting for the timeout.
  void set_abort_flag(const std::atomic<bool>* flag) noexcept { abort_flag_ = flag; }
  /// Device bytes in use (cudaMemGetInfo total - free) once the CUDA context existed, before NCCL was joined:
  /// the context, plus whatever else was on the device then.
  [[nodiscard]] std::int64_t used_before_init() const noexcept { return used_before_init_; }
  /// Device bytes NCCL took: in use after joining and connecting (NcclConnect) minus used_before_init().
  [[nodiscard]] std::int64_t init_bytes() const noexcept { return init_bytes_; }

 protected:
  void do_allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) override;
  void do_allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) override;
  void do_all_gather(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) override;
  void do_reduce_scatter_sum(const kernels::Context& ctx, const float* send, std::int64_t count,
                             float* recv) override;
  void do_send(const kernels::Context& ctx, const float* data, std::int64_t count, int peer) override;
  void do_recv(const kernels::Context& ctx, float* data, std::int64_t count, int peer) override;
  void do_all_to_all_v(const kernels::Context& ctx, const void* send, const std::vector<std::int64_t>& send_offsets,
                       void* recv, const std::vector<std::int64_t>& recv_offsets) override;
  /// CUDA events around each call, from a pool created once and reused (cudaEventRecord costs about a
  /// microsecond; elapsed times are read only in take_tallies()).
  void begin_timing(const kernels::Context& ctx, std::size_t index) override;
  void end_timing(const kernels::Context& ctx, std::size_t index) override;
  double elapsed_ms(std::size_t index) override;

 private:
  void connect_up_front(NcclConnect connect);
  const std::atomic<bool>* abort_flag_ = nullptr;
  ncclComm_t comm_ = nullptr;
  int rank_, size_, device_;
  double timeout_s_;
  DeviceAllocation scratch_;  // one float for barrier()
  bool aborted_ = false;
  std::int64_t used_before_init_ = 0, init_bytes_ = 0;
  std::vector<kernels::CudaEvent> events_;  // [2 * index] before, [2 * index + 1] after call `index`
};

}  // namespace gcnpart::engine
