// Training on K devices under a partition strategy: one executor thread per device, each with its own
// Resources (and so its own tracked memory), a GcnModel over its LocalProblem, and a communicator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "engine/trainer.hpp"
#include "partition/plan.hpp"

namespace gcnpart::engine {

/// What one device of a plan trains on: its local nodes' features and labels, its local graph (drop / halo) or
/// gather matrices, normalisation from the plan, and the split rows among its own nodes.
LocalProblem device_problem(const datasets::Dataset& ds, const partition::Plan& plan, int device,
                            bool normalize_features);

struct DistributedReport {
  partition::Strategy strategy = partition::Strategy::kSingle;
  int parts = 1;
  std::vector<double> train_loss;  ///< global mean training loss per epoch (identical on every device)
  std::vector<double> valid_loss;
  double accuracy[3] = {0, 0, 0};
  double loss[3] = {0, 0, 0};
  int epochs_run = 0;
  std::vector<double> epoch_seconds;             ///< per epoch, the slowest device's train step
  std::vector<MemoryStats> memory;               ///< per device
  std::vector<std::int64_t> bytes_sent;          ///< per device, whole run
  std::vector<std::int64_t> bytes_sent_per_epoch;  ///< per device, one training epoch (set-up and evaluation excluded)
  std::vector<std::vector<float>> parameters;    ///< final weights (device 0; all devices hold the same)
  std::vector<std::int64_t> driver_bytes;        ///< per device: cudaMemGetInfo used bytes (CUDA only)
};

/// How the devices are driven.
struct LaunchOptions {
  kernels::Backend backend = kernels::Backend::kCpu;  ///< virtual CPU devices or GPUs (NCCL)
  bool mpi = false;  ///< one process per device started by mpirun (this process is one rank), else threads
};

/// Trains under `plan` on plan.parts devices: virtual CPU devices or GPUs, one thread each in this process, or
/// (launch.mpi) this process as one rank of an mpirun job. Every device starts from the same weights and applies
/// the same all-reduced gradients, so halo and gather reproduce single-device training.
/// @throws the first device's error (the others are aborted, never left hanging).
DistributedReport train_distributed(const datasets::Dataset& ds, const partition::Plan& plan,
                                    const TrainConfig& config, const EpochCallback& on_epoch = {},
                                    const LaunchOptions& launch = {});

}  // namespace gcnpart::engine
