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
// Long rows. A row with more than SpmmTuning::long_row entries would leave one group working long after the rest
// of the grid (power-law hubs). The row kernel only zeroes such rows and records how many segments of
// SpmmTuning::segment entries they have; a scan numbers the segments, and a grid-stride kernel hands them to warps
// all over the GPU, which add their partial sums with atomics. Long rows are therefore summed in a varying order.
//
// bf16 storage. The same kernels, templated on X's element type, also read X as bfloat16 bits (spmm_bf16):
// a lane loads 8 values in 16 bytes (uint4) when the width is a multiple of 8 and at least kBf16Vec8MinWidth,
// 4 in 8 bytes (uint2) when a multiple of 4, else one. Each value is widened exactly by a 16-bit shift and
// everything after the load is the fp32 code (fp32 weights, FMAs, accumulators and output). Halving the bytes
// per gathered X row is the point: those gathers are almost all of the traffic.
#include <cub/device/device_scan.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "kernels/detail/backends.hpp"
#include "kernels/detail/bf16.hpp"
#include "kernels/detail/cuda_common.cuh"
#include "kernels/detail/spmm_tuning.hpp"
#include "kernels/detail/workspace.hpp"

namespace gcnpart::kernels::detail::cuda {
namespace {

using spmm_tuning::kBlockThreads;

/// X's element types: float, or bfloat16 as raw bits (see bf16.hpp): the kernels load kernels::Bf16 storage as
/// 16-bit words (__ldg and the vector loads need a built-in type).
using Bf16Bits = std::uint16_t;
static_assert(sizeof(Bf16) == sizeof(Bf16Bits) && alignof(Bf16) == alignof(Bf16Bits));
inline const Bf16Bits* as_bits(const Bf16* p) { return reinterpret_cast<const Bf16Bits*>(p); }
inline Bf16Bits* as_bits(Bf16* p) { return reinterpret_cast<Bf16Bits*>(p); }

template <class Elem>
struct SpmmArgs {
  std::int64_t num_rows;
  const RowOffset* offsets;
  const NodeId* cols;
  const float* values;     // null: all ones
  const float* row_scale;  // null: ones
  const float* col_scale;  // null: ones
  const Elem* x;
  std::int64_t ldx;
  float* y;
  std::int64_t ldy;
  std::int64_t width;
  std::int64_t long_row;  // rows with more entries are split into segments over the whole grid
  std::int64_t segment;   // entries per segment of a long row
};

/// Loads, stores and arithmetic on one lane's slice of a row of kVec consecutive columns: X elements of type Elem
/// are loaded (kVec at once, aligned to their size) and widened to float; accumulation and Y are float.
template <class Elem, int kVec>
struct Lanes;

template <>
struct Lanes<float, 1> {
  using Type = float;
  __device__ __forceinline__ static Type zero() { return 0.0f; }
  __device__ __forceinline__ static Type load(const float* p) { return __ldg(p); }
  __device__ __forceinline__ static void store(float* p, Type v) { *p = v; }
  __device__ __forceinline__ static void fma(Type& acc, float w, Type v) { acc = fmaf(w, v, acc); }
  __device__ __forceinline__ static Type scale(Type v, float s) { return v * s; }
  __device__ __forceinline__ static void atomic_add(float* p, Type v) { atomicAdd(p, v); }
};

template <>
struct Lanes<float, 4> {
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
  __device__ __forceinline__ static void atomic_add(float* p, Type v) {
    atomicAdd(p, v.x);
    atomicAdd(p + 1, v.y);
    atomicAdd(p + 2, v.z);
    atomicAdd(p + 3, v.w);
  }
};

/// Two bf16 values packed in a 32-bit word (the lower address in the low half), widened exactly.
__device__ __forceinline__ float bf16_low(unsigned w) { return __uint_as_float(w << 16); }
__device__ __forceinline__ float bf16_high(unsigned w) { return __uint_as_float(w & 0xffff0000u); }

template <>
struct Lanes<Bf16Bits, 1> : Lanes<float, 1> {
  __device__ __forceinline__ static Type load(const Bf16Bits* p) { return bf16_low(__ldg(p)); }
};

template <>
struct Lanes<Bf16Bits, 4> : Lanes<float, 4> {
  __device__ __forceinline__ static Type load(const Bf16Bits* p) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(p));
    return make_float4(bf16_low(v.x), bf16_high(v.x), bf16_low(v.y), bf16_high(v.y));
  }
};

/// Eight floats: the accumulator of one 16-byte load of bf16.
struct Float8 {
  float4 lo, hi;
};

template <>
struct Lanes<Bf16Bits, 8> {
  using Type = Float8;
  using Half = Lanes<float, 4>;
  __device__ __forceinline__ static Type zero() { return {Half::zero(), Half::zero()}; }
  __device__ __forceinline__ static Type load(const Bf16Bits* p) {
    const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
    return {make_float4(bf16_low(v.x), bf16_high(v.x), bf16_low(v.y), bf16_high(v.y)),
            make_float4(bf16_low(v.z), bf16_high(v.z), bf16_low(v.w), bf16_high(v.w))};
  }
  __device__ __forceinline__ static void store(float* p, Type v) {
    Half::store(p, v.lo);
    Half::store(p + 4, v.hi);
  }
  __device__ __forceinline__ static void fma(Type& acc, float w, Type v) {
    Half::fma(acc.lo, w, v.lo);
    Half::fma(acc.hi, w, v.hi);
  }
  __device__ __forceinline__ static Type scale(Type v, float s) { return {Half::scale(v.lo, s), Half::scale(v.hi, s)}; }
  __device__ __forceinline__ static void atomic_add(float* p, Type v) {
    Half::atomic_add(p, v.lo);
    Half::atomic_add(p + 4, v.hi);
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
template <class Elem, int kVec, int kGroup, int kChunks>
__device__ __forceinline__ void accumulate(const SpmmArgs<Elem>& s, std::int64_t beg, std::int64_t end,
                                           std::int64_t col0, int lane, unsigned mask,
                                           typename Lanes<Elem, kVec>::Type (&acc)[kChunks]) {
  using L = Lanes<Elem, kVec>;
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
      const Elem* xr = s.x + static_cast<std::int64_t>(cj) * s.ldx;
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) {
        const std::int64_t c = lane_col + static_cast<std::int64_t>(ch) * kGroup * kVec;
        if (c < s.width) L::fma(acc[ch], wj, L::load(xr + c));
      }
    }
  }
}

template <class Elem, int kVec, int kGroup, int kChunks>
__global__ void __launch_bounds__(kBlockThreads) spmm_row_kernel(const SpmmArgs<Elem> s, int* segments) {
  using L = Lanes<Elem, kVec>;
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
    accumulate<Elem, kVec, kGroup, kChunks>(s, beg, end, col0, lane, mask, acc);
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
template <class Elem, int kVec, int kChunks>
__global__ void __launch_bounds__(kBlockThreads) spmm_segment_kernel(const SpmmArgs<Elem> s, const int* first) {
  using L = Lanes<Elem, kVec>;
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
      accumulate<Elem, kVec, 32, kChunks>(s, beg, end, col0, lane, 0xffffffffu, acc);
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) {
        const std::int64_t c = col0 + ch * 32 * kVec + static_cast<std::int64_t>(lane) * kVec;
        if (c < s.width) L::atomic_add(yr + c, L::scale(acc[ch], rs));
      }
    }
  }
}

template <class Elem, int kVec, int kGroup, int kChunks>
void launch(const SpmmArgs<Elem>& s, int* segments, cudaStream_t stream) {
  constexpr int kGroups = kBlockThreads / kGroup;
  const std::int64_t blocks = (s.num_rows + kGroups - 1) / kGroups;
  spmm_row_kernel<Elem, kVec, kGroup, kChunks>
      <<<static_cast<unsigned>(blocks), kBlockThreads, 0, stream>>>(s, segments);
  GCNPART_CUDA_TRY(cudaGetLastError());
}

/// Picks the lane group and the number of accumulators from the number of vectors per row.
template <class Elem, int kVec>
void launch_for_width(const SpmmArgs<Elem>& s, int* segments, cudaStream_t stream) {
  static_assert(spmm_tuning::kMaxChunks == 4, "launch_for_width instantiates chunks 1, 2 and 4");
  const std::int64_t vectors = (s.width + kVec - 1) / kVec;
  if (vectors <= 1) return launch<Elem, kVec, 1, 1>(s, segments, stream);
  if (vectors <= 2) return launch<Elem, kVec, 2, 1>(s, segments, stream);
  if (vectors <= 4) return launch<Elem, kVec, 4, 1>(s, segments, stream);
  if (vectors <= 8) return launch<Elem, kVec, 8, 1>(s, segments, stream);
  if (vectors <= 16) return launch<Elem, kVec, 16, 1>(s, segments, stream);
  if (vectors <= 32) return launch<Elem, kVec, 32, 1>(s, segments, stream);
  if (vectors <= 64) return launch<Elem, kVec, 32, 2>(s, segments, stream);
  return launch<Elem, kVec, 32, 4>(s, segments, stream);
}

template <class Elem, int kVec>
void launch_segments(const SpmmArgs<Elem>& s, const int* first, int blocks, cudaStream_t stream) {
  const std::int64_t vectors = (s.width + kVec - 1) / kVec;
  if (vectors <= 32) {
    spmm_segment_kernel<Elem, kVec, 1><<<blocks, kBlockThreads, 0, stream>>>(s, first);
  } else if (vectors <= 64) {
    spmm_segment_kernel<Elem, kVec, 2><<<blocks, kBlockThreads, 0, stream>>>(s, first);
  } else {
    spmm_segment_kernel<Elem, kVec, 4><<<blocks, kBlockThreads, 0, stream>>>(s, first);
  }
  GCNPART_CUDA_TRY(cudaGetLastError());
}

bool aligned(const void* p, std::size_t bytes) { return reinterpret_cast<std::uintptr_t>(p) % bytes == 0; }

/// The widest per-lane vector the layout allows: kVec X elements in one load of kVec * sizeof(Elem) bytes and kVec
/// floats of Y in float4 stores, so width and both leading dimensions must be multiples of it and the pointers
/// aligned (every lane's offset is then a multiple of the vector too). 1 always works.
/// bf16 takes 8 per lane only for rows of kBf16Vec8MinWidth or more (see there).
template <class Elem>
int vector_width(const SpmmArgs<Elem>& s) {
  const bool y_vec4 = s.ldy % 4 == 0 && aligned(s.y, 16);
  for (const int vec : {8, 4}) {
    if (vec == 8 && (!std::is_same_v<Elem, Bf16Bits> || s.width < spmm_tuning::kBf16Vec8MinWidth)) continue;
    if (y_vec4 && s.width % vec == 0 && s.ldx % vec == 0 && aligned(s.x, vec * sizeof(Elem))) return vec;
  }
  return 1;
}

template <class Elem>
void launch_rows(int vec, const SpmmArgs<Elem>& s, int* segments, cudaStream_t stream) {
  if constexpr (std::is_same_v<Elem, Bf16Bits>) {
    if (vec == 8) return launch_for_width<Elem, 8>(s, segments, stream);
  }
  if (vec == 4) return launch_for_width<Elem, 4>(s, segments, stream);
  launch_for_width<Elem, 1>(s, segments, stream);
}

template <class Elem>
void launch_long_rows(int vec, const SpmmArgs<Elem>& s, const int* first, int blocks, cudaStream_t stream) {
  if constexpr (std::is_same_v<Elem, Bf16Bits>) {
    if (vec == 8) return launch_segments<Elem, 8>(s, first, blocks, stream);
  }
  if (vec == 4) return launch_segments<Elem, 4>(s, first, blocks, stream);
  launch_segments<Elem, 1>(s, first, blocks, stream);
}

/// The row kernel, a scan of the long rows' segment counts, then the segment kernel (see the file comment).
template <class Elem>
void run_spmm(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale, const Elem* x,
              std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width, const SpmmTuning& tuning) {
  const SpmmArgs<Elem> s{a.num_rows, a.row_offsets, a.col_ids, a.values, row_scale,     col_scale,     x,
                         ldx,        y,             ldy,       width,    tuning.long_row, tuning.segment};
  const int vec = vector_width(s);
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
  launch_rows(vec, s, segments, ctx.stream);
  GCNPART_CUDA_TRY(
      cub::DeviceScan::ExclusiveSum(scan_temp, scan_bytes, segments, first, static_cast<int>(n1), ctx.stream));
  static const int blocks = [] {
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    return std::max(1, sms) * spmm_tuning::kSegmentBlocksPerSm;
  }();
  launch_long_rows(vec, s, first, blocks, ctx.stream);
}

// ------------------------------------------------------------------------------------------------ bf16 conversion

/// Two floats rounded to bf16 and packed into one word, the first in the low half (the lower address).
__device__ __forceinline__ unsigned pack_bf16(float first, float second) {
  return static_cast<unsigned>(float_to_bf16(first)) | (static_cast<unsigned>(float_to_bf16(second)) << 16);
}

/// out = bf16(x): 4 elements per step (float4 in, uint2 out) when `vec`, then the tail one at a time.
__global__ void to_bf16_kernel(const float* x, std::int64_t n, Bf16Bits* out, bool vec) {
  const std::int64_t n4 = vec ? n / 4 : 0;
  for (std::int64_t i = global_thread(); i < n4; i += grid_stride()) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(x) + i);
    reinterpret_cast<uint2*>(out)[i] = make_uint2(pack_bf16(v.x, v.y), pack_bf16(v.z, v.w));
  }
  for (std::int64_t i = 4 * n4 + global_thread(); i < n; i += grid_stride()) out[i] = float_to_bf16(__ldg(x + i));
}

/// out = float(x): 4 elements per step (uint2 in, float4 out) when `vec`, then the tail one at a time.
__global__ void from_bf16_kernel(const Bf16Bits* x, std::int64_t n, float* out, bool vec) {
  const std::int64_t n4 = vec ? n / 4 : 0;
  for (std::int64_t i = global_thread(); i < n4; i += grid_stride()) {
    const uint2 v = __ldg(reinterpret_cast<const uint2*>(x) + i);
    reinterpret_cast<float4*>(out)[i] = make_float4(bf16_low(v.x), bf16_high(v.x), bf16_low(v.y), bf16_high(v.y));
  }
  for (std::int64_t i = 4 * n4 + global_thread(); i < n; i += grid_stride()) out[i] = bf16_to_float(__ldg(x + i));
}

}  // namespace

void spmm(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale, const float* x,
          std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width, const SpmmTuning& tuning) {
  run_spmm(ctx, a, row_scale, col_scale, x, ldx, y, ldy, width, tuning);
}

void spmm_bf16(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
               const Bf16* x, std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width,
               const SpmmTuning& tuning) {
  run_spmm(ctx, a, row_scale, col_scale, as_bits(x), ldx, y, ldy, width, tuning);
}

void convert_to_bf16(const Context& ctx, const float* x, std::int64_t n, Bf16* out) {
  const bool vec = aligned(x, 16) && aligned(out, 8);
  to_bf16_kernel<<<elementwise_blocks(vec ? (n + 3) / 4 : n), kElementwiseThreads, 0, ctx.stream>>>(x, n, as_bits(out),
                                                                                                     vec);
  GCNPART_CUDA_TRY(cudaGetLastError());
}

void convert_from_bf16(const Context& ctx, const Bf16* x, std::int64_t n, float* out) {
  const bool vec = aligned(x, 8) && aligned(out, 16);
  from_bf16_kernel<<<elementwise_blocks(vec ? (n + 3) / 4 : n), kElementwiseThreads, 0, ctx.stream>>>(as_bits(x), n,
                                                                                                       out, vec);
  GCNPART_CUDA_TRY(cudaGetLastError());
}

}  // namespace gcnpart::kernels::detail::cuda
