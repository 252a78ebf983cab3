// K virtual CPU devices in one process, one thread each: collectives through shared memory and a barrier.
// Sums run in rank order, so every rank gets bit-identical results whatever the thread timing.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <memory>
#include <vector>

#include "engine/communicator.hpp"

namespace gcnpart::engine {

/// The state the K ranks share. Create one per run and hand each rank a communicator.
class InProcessGroup {
 public:
  explicit InProcessGroup(int size);
  [[nodiscard]] int size() const noexcept { return size_; }
  /// A failing rank calls this: every rank waiting now or later in a collective throws instead of hanging.
  void abort(int failed_rank) noexcept;
  [[nodiscard]] bool aborted() const noexcept;

 private:
  friend class InProcessCommunicator;
  /// Waits until all ranks arrive. @throws Error if the group was aborted.
  void arrive_and_wait();
  int size_;
  std::mutex mutex_;
  std::condition_variable cv_;
  int waiting_ = 0;
  std::uint64_t generation_ = 0;
  int failed_rank_ = -1;
  std::vector<const void*> slots_;
  /// Point-to-point mailboxes, [src * size + dst]: the sender's buffer until the receiver has copied it.
  std::vector<const float*> mail_;
  std::vector<std::int64_t> mail_count_;
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<InProcessGroup> group, int rank);
  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return group_->size(); }
  void barrier(const kernels::Context& ctx) override;

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

 private:
  template <typename T>
  void allreduce(const kernels::Context& ctx, T* data, std::int64_t count);
  std::shared_ptr<InProcessGroup> group_;
  int rank_;
};

}  // namespace gcnpart::engine
