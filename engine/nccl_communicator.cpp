#include "engine/nccl_communicator.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "kernels/core/cuda_check.hpp"
#include "kernels/core/error.hpp"

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

NcclCommunicator::NcclCommunicator(const NcclId& id, int rank, int size, int device)
    : rank_(rank), size_(size), device_(device) {
  GCNPART_CUDA_TRY(cudaSetDevice(device_));
  ncclUniqueId uid;
  std::memcpy(&uid, id.data(), sizeof uid);
  GCNPART_NCCL_TRY(ncclCommInitRank(&comm_, size_, uid, rank_));
  GCNPART_CUDA_TRY(cudaMalloc(&scratch_, sizeof(float)));
}

NcclCommunicator::~NcclCommunicator() {
  cudaSetDevice(device_);
  if (scratch_ != nullptr) cudaFree(scratch_);
  if (comm_ != nullptr) {
    if (aborted_) {
      ncclCommAbort(comm_);
    } else {
      ncclCommDestroy(comm_);
    }
  }
}

namespace {
std::int64_t ring_share(std::int64_t bytes, int k) { return k <= 1 ? 0 : bytes * (k - 1) / k; }
}  // namespace

void NcclCommunicator::allreduce_sum(const kernels::Context& ctx, float* data, std::int64_t count) {
  GCNPART_NCCL_TRY(ncclAllReduce(data, data, static_cast<std::size_t>(count), ncclFloat32, ncclSum, comm_, ctx.stream));
  bytes_sent_ += 2 * ring_share(count * 4, size_);
}

void NcclCommunicator::allreduce_sum(const kernels::Context& ctx, std::int64_t* data, std::int64_t count) {
  GCNPART_NCCL_TRY(ncclAllReduce(data, data, static_cast<std::size_t>(count), ncclInt64, ncclSum, comm_, ctx.stream));
  bytes_sent_ += 2 * ring_share(count * 8, size_);
}

void NcclCommunicator::all_gather(const kernels::Context& ctx, const float* send, std::int64_t count, float* recv) {
  GCNPART_NCCL_TRY(ncclAllGather(send, recv, static_cast<std::size_t>(count), ncclFloat32, comm_, ctx.stream));
  bytes_sent_ += ring_share(static_cast<std::int64_t>(size_) * count * 4, size_);
}

void NcclCommunicator::reduce_scatter_sum(const kernels::Context& ctx, const float* send, std::int64_t count,
                                          float* recv) {
  GCNPART_NCCL_TRY(
      ncclReduceScatter(send, recv, static_cast<std::size_t>(count), ncclFloat32, ncclSum, comm_, ctx.stream));
  bytes_sent_ += ring_share(static_cast<std::int64_t>(size_) * count * 4, size_);
}

void NcclCommunicator::send(const kernels::Context& ctx, const float* data, std::int64_t count, int peer) {
  GCNPART_NCCL_TRY(ncclSend(data, static_cast<std::size_t>(count), ncclFloat32, peer, comm_, ctx.stream));
  bytes_sent_ += count * 4;
}

void NcclCommunicator::recv(const kernels::Context& ctx, float* data, std::int64_t count, int peer) {
  GCNPART_NCCL_TRY(ncclRecv(data, static_cast<std::size_t>(count), ncclFloat32, peer, comm_, ctx.stream));
}

void NcclCommunicator::barrier(const kernels::Context& ctx) {
  GCNPART_NCCL_TRY(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, ctx.stream));
  synchronize(ctx);
}

void NcclCommunicator::synchronize(const kernels::Context& ctx) {
  double timeout = 300;
  if (const char* env = std::getenv("GCNPART_NCCL_TIMEOUT")) timeout = std::atof(env);
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
