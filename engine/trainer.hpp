// The one training loop, for every strategy and launch mode (single = one device, no communication): epochs of
// train_step, evaluation, early stopping, checkpoints, timing, memory and communication reporting.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "engine/communicator.hpp"
#include "engine/checkpoint.hpp"
#include "engine/gcn.hpp"
#include "engine/nccl_communicator.hpp"
#include "engine/memory.hpp"
#include "base/enum_names.hpp"
#include "base/error.hpp"
#include "partition/plan.hpp"

namespace gcnpart::engine {

/// Deliberate failure of one device at one epoch, for the tests of crash recovery (the CLI's hidden
/// --fault-inject flag). kKill raises SIGKILL in the whole process (what a crashed node looks like to mpirun and
/// to the checkpoint); kThrow makes that device throw FaultInjected, which the other devices see as an aborted
/// collective (a library caller and the in-process tests can then resume).
/// kSlow makes that device a straggler instead: it sleeps slow_ms inside every train step (counted as its compute),
/// for the tests of the compute / communication / waiting split.
struct FaultInjection {
  enum class Kind { kNone, kKill, kThrow, kSlow } kind = Kind::kNone;
  int rank = 0;   ///< the device (rank) that fails
  int epoch = 0;  ///< after this epoch's train step, before its evaluation and checkpoint
  double slow_ms = 0;  ///< kSlow: sleep per train step
};

struct TrainConfig {
  GcnConfig model;
  int epochs = 200;
  int early_stopping = 0;  ///< stop when the validation loss has not improved for this many epochs (0 = off)
  bool normalize_features = true;
  std::int64_t memory_limit = 0;  ///< bytes per device, 0 = none
  std::string load_weights;       ///< start from these weights instead of the initialisation
  std::string oom_hint;           ///< appended to out-of-memory errors (e.g. the `gcnpart fit` command to run)
  bool evaluate_every_epoch = true;  ///< validation loss / accuracy each epoch (forced on by early stopping)
  /// Checkpoints: every checkpoint_every epochs each device writes DIR/rank<r>-of-<K>.e<E>.gckpt (atomically),
  /// then, once all have, DIR/checkpoint.latest names epoch E; older generations are removed after that. A crash
  /// at any moment leaves a complete generation that `latest` names. Works for every strategy and launch mode.
  std::string checkpoint_dir;
  int checkpoint_every = 0;
  bool resume = false;               ///< continue from the generation DIR/checkpoint.latest names, when it exists
  FaultInjection fault;              ///< tests only
  /// Cancellation (the Python package's Ctrl-C): when it points to a flag that becomes true, every device throws
  /// Cancelled before its next epoch (the others then see an aborted collective, as with any device error). Not
  /// owned; must outlive the call. Null: never cancelled.
  const std::atomic<bool>* cancel = nullptr;
  void validate() const;
};

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
  std::int64_t payload_bytes = 0;    ///< per call and rank: the training's largest call of that kind
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

/// How a single device streamed its layers through host memory (`--offload`; engine/streamed_layers.hpp).
struct OffloadReport {
  bool streamed = false;            ///< false: the model was resident
  std::string mode;                 ///< --offload as given: auto, host (off never streams)
  std::int64_t part_rows = 0, parts = 0;
  int operands = 0;                 ///< whole SpMM operands on the device (2: each layer's input written straight in)
  std::int64_t host_bytes = 0;      ///< host memory of the saved matrices (page-locked on a GPU)
  std::vector<std::string> on_host, on_device;  ///< the saved matrices by tier
  std::int64_t step_h2d_bytes = 0, step_d2h_bytes = 0;  ///< per training step, as measured (issued copies)
  std::int64_t plan_h2d_bytes = 0, plan_d2h_bytes = 0;  ///< per training step, as the plan predicts
  double h2d_GBps = 0, d2h_GBps = 0;  ///< page-locked copy bandwidth measured after training (GPU; 0: not measured)
  double compute_ms = 0;  ///< a training step's forward and backward with the host copies left out (GPU; 0: not measured)
  /// max(compute, step_h2d / h2d bandwidth, step_d2h / d2h bandwidth): no schedule of this plan's copies and kernels
  /// is faster (the two directions use separate copy engines). 0: not measured.
  double lower_bound_ms = 0;
};

/// The epochs a timing uses, sorted: every one after the first (the warm-up), or the only one (train's summary and
/// compare's rows alike).
std::vector<double> timed_epochs(const std::vector<double>& epoch_seconds);

/// One training run on K >= 1 devices (single is K = 1 without communication). The one report type of every
/// strategy and launch mode; per-device vectors have K entries.
struct TrainReport {
  partition::Strategy strategy = partition::Strategy::kSingle;
  int parts = 1;
  std::uint64_t seed = 0;
  std::vector<double> train_loss;  ///< global mean training loss per epoch (dropout on; identical on every device)
  std::vector<double> valid_loss;  ///< per epoch, dropout off (empty when not evaluated every epoch)
  double accuracy[3] = {0, 0, 0};  ///< train / valid / test after the last epoch
  double loss[3] = {0, 0, 0};
  int epochs_run = 0;
  int resumed_at = 0;              ///< first epoch this call trained (> 0 when resumed from a checkpoint)
  std::vector<double> epoch_seconds;  ///< per epoch trained in this call, the slowest device's train step
  std::vector<std::vector<float>> parameters;    ///< final weights (W0, b0, W1, b1, ...; all layers)
  std::map<std::int64_t, std::string> spmm_choices;  ///< autotuned SpMM per width (GPU; device 0)
  std::string cuda_graph;  ///< GcnModel::cuda_graph_status of device 0 after training
  OffloadReport offload;   ///< device 0 (the single strategy)
  // Per device:
  std::vector<MemoryStats> memory;                 ///< tracked memory over the run
  std::vector<std::int64_t> bytes_sent;            ///< whole run
  std::vector<std::int64_t> bytes_sent_per_epoch;  ///< one training epoch (set-up and evaluation excluded)
  std::vector<std::int64_t> driver_bytes;          ///< highest cudaMemGetInfo used bytes (CUDA only)
  std::vector<std::vector<double>> device_step_seconds;  ///< [device][epoch]: that device's own train step
  std::vector<std::vector<double>> comm_seconds;  ///< [device][epoch]: its time in communication during the step
  /// Means over the epochs after the first (the first is warm-up; all when there is one):
  std::vector<double> epoch_ms_per_epoch;    ///< the device's train step
  /// Time in communication calls (Communicator::take_tallies) splits into communication and waiting: per epoch
  /// the least any device spent in its calls is communication (the last to arrive waited for no one), each
  /// device's excess over it is waiting for a slower peer.
  std::vector<double> comm_ms_per_epoch;
  std::vector<double> wait_ms_per_epoch;
  std::vector<double> compute_ms_per_epoch;  ///< epoch_ms_per_epoch - comm_ms_per_epoch - wait_ms_per_epoch
  std::vector<MemoryCheck> memory_check;     ///< the driver's view against the accounted terms (GPUs only)
  bool has_link = false;                     ///< link was measured
  LinkReport link;
  /// Measured work imbalance: max / mean of the devices' compute per epoch (1 for one device or no epochs). The
  /// plan's PlanMetrics::work_imbalance predicts it.
  [[nodiscard]] double compute_imbalance() const noexcept;
  /// Exposed communication: (slowest device's epoch - slowest device's compute) / slowest epoch, in [0, 1].
  [[nodiscard]] double exposed_communication() const noexcept;
};

/// How the devices are driven.
struct LaunchOptions {
  Backend backend = Backend::kCpu;  ///< virtual CPU devices or GPUs (NCCL)
  bool mpi = false;  ///< one process per device started by mpirun (this process is one rank), else threads
  /// After training, time the plain collective the strategy depends on (LinkReport): all-gather for gather,
  /// all-reduce for drop and halo, none for pipeline. kAuto: on GPUs only (on virtual CPU devices it measures
  /// memcpy, not a link).
  enum class Link { kAuto, kAlways, kNever } link = Link::kAuto;
  /// GPUs: seconds a rank waits on a collective without progress before it aborts (`--nccl-timeout`).
  double nccl_timeout_s = kDefaultNcclTimeoutSeconds;
};

/// LaunchOptions::Link's names (`--link-bench`, Python's link_bench), base/enum_names.hpp.
struct LinkName {
  LaunchOptions::Link value;
  const char* name;
};
inline constexpr std::array<LinkName, 3> kLinkModes{{
    {LaunchOptions::Link::kAuto, "auto"},
    {LaunchOptions::Link::kAlways, "on"},
    {LaunchOptions::Link::kNever, "off"},
}};

/// Called after every epoch: (epoch, train loss, valid loss, valid accuracy).
using EpochCallback = std::function<void(int, double, double, double)>;

/// Trains the GCN on one device (the whole dataset as `problem`): the one training loop with K = 1 and no
/// communicator.
TrainReport train_single(const LocalProblem& problem, const Device& device, const TrainConfig& config,
                         const EpochCallback& on_epoch = {});

/// Trains under `plan` on plan.parts devices: virtual CPU devices or GPUs, one thread each in this process, or
/// (launch.mpi) this process as one rank of an mpirun job; the same loop as train_single. Every device starts from
/// the same weights and applies the same all-reduced gradients, so halo and gather reproduce single-device
/// training. @throws the first device's error (the others are aborted, never left hanging).
TrainReport train_distributed(const datasets::Dataset& ds, const partition::Plan& plan, const TrainConfig& config,
                              const EpochCallback& on_epoch = {}, const LaunchOptions& launch = {});

/// Thrown by the device that FaultInjection::kThrow names.
class FaultInjected : public Error {
 public:
  using Error::Error;
};

/// Thrown by every device that sees TrainConfig::cancel set before an epoch.
class Cancelled : public Error {
 public:
  using Error::Error;
};

}  // namespace gcnpart::engine

namespace gcnpart {
template <>
struct EnumNames<engine::LaunchOptions::Link> {
  static constexpr const auto& table = engine::kLinkModes;
};
}  // namespace gcnpart
