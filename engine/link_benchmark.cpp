#include "engine/link_benchmark.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <thread>

#include "engine/inprocess_communicator.hpp"
#include "engine/mpi_communicator.hpp"
#include "engine/nccl_communicator.hpp"
#include "base/error.hpp"

namespace gcnpart::engine {

double CollectiveTiming::bus_GBps() const noexcept {
  return median_ms > 0 ? static_cast<double>(bytes_sent) / (median_ms * 1e-3) / 1e9 : 0.0;
}

double CollectiveTiming::alg_GBps() const noexcept {
  if (median_ms <= 0) return 0.0;
  const double buffer = kind == CollectiveKind::kAllReduce ? static_cast<double>(payload_bytes)
                                                           : static_cast<double>(payload_bytes) * ranks;
  return buffer / (median_ms * 1e-3) / 1e9;
}

CollectiveTiming benchmark_collective(Communicator& comm, Resources& res, CollectiveKind kind,
                                      std::int64_t payload_bytes, int warmup, int repeats) {
  if (payload_bytes <= 0 || payload_bytes % 4 != 0)
    throw InvalidInput::parameter("--bytes", std::to_string(payload_bytes), "a positive multiple of 4 bytes");
  if (kind == CollectiveKind::kSend || kind == CollectiveKind::kRecv)
    throw InvalidInput::parameter("collective", collective_name(kind), "all_reduce, all_gather or reduce_scatter");
  GCNPART_EXPECTS(warmup >= 0 && repeats >= 1, "at least one timed repeat");
  const kernels::Context& ctx = res.context();
  const std::int64_t k = comm.size();
  const std::int64_t count = payload_bytes / 4;
  const std::int64_t send_count = kind == CollectiveKind::kReduceScatter ? count * k : count;
  const std::int64_t recv_count = kind == CollectiveKind::kAllGather ? count * k : count;
  Buffer<float> send(res.memory(), send_count, MemoryCategory::kCommunication, ctx.stream);
  Buffer<float> recv(res.memory(), kind == CollectiveKind::kAllReduce ? 0 : recv_count,
                     MemoryCategory::kCommunication, ctx.stream);
  kernels::memset_zero_async(ctx, send.data(), send.bytes());
  if (!recv.empty()) kernels::memset_zero_async(ctx, recv.data(), recv.bytes());
  comm.synchronize(ctx);
  (void)comm.take_tallies();  // earlier calls are not ours

  CollectiveTiming t;
  t.kind = kind;
  t.payload_bytes = payload_bytes;
  t.ranks = comm.size();
  t.repeats = repeats;
  std::vector<double> ms;
  for (int i = 0; i < warmup + repeats; ++i) {
    comm.barrier(ctx);
    const std::int64_t before = comm.bytes_sent();
    switch (kind) {
      case CollectiveKind::kAllReduce: comm.allreduce_sum(ctx, send.data(), count); break;
      case CollectiveKind::kAllGather: comm.all_gather(ctx, send.data(), count, recv.data()); break;
      default: comm.reduce_scatter_sum(ctx, send.data(), count, recv.data()); break;
    }
    comm.synchronize(ctx);
    const double call_ms = Communicator::total_ms(comm.take_tallies());
    t.bytes_sent = comm.bytes_sent() - before;
    if (i >= warmup) ms.push_back(call_ms);
  }
  std::sort(ms.begin(), ms.end());
  t.median_ms = ms[ms.size() / 2];
  t.min_ms = ms.front();
  t.max_ms = ms.back();
  return t;
}

std::vector<CollectiveTiming> sweep_collectives(Backend backend, int devices, bool mpi,
                                                const std::vector<CollectiveKind>& kinds,
                                                const std::vector<std::int64_t>& payload_bytes, int warmup,
                                                int repeats) {
  GCNPART_EXPECTS(devices >= 1, "at least one device");
  const bool cuda = backend == Backend::kCuda;
  if (cuda) {
    expect_cuda_build("--device cuda");
    const int visible = cuda_device_count();
    if (visible < (mpi ? 1 : devices))
      throw InvalidInput::parameter("--gpus", std::to_string(devices),
                                    "at most the " + std::to_string(visible) + " visible CUDA devices");
  }
  auto run_all = [&](Communicator& comm, Resources& res) {
    std::vector<CollectiveTiming> out;
    for (const std::int64_t bytes : payload_bytes)
      for (const CollectiveKind kind : kinds)
        out.push_back(benchmark_collective(comm, res, kind, bytes, warmup, repeats));
    return out;
  };

  if (mpi) {
    if (mpi_size() != devices)
      throw InvalidInput::parameter("--gpus", std::to_string(devices),
                                    "the number of MPI ranks (" + std::to_string(mpi_size()) + ")");
    const int rank = mpi_rank();
    std::unique_ptr<Communicator> comm;
    Device device{backend, rank};
    if (cuda) {
      device.index = mpi_local_rank() % cuda_device_count();
      const NcclId id = mpi_broadcast_nccl_id();
      comm = std::make_unique<NcclCommunicator>(id, rank, devices, device.index);
    } else {
      comm = std::make_unique<MpiCommunicator>();
    }
    Resources res(device);
    std::vector<CollectiveTiming> out = run_all(*comm, res);
    for (auto& t : out) {  // the slowest rank's figures, each taken over ranks so that min <= median <= max
      t.median_ms = mpi_allreduce_max(t.median_ms);
      t.min_ms = mpi_allreduce_max(t.min_ms);
      t.max_ms = mpi_allreduce_max(t.max_ms);
    }
    return out;
  }

  std::vector<std::vector<CollectiveTiming>> results(static_cast<std::size_t>(devices));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(devices));
  auto group = cuda ? nullptr : std::make_shared<InProcessGroup>(devices);
  const NcclId id = cuda ? nccl_unique_id() : NcclId{};
  std::atomic<bool> failed{false};
  const int threads_each = std::max(1, omp_get_max_threads() / devices);
  auto worker = [&](int rank) {
    try {
      omp_set_num_threads(threads_each);
      std::unique_ptr<Communicator> comm;
      if (cuda) {
        auto nccl = std::make_unique<NcclCommunicator>(id, rank, devices, rank);
        nccl->set_abort_flag(&failed);
        comm = std::move(nccl);
      } else {
        comm = std::make_unique<InProcessCommunicator>(group, rank);
      }
      Resources res(Device{backend, rank});
      results[static_cast<std::size_t>(rank)] = run_all(*comm, res);
    } catch (...) {
      errors[static_cast<std::size_t>(rank)] = std::current_exception();
      failed = true;
      if (group) group->abort(rank);
    }
  };
  std::vector<std::thread> pool;
  for (int r = 1; r < devices; ++r) pool.emplace_back(worker, r);
  worker(0);
  for (auto& t : pool) t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
  std::vector<CollectiveTiming> out = results[0];
  for (std::size_t i = 0; i < out.size(); ++i)
    for (const auto& r : results) {  // as under MPI: each statistic's largest over ranks
      out[i].median_ms = std::max(out[i].median_ms, r[i].median_ms);
      out[i].min_ms = std::max(out[i].min_ms, r[i].min_ms);
      out[i].max_ms = std::max(out[i].max_ms, r[i].max_ms);
    }
  return out;
}

}  // namespace gcnpart::engine
