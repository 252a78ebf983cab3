// The one training loop's entry for one device (engine/trainer.cpp) and what it hands back to the launcher
// (engine/launch.cpp: threads or MPI ranks, communicators): internal to the engine.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/communicator.hpp"
#include "engine/memory.hpp"
#include "engine/problem.hpp"
#include "engine/resources.hpp"
#include "engine/trainer.hpp"

namespace gcnpart::engine::detail {

/// What the device held before the run's own allocations (GPUs): the CUDA context, and what NCCL took.
struct DeviceBaseline {
  std::int64_t context = 0, nccl = 0;
  bool known = false;  ///< false: take the context from the device's Resources (one device, no NCCL)
};

/// What one device measured, gathered into the report after the run.
struct RankResult {
  std::vector<double> step_seconds, comm_seconds;
  MemoryStats memory;
  MemoryCheck memory_check;
  std::int64_t bytes_sent = 0, bytes_first_epoch = 0, driver_bytes = 0;
  std::vector<std::vector<float>> parameters;  ///< pipeline: this stage's layers
  bool has_link = false;
  CollectiveKind link_kind = CollectiveKind::kAllGather;
  std::int64_t link_payload = 0, link_calls = 0;
  LinkDevice link;
};

/// The one training loop. Trains `problem` on `device` as rank comm->rank() of comm->size() devices (comm null:
/// one device, no communication); fills `mine` with what this device measured and, on rank 0, the report's
/// global figures (losses, accuracy, weights). Every device runs the same epochs: losses and the validation loss
/// that early stopping reads are all-reduced, so all stop together.
void run_device(const LocalProblem& problem, partition::Strategy strategy, int parts, const TrainConfig& config,
                const EpochCallback& on_epoch, const LaunchOptions& launch, const Device& device,
                Communicator* comm, DeviceBaseline baseline, TrainReport& report, RankResult& mine);

/// The report's per-device vectors, epoch times, communication / waiting split and link from every device's result.
void fill_report(TrainReport& report, const std::vector<RankResult>& results);

}  // namespace gcnpart::engine::detail
