#include "engine/nccl_communicator.hpp"

#include "base/error.hpp"

#if GCNPART_HAVE_CUDA
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "base/cuda_check.hpp"

namespace gcnpart::engine {

namespace {
std::string nccl_message(ncclResult_t r) { return ncclGetErrorString(r); }
}  // namespace

#define GCNPART_NCCL_TRY(call)                                                                          \
  do {                                                                                                  \
    const ncclResult_t gcnpart_nccl_status_ = (call);                                                   \
    if (gcnpart_nccl_status_ != ncclSuccess)                                                            \
      ::gcnpart::detail::throw_device_error("NCCL", #call, __FILE__, __LINE__,                          \
                                            nccl_message(gcnpart_nccl_status_) + " (" +                 \
                                                std::string(ncclGetLastError(nullptr)) + ")");         \
  } while (0)

NcclId nccl_unique_id() {
  ncclUniqueId id;
  GCNPART_NCCL_TRY(ncclGetUniqueId(&id));
  NcclId out{};
  static_assert(sizeof(id) == sizeof(NcclId), "ncclUniqueId is 128 bytes");
  std::memcpy(out.data(), &id, sizeof id);
  return out;
}

std::string nccl_version() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return {};
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." + std::to_string(v % 100);
}

namespace {
std::int64_t device_used_bytes() {
  std::size_t free_b = 0, total_b = 0;
  GCNPART_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  return static_cast<std::int64_t>(total_b - free_b);
}
}  // namespace

NcclCommunicator::NcclCommunicator(const NcclId& id, int rank, int size, int device, NcclConnect connect,
                                   double timeout_s)
    : rank_(rank), size_(size), device_(device), timeout_s_(timeout_s) {
  if (!(timeout_s_ > 0)) throw InvalidInput::parameter("--nccl-timeout", std::to_string(timeout_s_), "> 0 seconds");
  GCNPART_CUDA_TRY(cudaSetDevice(device_));
  GCNPART_CUDA_TRY(cudaFree(nullptr));  // the context now, so that it is measured apart from NCCL
  used_before_init_ = device_used_bytes();
  ncclUniqueId uid;
  std::memcpy(&uid, id.data(), sizeof uid);
  GCNPART_NCCL_TRY(ncclCommInitRank(&comm_, size_, uid, rank_));
  try {
    scratch_ = allocate_device(sizeof(float));
    if (size_ > 1) connect_up_front(connect);
  } catch (...) {
    if (comm_ != nullptr) ncclCommAbort(comm_);  // the destructor does not run for a constructor that throws
    comm_ = nullptr;
    throw;
  }
  init_bytes_ = device_used_bytes() - used_before_init_;
}

void NcclCommunicator::connect_up_front(NcclConnect connect) {
  if (!connect.collectives && !connect.point_to_point) return;
  // One small call (LL protocols, latency algorithms) and one large (Simple, ring) per collective, on a private
  // stream; the buffer is freed again before init_bytes() is measured.
  constexpr std::size_t kLargeFloats = std::size_t{8} << 20;  // 32 MiB
  const OwnedStream owned_stream = create_stream(false);
  const DeviceAllocation owned_buffer = allocate_device(kLargeFloats * sizeof(float));
  cudaStream_t stream = owned_stream.get();
  auto* buffer = static_cast<float*>(owned_buffer.get());
  // A failed call aborts the communicator here, while the stream and buffer still exist: freeing the buffer first
  // (cudaFree synchronises the device) would wait on collectives that only the abort releases.
  try {
    const auto k = static_cast<std::size_t>(size_);
    if (connect.collectives) {
      for (const std::size_t n : {std::size_t{1}, kLargeFloats / k}) {
        GCNPART_NCCL_TRY(ncclAllReduce(buffer, buffer, n * k, ncclFloat32, ncclSum, comm_, stream));
        GCNPART_NCCL_TRY(ncclAllGather(buffer + rank_ * n, buffer, n, ncclFloat32, comm_, stream));
        GCNPART_NCCL_TRY(ncclReduceScatter(buffer, buffer + rank_ * n, n, ncclFloat32, ncclSum, comm_, stream));
      }
    }
    if (connect.point_to_point) {
      const int next = (rank_ + 1) % size_, prev = (rank_ + size_ - 1) % size_;
      GCNPART_NCCL_TRY(ncclGroupStart());
      GCNPART_NCCL_TRY(ncclSend(buffer, 1, ncclFloat32, next, comm_, stream));
      GCNPART_NCCL_TRY(ncclRecv(buffer + 1, 1, ncclFloat32, prev, comm_, stream));
      GCNPART_NCCL_TRY(ncclSend(buffer + 2, 1, ncclFloat32, prev, comm_, stream));
      GCNPART_NCCL_TRY(ncclRecv(buffer + 3, 1, ncclFloat32, next, comm_, stream));
      GCNPART_NCCL_TRY(ncclGroupEnd());
    }
    GCNPART_CUDA_TRY(cudaStreamSynchronize(stream));
  } catch (...) {
    ncclCommAbort(comm_);
    comm_ = nullptr;
    throw;
  }
}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_);
  events_.clear();  // on this device, before the communicator goes
  scratch_.reset();
  if (comm_ != nullptr) {
    if (aborted_) {
      ncclCommAbort(comm_);
    } else {
      ncclCommDestroy(comm_);
    }
  }
}

void NcclCommunicator::do_allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) {
  GCNPART_NCCL_TRY(ncclAllReduce(data, data, static_cast<std::size_t>(count), ncclFloat32, ncclSum, comm_, ctx.stream));
}

void NcclCommunicator::do_allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) {
  GCNPART_NCCL_TRY(ncclAllReduce(data, data, static_cast<std::size_t>(count), ncclInt64, ncclSum, comm_, ctx.stream));
}

void NcclCommunicator::do_all_gather(const kernels::Context& ctx, const float* send, std::int64_t count,
                                     float* recv) {
  GCNPART_NCCL_TRY(ncclAllGather(send, recv, static_cast<std::size_t>(count), ncclFloat32, comm_, ctx.stream));
}

void NcclCommunicator::do_reduce_scatter_sum(const kernels::Context& ctx, const float* send, std::int64_t count,
                                             float* recv) {
  GCNPART_NCCL_TRY(
      ncclReduceScatter(send, recv, static_cast<std::size_t>(count), ncclFloat32, ncclSum, comm_, ctx.stream));
}

void NcclCommunicator::do_send(const kernels::Context& ctx, const float* data, std::int64_t count, int peer) {
  GCNPART_NCCL_TRY(ncclSend(data, static_cast<std::size_t>(count), ncclFloat32, peer, comm_, ctx.stream));
}

void NcclCommunicator::do_recv(const kernels::Context& ctx, float* data, std::int64_t count, int peer) {
  GCNPART_NCCL_TRY(ncclRecv(data, static_cast<std::size_t>(count), ncclFloat32, peer, comm_, ctx.stream));
}

void NcclCommunicator::do_all_to_all_v(const kernels::Context& ctx, const void* send,
                                       const std::vector<std::int64_t>& send_offsets, void* recv,
                                       const std::vector<std::int64_t>& recv_offsets) {
  const auto* out = static_cast<const char*>(send);
  auto* in = static_cast<char*>(recv);
  GCNPART_NCCL_TRY(ncclGroupStart());
  for (int q = 0; q < size_; ++q) {
    const auto sb = static_cast<std::size_t>(send_offsets[q + 1] - send_offsets[q]);
    const auto rb = static_cast<std::size_t>(recv_offsets[q + 1] - recv_offsets[q]);
    if (sb > 0) GCNPART_NCCL_TRY(ncclSend(out + send_offsets[q], sb, ncclInt8, q, comm_, ctx.stream));
    if (rb > 0) GCNPART_NCCL_TRY(ncclRecv(in + recv_offsets[q], rb, ncclInt8, q, comm_, ctx.stream));
  }
  GCNPART_NCCL_TRY(ncclGroupEnd());
}

void NcclCommunicator::begin_timing(const kernels::Context& ctx, std::size_t index) {
  if (events_.size() < 2 * (index + 1)) {  // grows to the most calls between two takes, then stays
    GCNPART_CUDA_TRY(cudaSetDevice(device_));
    while (events_.size() < 2 * (index + 1)) events_.emplace_back();
  }
  events_[2 * index].record(ctx.stream);
}

void NcclCommunicator::end_timing(const kernels::Context& ctx, std::size_t index) {
  events_[2 * index + 1].record(ctx.stream);
}

double NcclCommunicator::elapsed_ms(std::size_t index) {
  return kernels::elapsed_ms(events_[2 * index], events_[2 * index + 1]);
}

void NcclCommunicator::barrier(const kernels::Context& ctx) {
  GCNPART_NCCL_TRY(ncclAllReduce(scratch_.get(), scratch_.get(), 1, ncclFloat32, ncclSum, comm_, ctx.stream));
  synchronize(ctx);
}

void NcclCommunicator::synchronize(const kernels::Context& ctx) {
  const double timeout = timeout_s_;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    const cudaError_t q = cudaStreamQuery(ctx.stream);
    if (q == cudaSuccess) return;
    if (q != cudaErrorNotReady) GCNPART_CUDA_TRY(q);
    ncclResult_t async = ncclSuccess;
    GCNPART_NCCL_TRY(ncclCommGetAsyncError(comm_, &async));
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (abort_flag_ != nullptr && abort_flag_->load()) {
      aborted_ = true;
      ncclCommAbort(comm_);
      comm_ = nullptr;
      throw Error("collective aborted: another GPU's rank failed (rank " + std::to_string(rank_) +
                  " aborted its NCCL communicator)");
    }
    if (async != ncclSuccess || waited > timeout) {
      aborted_ = true;
      ncclCommAbort(comm_);
      comm_ = nullptr;
      throw DeviceError("NCCL", "synchronize", "rank " + std::to_string(rank_),
                        async != ncclSuccess ? "asynchronous error: " + nccl_message(async) + "; communicator aborted"
                                             : "no progress for " + std::to_string(static_cast<int>(timeout)) +
                                                   " s (a peer rank probably died); communicator aborted");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace gcnpart::engine

#else  // a CPU-only build: no NCCL; nothing reaches these but a CUDA launch, which Resources refuses first

namespace gcnpart::engine {

NcclId nccl_unique_id() { throw NoCudaBuild("an NCCL group"); }
std::string nccl_version() { return {}; }
NcclCommunicator::NcclCommunicator(const NcclId&, int rank, int size, int device, NcclConnect, double timeout_s)
    : rank_(rank), size_(size), device_(device), timeout_s_(timeout_s) {
  throw NoCudaBuild("an NCCL communicator");
}
NcclCommunicator::~NcclCommunicator() = default;
void NcclCommunicator::barrier(const kernels::Context&) { throw NoCudaBuild("NCCL"); }
void NcclCommunicator::synchronize(const kernels::Context&) { throw NoCudaBuild("NCCL"); }
void NcclCommunicator::do_allreduce_sum(const kernels::Context&, float*, std::int64_t) { throw NoCudaBuild("NCCL"); }
void NcclCommunicator::do_allreduce_sum(const kernels::Context&, std::int64_t*, std::int64_t) {
  throw NoCudaBuild("NCCL");
}
void NcclCommunicator::do_all_gather(const kernels::Context&, const float*, std::int64_t, float*) {
  throw NoCudaBuild("NCCL");
}
void NcclCommunicator::do_reduce_scatter_sum(const kernels::Context&, const float*, std::int64_t, float*) {
  throw NoCudaBuild("NCCL");
}
void NcclCommunicator::do_send(const kernels::Context&, const float*, std::int64_t, int) { throw NoCudaBuild("NCCL"); }
void NcclCommunicator::do_recv(const kernels::Context&, float*, std::int64_t, int) { throw NoCudaBuild("NCCL"); }
void NcclCommunicator::do_all_to_all_v(const kernels::Context&, const void*, const std::vector<std::int64_t>&, void*,
                                       const std::vector<std::int64_t>&) {
  throw NoCudaBuild("NCCL");
}
void NcclCommunicator::begin_timing(const kernels::Context&, std::size_t) { throw NoCudaBuild("NCCL"); }
void NcclCommunicator::end_timing(const kernels::Context&, std::size_t) { throw NoCudaBuild("NCCL"); }
double NcclCommunicator::elapsed_ms(std::size_t) { throw NoCudaBuild("NCCL"); }
void NcclCommunicator::connect_up_front(NcclConnect) { throw NoCudaBuild("NCCL"); }

}  // namespace gcnpart::engine
#endif
