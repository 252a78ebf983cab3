// gcnpart's own CUDA SpMM: Y = diag(row_scale) A diag(col_scale) X with A in CSR (int64 offsets, int32 columns)
// and X, Y dense row-major.
//
// Work layout. A group of kGroup lanes (1..32, a power of two sized to the row width; four lanes with three vectors
// each for rows of 9..12 vectors, kernels::spmm_row_lanes) owns one row. The group
// reads kGroup entries of the row at once (one column id and one weight per lane, coalesced), then walks them:
// each entry's column id and weight (value * col_scale) are broadcast with __shfl_sync and every lane adds
// weight * X[col, its columns] into registers, as float4 when the width and leading dimensions allow. Widths
// above one pass (32 lanes x vector x kMaxChunks columns) loop over column passes. The row scale is applied once
// at the end and each output element is written exactly once: no atomics, deterministic.
//
// Long rows. A row with more than SpmmTuning::long_row entries would leave one group working long after the rest
// of the grid (power-law hubs). The row kernel only zeroes such rows and lists their segments of
// SpmmTuning::segment entries (an atomic counter hands out the list's slots), and a grid-stride kernel hands the
// segments to warps all over the GPU, which add their partial sums with atomics: three launches in all (the
// counter's reset, the row kernel, the segment kernel), which matters on small graphs. Long rows are therefore
// summed in a varying order. With a bf16 Y (spmm_bf16_out) the long rows' float sums go to rows of the caller's
// float scratch (one slot per long row, listed by the row kernel) and a fourth launch rounds them into Y.
//
// Listed long rows. A matrix that carries its long rows (CsrView::long_rows, built once with the matrix:
// kernels/long_rows.hpp) skips the listing: a small kernel zeroes the product's long rows (the list's first k, those
// above its threshold), then one launch (spmm_fused_kernel) runs both kinds of work side by side. Its first blocks'
// warps each take a contiguous range of the long rows' entries, concatenated (about the product's entries per
// resident warp, at least a segment), and add one partial sum per row piece with atomics; the other blocks are the
// row kernel, which skips the long rows. So the hubs' work no longer waits for the short rows' (H200, own fp32 at
// widths 16-256, bench/results/h200-2026-12-03a/call4-final: soc-Slashdot0902 at 128 0.111 -> 0.103 ms, email-Enron
// at 64 0.0326 -> 0.0295 ms, reddit-sized at 100 3.56 -> 3.26 ms). Not for bf16 X read 8 values at a time (width 256
// and up) nor the four-lane layouts (widths 33-48 by default, 17-64 with --spmm-lanes 4), where the two launches
// were faster.
//
// Programmatic dependent launch (compute capability 9.0; cuda_common.cuh's launch_kernel). The fused kernel may
// start while the zeroing runs: its row blocks do not touch the long rows and start at once, and only its long-row
// warps await the zeroing, before their first addition, so the zeroing's launch and run are off the critical path
// (H200, bench/results/h200-2026-12-03e/call1-pdl-l2, same call: soc-Slashdot0902 at 16 / 32 / 64 0.0249 / 0.0363 /
// 0.0579 -> 0.0227 / 0.0341 / 0.0550 ms, email-Enron at 16 / 64 0.0158 / 0.0288 -> 0.0139 / 0.0271 ms, arxiv-sized
// at 16 0.0366 -> 0.0344 ms). The zeroing itself is launched in stream order: the row blocks, which never await,
// read only what was complete before their predecessor started. The kernels that only follow the SpMM's own kernels
// (the segment kernel, the bf16 rounding) are launched the same way and await their predecessor first: their launch
// overlaps its last blocks. Long-row sums are added as float4 where the GPU has 16-byte atomics (compute capability
// 9.0) and Y's rows allow it.
//
// Widths that are not a multiple of the vector (class counts such as 41 or 47). A lane loads whole vectors as
// long as X's rows start on one (ld a multiple of the vector, x aligned): the last vector of a row reads into the
// row's padding and only the columns below the width are stored. X whose rows do not start on 4 elements is
// first copied (spmm_pad_kernel) into a workspace with the width rounded up to 4 (SpmmTuning::pad); Y needs no
// alignment (unaligned rows are stored element by element).
//
// Slabs. With SpmmTuning::slab > 0 the product runs slab by slab of columns over all rows: a slab of X (rows x
// slab columns) is what every row gathers from while it runs, so more of it stays in L2 (X of a reddit-sized
// graph at width 256 is 5x the H200's L2). Each slab re-reads the sparse structure (4 bytes per entry).
//
// bf16 storage. The same kernels, templated on X's element type, also read X as bfloat16 bits (spmm_bf16):
// a lane loads 8 values in 16 bytes (uint4) when X's rows start on 8 values and the width is at least
// kBf16Vec8MinWidth, 4 in 8 bytes (uint2) when they start on 4, else one. Each value is widened exactly by a 16-bit shift and
// everything after the load is the fp32 code (fp32 weights, FMAs, accumulators and output). Halving the bytes
// per gathered X row is the point: those gathers are almost all of the traffic.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "kernels/detail/backends.hpp"
#include "kernels/detail/bf16.hpp"
#include "kernels/detail/cuda_common.cuh"
#include "kernels/detail/spmm_tuning.hpp"
#include "base/error.hpp"
#include "base/spmm_layout.hpp"
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

/// One segment of a long row: its first entry, its row, and (bf16 output) the row's slot among the long rows.
struct Segment {
  std::int64_t begin;
  std::int64_t row;
  std::int64_t slot;
};

/// The long rows' segments, listed by the row kernel (in no particular order) for the segment kernel. With a bf16
/// output the long rows are also listed (slot -> row): their float sums go to the slot's row of a float scratch,
/// rounded into Y by a last kernel.
struct SegmentList {
  Segment* items;
  int* count;             // number listed; zeroed before the row kernel
  bool fill;              // the row kernel lists segments (the first slab's launch only)
  std::int64_t* long_rows;  // bf16 output: slot -> row
  int* long_count;          // bf16 output: long rows listed; zeroed before the row kernel
};

template <class Elem, class Out = float>
struct SpmmArgs {
  std::int64_t num_rows;
  const RowOffset* offsets;
  const NodeId* cols;
  const float* values;     // null: all ones
  const float* row_scale;  // null: ones
  const float* col_scale;  // null: ones
  const Elem* x;
  std::int64_t ldx;
  Out* y;
  std::int64_t ldy;
  std::int64_t width;
  std::int64_t long_row;  // rows with more entries are split into segments over the whole grid
  std::int64_t segment;   // entries per segment of a long row
  bool y_vec;             // a lane's vector of Y may be stored at once (ldy and y aligned to it)
  float* scratch;         // bf16 output: the long rows' float sums, row `slot` at scratch + slot * ld_scratch
  std::int64_t ld_scratch;
  std::int64_t full_width;  // the whole product's width (a slab's long rows are zeroed over all of it)
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
};

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
};

/// Element i of a lane's vector.
__device__ __forceinline__ float element(float v, int) { return v; }
__device__ __forceinline__ float element(const float4& v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
__device__ __forceinline__ float element(const Float8& v, int i) { return i < 4 ? element(v.lo, i) : element(v.hi, i - 4); }

/// Stores the lane's kVec values at columns [c, c + kVec) of a Y row, keeping to the first `width` columns: one
/// vector store when the whole vector is inside and Y allows it, else element by element (the last, partial
/// vector of a padded width, or a Y that is not vector-aligned).
template <class Elem, int kVec>
__device__ __forceinline__ void store_columns(float* yr, std::int64_t c, std::int64_t width, bool y_vec,
                                              const typename Lanes<Elem, kVec>::Type& v) {
  if (c >= width) return;
  if (c + kVec <= width && y_vec) return Lanes<Elem, kVec>::store(yr + c, v);
#pragma unroll
  for (int i = 0; i < kVec; ++i)
    if (c + i < width) yr[c + i] = element(v, i);
}

/// The same into a bf16 Y: each value rounded once (nearest even); a vector of 4 or 8 is one 8- or 16-byte store.
template <class Elem, int kVec>
__device__ __forceinline__ void store_columns(Bf16Bits* yr, std::int64_t c, std::int64_t width, bool y_vec,
                                              const typename Lanes<Elem, kVec>::Type& v) {
  if (c >= width) return;
  if (c + kVec <= width && y_vec) {
    if constexpr (kVec == 8) {
      *reinterpret_cast<uint4*>(yr + c) = make_uint4(pack_bf16(v.lo.x, v.lo.y), pack_bf16(v.lo.z, v.lo.w),
                                                      pack_bf16(v.hi.x, v.hi.y), pack_bf16(v.hi.z, v.hi.w));
      return;
    } else if constexpr (kVec == 4) {
      *reinterpret_cast<uint2*>(yr + c) = make_uint2(pack_bf16(v.x, v.y), pack_bf16(v.z, v.w));
      return;
    }
  }
#pragma unroll
  for (int i = 0; i < kVec; ++i)
    if (c + i < width) yr[c + i] = float_to_bf16(element(v, i));
}

/// The same with atomic additions (long-row segments): a whole float4 inside the width in one 16-byte atomic where the
/// GPU has it (compute capability 9.0) and y_vec (the row's vectors are aligned), else element by element.
template <class Elem, int kVec>
__device__ __forceinline__ void add_columns(float* yr, std::int64_t c, std::int64_t width, bool y_vec,
                                            const typename Lanes<Elem, kVec>::Type& v) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if constexpr (std::is_same_v<typename Lanes<Elem, kVec>::Type, float4>) {
    if (y_vec && c + 4 <= width) {
      atomicAdd(reinterpret_cast<float4*>(yr + c), v);
      return;
    }
  }
#endif
#pragma unroll
  for (int i = 0; i < kVec; ++i)
    if (c + i < width) atomicAdd(yr + c + i, element(v, i));
}

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

/// X's row stride in bytes, as a 32-bit int (run_spmm checks that it fits): with it a gathered row's address is one
/// 32 x 32 -> 64-bit multiply-add (x_row), where a 64-bit element stride took a 64-bit multiply, a shift and an add
/// per entry, and each lane's column bounds are computed once per row and column pass instead of per entry (H200,
/// own fp32 SpMM, same call as the previous code, bench/results/h200-2026-12-03c/call4-staged, addr2 vs head:
/// reddit-sized at 256 7.62 -> 7.24 ms, at 100 3.26 -> 3.17; arxiv-sized at 16 0.0437 -> 0.0409; products-sized at
/// 47 / 100 4.23 / 7.12 -> 4.08 / 6.96; bf16 X at 32 reddit-sized 0.90 -> 0.82 ms; products-sized fp32 at 256
/// 16.54 -> 16.68, 1 % slower, in every call that measured it).
template <class Elem, class Out>
__device__ __forceinline__ int x_row_bytes(const SpmmArgs<Elem, Out>& s) {
  return static_cast<int>(s.ldx) * static_cast<int>(sizeof(Elem));
}

/// The lane's first element of X's row `col`: x_lane (the lane's first column of row 0, as bytes) + col * row_bytes.
template <class Elem>
__device__ __forceinline__ const Elem* x_row(const char* x_lane, int col, int row_bytes) {
  return reinterpret_cast<const Elem*>(x_lane + static_cast<std::int64_t>(col) * row_bytes);
}

/// accumulate() for narrow rows: groups of at most 8 lanes with one vector of at most 4 floats each (rows of up
/// to 32 columns). There every row is a few batches and a small product is bound by their latency, not by bytes:
/// (1) each lane holds kPer = 8 / kGroup entries (column id and weight), so a batch is 8 entries; (2) the next
/// batch's column ids and values are loaded before the current batch's X rows and its column scales after them,
/// so a batch waits for its X rows only, not for the chain column id -> column scale -> X row; (3) X rows are
/// loaded kEntryUnroll at a time, predicated (no serial remainder loop for a row's last entries), before any is
/// added. Entries are added in the same order as accumulate() adds them (the same sums, bit for bit).
/// H200, own fp32 SpMM (bench/results/h200-2026-12-02e): width 16 email-Enron 0.0268 -> 0.0193 ms,
/// soc-Slashdot0902 0.0390 -> 0.0327 ms, products-sized RMAT 1.81 -> 1.60 ms; width 32 products-sized 2.52 ->
/// 2.31 ms, reddit-sized 1.42 -> 1.33 ms, email-Enron 0.0263 -> 0.0238 ms. Wider groups (16 and 32 lanes) were
/// slower with it (64 registers instead of 40: occupancy).
template <class Elem, int kVec, int kGroup, int kChunks, class Out>
__device__ __forceinline__ void accumulate_narrow(const SpmmArgs<Elem, Out>& s, std::int64_t beg, std::int64_t end,
                                                  std::int64_t col0, int lane, unsigned mask,
                                                  typename Lanes<Elem, kVec>::Type (&acc)[kChunks]) {
  using L = Lanes<Elem, kVec>;
  using T = typename L::Type;
  constexpr int kPer = 8 / kGroup;  // entries per lane and batch
  constexpr int kBatch = kGroup * kPer;
  constexpr int kRound = spmm_tuning::kEntryUnroll;  // X loads in flight per lane
  const std::int64_t lane_col = col0 + static_cast<std::int64_t>(lane) * kVec;
  const char* x_lane = reinterpret_cast<const char*>(s.x + lane_col);
  const int row_bytes = x_row_bytes(s);
  bool on[kChunks];
#pragma unroll
  for (int ch = 0; ch < kChunks; ++ch) on[ch] = lane_col + static_cast<std::int64_t>(ch) * kGroup * kVec < s.width;
  int col[kPer];
  float value[kPer], scale[kPer];
#pragma unroll
  for (int p = 0; p < kPer; ++p) {
    const std::int64_t e = beg + p * kGroup + lane;
    col[p] = 0;
    value[p] = 0.0f;
    scale[p] = 1.0f;
    if (e < end) {
      col[p] = __ldg(s.cols + e);
      value[p] = s.values != nullptr ? __ldg(s.values + e) : 1.0f;
      if (s.col_scale != nullptr) scale[p] = __ldg(s.col_scale + col[p]);
    }
  }
  for (std::int64_t base = beg; base < end; base += kBatch) {
    float weight[kPer];
    int next_col[kPer];
    float next_value[kPer];
#pragma unroll
    for (int p = 0; p < kPer; ++p) {
      weight[p] = value[p] * scale[p];
      const std::int64_t e = base + kBatch + p * kGroup + lane;
      next_col[p] = 0;
      next_value[p] = 0.0f;
      if (e < end) {
        next_col[p] = __ldg(s.cols + e);
        next_value[p] = s.values != nullptr ? __ldg(s.values + e) : 1.0f;
      }
    }
    const int batch = static_cast<int>(end - base < kBatch ? end - base : kBatch);
    for (int j0 = 0; j0 < batch; j0 += kRound) {
      int cj[kRound];
      float wj[kRound];
#pragma unroll
      for (int r = 0; r < kRound; ++r) {
        const int j = j0 + r;
        int c = col[0];
        float w = weight[0];
#pragma unroll
        for (int p = 1; p < kPer; ++p) {
          if (j >= p * kGroup) {
            c = col[p];
            w = weight[p];
          }
        }
        if constexpr (kGroup > 1) {
          c = __shfl_sync(mask, c, j % kGroup, kGroup);
          w = __shfl_sync(mask, w, j % kGroup, kGroup);
        }
        cj[r] = c;
        wj[r] = w;
      }
      T v[kRound][kChunks];
#pragma unroll
      for (int r = 0; r < kRound; ++r) {
        const Elem* xr = x_row<Elem>(x_lane, cj[r], row_bytes);
#pragma unroll
        for (int ch = 0; ch < kChunks; ++ch)
          if (j0 + r < batch && on[ch]) v[r][ch] = L::load(xr + ch * kGroup * kVec);
      }
#pragma unroll
      for (int r = 0; r < kRound; ++r) {
#pragma unroll
        for (int ch = 0; ch < kChunks; ++ch)
          if (j0 + r < batch && on[ch]) L::fma(acc[ch], wj[r], v[r][ch]);
      }
    }
#pragma unroll
    for (int p = 0; p < kPer; ++p) {
      const std::int64_t e = base + kBatch + p * kGroup + lane;
      col[p] = next_col[p];
      value[p] = next_value[p];
      scale[p] = e < end && s.col_scale != nullptr ? __ldg(s.col_scale + next_col[p]) : 1.0f;
    }
  }
}

/// acc[ch] += sum over entries e in [beg, end) of weight(e) * X[col(e), pass columns of this lane].
/// Every lane of the group must call it with the same beg, end and col0.
template <class Elem, int kVec, int kGroup, int kChunks, class Out>
__device__ __forceinline__ void accumulate(const SpmmArgs<Elem, Out>& s, std::int64_t beg, std::int64_t end,
                                           std::int64_t col0, int lane, unsigned mask,
                                           typename Lanes<Elem, kVec>::Type (&acc)[kChunks]) {
  if constexpr (kGroup <= 8 && kVec * kChunks <= 4) {
    return accumulate_narrow<Elem, kVec, kGroup, kChunks>(s, beg, end, col0, lane, mask, acc);
  }
  using L = Lanes<Elem, kVec>;
  const std::int64_t lane_col = col0 + static_cast<std::int64_t>(lane) * kVec;
  const char* x_lane = reinterpret_cast<const char*>(s.x + lane_col);
  const int row_bytes = x_row_bytes(s);
  bool on[kChunks];
#pragma unroll
  for (int ch = 0; ch < kChunks; ++ch) on[ch] = lane_col + static_cast<std::int64_t>(ch) * kGroup * kVec < s.width;
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
      if constexpr (kVec == 8) {
        // bf16 X read 8 values per lane (width 256 and up): the 64-bit element stride, with which the row kernel
        // takes 32 registers; x_row took it to 48 (5 blocks per SM instead of 8) and was slower (H200, own bf16 X
        // at 256, bench/results/h200-2026-12-03c/call3-addr: products-sized 8.32 -> 9.34 ms, reddit-sized 4.54 ->
        // 4.82 ms).
        const Elem* xr = s.x + static_cast<std::int64_t>(cj) * s.ldx;
#pragma unroll
        for (int ch = 0; ch < kChunks; ++ch) {
          const std::int64_t c = lane_col + static_cast<std::int64_t>(ch) * kGroup * kVec;
          if (c < s.width) L::fma(acc[ch], wj, L::load(xr + c));
        }
      } else {
        const Elem* xr = x_row<Elem>(x_lane, cj, row_bytes);
#pragma unroll
        for (int ch = 0; ch < kChunks; ++ch)
          if (on[ch]) L::fma(acc[ch], wj, L::load(xr + ch * kGroup * kVec));
      }
    }
  }
}

/// Two accumulators per lane (rows of 129-256 float columns): at least 4 blocks per SM, which lets the compiler use
/// 64 registers (8 bytes of spill stores); left alone it took 48 and spilled 16 bytes (H200, own fp32 SpMM at width
/// 256, bench/results/h200-2026-12-02e/call8-launch-bounds: products-sized 16.99 -> 16.73 ms, soc-Slashdot0902
/// 0.1865 -> 0.1825 ms, email-Enron 0.0827 -> 0.0796 ms).
template <class Elem, class Out, int kVec, int kGroup, int kChunks>
__global__ void __launch_bounds__(kBlockThreads, kChunks == 2 ? 4 : 0)
    spmm_row_kernel(const SpmmArgs<Elem, Out> s, SegmentList list) {
  await_predecessor();  // launched programmatically after the previous slab's segment kernel (launch_slab)
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
  Out* yr = s.y + row * s.ldy;
  constexpr bool kFloatOut = std::is_same_v<Out, float>;
  if (end - beg > s.long_row) {
    // A long row: zero its output here (bf16 output: its float scratch row, over the whole width, once); list its
    // segments for the segment kernel, which adds them with atomics.
    if (list.fill) {
      const int n = static_cast<int>((end - beg + s.segment - 1) / s.segment);
      int first = 0, slot = 0;
      if (lane == 0) {
        first = atomicAdd(list.count, n);
        if constexpr (!kFloatOut) {
          slot = atomicAdd(list.long_count, 1);
          list.long_rows[slot] = row;
        }
      }
      if constexpr (kGroup > 1) {
        first = __shfl_sync(mask, first, 0, kGroup);
        slot = __shfl_sync(mask, slot, 0, kGroup);
      }
      for (int i = lane; i < n; i += kGroup)
        list.items[first + i] = Segment{beg + static_cast<std::int64_t>(i) * s.segment, row, slot};
      if constexpr (!kFloatOut) {
        float* sr = s.scratch + static_cast<std::int64_t>(slot) * s.ld_scratch;
        for (std::int64_t c = lane; c < s.full_width; c += kGroup) sr[c] = 0.0f;
      }
    }
    if constexpr (kFloatOut)
      for (std::int64_t c = lane; c < s.width; c += kGroup) yr[c] = 0.0f;
    return;
  }
  const float rs = s.row_scale != nullptr ? __ldg(s.row_scale + row) : 1.0f;
  for (std::int64_t col0 = 0; col0 < s.width; col0 += kSpan) {
    T acc[kChunks];
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) acc[ch] = L::zero();
    accumulate<Elem, kVec, kGroup, kChunks>(s, beg, end, col0, lane, mask, acc);
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) {
      const std::int64_t c = col0 + ch * kChunkStride + static_cast<std::int64_t>(lane) * kVec;
      store_columns<Elem, kVec>(yr, c, s.width, s.y_vec, L::scale(acc[ch], rs));
    }
  }
}

/// Sum of a lane's vector over the warp's kSubgroups lane groups of kGroup lanes (lanes l, l + kGroup, ...):
/// every lane ends with the sum of its column slot. All 32 lanes must call it.
__device__ __forceinline__ float xor_sum(float v, int offset) { return v + __shfl_xor_sync(0xffffffffu, v, offset); }
__device__ __forceinline__ float4 xor_sum(float4 v, int offset) {
  return make_float4(xor_sum(v.x, offset), xor_sum(v.y, offset), xor_sum(v.z, offset), xor_sum(v.w, offset));
}
__device__ __forceinline__ Float8 xor_sum(Float8 v, int offset) { return {xor_sum(v.lo, offset), xor_sum(v.hi, offset)}; }

/// Long rows, balanced over the whole grid: the row kernel listed every segment (`s.segment` entries of one long
/// row); each warp takes list items g = warp, warp + warps, ... and adds its partial sums into y with atomics (y's
/// long rows were zeroed by the row kernel). A narrow row (kGroup < 32 lanes cover its width) splits the segment
/// between the warp's 32 / kGroup lane groups, which sum their parts with shuffles before the first group adds the
/// result: every lane loads, whatever the width.
template <class Elem, class Out, int kVec, int kGroup, int kChunks>
__global__ void __launch_bounds__(kBlockThreads) spmm_segment_kernel(const SpmmArgs<Elem, Out> s, const Segment* items,
                                                                     const int* count) {
  await_predecessor();  // launched programmatically after the row kernel, which lists the segments
  using L = Lanes<Elem, kVec>;
  using T = typename L::Type;
  constexpr int kSubgroups = 32 / kGroup;
  constexpr int kSpan = kGroup * kVec * kChunks;
  const int lane = static_cast<int>(threadIdx.x) % kGroup;
  const int subgroup = static_cast<int>(threadIdx.x % 32) / kGroup;
  const unsigned mask = group_mask<kGroup>();
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x) / 32;
  const std::int64_t warps = static_cast<std::int64_t>(gridDim.x) * kBlockThreads / 32;
  const std::int64_t total = *count;
  for (std::int64_t g = warp; g < total; g += warps) {
    const Segment seg = items[g];
    const std::int64_t row = seg.row;
    const std::int64_t seg_beg = seg.begin;
    const std::int64_t seg_end = min(__ldg(s.offsets + row + 1), seg_beg + s.segment);
    // This lane group's share of the segment.
    const std::int64_t share = (seg_end - seg_beg + kSubgroups - 1) / kSubgroups;
    const std::int64_t beg = min(seg_end, seg_beg + subgroup * share);
    const std::int64_t end = min(seg_end, beg + share);
    const float rs = s.row_scale != nullptr ? __ldg(s.row_scale + row) : 1.0f;
    float* yr;
    if constexpr (std::is_same_v<Out, float>) {
      yr = s.y + row * s.ldy;
    } else {
      yr = s.scratch + seg.slot * s.ld_scratch;
    }
    for (std::int64_t col0 = 0; col0 < s.width; col0 += kSpan) {
      T acc[kChunks];
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) acc[ch] = L::zero();
      accumulate<Elem, kVec, kGroup, kChunks>(s, beg, end, col0, lane, mask, acc);
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) {
#pragma unroll
        for (int offset = kGroup; offset < 32; offset *= 2) acc[ch] = xor_sum(acc[ch], offset);
        const std::int64_t c = col0 + ch * kGroup * kVec + static_cast<std::int64_t>(lane) * kVec;
        if (subgroup == 0) add_columns<Elem, kVec>(yr, c, s.width, std::is_same_v<Out, float> && s.y_vec,
                                                  L::scale(acc[ch], rs));
      }
    }
  }
}

/// The long rows of one product, from the matrix's list (CsrView::long_rows: rows by entry count, most first): the
/// first `count` rows, those above the product's threshold. Their entries, concatenated, are cut into ranges of
/// `chunk` entries, one per warp of the fused kernel's first `segment_blocks` blocks.
struct LongRowPlan {
  const NodeId* rows;
  const std::int64_t* prefix;
  std::int64_t count;    // k: rows taken
  std::int64_t entries;  // prefix[k]
  std::int64_t chunk;    // entries per segment warp (a contiguous range of the concatenated long rows)
  unsigned segment_blocks;
};

/// Index i < count with plan.prefix[i] <= pos < plan.prefix[i + 1]: a 32-way search by the whole warp.
__device__ __forceinline__ std::int64_t find_long_row(const LongRowPlan& plan, std::int64_t pos) {
  const int lane = static_cast<int>(threadIdx.x & 31u);
  std::int64_t lo = 0, hi = plan.count;
  while (hi - lo > 1) {
    const std::int64_t step = (hi - lo + 31) / 32;
    const std::int64_t probe = lo + lane * step;
    const bool le = probe < hi && __ldg(plan.prefix + probe) <= pos;
    const unsigned ballot = __ballot_sync(0xffffffffu, le);
    const int last = 31 - __clz(ballot);
    lo += last * step;
    hi = min(hi, lo + step);
  }
  return lo;
}

/// Blocks per SM the fused kernel is compiled for: its two bodies together take more registers than the row
/// kernel alone (72-80 instead of 63-64 for the narrow layouts), and bounding them to 64 (4 blocks of 256 threads)
/// was faster than the occupancy lost, the spills included (H200, bench/results/h200-2026-12-03a/call2-variants:
/// reddit-sized at widths 64 / 100 / 128 2.35 / 4.11 / 4.36 ms -> 2.06 / 3.26 / 3.61, email-Enron at 16
/// 0.0187 -> 0.0167 ms, soc-Slashdot0902 at 32 0.0435 -> 0.0418 ms).
constexpr int fused_min_blocks(int chunks) { return chunks <= 2 ? 4 : 0; }

/// One launch for both kinds of work: blocks below plan.segment_blocks take the long rows' entries (warp w: entries
/// [w * chunk, (w + 1) * chunk) of the plan's rows concatenated, one accumulation and one atomic addition per row
/// piece, into rows zeroed before the launch), the rest are the row kernel's blocks, which skip the long rows. The two
/// run side by side.
template <class Elem, class Out, int kVec, int kGroup, int kChunks>
__global__ void __launch_bounds__(kBlockThreads, fused_min_blocks(kChunks))
    spmm_fused_kernel(const SpmmArgs<Elem, Out> s, const LongRowPlan plan) {
  using L = Lanes<Elem, kVec>;
  using T = typename L::Type;
  if (blockIdx.x >= plan.segment_blocks) {
    constexpr int kGroups = kBlockThreads / kGroup;
    constexpr int kSpan = kGroup * kVec * kChunks;
    constexpr int kChunkStride = kGroup * kVec;
    const int lane = static_cast<int>(threadIdx.x) % kGroup;
    const int group = static_cast<int>(threadIdx.x) / kGroup;
    const unsigned mask = group_mask<kGroup>();
    const std::int64_t row = static_cast<std::int64_t>(blockIdx.x - plan.segment_blocks) * kGroups + group;
    if (row >= s.num_rows) return;
    const std::int64_t beg = __ldg(s.offsets + row), end = __ldg(s.offsets + row + 1);
    if (end - beg > s.long_row) return;
    Out* yr = s.y + row * s.ldy;
    const float rs = s.row_scale != nullptr ? __ldg(s.row_scale + row) : 1.0f;
    for (std::int64_t col0 = 0; col0 < s.width; col0 += kSpan) {
      T acc[kChunks];
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) acc[ch] = L::zero();
      accumulate<Elem, kVec, kGroup, kChunks>(s, beg, end, col0, lane, mask, acc);
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) {
        const std::int64_t c = col0 + ch * kChunkStride + static_cast<std::int64_t>(lane) * kVec;
        store_columns<Elem, kVec>(yr, c, s.width, s.y_vec, L::scale(acc[ch], rs));
      }
    }
    return;
  }
  constexpr int kSubgroups = 32 / kGroup;
  constexpr int kSpan = kGroup * kVec * kChunks;
  const int lane = static_cast<int>(threadIdx.x) % kGroup;
  const int subgroup = static_cast<int>(threadIdx.x % 32) / kGroup;
  const unsigned mask = group_mask<kGroup>();
  const std::int64_t warp = (static_cast<std::int64_t>(blockIdx.x) * kBlockThreads + threadIdx.x) / 32;
  std::int64_t pos = warp * plan.chunk;
  if (pos >= plan.entries) return;
  const std::int64_t stop = min(plan.entries, pos + plan.chunk);
  std::int64_t i = find_long_row(plan, pos);
  for (; pos < stop; ++i) {
    const std::int64_t row = __ldg(plan.rows + i);
    const std::int64_t first = __ldg(plan.prefix + i), next = min(stop, __ldg(plan.prefix + i + 1));
    const std::int64_t seg_beg = __ldg(s.offsets + row) + (pos - first);
    const std::int64_t seg_end = seg_beg + (next - pos);
    pos = next;
    const std::int64_t share = (seg_end - seg_beg + kSubgroups - 1) / kSubgroups;
    const std::int64_t beg = min(seg_end, seg_beg + subgroup * share);
    const std::int64_t end = min(seg_end, beg + share);
    const float rs = s.row_scale != nullptr ? __ldg(s.row_scale + row) : 1.0f;
    float* yr;
    if constexpr (std::is_same_v<Out, float>) {
      yr = s.y + row * s.ldy;
    } else {
      yr = s.scratch + i * s.ld_scratch;
    }
    for (std::int64_t col0 = 0; col0 < s.width; col0 += kSpan) {
      T acc[kChunks];
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) acc[ch] = L::zero();
      accumulate<Elem, kVec, kGroup, kChunks>(s, beg, end, col0, lane, mask, acc);
      await_predecessor();  // the zeroing kernel (launched before this one, which may start while it runs)
#pragma unroll
      for (int ch = 0; ch < kChunks; ++ch) {
#pragma unroll
        for (int offset = kGroup; offset < 32; offset *= 2) acc[ch] = xor_sum(acc[ch], offset);
        const std::int64_t c = col0 + ch * kGroup * kVec + static_cast<std::int64_t>(lane) * kVec;
        if (subgroup == 0) add_columns<Elem, kVec>(yr, c, s.width, std::is_same_v<Out, float> && s.y_vec,
                                                  L::scale(acc[ch], rs));
      }
    }
  }
}

/// Zeroes the plan's first `count` long rows before the fused kernel adds into them: Y's rows (float output) or the
/// float scratch's rows 0..count (bf16 output), `width` columns.
__global__ void spmm_zero_long_rows_kernel(const NodeId* rows, std::int64_t count, std::int64_t width,
                                           float* y, std::int64_t ldy, bool by_slot) {
  // The fused kernel's row blocks may start at once (they do not touch the long rows; its long-row warps await this
  // kernel). This kernel is launched in stream order: the row blocks read X (the pad kernel's copy, if any) without
  // awaiting anything, which is sound only where X was complete when their predecessor started.
  allow_dependents();
  const std::int64_t n = count * width;
  for (std::int64_t t = global_thread(); t < n; t += grid_stride()) {
    const std::int64_t i = t / width, c = t - i * width;
    y[(by_slot ? i : static_cast<std::int64_t>(__ldg(rows + i))) * ldy + c] = 0.0f;
  }
}

/// bf16 output with a plan: scratch row i rounded into Y's row rows[i].
__global__ void spmm_round_plan_rows_kernel(const float* scratch, std::int64_t ld_scratch, const NodeId* rows,
                                            std::int64_t count, std::int64_t width, Bf16Bits* y, std::int64_t ldy) {
  await_predecessor();  // launched programmatically after the fused kernel
  const std::int64_t n = count * width;
  for (std::int64_t t = global_thread(); t < n; t += grid_stride()) {
    const std::int64_t i = t / width, c = t - i * width;
    y[static_cast<std::int64_t>(__ldg(rows + i)) * ldy + c] = float_to_bf16(scratch[i * ld_scratch + c]);
  }
}

/// bf16 output: the long rows' float sums (scratch rows by slot, scaled already) rounded into their Y rows.
__global__ void spmm_round_long_rows_kernel(const float* scratch, std::int64_t ld_scratch, const std::int64_t* rows,
                                            const int* count, std::int64_t width, Bf16Bits* y, std::int64_t ldy) {
  await_predecessor();  // launched programmatically after the segment kernel
  const std::int64_t n = static_cast<std::int64_t>(*count) * width;
  for (std::int64_t t = global_thread(); t < n; t += grid_stride()) {
    const std::int64_t slot = t / width, c = t - slot * width;
    y[rows[slot] * ldy + c] = float_to_bf16(scratch[slot * ld_scratch + c]);
  }
}

/// Calls launch.template operator()<kGroup, kChunks>() with the lane group and the accumulators per lane that a row
/// of `vectors` vectors gets: spmm_row_lanes' group, with 2 and 4 accumulators past 32 and 64 vectors for 32 lanes
/// and 2..4 for the four-lane layouts: the one place both kernels are sized.
/// kFourLanes: this instantiation has the four-lane layouts of SpmmTuning::lanes (vectors of 4 only, to keep the
/// number of kernels down), taken where spmm_row_lanes gives a row of more than 4 vectors four lanes.
template <bool kFourLanes, class Launch>
void with_row_layout(std::int64_t vectors, int lanes, Launch&& launch) {
  static_assert(spmm_tuning::kMaxChunks == 4, "with_row_layout instantiates chunks 1 to 4");
  if constexpr (kFourLanes) {
    if (spmm_row_lanes(vectors, lanes) == 4 && vectors > 4) {
      if (vectors <= 8) return launch.template operator()<4, 2>();
      if (vectors <= 12) return launch.template operator()<4, 3>();
      return launch.template operator()<4, 4>();
    }
  }
  switch (spmm_group_lanes(vectors)) {
    case 1: return launch.template operator()<1, 1>();
    case 2: return launch.template operator()<2, 1>();
    case 4: return launch.template operator()<4, 1>();
    case 8: return launch.template operator()<8, 1>();
    case 16: return launch.template operator()<16, 1>();
    default: break;
  }
  if (vectors <= 32) return launch.template operator()<32, 1>();
  if (vectors <= 64) return launch.template operator()<32, 2>();
  launch.template operator()<32, 4>();
}

/// One slab: the row kernel, then the segment kernel over the long rows' segments (same lane groups, the warp's
/// groups sharing each segment), with kVec elements per lane load. The segment kernel is a programmatic dependent
/// launch of the row kernel (its launch overlaps the row kernel's last blocks; it awaits the row kernel first), and so
/// is the row kernel of the previous slab's segment kernel where `row_after_kernel` (not after the counters' memset,
/// which is not a kernel).
template <class Elem, class Out, int kVec>
void launch_slab(const SpmmArgs<Elem, Out>& s, const SegmentList& list, int segment_blocks, int lanes,
                 bool row_after_kernel, cudaStream_t stream) {
  with_row_layout<kVec == 4>((s.width + kVec - 1) / kVec, lanes, [&]<int kGroup, int kChunks>() {
    constexpr int kGroups = kBlockThreads / kGroup;  // rows per block
    const auto row_blocks = static_cast<unsigned>((s.num_rows + kGroups - 1) / kGroups);
    launch_kernel(row_after_kernel, spmm_row_kernel<Elem, Out, kVec, kGroup, kChunks>, row_blocks, kBlockThreads,
                  stream, s, list);
    launch_kernel(true, spmm_segment_kernel<Elem, Out, kVec, kGroup, kChunks>, static_cast<unsigned>(segment_blocks),
                  kBlockThreads, stream, s, list.items, list.count);
  });
}

/// One slab with a long-row plan: the fused kernel (the long rows' blocks first, then the row blocks). Never for the
/// four-lane layouts (run_spmm), so none are instantiated.
/// after_zeroing: the stream's previous kernel is spmm_zero_long_rows_kernel (this product's), which the fused kernel
/// then follows as a programmatic dependent launch: its row blocks, which do not touch the long rows, start while the
/// zeroing runs, and only its long-row warps await it (before their first addition).
template <class Elem, class Out, int kVec>
void launch_fused(const SpmmArgs<Elem, Out>& s, LongRowPlan plan, int lanes, bool after_zeroing, cudaStream_t stream) {
  with_row_layout<false>((s.width + kVec - 1) / kVec, lanes, [&]<int kGroup, int kChunks>() {
    constexpr int kGroups = kBlockThreads / kGroup;
    const auto row_blocks = static_cast<unsigned>((s.num_rows + kGroups - 1) / kGroups);
    launch_kernel(after_zeroing, spmm_fused_kernel<Elem, Out, kVec, kGroup, kChunks>, plan.segment_blocks + row_blocks,
                  kBlockThreads, stream, s, plan);
  });
}

template <class Elem, class Out>
void launch_fused(int vec, const SpmmArgs<Elem, Out>& s, const LongRowPlan& plan, int lanes, bool after_zeroing,
                  cudaStream_t stream) {
  GCNPART_EXPECTS(vec == 4 || vec == 1, "the fused SpMM kernel loads 1 or 4 elements per lane");
  if (vec == 4) return launch_fused<Elem, Out, 4>(s, plan, lanes, after_zeroing, stream);
  launch_fused<Elem, Out, 1>(s, plan, lanes, after_zeroing, stream);
}

/// The widest per-lane vector the layout allows: kVec X elements in one load of kVec * sizeof(Elem) bytes, so X's
/// leading dimension must be a multiple of it and x aligned to it (every row then starts on a vector). The width
/// need not be: the last vector of a row reads into the row's padding (ldx >= the width rounded up), and only
/// columns below the width are stored. 1 always works.
/// bf16 takes 8 per lane only for rows of kBf16Vec8MinWidth or more (see there).
template <class Elem, class Out>
int vector_width(const SpmmArgs<Elem, Out>& s) {
  for (const int vec : {8, 4}) {
    if (vec == 8 && (!std::is_same_v<Elem, Bf16Bits> || s.width < spmm_tuning::kBf16Vec8MinWidth)) continue;
    if (s.ldx % vec == 0 && aligned(s.x, vec * sizeof(Elem))) return vec;
  }
  return 1;
}

template <class Elem, class Out>
void launch_slab(int vec, const SpmmArgs<Elem, Out>& s, const SegmentList& list, int segment_blocks, int lanes,
                 bool row_after_kernel, cudaStream_t stream) {
  if constexpr (std::is_same_v<Elem, Bf16Bits>) {
    if (vec == 8) return launch_slab<Elem, Out, 8>(s, list, segment_blocks, lanes, row_after_kernel, stream);
  }
  if (vec == 4) return launch_slab<Elem, Out, 4>(s, list, segment_blocks, lanes, row_after_kernel, stream);
  launch_slab<Elem, Out, 1>(s, list, segment_blocks, lanes, row_after_kernel, stream);
}

/// The padded copy of X (SpmmTuning::pad): out (rows x ld_out, ld_out a multiple of kSpmmPadVector) = x's first
/// `width` columns, then zeros up to ld_out. One thread per kSpmmPadVector output elements, stored at once (16
/// bytes of float, 8 of bf16); the reads are element by element (x's rows do not start on a vector, which is why it
/// is copied). It replaced cudaMemcpy2DAsync, which was slow on these narrow rows (H200, own SpMM at width 41, the
/// copy included, bench/results/h200-2026-12-02f/call2-pad-final: email-Enron 0.0586 -> 0.0408 ms, soc-Slashdot0902
/// 0.0870 -> 0.0743, arxiv-sized 0.142 -> 0.123, products-sized 4.79 -> 4.50 ms fp32 and 4.94 -> 3.67 ms bf16).
template <class Elem>
__global__ void spmm_pad_kernel(const Elem* x, std::int64_t ldx, std::int64_t width, std::int64_t rows, Elem* out,
                                std::int64_t ld_out) {
  static_assert(kSpmmPadVector == 4, "one float4 or four bf16 per thread");
  const std::int64_t per_row = ld_out / 4;
  const std::int64_t n = rows * per_row;
  const bool narrow = n <= 0xffffffffLL;  // 32-bit division (far cheaper) when the index fits
  for (std::int64_t t = global_thread(); t < n; t += grid_stride()) {
    const std::int64_t r = narrow ? static_cast<std::uint32_t>(t) / static_cast<std::uint32_t>(per_row) : t / per_row;
    const std::int64_t c = (t - r * per_row) * 4;
    const Elem* xr = x + r * ldx;
    Elem v[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) v[i] = c + i < width ? __ldg(xr + c + i) : Elem{0};
    if constexpr (std::is_same_v<Elem, float>) {
      reinterpret_cast<float4*>(out)[t] = make_float4(v[0], v[1], v[2], v[3]);
    } else {
      reinterpret_cast<uint2*>(out)[t] = make_uint2(static_cast<unsigned>(v[0]) | static_cast<unsigned>(v[1]) << 16,
                                                    static_cast<unsigned>(v[2]) | static_cast<unsigned>(v[3]) << 16);
    }
  }
}

/// The row kernel, which lists the long rows' segments, then the segment kernel (see the file comment), per slab of
/// columns (SpmmTuning::slab); or, for a matrix that carries its long rows (CsrView::long_rows) where the layout
/// allows, the zeroing kernel and one fused launch per slab (see "Listed long rows" in the file comment). X that does not allow vector loads (its rows do not start on 4 elements) is
/// first copied into a padded workspace when SpmmTuning::pad (see base/spmm_layout.hpp).
template <class Elem, class Out>
void run_spmm(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale, const Elem* x,
              std::int64_t ldx, Out* y, std::int64_t ldy, std::int64_t width, const SpmmTuning& tuning,
              float* scratch = nullptr, std::int64_t ld_scratch = 0) {
  constexpr bool kFloatOut = std::is_same_v<Out, float>;
  Workspace padded;
  const auto padding = spmm_padding_bytes(a.num_cols, width, ldx, static_cast<int>(sizeof(Elem)), tuning.pad);
  const std::int64_t padded_ld = padding > 0 ? padding / (a.num_cols * static_cast<std::int64_t>(sizeof(Elem))) : ldx;
  // The kernels address X's rows with a 32-bit byte stride (x_row_bytes): checked before anything is allocated or
  // launched.
  if (padded_ld > std::int64_t{std::numeric_limits<int>::max()} / static_cast<std::int64_t>(sizeof(Elem)))
    throw InvalidInput::parameter("x.ld", std::to_string(ldx),
                                  "rows of less than 2 GiB (ld x element size < 2^31 bytes): the own SpMM addresses "
                                  "X rows with a 32-bit byte stride");
  if (padding > 0) {
    padded = Workspace(ctx, static_cast<std::size_t>(padding));
    spmm_pad_kernel<<<elementwise_blocks(a.num_cols * (padded_ld / kSpmmPadVector)), kElementwiseThreads, 0,
                      ctx.stream>>>(x, ldx, width, a.num_cols, padded.as<Elem>(), padded_ld);
    GCNPART_CUDA_TRY(cudaGetLastError());
    x = padded.as<Elem>();
    ldx = padded_ld;
  }
  SpmmArgs<Elem, Out> whole{a.num_rows, a.row_offsets, a.col_ids, a.values,        row_scale,      col_scale,
                            x,          ldx,           y,         ldy,             width,          tuning.long_row,
                            tuning.segment, false,     scratch,   ld_scratch,      width};
  // Slabs start on multiples of 8 columns, so every slab keeps the whole product's alignment; the vector width
  // is the one a slab's width calls for.
  std::int64_t slab = tuning.slab > 0 ? (tuning.slab + 7) / 8 * 8 : width;
  if (slab >= width) slab = width;
  SpmmArgs<Elem, Out> first_slab = whole;
  first_slab.width = slab;
  const int vec = vector_width(first_slab);
  // Whole vectors of Y at once: float stores 4 (two float4 for 8), bf16 stores vec values in vec * 2 bytes.
  whole.y_vec = kFloatOut ? ldy % 4 == 0 && aligned(y, 16)
                          : ldy % vec == 0 && aligned(y, static_cast<std::size_t>(vec) * sizeof(Out));
  static const int sms = [] {
    int device = 0, count = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&count, cudaDevAttrMultiProcessorCount, device);
    return std::max(1, count);
  }();
  std::int64_t entries = a.entries_bound;
  if (entries < 0) {  // not given: read the last offset (synchronises the stream)
    RowOffset last = 0;
    GCNPART_CUDA_TRY(cudaMemcpyAsync(&last, a.row_offsets + a.num_rows, sizeof last, cudaMemcpyDeviceToHost, ctx.stream));
    GCNPART_CUDA_TRY(cudaStreamSynchronize(ctx.stream));
    entries = last;
  }
  // By the product where not set: the lane groups the GPU holds at once (2048 threads per SM).
  const std::int64_t vectors = (slab + vec - 1) / vec;
  const int lanes = vec == 4 ? tuning.lanes : 32;  // the four-lane layouts exist for vectors of 4 only
  const std::int64_t resident_groups = std::int64_t{sms} * 2048 / spmm_row_lanes(vectors, lanes);
  // The matrix lists its long rows (CsrView::long_rows) and this product's threshold is at or above the list's: one
  // launch for the long rows' entries and the other rows. Not for the four-lane layouts of 2-4 vectors per lane
  // (widths 33-48, 17-64 with SpmmTuning::lanes 4; products-sized RMAT at 41 / 47: 4.51 / 4.22 ms with the two launches,
  // 4.9-5.5 with one)
  // nor for bf16 X read 8 values per lane (width >= 256; products-sized 8.33 ms with two, 9.27 with one, where the
  // fused kernel's 48 registers against the row kernel's 32 cost occupancy; bounded to 32 it spilled 128 bytes and the
  // reddit-sized bf16 epoch went 14.08 -> 14.89 ms) (H200, bench/results/h200-2026-12-03a/call2-variants, call3-engine).
  // The automatic threshold depends on it (spmm_auto_long_row's `fused`).
  const LongRowsView* listed = a.long_rows;
  GCNPART_EXPECTS(listed == nullptr || (listed->row_offsets == a.row_offsets && listed->num_rows == a.num_rows &&
                                        listed->host_prefix != nullptr && listed->count <= a.num_rows),
                  "a CSR view carries the long-row list of its own matrix");
  const bool four_lane = vec == 4 && spmm_row_lanes(vectors, lanes) == 4 && vectors > 4;
  const bool fused_layout = listed != nullptr && !four_lane && vec != 8;
  if (whole.long_row == 0) whole.long_row = spmm_auto_long_row(entries, resident_groups, fused_layout);
  if (whole.segment == 0) whole.segment = spmm_auto_segment(entries, resident_groups);
  if (fused_layout && whole.long_row >= listed->floor) {
    const std::int64_t long_row = whole.long_row;
    // Rows by entry count, most first: the first k have more than long_row entries.
    const std::int64_t* hp = listed->host_prefix;
    std::int64_t lo = 0, hi = listed->count;
    while (lo < hi) {
      const std::int64_t mid = (lo + hi) / 2;
      if (hp[mid + 1] - hp[mid] > long_row) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    const std::int64_t k = lo;
    // A warp of the long rows' blocks takes as many entries as the product has per resident warp (2048 threads per
    // SM), at least a segment: long-lived warps, one search each, and one atomic addition per row piece.
    const std::int64_t per_warp = (entries + std::int64_t{sms} * 64 - 1) / (std::int64_t{sms} * 64);
    const std::int64_t chunk = std::max(whole.segment, per_warp);
    LongRowPlan plan{listed->rows, listed->prefix, k, hp[k], chunk, 0};
    const std::int64_t seg_warps = (plan.entries + chunk - 1) / chunk;
    plan.segment_blocks = static_cast<unsigned>((seg_warps + kBlockThreads / 32 - 1) / (kBlockThreads / 32));
    if (k > 0) {  // the long rows' sums start from zero: Y's rows, or (bf16 Y) the scratch's first k rows
      const unsigned zero_blocks = elementwise_blocks(k * width);
      if constexpr (kFloatOut) {
        spmm_zero_long_rows_kernel<<<zero_blocks, kElementwiseThreads, 0, ctx.stream>>>(plan.rows, k, width, y, ldy,
                                                                                        false);
      } else {
        spmm_zero_long_rows_kernel<<<zero_blocks, kElementwiseThreads, 0, ctx.stream>>>(plan.rows, k, width, scratch,
                                                                                        ld_scratch, true);
      }
      GCNPART_CUDA_TRY(cudaGetLastError());
    }
    for (std::int64_t c0 = 0; c0 < width; c0 += slab) {
      SpmmArgs<Elem, Out> s = whole;
      s.x = x + c0;
      s.y = y + c0;
      if (!kFloatOut) s.scratch = scratch + c0;
      s.width = std::min(slab, width - c0);
      launch_fused(vec, s, plan, lanes, k > 0 && c0 == 0, ctx.stream);
    }
    if constexpr (!kFloatOut) {
      if (k > 0) {
        launch_kernel(true, spmm_round_plan_rows_kernel, elementwise_blocks(k * width), kElementwiseThreads,
                      ctx.stream, scratch, ld_scratch, plan.rows, k, width, y, ldy);
      }
    }
    return;
  }
  // The segment list: a row of d > long_row entries has ceil(d / segment) <= d / segment + 1 segments, and there are
  // at most nnz / (long_row + 1) such rows.
  const std::int64_t long_row = whole.long_row;
  const std::int64_t capacity = entries / whole.segment + entries / (long_row + 1) + 1;
  // bf16 output: at most this many long rows (each has more than long_row entries), listed slot -> row.
  const std::int64_t long_capacity = kFloatOut ? 0 : std::min(a.num_rows, entries / (long_row + 1) + 1);
  const std::size_t counters = Workspace::align_up(2 * sizeof(int));
  const std::size_t items_bytes = Workspace::align_up(static_cast<std::size_t>(capacity) * sizeof(Segment));
  Workspace lists(ctx, counters + items_bytes + static_cast<std::size_t>(long_capacity) * sizeof(std::int64_t));
  SegmentList list{lists.as<Segment>(counters), lists.as<int>(), true, lists.as<std::int64_t>(counters + items_bytes),
                   lists.as<int>() + 1};
  GCNPART_CUDA_TRY(cudaMemsetAsync(list.count, 0, 2 * sizeof(int), ctx.stream));
  const int blocks = sms * spmm_tuning::kSegmentBlocksPerSm;
  for (std::int64_t c0 = 0; c0 < width; c0 += slab) {
    SpmmArgs<Elem, Out> s = whole;
    s.x = x + c0;
    s.y = y + c0;
    if (!kFloatOut) s.scratch = scratch + c0;
    s.width = std::min(slab, width - c0);
    list.fill = c0 == 0;  // later slabs reuse the first slab's lists (and long rows' zeroed scratch rows)
    launch_slab(vec, s, list, blocks, lanes, c0 > 0, ctx.stream);
  }
  if constexpr (!kFloatOut) {
    launch_kernel(true, spmm_round_long_rows_kernel, static_cast<unsigned>(blocks), kBlockThreads, ctx.stream, scratch,
                  ld_scratch, list.long_rows, list.long_count, width, y, ldy);
  }
}

// ------------------------------------------------------------------------------------------------ bf16 conversion

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

void spmm_bf16_out(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
                   const Bf16* x, std::int64_t ldx, Bf16* y, std::int64_t ldy, std::int64_t width, float* scratch,
                   std::int64_t ld_scratch, const SpmmTuning& tuning) {
  run_spmm(ctx, a, row_scale, col_scale, as_bits(x), ldx, as_bits(y), ldy, width, tuning, scratch, ld_scratch);
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
