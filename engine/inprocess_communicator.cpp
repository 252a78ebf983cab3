#include "engine/inprocess_communicator.hpp"

#include <cstring>

#include "base/error.hpp"

namespace gcnpart::engine {

InProcessGroup::InProcessGroup(int size)
    : size_(size),
      slots_(static_cast<std::size_t>(size), nullptr),
      mail_(static_cast<std::size_t>(size) * static_cast<std::size_t>(size), nullptr),
      mail_count_(static_cast<std::size_t>(size) * static_cast<std::size_t>(size), 0) {
  GCNPART_EXPECTS(size >= 1, "an in-process group needs at least one rank");
}

void InProcessGroup::abort(int failed_rank) noexcept {
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed_rank_ < 0) failed_rank_ = failed_rank;
  cv_.notify_all();
}

bool InProcessGroup::aborted() const noexcept {
  std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(mutex_));
  return failed_rank_ >= 0;
}

void InProcessGroup::arrive_and_wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  auto fail = [&] {
    return Error("collective aborted: virtual device " + std::to_string(failed_rank_) + " failed");
  };
  if (failed_rank_ >= 0) throw fail();
  const std::uint64_t gen = generation_;
  if (++waiting_ == size_) {
    waiting_ = 0;
    ++generation_;
    cv_.notify_all();
    return;
  }
  cv_.wait(lock, [&] { return generation_ != gen || failed_rank_ >= 0; });
  if (generation_ == gen) throw fail();
}

InProcessCommunicator::InProcessCommunicator(std::shared_ptr<InProcessGroup> group, int rank)
    : group_(std::move(group)), rank_(rank) {
  GCNPART_EXPECTS(rank_ >= 0 && rank_ < group_->size(), "rank out of range");
}

namespace {
void expect_host(const kernels::Context& ctx) {
  GCNPART_EXPECTS(ctx.backend == Backend::kCpu,
                  "the in-process communicator serves virtual CPU devices; GPUs use the NCCL communicator");
}
}  // namespace

// Protocol of every collective: post the buffer, barrier, read what the others posted into private memory,
// barrier (nobody reads any more), then write the own buffer. The next collective's first barrier orders the
// writes before anyone reads again.
template <typename T>
void InProcessCommunicator::allreduce(const kernels::Context& ctx, T* data, std::int64_t count) {
  expect_host(ctx);
  auto& g = *group_;
  const int k = g.size();
  if (k == 1) return;
  g.slots_[static_cast<std::size_t>(rank_)] = data;
  g.arrive_and_wait();
  std::vector<T> sum(static_cast<std::size_t>(count), T{});
  for (int r = 0; r < k; ++r) {
    const T* src = static_cast<const T*>(g.slots_[static_cast<std::size_t>(r)]);
    for (std::int64_t i = 0; i < count; ++i) sum[i] += src[i];
  }
  g.arrive_and_wait();
  std::memcpy(data, sum.data(), static_cast<std::size_t>(count) * sizeof(T));
}

void InProcessCommunicator::do_allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) {
  allreduce(ctx, data, count);
}

void InProcessCommunicator::do_allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) {
  allreduce(ctx, data, count);
}

void InProcessCommunicator::do_all_gather(const kernels::Context& ctx, const float* send, std::int64_t count,
                                          float* recv) {
  expect_host(ctx);
  auto& g = *group_;
  const int k = g.size();
  g.slots_[static_cast<std::size_t>(rank_)] = send;
  g.arrive_and_wait();
  for (int r = 0; r < k; ++r)
    std::memcpy(recv + static_cast<std::int64_t>(r) * count, g.slots_[static_cast<std::size_t>(r)],
                static_cast<std::size_t>(count) * sizeof(float));
  g.arrive_and_wait();
}

void InProcessCommunicator::do_reduce_scatter_sum(const kernels::Context& ctx, const float* send,
                                                  std::int64_t count, float* recv) {
  expect_host(ctx);
  auto& g = *group_;
  const int k = g.size();
  g.slots_[static_cast<std::size_t>(rank_)] = send;
  g.arrive_and_wait();
  std::vector<float> sum(static_cast<std::size_t>(count), 0.0f);
  const std::int64_t offset = static_cast<std::int64_t>(rank_) * count;
  for (int r = 0; r < k; ++r) {
    const float* src = static_cast<const float*>(g.slots_[static_cast<std::size_t>(r)]) + offset;
    for (std::int64_t i = 0; i < count; ++i) sum[i] += src[i];
  }
  g.arrive_and_wait();
  std::memcpy(recv, sum.data(), static_cast<std::size_t>(count) * sizeof(float));
}

namespace {
/// What a rank posts for an all-to-all: its send buffer and the byte offsets of its blocks.
struct PostedBlocks {
  const unsigned char* data;
  const std::vector<std::int64_t>* offsets;
};
}  // namespace

void InProcessCommunicator::do_all_to_all_v(const kernels::Context& ctx, const void* send,
                                            const std::vector<std::int64_t>& send_offsets, void* recv,
                                            const std::vector<std::int64_t>& recv_offsets) {
  expect_host(ctx);
  auto& g = *group_;
  const int k = g.size();
  const PostedBlocks mine{static_cast<const unsigned char*>(send), &send_offsets};
  g.slots_[static_cast<std::size_t>(rank_)] = &mine;
  g.arrive_and_wait();
  for (int q = 0; q < k; ++q) {
    const auto* theirs = static_cast<const PostedBlocks*>(g.slots_[static_cast<std::size_t>(q)]);
    const std::int64_t begin = (*theirs->offsets)[rank_], bytes = (*theirs->offsets)[rank_ + 1] - begin;
    GCNPART_EXPECTS(bytes == recv_offsets[q + 1] - recv_offsets[q], "all_to_all_v send and receive sizes differ");
    if (bytes > 0)
      std::memcpy(static_cast<unsigned char*>(recv) + recv_offsets[q], theirs->data + begin,
                  static_cast<std::size_t>(bytes));
  }
  g.arrive_and_wait();  // nobody reads `mine` (on this stack) any more
}

void InProcessCommunicator::barrier(const kernels::Context& ctx) {
  expect_host(ctx);
  group_->arrive_and_wait();
}

void InProcessCommunicator::do_send(const kernels::Context& ctx, const float* data, std::int64_t count, int peer) {
  expect_host(ctx);
  auto& g = *group_;
  GCNPART_EXPECTS(peer >= 0 && peer < g.size() && peer != rank_, "send needs another rank");
  const std::size_t box = static_cast<std::size_t>(rank_) * static_cast<std::size_t>(g.size()) + peer;
  std::unique_lock<std::mutex> lock(g.mutex_);
  g.mail_[box] = data;
  g.mail_count_[box] = count;
  g.cv_.notify_all();
  // Rendezvous: the buffer stays ours to reuse only once the receiver has copied it.
  g.cv_.wait(lock, [&] { return g.mail_[box] == nullptr || g.failed_rank_ >= 0; });
  if (g.mail_[box] != nullptr)
    throw Error("collective aborted: virtual device " + std::to_string(g.failed_rank_) + " failed");
}

void InProcessCommunicator::do_recv(const kernels::Context& ctx, float* data, std::int64_t count, int peer) {
  expect_host(ctx);
  auto& g = *group_;
  GCNPART_EXPECTS(peer >= 0 && peer < g.size() && peer != rank_, "recv needs another rank");
  const std::size_t box = static_cast<std::size_t>(peer) * static_cast<std::size_t>(g.size()) + rank_;
  std::unique_lock<std::mutex> lock(g.mutex_);
  g.cv_.wait(lock, [&] { return g.mail_[box] != nullptr || g.failed_rank_ >= 0; });
  if (g.mail_[box] == nullptr)
    throw Error("collective aborted: virtual device " + std::to_string(g.failed_rank_) + " failed");
  GCNPART_EXPECTS(g.mail_count_[box] == count, "send and recv counts differ");
  std::memcpy(data, g.mail_[box], static_cast<std::size_t>(count) * sizeof(float));
  g.mail_[box] = nullptr;
  g.cv_.notify_all();
}

}  // namespace gcnpart::engine
