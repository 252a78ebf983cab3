// The benchmarks behind `gcnpart bench spmm | epoch | nccl`, as library calls: each takes a config, measures, and
// returns a report that serialises itself to the JSON the CLI writes. Nothing here prints: progress lines go to
// the config's `log` callback when one is given. Every device byte comes from a TrackingMemoryResource: the
// workload's from the device's Resources, the harness's own scratch (copy-bandwidth buffers, the L2 flush) from a
// second resource, so the reported peaks stay the workload's alone. Datasets and memory serialise as every
// report does (engine/report_json.hpp).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "engine/gcn.hpp"
#include "engine/link_benchmark.hpp"
#include "engine/memory.hpp"
#include "engine/resources.hpp"
#include "kernels/op_profiler.hpp"

namespace gcnpart::bench {

/// A progress line (no trailing newline); the CLI prints it on stderr.
using Log = std::function<void(const std::string&)>;

constexpr int kMinSpmmRepeats = 10;          ///< "median of >= 10 timed runs"
constexpr std::int64_t kMaxWidth = 1 << 16;  ///< a sanity bound on the SpMM widths
constexpr double kMaxRelL2 = 1e-5;           ///< fp32 SpMM agreement: ||own - ref|| / ||ref||
constexpr double kMaxRelMax = 1e-4;          ///< and max |own - ref| / max |ref|
constexpr double kBf16SpeedupTarget = 1.7;   ///< issue 6: bf16 SpMM >= 1.7x the best fp32 cuSPARSE algorithm

/// Median, minimum, 90th percentile (nearest rank) and mean of a list of times, and the list itself.
struct Summary {
  double median = 0, min = 0, p90 = 0, mean = 0;
  std::vector<double> all;
  [[nodiscard]] static Summary of(std::vector<double> values);
  /// {median, min, p90, mean, runs, all}
  [[nodiscard]] nlohmann::json to_json() const;
};

/// The GPU a benchmark ran on: name, multiprocessors, memory, L2, peak clocks (device attributes) and the
/// bandwidth those clocks imply (2 transfers per memory clock x bus width).
struct GpuInfo {
  int device = 0;
  std::string name, compute_capability;
  int multiprocessors = 0, l2_bytes = 0, memory_bus_bits = 0, cuda_runtime = 0, cuda_driver = 0;
  std::int64_t memory_bytes = 0;
  double sm_clock_max_mhz = 0, memory_clock_max_mhz = 0, theoretical_bandwidth_gbs = 0;
  /// @throws DeviceError when the device cannot be queried.
  [[nodiscard]] static GpuInfo query(int device);
  [[nodiscard]] nlohmann::json to_json() const;
};

/// The CUDA device to measure on, from "cuda" / "cuda:N". @throws InvalidInput naming --device for a CPU device
/// or a GPU that is not there.
engine::Device cuda_device(const std::string& spec);

// ------------------------------------------------------------------------------------------------ spmm

struct SpmmBenchConfig {
  std::string device = "cuda";  ///< cuda or cuda:N
  std::vector<std::int64_t> widths{16, 64, 128, 256};
  kernels::SpmmTuning spmm_tuning{};  ///< the own SpMM's tuning (--spmm-long-row, --spmm-segment, --spmm-lanes, ...)
  Reorder reorder = Reorder::kDegree; ///< locality reordering applied to the graph first (--reorder), timed apart
  std::string precision = "fp32";  ///< fp32, tf32 (no SpMM effect) or bf16 (adds own-bf16 beside the fp32 peers)
  std::string spmm = "all";        ///< own, cusparse or all
  int warmup = 5;
  int repeats = 20;
  bool flush_l2 = true;  ///< write twice the L2 size before each timed call (not timed)
  std::uint64_t seed = 1;
  Log log;
  /// @throws InvalidInput naming --widths, --precision, --spmm, --warmup or --repeats. Touches no GPU.
  void validate() const;
};

/// One SpMM implementation at one width.
struct SpmmRun {
  std::string name;           ///< "own", "own-bf16", "cusparse-alg0" (default), "cusparse-alg1..3" (CSR ALG1..3)
  bool bf16 = false;          ///< X stored as bf16 (fp32 accumulation and Y)
  std::string status = "ok";  ///< "ok", "unsupported", "out of memory"
  std::string message;
  Summary time_ms;
  double min_bytes = 0, gbs = 0, fraction_of_copy_bandwidth = 0, gflops = 0;
  std::int64_t peak_tracked = 0, extra_tracked = 0, workspace = 0, nonfinite = 0;
  std::optional<double> rel_l2, rel_max;  ///< against `error_against`, when compared
  std::string error_against;
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Every implementation at one width, and how they compare.
struct SpmmWidth {
  std::int64_t width = 0;
  double min_bytes = 0, flop = 0;
  std::vector<SpmmRun> results;
  bool compared = false, verified = false;
  double worst_rel_l2 = 0, worst_rel_max = 0;
  std::string reference;  ///< the implementation the others were compared with
  const SpmmRun* own() const;
  const SpmmRun* own_bf16() const;
  const SpmmRun* best_cusparse() const;  ///< the fastest fp32 cuSPARSE algorithm that ran
  [[nodiscard]] nlohmann::json to_json() const;
};

struct SpmmBenchReport {
  SpmmBenchConfig config;
  std::string date, commit;
  GpuInfo gpu;
  nlohmann::json dataset;  ///< engine::dataset_json
  std::int64_t rows = 0, entries = 0, self_loops_added = 0;  ///< of Â with self loops
  double reorder_seconds[2] = {0, 0};  ///< computing the locality order, applying it (config.reorder)
  std::int64_t copy_bytes = 0;
  Summary copy_ms;
  double copy_gbs = 0;  ///< device-to-device copy bandwidth, bytes read + written
  std::vector<SpmmWidth> widths;
  engine::MemoryStats memory;          ///< the workload's tracked memory over the whole run
  engine::MemoryStats scratch_memory;  ///< the harness's scratch (copy buffers, L2 flush)
  bool all_verified = true;  ///< every width's outputs agree within kMaxRelL2 / kMaxRelMax and are finite
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Â X at each width for the own kernel (and own-bf16 with precision bf16) and every cusparseSpMM algorithm:
/// CUDA-event time (median after warm-up), bytes, GB/s against the copy bandwidth, GFLOP/s, tracked memory, and
/// agreement with the first implementation that ran. Disagreement is reported (all_verified), not thrown.
/// @throws InvalidInput for a bad config or no such GPU; OutOfMemory if the workload does not fit.
SpmmBenchReport bench_spmm(const datasets::Dataset& data, const SpmmBenchConfig& config);

// ------------------------------------------------------------------------------------------------ epoch

struct EpochBenchConfig {
  std::string device = "cuda";
  kernels::SpmmTuning spmm_tuning{};  ///< the own SpMM's tuning (--spmm-long-row, --spmm-segment, --spmm-lanes, ...)
  Reorder reorder = Reorder::kDegree; ///< locality reordering applied to the graph first (--reorder), timed apart
  std::string precision = "fp32";  ///< fp32, tf32 or bf16
  std::string spmm = "all";        ///< own, cusparse, auto or all
  int warmup = 5;
  int repeats = 20;
  int layers = 2;
  std::int64_t hidden = 256;
  bool normalize_features = true;
  std::uint64_t seed = 1;
  std::string cuda_graph = "auto";  ///< --cuda-graph: auto, on or off (engine::CudaGraphMode)
  Log log;
  /// The model the epochs train. @throws InvalidInput as GcnConfig::validate.
  [[nodiscard]] engine::GcnConfig model() const;
  /// @throws InvalidInput naming --precision, --spmm, --warmup, --repeats or a model option. Touches no GPU.
  void validate() const;
};

struct EpochRun {
  std::string spmm;  ///< own, cusparse or auto
  std::string status = "ok", message;
  Summary epoch_ms, wall_ms;
  std::vector<double> train_loss;
  double setup_seconds = 0;
  engine::MemoryStats memory;
  std::int64_t driver_after_setup = 0, driver_after_training = 0;
  /// One more epoch after the timed ones with every operation timed by class (kernels/op_profiler.hpp): its total
  /// (slightly above the unprofiled median: one event pair per operation) and the time per class.
  double profiled_epoch_ms = 0;
  kernels::OpProfile profile;
  std::string cuda_graph;  ///< engine::GcnModel::cuda_graph_status after the timed epochs
  [[nodiscard]] nlohmann::json to_json() const;
};

struct EpochBenchReport {
  EpochBenchConfig config;
  std::string date, commit;
  GpuInfo gpu;
  nlohmann::json dataset;  ///< engine::dataset_json
  engine::GcnConfig model;
  std::vector<std::int64_t> dims;
  double reorder_seconds[2] = {0, 0};  ///< computing the locality order, applying it (config.reorder)
  std::vector<EpochRun> runs;
  std::optional<double> speedup_own_vs_cusparse;  ///< cuSPARSE median / own median, when both ran
  [[nodiscard]] nlohmann::json to_json() const;
};

/// `warmup` + `repeats` GCN training epochs (forward, backward, Adam) per SpMM choice: CUDA-event and wall time,
/// training loss, set-up time and tracked peak memory. A choice that runs out of memory is reported, not thrown.
/// @throws InvalidInput for a bad config or no such GPU.
EpochBenchReport bench_epoch(const datasets::Dataset& data, const EpochBenchConfig& config);

// ------------------------------------------------------------------------------------------------ nccl

struct NcclBenchConfig {
  engine::Device device{Backend::kCuda, 0};  ///< CUDA: NCCL; CPU: the in-process communicator
  int devices = 0;  ///< 0: every visible GPU (2 virtual CPU devices), or the mpirun rank count
  std::vector<engine::CollectiveKind> kinds{engine::CollectiveKind::kAllGather, engine::CollectiveKind::kAllReduce,
                                            engine::CollectiveKind::kReduceScatter};
  std::vector<std::int64_t> bytes{1 << 20, 16 << 20, 256 << 20};  ///< per rank and call
  int warmup = engine::kLinkWarmup;
  int repeats = engine::kLinkRepeats;
  /// @throws InvalidInput naming --bytes, --warmup or --repeats.
  void validate() const;
};

struct NcclBenchReport {
  NcclBenchConfig config;  ///< with `devices` resolved
  std::string date, commit;
  std::string device;  ///< "4 x NVIDIA H200, NCCL 2.x" style description, without the count
  bool mpi = false;    ///< one rank per GPU under mpirun (else one thread per device)
  bool root = true;    ///< false on MPI ranks other than 0: they hold no results
  std::string nccl_version;
  std::vector<engine::CollectiveTiming> results;  ///< the slowest rank's times
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Each collective at each size on config.devices devices, one thread per device or one process per device under
/// mpirun (joins MPI when launched so). @throws InvalidInput for a bad config or no GPU.
NcclBenchReport bench_nccl(const NcclBenchConfig& config);

// ------------------------------------------------------------------------------------------------ copy

/// Copies between host and device memory at each size: the host link that offloading streams through (issue 35) and
/// `gcnpart fit` prices. CUDA: cudaMemcpyAsync on the device's stream between a tracked device buffer and page-locked
/// (cudaHostAlloc) or pageable host memory, CUDA events around each copy. CPU devices: memcpy between two host
/// buffers (their "device" memory is host memory), the host clock.
struct CopyBenchConfig {
  engine::Device device{Backend::kCuda, 0};
  std::vector<std::int64_t> bytes{std::int64_t{1} << 20, std::int64_t{64} << 20, std::int64_t{1} << 30};
  int warmup = 3;
  int repeats = 20;
  bool pageable = true;  ///< also from and to pageable host memory (CUDA)
  /// @throws InvalidInput naming --bytes, --warmup or --repeats.
  void validate() const;
};

/// One direction, host memory kind and size.
struct CopyRun {
  enum class Direction { kHostToDevice, kDeviceToHost } direction = Direction::kHostToDevice;
  bool pinned = true;  ///< page-locked host memory, else pageable
  std::int64_t bytes = 0;
  Summary time_ms;
  /// bytes / median time, in GB/s (1e9 B/s).
  [[nodiscard]] double GBps() const noexcept;
};

struct CopyBenchReport {
  CopyBenchConfig config;
  std::string date, commit;
  std::string device;  ///< the GPU's name, or "CPU device (memcpy)"
  std::vector<CopyRun> runs;
  /// The page-locked bandwidth of the largest size in each direction (0 when not measured): the figures offload
  /// plans and `fit` read.
  [[nodiscard]] double host_to_device_GBps() const noexcept;
  [[nodiscard]] double device_to_host_GBps() const noexcept;
  [[nodiscard]] nlohmann::json to_json() const;
};

/// Each size in each direction, page-locked (and pageable) host memory. Synchronises.
/// @throws InvalidInput for a bad config, NoCudaBuild / DeviceError without a GPU, OutOfMemory when a size does not
/// fit the device or the host's locked memory.
CopyBenchReport bench_copy(const CopyBenchConfig& config);

// ------------------------------------------------------------------------------------------------ calibrate

/// A graph the calibration times SpMMs on: its family (what leave-one-family-out validation holds out as a whole)
/// and how to make it. Specs: "rmat:SCALE:EDGE_FACTOR[:A:B:C]", "sbm:NODES:DEGREE:CLASSES:P_INTRA",
/// "grid:SIDE:DIMS[:natural]" (shuffled ids unless natural), "file:DATA" (a path or a dataset name looked up in
/// $GCNPART_DATA, e.g. email-Enron).
struct CalibrationGraph {
  std::string family;
  std::string spec;
  [[nodiscard]] std::string name() const { return family + "/" + spec; }
};
/// "FAMILY=SPEC", or "SCALE:EDGE_FACTOR" (Graph500 RMAT, family "rmat"). @throws InvalidInput naming --graphs.
CalibrationGraph parse_calibration_graph(const std::string& item);
/// The graph of a spec (structure only; `seed` for the generators; a file:NAME looked up in `data_dir`).
/// @throws InvalidInput naming --graphs; the loaders' errors for a file.
datasets::Dataset make_calibration_graph(const CalibrationGraph& g, std::uint64_t seed, const std::string& data_dir);

struct CalibrateConfig {
  std::string device = "cuda";
  std::string card = "h200";  ///< the catalogue id of the GPU measured (the document's "card")
  /// The graphs of the SpMMs, by family: at least three, so that each width's two terms and the fixed cost are
  /// over-determined, small ones among them (the fixed cost); none of bench/run/fit_validate.sh's held-out graphs.
  /// The default (tools/cmd_bench.cpp) is what the built-in partition/fit/calibration.json was measured with.
  std::vector<CalibrationGraph> graphs;
  std::string data_dir;  ///< where file:NAME graphs are looked up (the CLI's data folder: cli::data_folder)
  /// SpMM widths: powers of two from 8 (fewer than nine classes, Cora's 7: width 8 runs at a lower DRAM efficiency
  /// than 16, which the next width up would not say) and the widths the engine stores real data's class and feature counts at (41 / 47
  /// classes -> 48 in fp32 and bf16, 33..40 -> 40 in bf16, 100 features -> 100 / 104: partition::stored_width),
  /// multiples of 8 so that fp32 and bf16 run them in place (the unaligned 41 / 47 / 100 took the padded copy, which
  /// the engine no longer needs).
  std::vector<std::int64_t> widths{8, 16, 32, 40, 48, 64, 104, 128, 256, 512};
  int warmup = 3;
  int repeats = 10;
  bool gemm = true;
  /// Profiled epochs (every operation timed by class) on the SpMM graphs of at least this many nodes, two models
  /// each (2 x 256 fp32, 3 x 128 bf16; synthetic features): they fit the element-wise efficiency and the GEMMs'
  /// in-epoch factor. 0: none.
  std::int64_t profile_min_nodes = 200000;
  std::uint64_t seed = 1;
  Log log;
  /// @throws InvalidInput naming --graphs, --card or --repeats.
  void validate() const;
};

/// Measures what gcnpart fit's time model needs on this GPU: SpMM calls by width and kind (own fp32, cuSPARSE ALG2,
/// own bf16) on RMAT graphs with their degree ratio, cuBLAS GEMMs by shape and math, copy bandwidth, and small
/// launch-bound epochs. Returns a calibration document (partition/fit/calibration.json's shape) for
/// `gcnpart fit --calibration`. @throws InvalidInput for a bad config or no GPU; OutOfMemory.
nlohmann::json bench_calibrate(const CalibrateConfig& config);

}  // namespace gcnpart::bench
