// Epoch-time model of GCN training on a GPU, assembled from per-kernel terms: each SpMM call (bytes by width, rows,
// entries and precision, less the gathered rows an L2 of the card's size keeps for a graph of that degree
// distribution, at an efficiency measured per width), each GEMM (FLOPs by shape over the card's FP32 / TF32 / BF16
// rate, or its operand bytes, whichever is slower), element-wise passes (bytes over bandwidth), launches (count x
// cost) and collectives (bytes over the link, latency per call). Card figures come from the catalogue; the
// efficiencies are measured on one card (Calibration::card, the H200) by `gcnpart bench calibrate` and apply to the
// others unchanged (figures for other cards are extrapolations). The error band is the worst residual on epochs held
// out of that calibration, stored with it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "partition/memory_model.hpp"

namespace gcnpart::partition {

/// One GPU model's published figures (partition/fit/cards.json).
struct Card {
  std::string id;                  ///< "rtx3090"
  std::string name;                ///< "GeForce RTX 3090"
  std::string family;              ///< "ampere-geforce", "hopper", ...
  std::int64_t memory_bytes = 0;   ///< on-board memory (the vendor's GB: binary GiB for GDDR and HBM capacities)
  double memory_bandwidth_gbs = 0; ///< GB/s (10^9 bytes per second)
  double fp32_tflops = 0;          ///< dense FP32 (non-tensor), boost clock
  double tf32_tflops = 0;          ///< dense TF32 tensor (0 = none)
  double bf16_tflops = 0;          ///< dense BF16 tensor with FP32 accumulate (0 = none)
  int pcie_generation = 0;
  double pcie_gbs = 0;             ///< host link, GB/s per direction (x16)
  double nvlink_gbs = 0;           ///< NVLink, GB/s per GPU, both directions together (0 = none)
  int nvlink_max_gpus = 0;         ///< GPUs one NVLink domain joins (2 for a bridge, 8 for an HGX board)
  double board_power_w = 0;
  std::int64_t l2_bytes = 0;       ///< last-level (L2) cache; 0 = unknown (the SpMM term then assumes no reuse)
  int sms = 0;                     ///< streaming multiprocessors; 0 = unknown
  std::optional<double> launch_price_usd;  ///< MSRP at launch; none published for most datacenter parts
  std::int64_t fixed_overhead_bytes = 600ll << 20;  ///< CUDA context + cuBLAS/cuSPARSE/NCCL handles, per GPU
  bool fixed_overhead_measured = false;
  std::string source;              ///< vendor specification document or page
  std::string note;                ///< uncertainties
};

/// An efficiency that depends on the SpMM width: measured (width, efficiency) pairs, interpolated linearly in
/// log2(width) and held constant beyond the ends.
struct WidthTable {
  std::vector<std::pair<double, double>> points;  ///< ascending widths
  [[nodiscard]] double at(double width) const;
  /// One value at every width (the defaults before a calibration).
  static WidthTable constant(double value) {
    WidthTable t;
    t.points.emplace_back(16.0, value);
    return t;
  }
};

/// One SpMM kind's measured terms: t = fixed + gathered DRAM bytes / (bandwidth x gathered(width)) + streamed DRAM
/// bytes / (bandwidth x stream(width)) + L2-served bytes / (SMs x l2_per_sm(width)). Gathered: the input rows the L2
/// does not serve (random rows, sector by sector); streamed: the CSR arrays, the scale vectors and the output rows
/// (read or written in order). The two reach different shares of the bandwidth, and their mix differs by graph (a
/// mesh's calls are mostly streamed, a dense RMAT's mostly gathered): one efficiency for both priced meshes short and
/// dense graphs long.
struct SpmmEfficiency {
  WidthTable gathered = WidthTable::constant(0.5);     ///< gathered bytes: fraction of the DRAM bandwidth, by width
  WidthTable stream = WidthTable::constant(0.5);       ///< streamed bytes: fraction of the DRAM bandwidth, by width
  WidthTable l2_per_sm = WidthTable::constant(40e9);   ///< bytes per second per SM served from L2, by width
  double fixed_seconds = 0;              ///< per call (grid set-up, the kernel's tail)
};

/// The efficiencies of the per-kernel terms, measured on one card (`card`), with where each came from.
struct Calibration {
  std::string card = "h200";              ///< the card the efficiencies were measured on
  SpmmEfficiency spmm_own;                ///< gcnpart's fp32 SpMM
  SpmmEfficiency spmm_cusparse;           ///< cuSPARSE CSR ALG2, fp32
  SpmmEfficiency spmm_bf16;               ///< gcnpart's SpMM on bf16 rows
  double stream_efficiency = 0.8;         ///< element-wise kernels, copies: fraction of peak bandwidth
  double gemm_fp32_efficiency = 0.7;      ///< fraction of the card's FP32 rate cuBLAS reaches on the GCN's GEMMs
  double gemm_tf32_efficiency = 0.5;      ///< of the TF32 tensor rate
  double gemm_bf16_efficiency = 0.5;      ///< of the BF16 tensor rate
  /// Fitted on the calibration's profiled epochs, per storage type (epoch(false): fp32 and tf32 epochs;
  /// epoch(true): bf16). bf16's element-wise kernels convert (float in, bf16 out) and run about 1.5x slower per byte
  /// than fp32's (bench/results/h200-2026-12-04-families, `fit --check-calibration`'s profile table). A GEMM's byte
  /// floor takes the copy's stream_efficiency (cuBLAS streams like a copy), not the element-wise one.
  struct EpochFactors {
    /// The element-wise kernels' efficiency: their bytes over the profiles' "other" time, launches taken out (< 0:
    /// not fitted, stream_efficiency).
    double elementwise_efficiency = -1;
    double gemm = 1;  ///< the GEMMs inside an epoch against the same shapes timed alone (1: none)
    /// The SpMMs inside an epoch against the same calls timed alone (the median ratio; 1: none): in an epoch the
    /// other kernels evict what a repeated call finds in the L2.
    double spmm = 1;
  };
  EpochFactors epoch_fp32, epoch_bf16;
  [[nodiscard]] const EpochFactors& epoch(bool bf16_storage) const { return bf16_storage ? epoch_bf16 : epoch_fp32; }
  EpochFactors& epoch(bool bf16_storage) { return bf16_storage ? epoch_bf16 : epoch_fp32; }
  /// One GEMM shape timed on the card: its efficiency (of the math's peak rate). GEMMs whose two narrow
  /// dimensions are not multiples of the tensor tile (a class count of 47, 100 features) run far below the median,
  /// so each GEMM of an epoch takes the efficiency of the nearest timed shape (see gemm_efficiency).
  struct GemmPoint {
    Precision math = Precision::kFp32;
    double m = 0, n = 0, k = 0, efficiency = 0;
  };
  std::vector<GemmPoint> gemm_points;
  /// Efficiency of an m x n x k GEMM in `math`: the timed shape of that math with the long dimension in the same
  /// place (m: forward and input gradient, k: weight gradient) nearest in log2 of the two narrow dimensions; the
  /// median (gemm_*_efficiency) when none was timed.
  [[nodiscard]] double gemm_efficiency(Precision math, double m, double n, double k) const;
  double launch_seconds = 5e-6;           ///< fixed cost per kernel launch (launch + tail of a tiny kernel)
  double step_seconds = 20e-6;            ///< fixed cost per step (loss copy to host, synchronisation)
  /// Share of the L2 that keeps gathered rows (fitted with the SpMM terms when the timed graphs carry measured reuse
  /// profiles; 1 otherwise).
  double l2_share = 1;
  /// Between LRU (0) and the frequency-optimal cache (1): fitted with l2_share (L2Reuse::frequency_blend).
  double frequency_blend = 0;
  /// The graph families the SpMM terms were measured on, and the range of their sizes and reuse (for "outside
  /// calibration" notes): node counts and the measured hit fraction of kCoverageRowBytes rows in the card's L2.
  std::vector<std::string> families;
  double calibrated_rows_min = 0, calibrated_rows_max = 0;
  double calibrated_hit_min = 0, calibrated_hit_max = 0;
  bool profiled = false;                  ///< the SpMM terms were fitted on measured reuse profiles
  double link_efficiency = 0.7;           ///< fraction of link bandwidth a ring collective reaches
  double collective_seconds = 20e-6;      ///< latency per collective call
  /// Where each factor comes from ("measured: ..." or "default: not measured"), by factor name.
  std::vector<std::pair<std::string, std::string>> provenance;
  std::string source = "uncalibrated defaults";
  bool fitted = false;
  /// The band printed with every epoch time: the largest |relative error| on epochs held out of the calibration,
  /// as stored in the calibration document (`held_out.residual`, written by bench/run/fit_validate.sh).
  double held_out_residual = 0.5;
  std::string held_out_source;

  /// One held-out epoch with the model's prediction.
  struct Point {
    std::string what;
    double measured_seconds = 0, predicted_seconds = 0;
    [[nodiscard]] double error() const { return measured_seconds > 0 ? predicted_seconds / measured_seconds - 1 : 0; }
  };
  std::vector<Point> points;
  /// Largest |relative error| over the held-out points (0 when there are none); the stored held_out_residual is
  /// this figure as last measured.
  [[nodiscard]] double max_error() const;
  /// The band: held_out_residual.
  [[nodiscard]] double band() const { return held_out_residual; }
  /// The SpMM terms of a kind.
  [[nodiscard]] const SpmmEfficiency& spmm(bool cusparse, bool bf16) const {
    return bf16 ? spmm_bf16 : cusparse ? spmm_cusparse : spmm_own;
  }
};

/// The row whose L2 hit fraction places a graph against the calibrated ones (Calibration::calibrated_hit_min/max):
/// 128 fp32 columns.
inline constexpr double kCoverageRowBytes = 128 * 4.0;

/// One aggregation (SpMM) call as the time model sees it.
struct SpmmTerm {
  double width = 0;     ///< columns of X
  double rows_out = 0;  ///< rows written
  double cols_in = 0;   ///< distinct rows X has (the gathered table)
  double entries = 0;   ///< non-zeros walked
};

/// What the time model knows of a graph's L2 reuse: the profile measured on the graph (partition/reuse.hpp) when
/// there is one, else E[d^2] / E[d]^2 of its degrees (the Pareto estimate of l2_hit_fraction); and the share of
/// the card's L2 that holds gathered rows (Calibration::l2_share: the rest holds the streamed CSR and output rows).
struct L2Reuse {
  double degree_ratio = 1;
  const ReuseProfile* profile = nullptr;  ///< non-empty: used instead of degree_ratio
  double l2_share = 1;
  /// How far the card's replacement policy gets from LRU towards the frequency-optimal cache on a skewed graph:
  /// hit = max(lru, lru + blend (optimal - lru)) (Calibration::frequency_blend).
  double frequency_blend = 0;
  /// Fraction of the gathered reads an L2 of `l2_bytes` serves for rows of `row_bytes`.
  [[nodiscard]] double hit_fraction(std::int64_t l2_bytes, double row_bytes, double rows) const;
};

/// Bytes of one SpMM call: `dram` through DRAM (row offsets, column ids, the two scale vectors, the output rows,
/// the gathered input rows an L2 of `l2_bytes` does not serve, at least every input row once), of which `stream` are
/// read or written in order (all but the gathered rows), and `l2` served from L2 (the gathered rows it holds).
/// `element_bytes`: 4 (fp32) or 2 (bf16).
struct SpmmBytes {
  double dram = 0, l2 = 0, stream = 0;
  [[nodiscard]] double gathered() const noexcept { return dram - stream; }
};
SpmmBytes spmm_call_bytes(const SpmmTerm& call, double element_bytes, std::int64_t l2_bytes, const L2Reuse& reuse);
/// Seconds of one SpMM call on `card` with the terms `eff` (the card's bandwidth, L2 size and SM count).
double spmm_call_seconds(const SpmmTerm& call, double element_bytes, const L2Reuse& reuse, const Card& card,
                         const SpmmEfficiency& eff);
/// Fraction of the gathered entries an L2 holding `cached_rows` of `rows` serves when the hottest rows stay cached:
/// the Lorenz curve of a Pareto degree distribution whose E[d^2] / E[d]^2 is `degree_ratio` (the share of entry
/// endpoints on the top p of the rows is p^((alpha-1)/alpha), alpha = 1 + sqrt(1 + 1 / (ratio - 1))); uniform
/// (p) for ratio <= 1.
double l2_hit_fraction(double cached_rows, double rows, double degree_ratio);

/// Work of one device in one training epoch (train step: forward, loss, backward, collectives, Adam).
struct EpochWork {
  double spmm_bytes = 0;    ///< aggregation SpMMs (graph CSR, gathered input rows, output rows)
  double stream_bytes = 0;  ///< element-wise kernels, sparse-feature products, dropout, Adam, copies
  double gemm_flops = 0;
  double gemm_bytes = 0;    ///< operand traffic of the GEMMs (thin GEMMs are bandwidth-bound)
  struct Gemm {
    double m = 0, n = 0, k = 0, flops = 0, bytes = 0;
  };
  std::vector<Gemm> gemms;  ///< every GEMM, for the per-call roofline at its shape's efficiency
  std::vector<SpmmTerm> spmms;                    ///< every aggregation call, for the per-call SpMM term
  double element_bytes = 4;                       ///< activation storage (fp32 4, bf16 2)
  double degree_ratio = 0;  ///< E[d^2] / E[d]^2 of the graph, set by the caller; 0 = unknown (uniform access)
  ReuseProfile reuse;       ///< the graph's measured L2 reuse, set by the caller; empty = from degree_ratio
  std::int64_t kernels = 0;
  std::int64_t collectives = 0;
  double comm_bytes = 0;    ///< bytes sent per epoch (comm_bytes_per_epoch)
};

/// Counts the work of one epoch for a device shape (CUDA path of GcnModel); for a pipeline stage (model.stages > 1)
/// the work of its own layers and the activations it passes on.
EpochWork epoch_work(const DeviceShape& shape, const ModelSpec& model);

/// Bytes a pipeline stage (model.stages > 1, this device stage model.stage) sends per epoch: its output rows to the
/// next stage (forward, in the precision's elements) and the float32 gradient of its input rows to the previous one.
std::int64_t pipeline_send_bytes(const DeviceShape& shape, const ModelSpec& model);

/// How the cards of a K-GPU option talk: NVLink when the card has it and K fits in one NVLink domain, else PCIe.
struct Link {
  std::string kind;      ///< "none", "pcie4", "nvlink"
  double gbs = 0;        ///< per direction, per GPU
};
Link link_for(const Card& card, int gpus);

/// Predicted epoch time, split by term.
struct EpochTime {
  double seconds = 0;
  double spmm = 0, stream = 0, gemm = 0, launch = 0, comm = 0;
  std::string bound;  ///< the largest term
  bool measured = false;  ///< on the calibration card (else extrapolated with its efficiencies)
};
/// Sum of the per-kernel terms. The GEMMs run on what `precision` says (traits(precision): FP32 cores, TF32 or BF16
/// tensor cores); a card without that tensor format falls back to its FP32 rate. bf16 SpMMs use the own bf16
/// kernel's efficiencies; the SpMM terms use the card's L2 and the work's degree_ratio.
EpochTime predict_epoch(const EpochWork& work, const Card& card, const Calibration& cal, const Link& link,
                        bool cusparse = false, Precision precision = Precision::kFp32);
/// The engine's autotuned SpMM (SpmmAlgo::kAuto): each call at the faster of the own kernel and cuSPARSE, as the
/// engine times both at every width and keeps the faster (fp32; bf16 runs the own kernel).
EpochTime predict_epoch_autotuned(const EpochWork& work, const Card& card, const Calibration& cal, const Link& link,
                                  Precision precision = Precision::kFp32);

/// A measured epoch: held out of the calibration (checks it) or, for launch-bound graphs, fixing the launch cost.
struct CalibrationMeasurement {
  std::string what;
  std::string family;         ///< the graph's family ("" = unnamed)
  GraphStats graph;
  ModelSpec model;
  bool cusparse = false;
  bool autotuned = false;     ///< "spmm": "auto": the engine's tuner picked per width (priced as predict_epoch_autotuned)
  double seconds = 0;
  bool fixes_launch = false;  ///< "role": "launch" (tiny graphs: the per-launch cost is fitted on these)
};
/// One SpMM call timed on the calibration card (`gcnpart bench spmm` / `bench calibrate`).
struct SpmmSample {
  std::string graph;
  std::string family;      ///< the graph's family ("" = unnamed)
  SpmmTerm call;
  double degree_ratio = 0;
  ReuseProfile reuse;      ///< measured on the timed graph in the order it was timed; empty = none stored
  bool cusparse = false, bf16 = false;
  double seconds = 0;
};
/// A profiled epoch on the calibration card: its time by operation class (kernels/op_profiler.hpp).
struct EpochProfile {
  CalibrationMeasurement epoch;
  double spmm_seconds = 0, gemm_seconds = 0, other_seconds = 0;
};
/// One GEMM timed on the calibration card.
struct GemmSample {
  double m = 0, n = 0, k = 0;
  Precision math = Precision::kFp32;
  double seconds = 0;
};
/// A calibration document (partition/fit/calibration.json or what `gcnpart bench calibrate` writes), parsed.
struct CalibrationData {
  std::string card = "h200", measured, origin;
  std::vector<SpmmSample> spmm;
  std::vector<GemmSample> gemm;
  double copy_gbs = 0;                 ///< device-to-device copy, bytes read + written; 0 = not measured
  double link_gbs = 0;                 ///< ring all-reduce bus bandwidth between two cards; 0 = not measured
  double collective_seconds = 0;       ///< latency of a small collective; 0 = not measured
  std::vector<CalibrationMeasurement> epochs;
  std::vector<EpochProfile> profiles;  ///< profiled epochs of calibration graphs (element-wise, in-epoch GEMM / SpMM)
  double held_out_residual = -1;       ///< stored band; < 0: none stored (then the held-out epochs' worst)
  std::string held_out_source;
  /// The document without the SpMM calls and epochs of graphs of `family` (leave-one-family-out validation).
  [[nodiscard]] CalibrationData without_family(const std::string& family) const;
  /// The families its SpMM calls name, in document order.
  [[nodiscard]] std::vector<std::string> families() const;
};
/// The H200 calibration compiled in from partition/fit/calibration.json.
CalibrationData builtin_calibration();
/// A document shaped like partition/fit/calibration.json. @throws InvalidInput naming `origin` and the field when one
/// is missing or out of range.
CalibrationData parse_calibration_data(const std::string& text, const std::string& origin);
/// A calibration document from a file. @throws IoError when it cannot be opened, InvalidInput naming the
/// field as parse_calibration_data.
CalibrationData load_calibration(const std::string& file);
/// The epochs of the built-in calibration (held-out and launch-fixing ones).
std::vector<CalibrationMeasurement> h200_measurements();
/// The epochs of a calibration document.
std::vector<CalibrationMeasurement> parse_calibration(const std::string& text, const std::string& origin);
/// The efficiencies from the measured kernels: per SpMM kind, the fixed cost and per width the DRAM efficiency and
/// L2 rate per SM by least squares on the relative error over the timed calls; the stream efficiency from the copy bandwidth; per math the GEMM
/// efficiency of every timed shape (and their median); the launch cost by least squares on the launch-role epochs. Then every
/// held-out epoch is predicted (Calibration::points). `card` is the GPU they were measured on.
Calibration calibrate(const Card& card, const CalibrationData& data);
/// Same, from epochs alone (the SpMM tables stay at their defaults): for tests.
Calibration calibrate(const Card& card, const std::vector<CalibrationMeasurement>& measurements);

/// One held-out epoch of a calibration document predicted twice: with its graph's family left out of the
/// calibration (CalibrationData::without_family) and with the whole of it.
struct HeldOutCheck {
  std::string what, family;
  double measured_seconds = 0, without_family_seconds = 0;
  EpochTime whole;  ///< the whole calibration's prediction, by term
  [[nodiscard]] double error() const { return without_family_seconds / measured_seconds - 1; }
  [[nodiscard]] double whole_error() const { return whole.seconds / measured_seconds - 1; }
};
/// Every held-out epoch (role "held-out") of `data` whose graph names a family, in document order: the
/// leave-one-family-out validation of the calibration, on the CPU (`gcnpart fit --check-calibration`). `whole`:
/// calibrate(card, data), which the caller has (the families left out are calibrated here).
std::vector<HeldOutCheck> check_held_out(const Card& card, const CalibrationData& data, const Calibration& whole);

/// One profiled epoch of a calibration document beside the whole calibration's terms for it: where the model's
/// classes (SpMM, GEMM, element-wise with launches) go wrong.
struct ProfileCheck {
  std::string what;
  Precision precision = Precision::kFp32;
  double measured_seconds = 0, spmm_seconds = 0, gemm_seconds = 0, other_seconds = 0;  ///< the profile's classes
  EpochTime predicted;
};
/// Every profiled epoch of `data` (its epoch_profiles), priced by `whole` (calibrate(card, data)).
std::vector<ProfileCheck> check_profiles(const Card& card, const CalibrationData& data, const Calibration& whole);

}  // namespace gcnpart::partition
