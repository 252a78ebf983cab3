// The compute choices every layer shares, one enum each with its table: where kernels run (Backend), the element
// types and GEMM math of training (Precision), and which SpMM implementation runs (SpmmAlgo). kernels, partition
// (memory and cost models) and engine all use these; names come from the tables (base/enum_names.hpp).
// A new precision is one row of kPrecisions plus its kernels.
#pragma once

#include <array>
#include <cstddef>
#include <string>

#include "base/enum_names.hpp"

namespace gcnpart {

// ---------------------------------------------------------------------------------------------------------
/// Where a device's kernels run: OpenMP threads on the host (virtual CPU devices) or a CUDA GPU.
enum class Backend { kCpu, kCuda };

struct BackendTraits {
  Backend value;
  const char* name;
};
inline constexpr std::array<BackendTraits, 2> kBackends{{{Backend::kCpu, "cpu"}, {Backend::kCuda, "cuda"}}};
template <>
struct EnumNames<Backend> {
  static constexpr const auto& table = kBackends;
};
static_assert(table_in_enum_order<Backend>());

// ---------------------------------------------------------------------------------------------------------
/// Training precision: the element type of features, activations, activation gradients and communicated rows, and
/// what the GEMMs run on. Logits, loss, master weights, weight gradients and Adam are fp32 in every precision.
enum class Precision { kFp32, kTf32, kBf16 };

struct PrecisionTraits {
  Precision value;
  const char* name;           ///< CLI and report name
  int storage_bytes;          ///< bytes of one stored feature / activation / activation-gradient element
  bool tf32_gemm;             ///< float GEMMs on TF32 tensor cores (cuBLAS FAST_TF32 compute)
  bool bf16_storage;          ///< bf16 storage and bf16 x bf16 tensor-core GEMMs with fp32 compute
  const char* description;    ///< one line for --help
};
/// One row per precision, in Precision order.
inline constexpr std::array<PrecisionTraits, 3> kPrecisions{{
    {Precision::kFp32, "fp32", 4, false, false, "fp32 storage and FP32 GEMMs"},
    {Precision::kTf32, "tf32", 4, true, false, "fp32 storage, TF32 tensor-core GEMMs"},
    {Precision::kBf16, "bf16", 2, false, true,
     "bf16 features, activations and their gradients, bf16 tensor-core GEMMs, fp32 accumulation, master weights and "
     "Adam"},
}};
template <>
struct EnumNames<Precision> {
  static constexpr const auto& table = kPrecisions;
};
/// The row of `p`.
[[nodiscard]] constexpr const PrecisionTraits& traits(Precision p) noexcept {
  return kPrecisions[static_cast<std::size_t>(p)];
}
static_assert(table_in_enum_order<Precision>(), "kPrecisions rows follow the enum order");
/// `--help` text: "fp32 (description); tf32 (...); bf16 (...)".
[[nodiscard]] inline std::string precisions_help() {
  std::string s;
  for (const auto& row : kPrecisions)
    s += std::string(s.empty() ? "" : "; ") + row.name + " (" + row.description + ")";
  return s;
}

// ---------------------------------------------------------------------------------------------------------
/// Which SpMM implementation runs (float32 X; bf16 X always runs the own kernel).
enum class SpmmAlgo {
  kAuto,      ///< GPU: the first call at each width times the own kernel against cuSPARSE and keeps the faster
  kOwn,       ///< gcnpart's kernel
  kCusparse,  ///< cusparseSpMM, CSR ALG2 by default (see kernels::CusparseSpmm)
};

struct SpmmAlgoTraits {
  SpmmAlgo value;
  const char* name;
};
inline constexpr std::array<SpmmAlgoTraits, 3> kSpmmAlgos{
    {{SpmmAlgo::kAuto, "auto"}, {SpmmAlgo::kOwn, "own"}, {SpmmAlgo::kCusparse, "cusparse"}}};
template <>
struct EnumNames<SpmmAlgo> {
  static constexpr const auto& table = kSpmmAlgos;
};
static_assert(table_in_enum_order<SpmmAlgo>());

// ---------------------------------------------------------------------------------------------------------
/// How nodes are renumbered for memory locality before training (partition/reorder.hpp). Exact: a permutation
/// applied once; every output is reported in the user's node order.
enum class Reorder {
  kNone,    ///< the input order
  kDegree,  ///< by degree, largest first (hubs together; rows of like degree share warps)
  kRcm,     ///< reverse Cuthill-McKee: breadth-first from a low-degree node, neighbours by degree
  kMetis,   ///< METIS nested dissection (METIS_NodeND)
};

struct ReorderTraits {
  Reorder value;
  const char* name;
  const char* description;  ///< one line for --help
};
inline constexpr std::array<ReorderTraits, 4> kReorders{{
    {Reorder::kNone, "none", "the input order"},
    {Reorder::kDegree, "degree", "by degree, largest first"},
    {Reorder::kRcm, "rcm", "reverse Cuthill-McKee (breadth-first, neighbours by degree)"},
    {Reorder::kMetis, "metis", "METIS nested dissection (slowest to compute)"},
}};
template <>
struct EnumNames<Reorder> {
  static constexpr const auto& table = kReorders;
};
static_assert(table_in_enum_order<Reorder>());

// ---------------------------------------------------------------------------------------------------------
/// Whether engine::GcnModel captures its training step as a CUDA Graph (`--cuda-graph`): kAuto where it pays (one
/// CUDA device, a small step: partition::captures_step), kOn wherever it can, kOff never.
enum class CudaGraphMode { kAuto, kOn, kOff };

struct CudaGraphModeName {
  CudaGraphMode value;
  const char* name;
};
inline constexpr std::array<CudaGraphModeName, 3> kCudaGraphModes{{
    {CudaGraphMode::kAuto, "auto"},
    {CudaGraphMode::kOn, "on"},
    {CudaGraphMode::kOff, "off"},
}};
template <>
struct EnumNames<CudaGraphMode> {
  static constexpr const auto& table = kCudaGraphModes;
};
static_assert(table_in_enum_order<CudaGraphMode>());

/// Where a single device keeps what its training step saves (`--offload`): kAuto streams layers through host memory
/// (engine/streamed_layers.hpp) only when the resident plan does not fit the device, kOff never (a model that does
/// not fit is refused), kHost always.
enum class OffloadMode { kAuto, kOff, kHost };

struct OffloadModeName {
  OffloadMode value;
  const char* name;
};
inline constexpr std::array<OffloadModeName, 3> kOffloadModes{{
    {OffloadMode::kAuto, "auto"},
    {OffloadMode::kOff, "off"},
    {OffloadMode::kHost, "host"},
}};
template <>
struct EnumNames<OffloadMode> {
  static constexpr const auto& table = kOffloadModes;
};
static_assert(table_in_enum_order<OffloadMode>());

}  // namespace gcnpart
