// Roofline model of one GCN training epoch on a GPU: SpMM and element-wise bytes over memory bandwidth, GEMM FLOPs
// over arithmetic throughput (or bytes, whichever is slower), a fixed cost per kernel launch, and communication
// over PCIe or NVLink. The efficiency factors live in one struct (Calibration), fitted on epochs measured on the
// H200; the residual of that fit is carried with every prediction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "partition/memory_model.hpp"

namespace gcnpart::partition {

/// One GPU model's published figures (partition/cards.json).
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
  std::optional<double> launch_price_usd;  ///< MSRP at launch; none published for most datacenter parts
  std::int64_t fixed_overhead_bytes = 600ll << 20;  ///< CUDA context + cuBLAS/cuSPARSE/NCCL handles, per GPU
  bool fixed_overhead_measured = false;
  std::string source;              ///< vendor specification document or page
  std::string note;                ///< uncertainties
};

/// Efficiency factors of the roofline, in one place. Defaults are uncalibrated guesses (see calibrated()).
struct Calibration {
  double spmm_own_efficiency = 0.5;       ///< fraction of peak memory bandwidth gcnpart's SpMM reaches
  double spmm_cusparse_efficiency = 0.5;  ///< same for cuSPARSE CSR ALG2
  double spmm_bf16_efficiency = 0.5;      ///< gcnpart's SpMM on bf16 rows (--precision bf16; own kernel only)
  double stream_efficiency = 0.8;         ///< element-wise kernels, copies
  double gemm_efficiency = 0.7;           ///< fraction of peak FP32 (TF32 with --tf32) cuBLAS reaches
  double launch_seconds = 5e-6;           ///< fixed cost per kernel launch (launch + tail of a tiny kernel)
  double step_seconds = 20e-6;            ///< fixed cost per step (loss copy to host, synchronisation)
  double link_efficiency = 0.7;           ///< fraction of link bandwidth a ring collective reaches
  double collective_seconds = 20e-6;      ///< latency per collective call
  std::string source = "uncalibrated defaults";
  bool fitted = false;

  /// One measured epoch the factors were fitted on, with the model's prediction after fitting.
  struct Point {
    std::string what;
    double measured_seconds = 0, predicted_seconds = 0;
    [[nodiscard]] double error() const { return measured_seconds > 0 ? predicted_seconds / measured_seconds - 1 : 0; }
  };
  std::vector<Point> points;
  /// Largest |relative error| over the points (0 when unfitted).
  [[nodiscard]] double max_error() const;
};

/// Work of one device in one training epoch (train step: forward, loss, backward, collectives, Adam).
struct EpochWork {
  double spmm_bytes = 0;    ///< aggregation SpMMs (graph CSR, gathered input rows, output rows)
  double stream_bytes = 0;  ///< element-wise kernels, sparse-feature products, dropout, Adam, copies
  double gemm_flops = 0;
  double gemm_bytes = 0;    ///< operand traffic of the GEMMs (thin GEMMs are bandwidth-bound)
  std::vector<std::pair<double, double>> gemms;  ///< (flops, bytes) per GEMM, for the per-call roofline
  std::int64_t kernels = 0;
  std::int64_t collectives = 0;
  double comm_bytes = 0;    ///< bytes sent per epoch (comm_bytes_per_epoch)
};

/// Counts the work of one epoch for a device shape (CUDA path of GcnModel).
EpochWork epoch_work(const DeviceShape& shape, const ModelSpec& model);

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
};
/// The GEMMs run on what `precision` says (traits(precision): FP32 cores, TF32 or BF16 tensor cores); a card
/// without that tensor format falls back to its FP32 rate. bf16 SpMMs use the own bf16 kernel's efficiency.
EpochTime predict_epoch(const EpochWork& work, const Card& card, const Calibration& cal, const Link& link,
                        bool cusparse = false, Precision precision = Precision::kFp32);

/// A measured epoch to calibrate on.
struct CalibrationMeasurement {
  std::string what;
  GraphStats graph;
  ModelSpec model;
  bool cusparse = false;
  double seconds = 0;
};
/// The H200 measurements of 2026-11-29 (bench/results/h200-2026-11-29 and the lead's RMAT figures), from
/// partition/calibration.json (compiled in, beside the card catalogue cards.json).
std::vector<CalibrationMeasurement> h200_measurements();
/// Measurements from a document shaped like partition/calibration.json. @throws InvalidInput naming `origin` and
/// the field when one is missing or out of range.
std::vector<CalibrationMeasurement> parse_calibration(const std::string& text, const std::string& origin);
/// Fits launch and step costs on the small graphs (least squares, they are launch-bound) and one SpMM efficiency per
/// kind (own fp32, cuSPARSE fp32, own bf16) on the large graphs: the geometric mean of the efficiencies each large
/// epoch implies, so every point keeps its own residual. `card` is the GPU they were measured on.
Calibration calibrate(const Card& card, const std::vector<CalibrationMeasurement>& measurements);

}  // namespace gcnpart::partition
