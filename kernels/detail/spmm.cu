// gcnpart's own CUDA SpMM: Y = diag(row_scale) A diag(col_scale) X with A in CSR (int64 offsets, int32 columns)
// and X, Y dense row-major.
//
// Work layout. A group of kGroup lanes (1..32, a power of two sized to the row width) owns one row. The group
// reads kGroup entries of the row at once (one column id and one weight per lane, coalesced), then walks them:
// each entry's column id and weight (value * col_scale) are broadcast with __shfl_sync and every lane adds
// weight * X[col, its columns] into registers, as float4 when the width and leading dimensions allow. Widths
// above one pass (32 lanes x vector x kMaxChunks columns) loop over column passes. The row scale is applied once
// at the end and each output element is written exactly once: no atomics, deterministic.
//
// Long rows. A row with more than kLongRowEntries entries would leave one group working long after the rest of
// the grid (power-law hubs). The row kernel only zeroes such rows and records how many segments of
// kSegmentEntries they have; a scan numbers the segments, and a grid-stride kernel hands them to warps all over
// the GPU, which add their partial sums with atomics. Long rows are therefore summed in a varying order.
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>

#include <cstdint>
#include <cstdlib>

#include "kernels/detail/backends.hpp"
#include "kernels/detail/cuda_common.cuh"
#include "kernels/detail/spmm_tuning.hpp"
#include "kernels/detail/workspace.hpp"

namespace gcnpart::kernels::detail::cuda {
namespace {

using spmm_tuning::kBlockThreads;
using spmm_tuning::kLongRowEntries;

struct SpmmArgs {
  std::int64_t num_rows;
  const RowOffset* offsets;
  const NodeId* cols;
  const float* values;     // null: all ones
  const float* row_scale;  // null: ones
  const float* col_scale;  // null: ones
  const float* x;
  std::int64_t ldx;
  float* y;
  std::int64_t ldy;
  std::int64_t width;
  std::int64_t long_row;  // rows with more entries are split into segments over the whole grid
  std::int64_t segment;   // entries per segment of a long row
};

/// Loads, stores and arithmetic on one lane's slice of a row: a float, or a float4 (16-byte aligned).
template <int kVec>
struct Lanes;

template <>
struct Lanes<1> {
  using Type = float;
  __device__ __forceinline__ static Type zero() { return 0.0f; }
  __device__ __forceinline__ static Type load(const float* p) { return __ldg(p); }
  __device__ __forceinline__ static void store(float* p, Type v) { *p = v; }
  __device__ __forceinline__ static void fma(Type& acc, float w, Type v) { acc = fmaf(w, v, acc); }
  __device__ __forceinline__ static Type scale(Type v, float s) { return v * s; }
};

template <>
struct Lanes<4> {
  using Type = float4;
  __device__ __forceinline__ static Type zero() { return make_float4(0.0f, 0.0f, 0.0f, 0.0f); }
  __device__ __forceinline__ static Type load(const float* p) { return __ldg(reinterpret_cast<const float4*>(p)); }
  __device__ __forceinline__ static void store(float* p, Type v) { *reinterpret_cast<float4*>(p) = v; }
  __device__ __forceinline__ static void fma(Type& acc, float w, Type v) {
    acc.x = fmaf(w, v.x, acc.x);
    acc.y = fmaf(w, v.y, acc.y);
    acc.z = fmaf(w, v.z, acc.z);
    acc.w = fmaf(w, v.w, acc.w);
  }
  __device__ __forceinline__ static Type scale(Type v, float s) {
    return make_float4(v.x * s, v.y * s, v.z * s, v.w * s);
  }
};

/// The lanes of the calling thread's group within its warp (groups are aligned, power-of-two sized).
template <int kGroup>
__device__ __forceinline__ unsigned group_mask() {
  if constexpr (kGroup == 32) {
    return 0xffffffffu;
  } else {
    const unsigned first = (threadIdx.x & 31u) & ~static_cast<unsigned>(kGroup - 1);
    return ((1u << kGroup) - 1u) << first;
  }
}

/// acc[ch] += sum over entries e in [beg, end) of weight(e) * X[col(e), pass columns of this lane].
/// Every lane of the group must call it with the same beg, end and col0.
template <int kVec, int kGroup, int kChunks>
__device__ __forceinline__ void accumulate(const SpmmArgs& s, std::int64_t beg, std::int64_t end, std::int64_t col0,
                                           int lane, unsigned mask, typename Lanes<kVec>::Type (&acc)[kChunks]) {
  using L = Lanes<kVec>;
  const std::int64_t lane_col = col0 + static_cast<std::int64_t>(lane) * kVec;
  for (std::int64_t base = beg; base < end; base += kGroup) {
    const std::int64_t e = base + lane;
    int col = 0;
    float weight = 0.0f;
    if (e < end) {
      col = __ldg(s.cols + e);
      weight = s.values != nullptr ? __ldg(s.values + e) : 1.0f;
      if (s.col_scale != nullptr) weight *= __ldg(s.col_scale + col);
    }
    const int batch = static_cast<int>(end - base < kGroup ? end - base : kGroup);
#pragma unroll spmm_tuning::kEntryUnroll
    for (int j = 0; j < batch; ++j) {
      int cj = col;
      float wj = weight;
      if constexpr (kGroup > 1) {
        cj = __shfl_sync(mask, col, j, kGroup);
        wj = __shfl_sync(mask, weight, j, kGroup);
      }
      const float* xr = s.x + static_cast<std::int64_t>(cj) * s.ldx;
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) {
        const std::int64_t c = lane_col + static_cast<std::int64_t>(ch) * kGroup * kVec;
        if (c < s.width) L::fma(acc[ch], wj, L::load(xr + c));
      }
    }
  }
}

template <int kVec, int kGroup, int kChunks>
__global__ void __launch_bounds__(kBlockThreads) spmm_row_kernel(const SpmmArgs s, int* segments) {
  using L = Lanes<kVec>;
  using T = typename L::Type;
  constexpr int kGroups = kBlockThreads / kGroup;        // rows per block
  constexpr int kSpan = kGroup * kVec * kChunks;         // columns per pass
  constexpr int kChunkStride = kGroup * kVec;            // columns between a lane's chunks

  const int lane = static_cast<int>(threadIdx.x) % kGroup;
  const int group = static_cast<int>(threadIdx.x) / kGroup;
  const unsigned mask = group_mask<kGroup>();
  const std::int64_t row = static_cast<std::int64_t>(blockIdx.x) * kGroups + group;
  if (row >= s.num_rows) return;

  const std::int64_t beg = __ldg(s.offsets + row), end = __ldg(s.offsets + row + 1);
  float* yr = s.y + row * s.ldy;
  if (end - beg > s.long_row) {
    // A long row: zero its output here; the segment kernel adds its pieces with atomics.
    if (lane == 0) segments[row] = static_cast<int>((end - beg + s.segment - 1) / s.segment);
    for (std::int64_t c = lane; c < s.width; c += kGroup) yr[c] = 0.0f;
    return;
  }
  if (lane == 0) segments[row] = 0;
  const float rs = s.row_scale != nullptr ? __ldg(s.row_scale + row) : 1.0f;
  for (std::int64_t col0 = 0; col0 < s.width; col0 += kSpan) {
    T acc[kChunks];
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) acc[ch] = L::zero();
    accumulate<kVec, kGroup, kChunks>(s, beg, end, col0, lane, mask, acc);
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) {
      const std::int64_t c = col0 + ch * kChunkStride + static_cast<std::int64_t>(lane) * kVec;
      if (c < s.width) L::store(yr + c, L::scale(acc[ch], rs));
    }
  }
}

/// Long rows, balanced over the whole grid: segment g (of `s.segment` entries) belongs to the row r with
/// first[r] <= g < first[r + 1]; each warp takes segments g = warp, warp + warps, ... and adds its partial sums
/// into y with atomics (y's long rows were zeroed by the row kernel).
template <int kVec, int kChunks>
__global__ void __launch_bounds__(kBlockThreads) spmm_segment_kernel(const SpmmArgs s, const int* first) {
  using L = Lanes<kVec>;
  using T = typename L::Type;
  constexpr int kSpan = 32 * kVec * kChunks;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kBlockThreads / 32;
  const std::int64_t total = first[s.num_rows];
  for (std::int64_t g = warp; g < total; g += warps) {
    // The row: the last r with first[r] <= g (rows without segments share their successor's first).
    std::int64_t lo = 0, hi = s.num_rows;  // invariant: first[lo] <= g < first[hi]
    while (hi - lo > 1) {
      const std::int64_t mid = (lo + hi) / 2;
      if (__ldg(first + mid) <= g) lo = mid; else hi = mid;
    }
    const std::int64_t row = lo;
    const std::int64_t row_beg = __ldg(s.offsets + row), row_end = __ldg(s.offsets + row + 1);
    const std::int64_t beg = row_beg + (g - __ldg(first + row)) * s.segment;
    const std::int64_t end = min(row_end, beg + s.segment);
    const float rs = s.row_scale != nullptr ? __ldg(s.row_scale + row) : 1.0f;
    float* yr = s.y + row * s.ldy;
    for (std::int64_t col0 = 0; col0 < s.width; col0 += kSpan) {
      T acc[kChunks];
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) acc[ch] = L::zero();
      accumulate<kVec, 32, kChunks>(s, beg, end, col0, lane, 0xffffffffu, acc);
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) {
        const std::int64_t c = col0 + ch * 32 * kVec + static_cast<std::int64_t>(lane) * kVec;
        if (c >= s.width) continue;
        const T v = L::scale(acc[ch], rs);
        const float* f = reinterpret_cast<const float*>(&v);
#pragma unroll
        for (int i = 0; i < kVec; ++i) atomicAdd(yr + c + i, f[i]);
      }
    }
  }
}

template <int kVec, int kGroup, int kChunks>
void launch(const SpmmArgs& s, int* segments, cudaStream_t stream) {
  constexpr int kGroups = kBlockThreads / kGroup;
  const std::int64_t blocks = (s.num_rows + kGroups - 1) / kGroups;
  spmm_row_kernel<kVec, kGroup, kChunks><<<static_cast<unsigned>(blocks), kBlockThreads, 0, stream>>>(s, segments);
  GCNPART_CUDA_TRY(cudaGetLastError());
}

/// Picks the lane group and the number of accumulators from the number of vectors per row.
template <int kVec>
void launch_for_width(const SpmmArgs& s, int* segments, cudaStream_t stream) {
  static_assert(spmm_tuning::kMaxChunks == 4, "launch_for_width instantiates chunks 1, 2 and 4");
  const std::int64_t vectors = (s.width + kVec - 1) / kVec;
  if (vectors <= 1) return launch<kVec, 1, 1>(s, segments, stream);
  if (vectors <= 2) return launch<kVec, 2, 1>(s, segments, stream);
  if (vectors <= 4) return launch<kVec, 4, 1>(s, segments, stream);
  if (vectors <= 8) return launch<kVec, 8, 1>(s, segments, stream);
  if (vectors <= 16) return launch<kVec, 16, 1>(s, segments, stream);
  if (vectors <= 32) return launch<kVec, 32, 1>(s, segments, stream);
  if (vectors <= 64) return launch<kVec, 32, 2>(s, segments, stream);
  return launch<kVec, 32, 4>(s, segments, stream);
}

template <int kVec>
void launch_segments(const SpmmArgs& s, const int* first, int blocks, cudaStream_t stream) {
  const std::int64_t vectors = (s.width + kVec - 1) / kVec;
  if (vectors <= 32) {
    spmm_segment_kernel<kVec, 1><<<blocks, kBlockThreads, 0, stream>>>(s, first);
  } else if (vectors <= 64) {
    spmm_segment_kernel<kVec, 2><<<blocks, kBlockThreads, 0, stream>>>(s, first);
  } else {
    spmm_segment_kernel<kVec, 4><<<blocks, kBlockThreads, 0, stream>>>(s, first);
  }
  GCNPART_CUDA_TRY(cudaGetLastError());
}

bool aligned16(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16 == 0; }

}  // namespace

/// Tuning knobs read once: spmm_tuning defaults, or GCNPART_SPMM_LONG_ROW / GCNPART_SPMM_SEGMENT for experiments.
std::int64_t tuning_value(const char* name, std::int64_t fallback) {
  const char* env = std::getenv(name);
  const long long v = env != nullptr ? std::atoll(env) : 0;
  return v > 0 ? static_cast<std::int64_t>(v) : fallback;
}

void spmm(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale, const float* x,
          std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width) {
  static const std::int64_t long_row = tuning_value("GCNPART_SPMM_LONG_ROW", kLongRowEntries);
  static const std::int64_t segment = tuning_value("GCNPART_SPMM_SEGMENT", spmm_tuning::kSegmentEntries);
  const SpmmArgs s{a.num_rows, a.row_offsets, a.col_ids, a.values, row_scale, col_scale, x,
                   ldx,        y,             ldy,       width,    long_row,  segment};
  const bool vec4 = width % 4 == 0 && ldx % 4 == 0 && ldy % 4 == 0 && aligned16(x) && aligned16(y);
  // segments[r]: segment count of row r (0 for rows the row kernel finishes), scanned into first[r].
  const std::size_t n1 = static_cast<std::size_t>(a.num_rows) + 1;
  std::size_t scan_bytes = 0;
  GCNPART_CUDA_TRY(cub::DeviceScan::ExclusiveSum(nullptr, scan_bytes, static_cast<int*>(nullptr),
                                                 static_cast<int*>(nullptr), static_cast<int>(n1), ctx.stream));
  const std::size_t ints = Workspace::align_up(n1 * sizeof(int));
  Workspace scratch(ctx, 2 * ints + scan_bytes);
  int* segments = static_cast<int*>(scratch.get());
  int* first = reinterpret_cast<int*>(static_cast<char*>(scratch.get()) + ints);
  void* scan_temp = static_cast<char*>(scratch.get()) + 2 * ints;
  GCNPART_CUDA_TRY(cudaMemsetAsync(segments + a.num_rows, 0, sizeof(int), ctx.stream));
  if (vec4) {
    launch_for_width<4>(s, segments, ctx.stream);
  } else {
    launch_for_width<1>(s, segments, ctx.stream);
  }
  GCNPART_CUDA_TRY(
      cub::DeviceScan::ExclusiveSum(scan_temp, scan_bytes, segments, first, static_cast<int>(n1), ctx.stream));
  static const int blocks = [] {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    return std::max(1, sms) * spmm_tuning::kSegmentBlocksPerSm;
  }();
  if (vec4) {
    launch_segments<4>(s, first, blocks, ctx.stream);
  } else {
    launch_segments<1>(s, first, blocks, ctx.stream);
  }
}

}  // namespace gcnpart::kernels::detail::cuda
