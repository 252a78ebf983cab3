// Training on K devices under a partition strategy: one executor thread per device, each with its own
// Resources (and so its own tracked memory), a GcnModel over its LocalProblem, and a communicator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "engine/communicator.hpp"
#include "engine/nccl_communicator.hpp"
#include "engine/trainer.hpp"
#include "partition/plan.hpp"

namespace gcnpart::engine {

/// What one device of a plan trains on: its local nodes' features and labels, its local graph (drop / halo) or
/// gather matrices, normalisation from the plan, and the split rows among its own nodes.
LocalProblem device_problem(const datasets::Dataset& ds, const partition::Plan& plan, int device,
                            bool normalize_features);

/// One device's side of LinkReport.
struct LinkDevice {
  double train_GBps = 0;       ///< the whole train step's communication: bytes sent / time in communication
  double train_same_GBps = 0;  ///< only the training's calls of the benchmarked kind and size
  double plain_GBps = 0;       ///< the plain collective: bytes sent per call / median time
  double plain_median_ms = 0;
};

/// Bus bandwidth the training's communication achieved against a plain collective of the same size, timed
/// afterwards on the same communicator in the same run (median of kLinkRepeats after warm-up, same timing
/// method). Bus bandwidth = bytes sent as a ring sends them / time (nccl-tests' busbw); means over epochs after
/// the first.
struct LinkReport {
  CollectiveKind collective = CollectiveKind::kAllGather;  ///< all-gather for gather, all-reduce for drop / halo
  std::int64_t payload_bytes = 0;  ///< per call and rank: the training's largest call of that kind
  std::int64_t calls_per_epoch = 0;  ///< training calls of that kind and size per epoch
  int repeats = 0;
  std::vector<LinkDevice> devices;
  /// Means over the devices, and train / plain.
  [[nodiscard]] double train_GBps() const noexcept;
  [[nodiscard]] double train_same_GBps() const noexcept;
  [[nodiscard]] double plain_GBps() const noexcept;
  [[nodiscard]] double ratio() const noexcept;
  [[nodiscard]] double same_ratio() const noexcept;
};

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
  std::vector<std::vector<double>> device_step_seconds;  ///< [device][epoch]: that device's own train step
  std::vector<std::vector<double>> comm_seconds;  ///< [device][epoch]: its time in communication during the step
  /// Per device, means over the epochs after the first (the first is warm-up; all when there is one):
  std::vector<double> epoch_ms_per_epoch;    ///< the device's train step
  std::vector<double> comm_ms_per_epoch;     ///< time in communication (Communicator::take_tallies)
  std::vector<double> compute_ms_per_epoch;  ///< epoch_ms_per_epoch - comm_ms_per_epoch
  std::vector<MemoryCheck> memory_check;     ///< per device (available on GPUs only)
  bool has_link = false;                     ///< link was measured
  LinkReport link;
};

/// How the devices are driven.
struct LaunchOptions {
  kernels::Backend backend = kernels::Backend::kCpu;  ///< virtual CPU devices or GPUs (NCCL)
  bool mpi = false;  ///< one process per device started by mpirun (this process is one rank), else threads
  /// After training, time the plain collective the strategy depends on (LinkReport): all-gather for gather,
  /// all-reduce for drop and halo, none for pipeline. kAuto: on GPUs only (on virtual CPU devices it measures
  /// memcpy, not a link).
  enum class Link { kAuto, kAlways, kNever } link = Link::kAuto;
  /// GPUs: seconds a rank waits on a collective without progress before it aborts (`--nccl-timeout`).
  double nccl_timeout_s = kDefaultNcclTimeoutSeconds;
};

/// Trains under `plan` on plan.parts devices: virtual CPU devices or GPUs, one thread each in this process, or
/// (launch.mpi) this process as one rank of an mpirun job. Every device starts from the same weights and applies
/// the same all-reduced gradients, so halo and gather reproduce single-device training.
/// @throws the first device's error (the others are aborted, never left hanging).
DistributedReport train_distributed(const datasets::Dataset& ds, const partition::Plan& plan,
                                    const TrainConfig& config, const EpochCallback& on_epoch = {},
                                    const LaunchOptions& launch = {});

}  // namespace gcnpart::engine
