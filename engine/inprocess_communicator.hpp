// K virtual CPU devices in one process, one thread each: collectives through shared memory and a barrier.
// Sums run in rank order, so every rank gets bit-identical results whatever the thread timing.
#pragma once

#include <barrier>
#include <memory>
#include <vector>

#include "engine/communicator.hpp"

namespace gcnpart::engine {

/// The state the K ranks share. Create one per run and hand each rank a communicator.
class InProcessGroup {
 public:
  explicit InProcessGroup(int size);
  [[nodiscard]] int size() const noexcept { return size_; }

 private:
  friend class InProcessCommunicator;
  int size_;
  std::barrier<> barrier_;
  std::vector<const void*> slots_;
};

class InProcessCommunicator final : public Communicator {
 public:
  InProcessCommunicator(std::shared_ptr<InProcessGroup> group, int rank);
  [[nodiscard]] int rank() const noexcept override { return rank_; }
  [[nodiscard]] int size() const noexcept override { return group_->size(); }
  void allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) override;
  void allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) override;
  void all_gather(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) override;
  void reduce_scatter_sum(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) override;
  void barrier(const kernels::Context& ctx) override;
  [[nodiscard]] std::int64_t bytes_sent() const noexcept override { return bytes_sent_; }

 private:
  template <typename T>
  void allreduce(const kernels::Context& ctx, T* data, std::int64_t count);
  std::shared_ptr<InProcessGroup> group_;
  int rank_;
  std::int64_t bytes_sent_ = 0;
};

}  // namespace gcnpart::engine
