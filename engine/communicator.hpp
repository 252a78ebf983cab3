// Collective communication between the devices of one run. Strategies insert these calls between layers and
// after backward; implementations: in-process (K virtual CPU devices, one thread each), NCCL, MPI.
// The base class counts what every call moves and times it, so that an epoch splits into communication and
// compute the same way on every backend.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "kernels/context.hpp"

namespace gcnpart::engine {

/// What a timed call does.
enum class CollectiveKind : int { kAllReduce, kAllGather, kReduceScatter, kSend, kRecv, kAllToAll };
inline constexpr int kCollectiveKinds = 6;
/// "all_reduce", "all_gather", "reduce_scatter", "send", "recv", "all_to_all".
const char* collective_name(CollectiveKind kind) noexcept;

/// Calls of one kind and payload size on one rank, accumulated since the last Communicator::take_tallies().
struct CommTally {
  CollectiveKind kind = CollectiveKind::kAllReduce;
  /// Bytes of one call's buffer on this rank: all-reduce the buffer, all-gather what this rank sends,
  /// reduce-scatter what it receives, send / recv the message, all-to-all what it sends to the other ranks.
  std::int64_t payload_bytes = 0;
  std::int64_t calls = 0;
  std::int64_t bytes_sent = 0;  ///< as bytes_sent() counts them (ring bytes), summed over the calls
  double ms = 0;                ///< time in the calls, summed (see take_tallies)
};

/// All buffers live in the calling device's memory space and calls are ordered on ctx's stream. Every rank must
/// make the same sequence of calls with the same counts.
class Communicator {
 public:
  virtual ~Communicator() = default;
  [[nodiscard]] virtual int rank() const noexcept = 0;
  [[nodiscard]] virtual int size() const noexcept = 0;
  /// In-place element-wise sum over all ranks; every rank gets the identical result.
  void allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count);
  void allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count);
  /// recv[r * count + i] = send_of_rank_r[i]; recv holds size() * count elements.
  void all_gather(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv);
  /// recv[i] = sum over ranks r of send_of_rank_r[rank() * count + i]; send holds size() * count elements.
  void reduce_scatter_sum(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv);
  /// Personalised exchange (an all-to-all with a size per pair): rank r's block for rank q, send_bytes[q] bytes,
  /// lands in q's recv at the offset of its block r. Blocks lie back to back in rank order in both buffers (block q
  /// of send starts at the sum of send_bytes[0..q)); send_bytes[q] on rank r must equal recv_bytes[r] on rank q.
  /// Both vectors have size() entries; the own block is copied. Counted as the bytes sent to other ranks.
  /// NCCL: grouped ncclSend / ncclRecv; MPI: MPI_Alltoallv. @throws InvalidInput for mismatched sizes.
  void all_to_all_v(const kernels::Context& ctx, const void* send, const std::vector<std::int64_t>& send_bytes,
                    void* recv, const std::vector<std::int64_t>& recv_bytes);
  /// Waits until every rank has arrived (synchronises the stream). Neither counted nor timed.
  virtual void barrier(const kernels::Context& ctx) = 0;
  /// Point to point (the pipeline strategy): blocks until `peer` has received / sent the same count.
  void send(const kernels::Context& ctx, const float* data, std::int64_t count, int peer);
  void recv(const kernels::Context& ctx, float* data, std::int64_t count, int peer);
  /// Waits for the work queued on ctx's stream, watching for a failed peer: a communicator whose peer died
  /// aborts and throws within a bounded time instead of hanging.
  virtual void synchronize(const kernels::Context& ctx) { kernels::synchronize(ctx); }
  /// Bytes this rank has sent so far, as a ring implementation sends them (allreduce 2(K-1)/K of the buffer,
  /// all-gather and reduce-scatter (K-1)/K of the gathered buffer, send the message, all-to-all the blocks for
  /// other ranks).
  [[nodiscard]] std::int64_t bytes_sent() const noexcept { return bytes_sent_; }
  /// The calls since the last take, grouped by kind and payload size, and starts a new count. Time per call is
  /// what the backend can see of it: NCCL the CUDA-event time on the stream from just before to just after the
  /// call (the events are read here, so call this once the stream is idle, e.g. after synchronize(); it waits for
  /// them otherwise); the CPU communicators the host wall time inside the call. Both include waiting for slower
  /// peers. @throws DeviceError if an event cannot be read.
  [[nodiscard]] std::vector<CommTally> take_tallies();
  /// Sum of the tallies' milliseconds.
  [[nodiscard]] static double total_ms(const std::vector<CommTally>& tallies) noexcept;

 protected:
  virtual void do_allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) = 0;
  virtual void do_allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) = 0;
  virtual void do_all_gather(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) = 0;
  virtual void do_reduce_scatter_sum(const kernels::Context& ctx, const float* send, std::int64_t count,
                                     float* recv) = 0;
  virtual void do_send(const kernels::Context& ctx, const float* data, std::int64_t count, int peer) = 0;
  virtual void do_recv(const kernels::Context& ctx, float* data, std::int64_t count, int peer) = 0;
  /// send_offsets / recv_offsets: size() + 1 byte offsets of the blocks (prefix sums of the byte counts).
  virtual void do_all_to_all_v(const kernels::Context& ctx, const void* send,
                               const std::vector<std::int64_t>& send_offsets, void* recv,
                               const std::vector<std::int64_t>& recv_offsets) = 0;
  /// Hooks around every counted call; `index` numbers the calls since the last take. The defaults take host wall
  /// time, right for communicators whose calls return when the data has moved; NCCL records CUDA events instead.
  virtual void begin_timing(const kernels::Context& ctx, std::size_t index);
  virtual void end_timing(const kernels::Context& ctx, std::size_t index);
  /// Milliseconds of call `index`, asked once per call by take_tallies().
  virtual double elapsed_ms(std::size_t index);

 private:
  struct Call {
    CollectiveKind kind;
    std::int64_t payload_bytes, bytes_sent;
  };
  template <typename Op>
  void counted(const kernels::Context& ctx, CollectiveKind kind, std::int64_t payload, std::int64_t sent, Op&& op);
  std::int64_t bytes_sent_ = 0;
  std::vector<Call> calls_;
  std::vector<double> wall_ms_;
  std::chrono::steady_clock::time_point wall_start_{};
};

}  // namespace gcnpart::engine
