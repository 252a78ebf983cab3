#include "engine/communicator.hpp"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "base/error.hpp"

namespace gcnpart::engine {

const char* collective_name(CollectiveKind kind) noexcept {
  switch (kind) {
    case CollectiveKind::kAllReduce: return "all_reduce";
    case CollectiveKind::kAllGather: return "all_gather";
    case CollectiveKind::kReduceScatter: return "reduce_scatter";
    case CollectiveKind::kSend: return "send";
    case CollectiveKind::kRecv: return "recv";
    case CollectiveKind::kAllToAll: return "all_to_all";
  }
  return "?";
}

namespace {
/// What a ring implementation sends of a buffer of `bytes` over k ranks, per pass.
std::int64_t ring_share(std::int64_t bytes, int k) { return k <= 1 ? 0 : bytes * (k - 1) / k; }
}  // namespace

template <typename Op>
void Communicator::counted(const kernels::Context& ctx, CollectiveKind kind, std::int64_t payload,
                           std::int64_t sent, Op&& op) {
  const std::size_t index = calls_.size();
  begin_timing(ctx, index);
  op();
  end_timing(ctx, index);
  // Recorded only once the call went through: a failed call leaves no half-timed entry behind.
  calls_.push_back(Call{kind, payload, sent});
  bytes_sent_ += sent;
}

void Communicator::allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) {
  const std::int64_t bytes = count * static_cast<std::int64_t>(sizeof(float));
  counted(ctx, CollectiveKind::kAllReduce, bytes, 2 * ring_share(bytes, size()),
          [&] { do_allreduce_sum(ctx, data, count); });
}

void Communicator::allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) {
  const std::int64_t bytes = count * static_cast<std::int64_t>(sizeof(std::int64_t));
  counted(ctx, CollectiveKind::kAllReduce, bytes, 2 * ring_share(bytes, size()),
          [&] { do_allreduce_sum(ctx, data, count); });
}

void Communicator::all_gather(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) {
  const std::int64_t bytes = count * static_cast<std::int64_t>(sizeof(float));
  counted(ctx, CollectiveKind::kAllGather, bytes, ring_share(bytes * size(), size()),
          [&] { do_all_gather(ctx, send, count, recv); });
}

void Communicator::reduce_scatter_sum(const kernels::Context& ctx, const float* send, std::int64_t count,
                                      float* recv) {
  const std::int64_t bytes = count * static_cast<std::int64_t>(sizeof(float));
  counted(ctx, CollectiveKind::kReduceScatter, bytes, ring_share(bytes * size(), size()),
          [&] { do_reduce_scatter_sum(ctx, send, count, recv); });
}

void Communicator::send(const kernels::Context& ctx, const float* data, std::int64_t count, int peer) {
  const std::int64_t bytes = count * static_cast<std::int64_t>(sizeof(float));
  counted(ctx, CollectiveKind::kSend, bytes, bytes, [&] { do_send(ctx, data, count, peer); });
}

void Communicator::recv(const kernels::Context& ctx, float* data, std::int64_t count, int peer) {
  const std::int64_t bytes = count * static_cast<std::int64_t>(sizeof(float));
  counted(ctx, CollectiveKind::kRecv, bytes, 0, [&] { do_recv(ctx, data, count, peer); });
}

void Communicator::all_to_all_v(const kernels::Context& ctx, const void* send,
                                const std::vector<std::int64_t>& send_bytes, void* recv,
                                const std::vector<std::int64_t>& recv_bytes) {
  const auto k = static_cast<std::size_t>(size());
  if (send_bytes.size() != k || recv_bytes.size() != k)
    throw InvalidInput::parameter("all_to_all_v block counts",
                                  std::to_string(send_bytes.size()) + " and " + std::to_string(recv_bytes.size()),
                                  std::to_string(k) + " (one per rank)");
  std::vector<std::int64_t> send_offsets(k + 1, 0), recv_offsets(k + 1, 0);
  for (std::size_t q = 0; q < k; ++q) {
    if (send_bytes[q] < 0 || recv_bytes[q] < 0)
      throw InvalidInput::parameter("all_to_all_v bytes", std::to_string(std::min(send_bytes[q], recv_bytes[q])),
                                    ">= 0");
    send_offsets[q + 1] = send_offsets[q] + send_bytes[q];
    recv_offsets[q + 1] = recv_offsets[q] + recv_bytes[q];
  }
  const auto self = static_cast<std::size_t>(rank());
  if (send_bytes[self] != recv_bytes[self])
    throw InvalidInput::parameter("all_to_all_v own block", std::to_string(send_bytes[self]) + " bytes sent",
                                  std::to_string(recv_bytes[self]) + " bytes (what this rank receives from itself)");
  const std::int64_t to_others = send_offsets[k] - send_bytes[self];
  counted(ctx, CollectiveKind::kAllToAll, to_others, to_others,
          [&] { do_all_to_all_v(ctx, send, send_offsets, recv, recv_offsets); });
}

std::vector<CommTally> Communicator::take_tallies() {
  std::map<std::pair<int, std::int64_t>, CommTally> by;
  for (std::size_t i = 0; i < calls_.size(); ++i) {
    const Call& c = calls_[i];
    CommTally& t = by[{static_cast<int>(c.kind), c.payload_bytes}];
    t.kind = c.kind;
    t.payload_bytes = c.payload_bytes;
    t.calls += 1;
    t.bytes_sent += c.bytes_sent;
    t.ms += elapsed_ms(i);
  }
  calls_.clear();
  wall_ms_.clear();
  std::vector<CommTally> out;
  out.reserve(by.size());
  for (auto& [key, t] : by) out.push_back(t);
  return out;
}

double Communicator::total_ms(const std::vector<CommTally>& tallies) noexcept {
  double ms = 0;
  for (const auto& t : tallies) ms += t.ms;
  return ms;
}

void Communicator::begin_timing(const kernels::Context&, std::size_t) {
  wall_start_ = std::chrono::steady_clock::now();
}

void Communicator::end_timing(const kernels::Context&, std::size_t index) {
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - wall_start_).count();
  if (wall_ms_.size() <= index) wall_ms_.resize(index + 1, 0.0);
  wall_ms_[index] = ms;
}

double Communicator::elapsed_ms(std::size_t index) { return index < wall_ms_.size() ? wall_ms_[index] : 0.0; }

}  // namespace gcnpart::engine
