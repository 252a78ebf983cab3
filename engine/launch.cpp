#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "base/error.hpp"
#include "engine/detail/device_run.hpp"
#include "engine/inprocess_communicator.hpp"
#include "engine/link_benchmark.hpp"
#include "engine/mpi_communicator.hpp"
#include "engine/nccl_communicator.hpp"
#include "engine/trainer.hpp"

// train_distributed: K devices as threads of this process (in-process or NCCL communicators) or as the ranks of an
// mpirun job (MPI or NCCL), each running the one training loop (detail::run_device, engine/trainer.cpp).
namespace gcnpart::engine {

using detail::DeviceBaseline;
using detail::RankResult;

namespace {

/// Exchanges every rank's RankResult over MPI (fixed-size records: the epoch count is bounded by config).
void mpi_gather_results(const RankResult& mine, std::vector<RankResult>& all, int max_epochs) {
  struct Fixed {
    MemoryStats memory;
    MemoryCheck memory_check;
    LinkDevice link;
    std::int64_t bytes_sent, bytes_first_epoch, driver_bytes, epochs, has_link, link_kind, link_payload, link_calls;
  };
  const std::size_t series = static_cast<std::size_t>(max_epochs) * sizeof(double);
  const std::size_t record = sizeof(Fixed) + 2 * series;
  std::vector<char> out(record, 0), in(record * all.size(), 0);
  Fixed f{mine.memory,
          mine.memory_check,
          mine.link,
          mine.bytes_sent,
          mine.bytes_first_epoch,
          mine.driver_bytes,
          static_cast<std::int64_t>(mine.step_seconds.size()),
          mine.has_link ? 1 : 0,
          static_cast<std::int64_t>(mine.link_kind),
          mine.link_payload,
          mine.link_calls};
  std::memcpy(out.data(), &f, sizeof f);
  std::memcpy(out.data() + sizeof f, mine.step_seconds.data(), mine.step_seconds.size() * sizeof(double));
  std::memcpy(out.data() + sizeof f + series, mine.comm_seconds.data(), mine.comm_seconds.size() * sizeof(double));
  mpi_allgather_bytes(out.data(), record, in.data());
  for (std::size_t r = 0; r < all.size(); ++r) {
    Fixed g;
    const char* at = in.data() + r * record;
    std::memcpy(&g, at, sizeof g);
    all[r].memory = g.memory;
    all[r].memory_check = g.memory_check;
    all[r].link = g.link;
    all[r].bytes_sent = g.bytes_sent;
    all[r].bytes_first_epoch = g.bytes_first_epoch;
    all[r].driver_bytes = g.driver_bytes;
    all[r].has_link = g.has_link != 0;
    all[r].link_kind = static_cast<CollectiveKind>(g.link_kind);
    all[r].link_payload = g.link_payload;
    all[r].link_calls = g.link_calls;
    const auto n = static_cast<std::size_t>(g.epochs);
    all[r].step_seconds.resize(n);
    all[r].comm_seconds.resize(n);
    std::memcpy(all[r].step_seconds.data(), at + sizeof g, n * sizeof(double));
    std::memcpy(all[r].comm_seconds.data(), at + sizeof g + series, n * sizeof(double));
  }
}

/// What NCCL should connect up front: the collectives every strategy uses, point to point for the pipeline and
/// boundary's exchange (ring neighbours: every pair for 2 devices; further pairs connect on first use).
NcclConnect nccl_connect(partition::Strategy s) {
  NcclConnect c;
  const auto kind = partition::traits(s).communication;
  c.point_to_point = kind == partition::Communication::kPointToPoint || kind == partition::Communication::kAllToAll;
  return c;
}

bool is_abort_echo(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    return std::string(err.what()).rfind("collective aborted", 0) == 0;
  } catch (...) {
    return false;
  }
}

}  // namespace

TrainReport train_distributed(const datasets::Dataset& ds, const partition::Plan& plan, const TrainConfig& config,
                              const EpochCallback& on_epoch, const LaunchOptions& launch) {
  config.validate();
  const int k = plan.parts;
  GCNPART_EXPECTS(static_cast<int>(plan.devices.size()) == k, "plan has one DevicePlan per part");
  const bool cuda = launch.backend == Backend::kCuda;
  if (cuda) {
    expect_cuda_build("--device cuda");
    const int visible = cuda_device_count();
    const int needed = launch.mpi ? 1 : k;
    if (visible < needed)
      throw InvalidInput::parameter("--gpus", std::to_string(k),
                                    "at most the " + std::to_string(visible) + " visible CUDA devices");
  }
  partition::check_strategy(plan.strategy, k, config.model.layers, config.model.precision);
  TrainReport report;
  report.strategy = plan.strategy;
  report.parts = k;
  report.seed = config.model.seed;

  if (launch.mpi) {
    // One process per device: this process is rank mpi_rank(); per-rank figures are exchanged over MPI.
    const int rank = mpi_rank();
    if (mpi_size() != k)
      throw InvalidInput::parameter("--parts", std::to_string(k),
                                    "the number of MPI ranks (" + std::to_string(mpi_size()) + ")");
    RankResult mine;
    std::unique_ptr<Communicator> comm;
    DeviceBaseline baseline;
    Device device{launch.backend, rank};
    if (cuda) {
      device.index = mpi_local_rank() % cuda_device_count();
      const NcclId id = mpi_broadcast_nccl_id();
      auto nccl = std::make_unique<NcclCommunicator>(id, rank, k, device.index, nccl_connect(plan.strategy),
                                                     launch.nccl_timeout_s);
      baseline = {nccl->used_before_init(), nccl->init_bytes(), true};
      comm = std::move(nccl);
    } else {
      comm = std::make_unique<MpiCommunicator>();
    }
    const LocalProblem problem = device_problem(ds, plan, rank, config.normalize_features);
    detail::run_device(problem, plan.strategy, k, config, rank == 0 ? on_epoch : EpochCallback{}, launch, device,
               comm.get(), baseline, report, mine);
    std::vector<RankResult> all(static_cast<std::size_t>(k));
    mpi_gather_results(mine, all, config.epochs);
    detail::fill_report(report, all);
    return report;
  }

  std::vector<RankResult> results(static_cast<std::size_t>(k));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(k));
  auto group = cuda ? nullptr : std::make_shared<InProcessGroup>(k);
  const NcclId nccl_id = cuda ? nccl_unique_id() : NcclId{};
  std::atomic<bool> failed{false};
  const int threads_each = std::max(1, omp_get_max_threads() / k);

  auto worker = [&](int rank) {
    try {
      omp_set_num_threads(threads_each);
      std::unique_ptr<Communicator> comm;
      DeviceBaseline baseline;
      if (cuda) {
        // Threads mode connects point to point lazily: the pipeline hung at start on 2 H200s with the up-front
        // send/recv of connect_up_front (one process, one thread per GPU); under mpirun it connects fine.
        NcclConnect connect = nccl_connect(plan.strategy);
        connect.point_to_point = false;
        auto nccl = std::make_unique<NcclCommunicator>(nccl_id, rank, k, rank, connect, launch.nccl_timeout_s);
        nccl->set_abort_flag(&failed);
        baseline = {nccl->used_before_init(), nccl->init_bytes(), true};
        comm = std::move(nccl);
      } else {
        comm = std::make_unique<InProcessCommunicator>(group, rank);
      }
      const LocalProblem problem = device_problem(ds, plan, rank, config.normalize_features);
      detail::run_device(problem, plan.strategy, k, config, on_epoch, launch, Device{launch.backend, rank}, comm.get(),
                 baseline, report, results[rank]);
    } catch (...) {
      errors[rank] = std::current_exception();
      failed = true;
      if (group) group->abort(rank);
    }
  };

  std::vector<std::thread> pool;
  for (int r = 1; r < k; ++r) pool.emplace_back(worker, r);
  worker(0);
  for (auto& t : pool) t.join();
  // Report the root cause: the first error that is not the abort it caused in the others.
  for (int r = 0; r < k; ++r)
    if (errors[r] && !is_abort_echo(errors[r])) std::rethrow_exception(errors[r]);
  for (int r = 0; r < k; ++r)
    if (errors[r]) std::rethrow_exception(errors[r]);
  detail::fill_report(report, results);
  if (partition::splits_layers(plan.strategy)) {  // every stage's layers, in layer order
    report.parameters.clear();
    for (const auto& r : results) report.parameters.insert(report.parameters.end(), r.parameters.begin(), r.parameters.end());
  }
  return report;
}

}  // namespace gcnpart::engine
