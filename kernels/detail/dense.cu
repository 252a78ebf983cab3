// CUDA side of everything but SpMM: GEMM through cuBLAS, the fused epilogues, loss, accuracy, Adam, degree
// normalisation, row gathers and scatters, reductions (CUB, temporary storage from ctx.allocator) and the
// stream helpers. Every launch is followed by GCNPART_CUDA_TRY(cudaGetLastError()).
#include <cub/device/device_reduce.cuh>
#include <cuda/std/functional>
#include <cuda_runtime.h>
#include <thrust/iterator/counting_iterator.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "kernels/detail/backends.hpp"
#include "kernels/detail/bf16.hpp"
#include "kernels/detail/cuda_common.cuh"
#include "kernels/detail/dropout_mask.hpp"
#include "kernels/detail/workspace.hpp"

namespace gcnpart::kernels::detail::cuda {
namespace {

constexpr int kWarp = 32;
// column_sum: rows summed by one block before the second pass, and its block shape (columns x row lanes).
constexpr std::int64_t kColumnSumSlabRows = 1024;
constexpr int kColumnSumCols = 32;
constexpr int kColumnSumRowLanes = 8;
constexpr int kColumnSumFinishLanes = 32;
constexpr std::int64_t kMaxGridY = 65535;

/// Element access for the float and bf16 (raw bits) storage types: widen exactly on load, round once on store.
__device__ __forceinline__ float load_float(const float* p) { return *p; }
__device__ __forceinline__ float load_float(const Bf16* p) { return bf16_to_float(*p); }
__device__ __forceinline__ void store_float(float* p, float v) { *p = v; }
__device__ __forceinline__ void store_float(Bf16* p, float v) { *p = round_to_bf16(v); }

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = kWarp / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// ------------------------------------------------------------------------------------------------ dense

__global__ void scale_matrix_kernel(float* c, std::int64_t rows, std::int64_t cols, std::int64_t ldc, float beta) {
  const std::int64_t n = rows * cols;
  for (std::int64_t t = global_thread(); t < n; t += grid_stride()) {
    const std::int64_t i = t / cols, j = t - i * cols;
    float* p = c + i * ldc + j;
    *p = beta == 0.0f ? 0.0f : beta * *p;
  }
}

/// Pass 1: partial[slab, col] = sum of the slab's rows, row lanes combined in a fixed order.
template <class T>
__global__ void column_sum_slabs_kernel(const T* x, std::int64_t rows, std::int64_t width,
                                        std::int64_t slab_rows, float* partial) {
  __shared__ float lanes[kColumnSumRowLanes][kColumnSumCols];
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kColumnSumCols + threadIdx.x;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * slab_rows;
  const std::int64_t r1 = min(rows, r0 + slab_rows);
  float s = 0.0f;
  if (col < width)
    for (std::int64_t r = r0 + threadIdx.y; r < r1; r += kColumnSumRowLanes) s += load_float(x + r * width + col);
  lanes[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < width) {
    float total = 0.0f;
#pragma unroll
    for (int l = 0; l < kColumnSumRowLanes; ++l) total += lanes[l][threadIdx.x];
    partial[static_cast<std::int64_t>(blockIdx.y) * width + col] = total;
  }
}

/// Pass 2: out[col] = sum of the slabs' partials: kColumnSumFinishLanes slab lanes per column (lane y sums slabs
/// y, y + lanes, ...), combined in lane order; a fixed order for a given row count. A products-sized graph has 2048
/// slabs: one thread walking them all in order waited for 2048 dependent loads (about 0.2 ms per call).
__global__ void column_sum_finish_kernel(const float* partial, std::int64_t slabs, std::int64_t width, float* out) {
  __shared__ float lanes[kColumnSumFinishLanes][kColumnSumCols + 1];
  const std::int64_t col = static_cast<std::int64_t>(blockIdx.x) * kColumnSumCols + threadIdx.x;
  float s = 0.0f;
  if (col < width) {
#pragma unroll 8
    for (std::int64_t k = threadIdx.y; k < slabs; k += kColumnSumFinishLanes) s += partial[k * width + col];
  }
  lanes[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < width) {
    float total = 0.0f;
#pragma unroll
    for (int l = 0; l < kColumnSumFinishLanes; ++l) total += lanes[l][threadIdx.x];
    out[col] = total;
  }
}

void launch_column_sum_finish(const Context& ctx, const float* partial, std::int64_t slabs, std::int64_t width,
                              float* out) {
  const dim3 grid(static_cast<unsigned>((width + kColumnSumCols - 1) / kColumnSumCols));
  column_sum_finish_kernel<<<grid, dim3(kColumnSumCols, kColumnSumFinishLanes), 0, ctx.stream>>>(partial, slabs, width,
                                                                                                 out);
  GCNPART_CUDA_TRY(cudaGetLastError());
}

// ------------------------------------------------------------------------------------------------ epilogues

/// Four consecutive elements as one load / store: float4 for float, one 8-byte word for bf16 (the caller checks
/// the 4-element alignment).
__device__ __forceinline__ void load4(const float* p, float v[4]) {
  const float4 q = *reinterpret_cast<const float4*>(p);
  v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}
__device__ __forceinline__ void load4(const Bf16* p, float v[4]) {
  const uint2 q = *reinterpret_cast<const uint2*>(p);
  v[0] = bf16_low(q.x), v[1] = bf16_high(q.x), v[2] = bf16_low(q.y), v[3] = bf16_high(q.y);
}
__device__ __forceinline__ void store4(float* p, const float v[4]) {
  *reinterpret_cast<float4*>(p) = make_float4(v[0], v[1], v[2], v[3]);
}
__device__ __forceinline__ void store4(Bf16* p, const float v[4]) {
  *reinterpret_cast<uint2*>(p) = make_uint2(pack_bf16(v[0], v[1]), pack_bf16(v[2], v[3]));
}

/// Whether p may be accessed 4 elements at a time.
template <class T>
bool four_aligned(const T* p) {
  return aligned(p, 4 * sizeof(T));
}

/// Whether v, once stored into Out (bf16: rounded), is > 0: the positive mask's bit.
__device__ __forceinline__ bool stored_positive(float v, const float*) { return v > 0.0f; }
/// bf16: round_to_bf16(v) > 0 exactly when v's bits as a signed integer are above 0x8000 (2^-134: half the smallest
/// bf16 subnormal rounds to even, to zero) and not a NaN's (above 0x7f800000): two integer comparisons instead of the
/// rounding, in a kernel bound by its instruction issue.
__device__ __forceinline__ bool stored_positive(float v, const Bf16*) {
  const auto bits = static_cast<std::int32_t>(__float_as_uint(v));
  return bits > 0x8000 && bits <= 0x7f800000;
}

/// One (row, block of 4 columns) of bias_act_dropout_kernel.
template <class In, class Out, bool kVec, class Index>
struct BiasActDropoutStep {
  const In* z;
  const float* bias;
  Index width, blocks_per_row;
  bool relu, drop;
  std::uint32_t keep_below;
  float scale;
  std::uint64_t key;
  Dropout d;
  Out* out;
  std::uint8_t* positive;

  /// v = z's block (plus the bias): the loads, issued before any block's draw.
  __device__ __forceinline__ void load(Index row, Index block, float (&v)[kDropoutColumnsPerDraw]) const {
    const Index c0 = block * kDropoutColumnsPerDraw;
    const std::int64_t at = static_cast<std::int64_t>(row) * width + c0;
    if constexpr (kVec) {
      load4(z + at, v);
    } else {
#pragma unroll
      for (int u = 0; u < kDropoutColumnsPerDraw; ++u) v[u] = c0 + u < width ? load_float(z + at + u) : 0.0f;
    }
    if (bias != nullptr) {  // no add without a bias: -0 stays -0
      if constexpr (kVec) {
        float b[kDropoutColumnsPerDraw];
        load4(bias + c0, b);
#pragma unroll
        for (int u = 0; u < kDropoutColumnsPerDraw; ++u) v[u] += b[u];
      } else {
#pragma unroll
        for (int u = 0; u < kDropoutColumnsPerDraw; ++u)
          if (c0 + u < width) v[u] += bias[c0 + u];
      }
    }
  }

  /// ReLU, the block's draw, the stores.
  __device__ __forceinline__ void finish(Index row, Index block, float (&v)[kDropoutColumnsPerDraw]) const {
    const Index c0 = block * kDropoutColumnsPerDraw;
    const std::int64_t at = static_cast<std::int64_t>(row) * width + c0;
    bool any = false;
#pragma unroll
    for (int u = 0; u < kDropoutColumnsPerDraw; ++u) {
      if (relu) v[u] = v[u] > 0.0f ? v[u] : 0.0f;
      any = any || v[u] != 0.0f;
    }
    if (drop && any) {  // an all-zero block is zero either way: no draw (see dropout_mask.hpp)
      const rng::Philox4 r = dropout_draw(key, dropout_global_node(d, static_cast<std::int64_t>(row)), block);
#pragma unroll
      for (int u = 0; u < kDropoutColumnsPerDraw; ++u)
        v[u] = dropout_word_keeps_below(r.v[u], keep_below) ? v[u] * scale : 0.0f;
    }
    if constexpr (kVec) {
      store4(out + at, v);
    } else {
#pragma unroll
      for (int u = 0; u < kDropoutColumnsPerDraw; ++u)
        if (c0 + u < width) store_float(out + at + u, v[u]);
    }
    if (positive != nullptr) {  // the block's byte of the positive mask (bits past the width: v = 0)
      unsigned bits = 0;
#pragma unroll
      for (int u = 0; u < kDropoutColumnsPerDraw; ++u) bits |= stored_positive(v[u], out) ? 1u << u : 0u;
      positive[static_cast<std::int64_t>(row) * blocks_per_row + block] = static_cast<std::uint8_t>(bits);
    }
  }
};

/// One grid-stride step per (row, block of 4 columns): one Philox draw decides the block's four elements. kVec: the
/// width is a multiple of 4 and z / out (and the bias, if any) are 4-element aligned, so each block is one vector
/// load and one vector store. Index: 32-bit index arithmetic when rows x blocks fits. The kernel is bound by its
/// instruction issue more than by memory (Nsight Compute: issue slots 72 % busy, DRAM 29-49 %), so the work around
/// the Philox draw is kept small: one division per thread (the grid-stride step is split into rows and blocks once),
/// vector bias loads, and the keep test as one integer comparison (dropout_word_keeps_below: the same decision).
/// Each thread takes its steps t, t + stride, ... two at a time: both blocks' loads are issued before either's
/// draw, so twice the bytes are in flight per thread (a bf16 block is 8 bytes: with one at a time the input dropout
/// of the products-sized graph's features, bf16 at width 100, moved 1.9 TB/s on the H200).
template <class In, class Out, bool kVec, class Index>
__global__ void bias_act_dropout_kernel(const In* z, const float* bias, Index rows, Index width, bool relu, Dropout d,
                                        Out* out, std::uint8_t* positive) {
  const bool drop = d.p > 0.0f;
  const Index blocks_per_row = (width + kDropoutColumnsPerDraw - 1) / kDropoutColumnsPerDraw;
  const BiasActDropoutStep<In, Out, kVec, Index> step{z,
                                                      bias,
                                                      width,
                                                      blocks_per_row,
                                                      relu,
                                                      drop,
                                                      dropout_keep_below(dropout_keep_probability(d.p)),
                                                      drop ? dropout_scale(d.p) : 1.0f,
                                                      drop ? dropout_key(d) : 0,
                                                      d,
                                                      out,
                                                      positive};
  const Index stride = static_cast<Index>(grid_stride());
  const Index stride_rows = stride / blocks_per_row, stride_blocks = stride - stride_rows * blocks_per_row;
  // t = row * blocks_per_row + block, advanced by the stride (stride_blocks < blocks_per_row: at most one row of
  // carry); false once past the last row.
  auto advance = [&](Index& row, Index& block) {
    row += stride_rows;
    block += stride_blocks;
    if (block >= blocks_per_row) {
      block -= blocks_per_row;
      ++row;
    }
    return row < rows;
  };
  const Index first = static_cast<Index>(global_thread());
  Index row = first / blocks_per_row, block = first - row * blocks_per_row;
  if (row >= rows) return;
  for (;;) {
    Index row2 = row, block2 = block;
    const bool second = advance(row2, block2);
    float v[kDropoutColumnsPerDraw], v2[kDropoutColumnsPerDraw];
    step.load(row, block, v);
    if (second) step.load(row2, block2, v2);
    step.finish(row, block, v);
    if (!second) return;
    step.finish(row2, block2, v2);
    row = row2;
    block = block2;
    if (!advance(row, block)) return;
  }
}

/// Launches bias_act_dropout_kernel with vector access and 32-bit indices where the shapes allow them.
template <class In, class Out>
void launch_bias_act_dropout(const Context& ctx, const In* z, const float* bias, std::int64_t rows, std::int64_t width,
                             bool relu, const Dropout& d, Out* out, std::uint8_t* positive = nullptr) {
  const std::int64_t threads = rows * ((width + kDropoutColumnsPerDraw - 1) / kDropoutColumnsPerDraw);
  const unsigned blocks = elementwise_blocks(threads);
  const bool vec = width % kDropoutColumnsPerDraw == 0 && four_aligned(z) && four_aligned(out) &&
                   (bias == nullptr || four_aligned(bias));
  const bool narrow = rows * width < (std::int64_t{1} << 31);
  auto go = [&]<bool kVec>() {
    if (narrow)
      bias_act_dropout_kernel<In, Out, kVec, std::uint32_t><<<blocks, kElementwiseThreads, 0, ctx.stream>>>(
          z, bias, static_cast<std::uint32_t>(rows), static_cast<std::uint32_t>(width), relu, d, out, positive);
    else
      bias_act_dropout_kernel<In, Out, kVec, std::int64_t>
          <<<blocks, kElementwiseThreads, 0, ctx.stream>>>(z, bias, rows, width, relu, d, out, positive);
  };
  if (vec)
    go.template operator()<true>();
  else
    go.template operator()<false>();
  GCNPART_CUDA_TRY(cudaGetLastError());
}

/// dz = h > 0 ? dh * scale : 0, four elements per step (one vector load of h and of dh) where n and the pointers
/// allow it, then the tail one at a time.
template <class T>
__global__ void relu_dropout_backward_kernel(const T* h, const T* dh, std::int64_t n, float scale, T* dz, bool vec) {
  const std::int64_t n4 = vec ? n / 4 : 0;
  for (std::int64_t i = global_thread(); i < n4; i += grid_stride()) {
    float hv[4], gv[4];
    load4(h + 4 * i, hv);
    load4(dh + 4 * i, gv);
#pragma unroll
    for (int u = 0; u < 4; ++u) gv[u] = hv[u] > 0.0f ? gv[u] * scale : 0.0f;
    store4(dz + 4 * i, gv);
  }
  for (std::int64_t i = 4 * n4 + global_thread(); i < n; i += grid_stride())
    store_float(dz + i, load_float(h + i) > 0.0f ? load_float(dh + i) * scale : 0.0f);
}

template <class T>
void launch_relu_dropout_backward(const Context& ctx, const T* h, const T* dh, std::int64_t n, float scale, T* dz) {
  const bool vec = four_aligned(h) && four_aligned(dh) && four_aligned(dz);
  relu_dropout_backward_kernel<<<elementwise_blocks(vec ? (n + 3) / 4 : n), kElementwiseThreads, 0, ctx.stream>>>(
      h, dh, n, scale, dz, vec);
  GCNPART_CUDA_TRY(cudaGetLastError());
}

/// The value a store of v into T leaves behind (bf16: rounded once), as float.
__device__ __forceinline__ float stored_value(float v, const float*) { return v; }
__device__ __forceinline__ float stored_value(float v, const Bf16*) { return bf16_to_float(round_to_bf16(v)); }

/// relu_dropout_backward and the column sums of its output in one pass: the shape and summation order of
/// column_sum_slabs_kernel (slabs of slab_rows rows, kColumnSumRowLanes row lanes each summing rows y, y + lanes,
/// ..., lanes combined in order), so column_sum_finish_kernel over `partial` gives column_sum's sums bit for bit.
/// A thread owns kVec consecutive columns (vector loads and stores when kVec == 4: width % 4 == 0, aligned).
/// With a positive mask (not null) the h > 0 test reads the mask's bit instead of h (see bias_act_dropout_async).
template <class T, int kVec>
__global__ void relu_dropout_backward_sum_kernel(const T* h, const T* dh, std::int64_t rows, std::int64_t width,
                                                 std::int64_t slab_rows, float scale, T* dz, float* partial,
                                                 const std::uint8_t* positive) {
  __shared__ float lanes[kColumnSumRowLanes][kColumnSumCols * kVec];
  const std::int64_t c0 = (static_cast<std::int64_t>(blockIdx.x) * kColumnSumCols + threadIdx.x) * kVec;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.y) * slab_rows;
  const std::int64_t r1 = min(rows, r0 + slab_rows);
  float s[kVec];
#pragma unroll
  for (int u = 0; u < kVec; ++u) s[u] = 0.0f;
  // dz may alias dh, but only element for element: a step loads its rows before storing any.
  const std::int64_t mask_blocks = (width + 3) / 4;  // kernels::positive_mask_blocks
  auto load = [&](std::int64_t r, std::int64_t at, float (&hv)[kVec], float (&gv)[kVec]) {  // at = r * width + c0
    if (positive != nullptr) {
      const unsigned byte = positive[r * mask_blocks + c0 / 4] >> (kVec == 4 ? 0 : c0 % 4);
#pragma unroll
      for (int u = 0; u < kVec; ++u) hv[u] = (byte >> u) & 1u ? 1.0f : 0.0f;
    } else if constexpr (kVec == 4) {
      load4(h + at, hv);
    } else {
      hv[0] = load_float(h + at);
    }
    if constexpr (kVec == 4) {
      load4(dh + at, gv);
    } else {
      gv[0] = load_float(dh + at);
    }
  };
  auto finish = [&](std::int64_t at, const float (&hv)[kVec], float (&gv)[kVec]) {
    // Explicitly rounded product and sum: a contraction into one FMA would change the sums' bits against the
    // column sum of the stored dz.
#pragma unroll
    for (int u = 0; u < kVec; ++u) gv[u] = hv[u] > 0.0f ? __fmul_rn(gv[u], scale) : 0.0f;
    if constexpr (kVec == 4) {
      store4(dz + at, gv);
    } else {
      store_float(dz + at, gv[0]);
    }
#pragma unroll
    for (int u = 0; u < kVec; ++u) s[u] = __fadd_rn(s[u], stored_value(gv[u], dz));
  };
  if (c0 < width) {
    // kSteps rows per step, all loaded before any is stored: the loads in flight per thread are what bounds this
    // kernel (a positive mask's byte stands for h's vector, so fewer bytes but as many round trips).
    constexpr int kSteps = 4;
    std::int64_t r = r0 + threadIdx.y;
    for (; r + (kSteps - 1) * kColumnSumRowLanes < r1; r += kSteps * kColumnSumRowLanes) {
      float hv[kSteps][kVec], gv[kSteps][kVec];
#pragma unroll
      for (int j = 0; j < kSteps; ++j) {
        const std::int64_t rj = r + j * kColumnSumRowLanes;
        load(rj, rj * width + c0, hv[j], gv[j]);
      }
#pragma unroll
      for (int j = 0; j < kSteps; ++j) finish((r + j * kColumnSumRowLanes) * width + c0, hv[j], gv[j]);
    }
    for (; r < r1; r += kColumnSumRowLanes) {  // the same rows in the same order as one row per step
      float h0[kVec], g0[kVec];
      load(r, r * width + c0, h0, g0);
      finish(r * width + c0, h0, g0);
    }
  }
#pragma unroll
  for (int u = 0; u < kVec; ++u) lanes[threadIdx.y][threadIdx.x * kVec + u] = s[u];
  __syncthreads();
  if (threadIdx.y == 0) {
#pragma unroll
    for (int u = 0; u < kVec; ++u) {
      if (c0 + u >= width) continue;
      float total = 0.0f;
#pragma unroll
      for (int l = 0; l < kColumnSumRowLanes; ++l) total += lanes[l][threadIdx.x * kVec + u];
      partial[static_cast<std::int64_t>(blockIdx.y) * width + c0 + u] = total;
    }
  }
}

// ------------------------------------------------------------------------------------------------ loss

/// The listed rows of the loss, kLanes lanes per row (every lane of a group sees the same t): body(t, r, label) for
/// each row with a valid label; a row index or label out of range gets a NaN loss instead (a kernel cannot throw:
/// loudly wrong).
template <int kLanes, class Body>
__device__ __forceinline__ void for_each_labelled_row(const NodeId* rows, std::int64_t count, std::int64_t num_rows,
                                                      const std::int32_t* labels, std::int64_t classes,
                                                      float* row_loss, Body&& body) {
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const std::int64_t groups = grid_stride() / kLanes;
  for (std::int64_t t = global_thread() / kLanes; t < count; t += groups) {
    const std::int64_t r = rows[t];
    const std::int32_t label = (r >= 0 && r < num_rows) ? labels[r] : -1;
    if (label < 0 || label >= classes) {
      if (lane == 0) row_loss[t] = __int_as_float(0x7fc00000);
      continue;
    }
    body(t, r, label);
  }
}

/// One warp per listed row: max-subtracted log-sum-exp, the row's loss, and its gradient row.
__global__ void softmax_cross_entropy_kernel(const float* logits, std::int64_t num_rows, std::int64_t classes,
                                             std::int64_t ld, const std::int32_t* labels, const NodeId* rows, std::int64_t count,
                                             float grad_scale, float* row_loss, float* grad) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  for_each_labelled_row<kWarp>(rows, count, num_rows, labels, classes, row_loss,
                               [&](std::int64_t t, std::int64_t r, std::int32_t label) {
    const float* l = logits + r * ld;
    float mx = -INFINITY;
    for (std::int64_t c = lane; c < classes; c += kWarp) mx = fmaxf(mx, l[c]);
    mx = warp_max(mx);
    float se = 0.0f;
    for (std::int64_t c = lane; c < classes; c += kWarp) se += expf(l[c] - mx);
    se = warp_sum(se);
    const float lse = mx + logf(se);
    if (lane == 0) row_loss[t] = lse - l[label];
    if (grad != nullptr) {
      float* g = grad + r * ld;
      for (std::int64_t c = lane; c < classes; c += kWarp)
        g[c] = (expf(l[c] - lse) - (c == label ? 1.0f : 0.0f)) * grad_scale;
    }
  });
}

/// The same for rows of at most kLanes * kPer classes (class counts of real data): kLanes lanes per row, each
/// holding kPer of its logits in registers, so the row is read once and 32 / kLanes rows share a warp (the warp
/// kernel left most of its lanes idle on 47 classes and read the row three times).
template <int kLanes, int kPer>
__global__ void softmax_cross_entropy_narrow_kernel(const float* logits, std::int64_t num_rows, std::int64_t classes,
                                                    std::int64_t ld, const std::int32_t* labels, const NodeId* rows,
                                                    std::int64_t count, float grad_scale, float* row_loss,
                                                    float* grad) {
  static_assert(kLanes >= 1 && kLanes <= kWarp && (kLanes & (kLanes - 1)) == 0, "a power-of-two lane group");
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const unsigned first = (threadIdx.x % kWarp) / kLanes * kLanes;
  const unsigned mask = (kLanes == kWarp ? 0xffffffffu : ((1u << kLanes) - 1u) << first);
  for_each_labelled_row<kLanes>(rows, count, num_rows, labels, classes, row_loss,
                                [&](std::int64_t t, std::int64_t r, std::int32_t label) {
    const float* l = logits + r * ld;
    float v[kPer];
    float mx = -INFINITY;
#pragma unroll
    for (int k = 0; k < kPer; ++k) {
      const std::int64_t c = lane + k * kLanes;
      v[k] = c < classes ? l[c] : -INFINITY;
      mx = fmaxf(mx, v[k]);
    }
#pragma unroll
    for (int o = kLanes / 2; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(mask, mx, o, kLanes));
    float se = 0.0f;
#pragma unroll
    for (int k = 0; k < kPer; ++k)
      if (lane + k * kLanes < classes) se += expf(v[k] - mx);
#pragma unroll
    for (int o = kLanes / 2; o > 0; o /= 2) se += __shfl_xor_sync(mask, se, o, kLanes);
    const float lse = mx + logf(se);
    if (lane == 0) row_loss[t] = lse - l[label];
    if (grad != nullptr) {
      float* g = grad + r * ld;
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const std::int64_t c = lane + k * kLanes;
        if (c < classes) g[c] = (expf(v[k] - lse) - (c == label ? 1.0f : 0.0f)) * grad_scale;
      }
    }
  });
}

/// bias_softmax_cross_entropy: rows per lane group of the fused kernel. A block's rows are a fixed slab (its groups
/// take consecutive rows, kLossRowsPerGroup rounds), so the gradient's column sums have a fixed order for a given
/// row count, whatever the GPU.
constexpr int kLossRowsPerGroup = 16;

/// The fused output-layer loss (see kernels::bias_softmax_cross_entropy_async), one pass over every row: kLanes
/// lanes per row, each holding kPer of the row's ld stored columns (c = lane + k kLanes) in registers. A row gets
/// its bias; a listed row (slot >= 0) its loss (the narrow kernel's formulas: the same value) and gradient, an
/// unlisted one a zero gradient row. Each lane sums its columns' float gradient over its rows; the block combines
/// its groups in order into partial[block, :] for column_sum_finish_kernel.
/// Latency-bound (a row's load, reductions and stores in a chain): at least 4 blocks per SM of the 8-lane layout (64
/// registers a thread) so that enough rows are in flight, 2 of the wider ones.
template <int kLanes, int kPer, class G>
__global__ void __launch_bounds__(kElementwiseThreads, kPer <= 8 ? 4 : 2)
    bias_softmax_loss_kernel(float* logits, const float* bias, std::int64_t num_rows, int classes, int ld,
                             const std::int32_t* labels, const std::int32_t* slots, float grad_scale,
                             float* row_loss, G* grad, float* partial) {
  static_assert(kLanes >= 1 && kLanes <= kWarp && (kLanes & (kLanes - 1)) == 0, "a power-of-two lane group");
  constexpr int kGroups = kElementwiseThreads / kLanes;
  __shared__ float sums[kGroups][kLanes * kPer];
  const int lane = static_cast<int>(threadIdx.x) % kLanes;
  const int group = static_cast<int>(threadIdx.x) / kLanes;
  const unsigned first = (threadIdx.x % kWarp) / kLanes * kLanes;
  const unsigned mask = (kLanes == kWarp ? 0xffffffffu : ((1u << kLanes) - 1u) << first);
  float s[kPer];
#pragma unroll
  for (int k = 0; k < kPer; ++k) s[k] = 0.0f;
  const std::int64_t r0 = static_cast<std::int64_t>(blockIdx.x) * kGroups * kLossRowsPerGroup;
  // kBatch rows at a time, all loaded (logits, slot, label) before the first is worked on: a row's chain of
  // load, reductions and stores is latency, and the group has kBatch of them in flight.
  constexpr int kBatch = 2;
  static_assert(kLossRowsPerGroup % kBatch == 0, "whole batches");
  for (int i0 = 0; i0 < kLossRowsPerGroup; i0 += kBatch) {
    float v[kBatch][kPer];
    std::int32_t slot[kBatch], label[kBatch];
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const std::int64_t r = r0 + group + static_cast<std::int64_t>(i0 + j) * kGroups;
      slot[j] = -1;
      label[j] = -1;
#pragma unroll
      for (int k = 0; k < kPer; ++k) v[j][k] = 0.0f;
      if (r < num_rows) {
        slot[j] = slots[r];
        label[j] = labels[r];
        const float* l = logits + r * ld;
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
          const int c = lane + k * kLanes;  // ld <= 512
          if (c < ld) v[j][k] = l[c];
        }
      }
    }
#pragma unroll
    for (int j = 0; j < kBatch; ++j) {
      const std::int64_t r = r0 + group + static_cast<std::int64_t>(i0 + j) * kGroups;
      if (r >= num_rows) break;  // the same for every lane of the group
      float* l = logits + r * ld;
      if (bias != nullptr) {  // no add without a bias: -0 stays -0
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
          const int c = lane + k * kLanes;  // ld <= 512
          if (c < ld) {
            v[j][k] += __ldg(bias + c);
            l[c] = v[j][k];
          }
        }
      }
      const std::int32_t t = slot[j], y = label[j];
      float gv[kPer];
#pragma unroll
      for (int k = 0; k < kPer; ++k) gv[k] = 0.0f;
      if (t >= 0 && (y < 0 || y >= classes)) {
        if (lane == 0) row_loss[t] = __int_as_float(0x7fc00000);  // loudly wrong, as the listed-row kernels
      } else if (t >= 0) {
        float mx = -INFINITY, at_label = 0.0f;
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
          const int c = lane + k * kLanes;  // ld <= 512
          if (c < classes) mx = fmaxf(mx, v[j][k]);
          if (c == y) at_label = v[j][k];
        }
#pragma unroll
        for (int o = kLanes / 2; o > 0; o /= 2) {
          mx = fmaxf(mx, __shfl_xor_sync(mask, mx, o, kLanes));
          at_label += __shfl_xor_sync(mask, at_label, o, kLanes);  // one lane holds it, the rest add zeros: exact
        }
        float se = 0.0f;
#pragma unroll
        for (int k = 0; k < kPer; ++k)
          if (lane + k * kLanes < classes) se += expf(v[j][k] - mx);
#pragma unroll
        for (int o = kLanes / 2; o > 0; o /= 2) se += __shfl_xor_sync(mask, se, o, kLanes);
        const float lse = mx + logf(se);
        if (lane == 0) row_loss[t] = lse - at_label;
#pragma unroll
        for (int k = 0; k < kPer; ++k) {
          const int c = lane + k * kLanes;  // ld <= 512
          if (c < classes) gv[k] = (expf(v[j][k] - lse) - (c == y ? 1.0f : 0.0f)) * grad_scale;
        }
      }
      G* g = grad + r * ld;
#pragma unroll
      for (int k = 0; k < kPer; ++k) {
        const int c = lane + k * kLanes;  // ld <= 512
        if (c < ld) {
          store_float(g + c, gv[k]);
          s[k] += gv[k];
        }
      }
    }
  }
#pragma unroll
  for (int k = 0; k < kPer; ++k) sums[group][lane + k * kLanes] = s[k];
  __syncthreads();
  for (std::int64_t c = threadIdx.x; c < ld; c += blockDim.x) {
    float total = 0.0f;
#pragma unroll 4
    for (int q = 0; q < kGroups; ++q) total += sums[q][c];
    partial[static_cast<std::int64_t>(blockIdx.x) * ld + c] = total;
  }
}

/// 1 when the argmax (lowest index among ties) of listed row t equals its label.
struct IsCorrect {
  const float* logits;
  std::int64_t classes, ld;
  const std::int32_t* labels;
  const NodeId* rows;
  __device__ std::int64_t operator()(std::int64_t t) const {
    const std::int64_t r = rows[t];
    const float* l = logits + r * ld;
    std::int64_t best = 0;
    float best_value = l[0];
    for (std::int64_t c = 1; c < classes; ++c) {
      if (l[c] > best_value) {
        best_value = l[c];
        best = c;
      }
    }
    return best == labels[r] ? 1 : 0;
  }
};

struct Square {
  __device__ float operator()(float v) const { return v * v; }
};

// ------------------------------------------------------------------------------------------------ optimiser etc.

__global__ void adam_kernel(float* w, const float* g, float* m, float* v, std::int64_t n, AdamParams p,
                            AdamCorrections from_step) {
  const AdamCorrections bc = adam_corrections_of(p, from_step);
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    const float gi = g[i] + p.weight_decay * w[i];
    const float mi = p.beta1 * m[i] + (1.0f - p.beta1) * gi;
    const float vi = p.beta2 * v[i] + (1.0f - p.beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float m_hat = mi / bc.one_minus_beta1_pow;
    const float v_hat = vi / bc.one_minus_beta2_pow;
    w[i] -= p.lr * m_hat / (sqrtf(v_hat) + p.eps);
  }
}

__global__ void inv_sqrt_degree_kernel(const RowOffset* offsets, std::int64_t n, float extra, float* dinv) {
  for (std::int64_t i = global_thread(); i < n; i += grid_stride()) {
    const float d = static_cast<float>(offsets[i + 1] - offsets[i]) + extra;
    dinv[i] = d > 0.0f ? 1.0f / sqrtf(d) : 0.0f;
  }
}

template <class T>
__global__ void gather_rows_kernel(const T* src, const NodeId* idx, std::int64_t count, std::int64_t width, T* dst) {
  const std::int64_t n = count * width;
  for (std::int64_t t = global_thread(); t < n; t += grid_stride()) {
    const std::int64_t i = t / width, c = t - i * width;
    dst[t] = src[static_cast<std::int64_t>(idx[i]) * width + c];
  }
}

__global__ void scatter_add_rows_kernel(const float* src, const NodeId* idx, std::int64_t count,
                                        std::int64_t width, float* dst) {
  const std::int64_t n = count * width;
  for (std::int64_t t = global_thread(); t < n; t += grid_stride()) {
    const std::int64_t i = t / width, c = t - i * width;
    atomicAdd(dst + static_cast<std::int64_t>(idx[i]) * width + c, src[t]);
  }
}

/// The mask of the dense dropout, per stored entry: one thread per entry, its row found by a binary search over the
/// offsets. (A thread per row walked a row's entries one Philox draw after another, and a row of the transpose of
/// a bag-of-words matrix, one word, can hold thousands: Cora's two calls took 0.36 ms of a 0.84 ms profiled epoch on
/// an H200.)
__global__ void dropout_csr_values_kernel(CsrView a, bool transposed, Dropout d, float scale, float* out) {
  if (a.num_rows == 0) return;
  const std::uint64_t key = d.p > 0.0f ? dropout_key(d) : 0;
  const std::int64_t first = a.row_offsets[0], last = a.row_offsets[a.num_rows];
  for (std::int64_t e = first + global_thread(); e < last; e += grid_stride()) {
    std::int64_t r = 0, hi = a.num_rows;  // row_offsets[r] <= e < row_offsets[hi]; ends at e's row
    while (hi - r > 1) {
      const std::int64_t mid = r + (hi - r) / 2;
      if (a.row_offsets[mid] <= e) r = mid;
      else hi = mid;
    }
    const std::int64_t c = a.col_ids[e];
    const std::int64_t node = dropout_global_node(d, transposed ? c : r);
    const bool keep = d.p == 0.0f || dropout_element_keeps(key, d.p, node, transposed ? r : c);
    out[e] = keep ? a.values[e] * scale : 0.0f;
  }
}

}  // namespace

void dropout_csr_values(const Context& ctx, const CsrView& a, bool transposed, const Dropout& d, float* out) {
  const float scale = d.p > 0.0f ? dropout_scale(d.p) : 1.0f;
  // Sized by the entries where the host knows them (the engine's views do), else by the rows; grid-stride either way.
  const std::int64_t work = std::max(a.entries_bound, a.num_rows);
  dropout_csr_values_kernel<<<elementwise_blocks(work), kElementwiseThreads, 0, ctx.stream>>>(a, transposed, d, scale,
                                                                                              out);
  GCNPART_CUDA_TRY(cudaGetLastError());
}

// ------------------------------------------------------------------------------------------------ stream helpers

void synchronize(const Context& ctx) { GCNPART_CUDA_TRY(cudaStreamSynchronize(ctx.stream)); }

void copy(const Context& ctx, void* dst, const void* src, std::size_t bytes) {
  GCNPART_CUDA_TRY(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, ctx.stream));
}

void memset_zero(const Context& ctx, void* dst, std::size_t bytes) {
  GCNPART_CUDA_TRY(cudaMemsetAsync(dst, 0, bytes, ctx.stream));
}

namespace {
/// Binds the cuBLAS handle to ctx.stream where it is not already: cublasSetStream also resets the handle's workspace
/// to cuBLAS's own pool, which would drop one set by set_blas_workspace (and, inside a CUDA Graph capture, make cuBLAS
/// allocate a pool for the graph).
void bind_blas(const Context& ctx) {
  cudaStream_t bound = nullptr;
  GCNPART_CUBLAS_TRY(cublasGetStream(ctx.cublas, &bound));
  if (bound != ctx.stream) GCNPART_CUBLAS_TRY(cublasSetStream(ctx.cublas, ctx.stream));
}
}  // namespace

void set_blas_workspace(const Context& ctx, void* workspace, std::size_t bytes) {
  bind_blas(ctx);
  GCNPART_CUBLAS_TRY(cublasSetWorkspace(ctx.cublas, workspace, bytes));
}

void reset_blas_workspace(const Context& ctx) {
  GCNPART_CUBLAS_TRY(cublasSetStream(ctx.cublas, ctx.stream));  // resets the workspace to cuBLAS's own pool
}

// ------------------------------------------------------------------------------------------------ dense

void gemm(const Context& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  if (k == 0 || alpha == 0.0f) {  // C = beta C, and never read C when beta == 0
    if (beta == 1.0f) return;
    scale_matrix_kernel<<<elementwise_blocks(m * n), kElementwiseThreads, 0, ctx.stream>>>(c, m, n, ldc, beta);
    GCNPART_CUDA_TRY(cudaGetLastError());
    return;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: hand cuBLAS B first, A second.
  bind_blas(ctx);
  const cublasComputeType_t compute =
      traits(ctx.precision).tf32_gemm ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  GCNPART_CUBLAS_TRY(cublasGemmEx_64(ctx.cublas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                     n, m, k, &alpha, b, CUDA_R_32F, ldb, a, CUDA_R_32F, lda, &beta, c, CUDA_R_32F,
                                     ldc, compute, CUBLAS_GEMM_DEFAULT));
}

namespace {
/// Rows per slab of the column sums: depends on the row count only (never on the GPU), so the sum order is fixed.
std::int64_t column_sum_slab_rows(std::int64_t rows) {
  return std::max(kColumnSumSlabRows, (rows + kMaxGridY - 1) / kMaxGridY);
}

/// dz = relu / dropout backward of dh, and sums = column sums of dz (rows >= 1).
template <class T>
void relu_dropout_backward_sum_impl(const Context& ctx, const T* h, const T* dh, std::int64_t rows, std::int64_t width,
                                    float p, T* dz, float* sums, const std::uint8_t* positive) {
  const float scale = p > 0.0f ? dropout_scale(p) : 1.0f;
  const std::int64_t slab_rows = column_sum_slab_rows(rows);
  const std::int64_t slabs = (rows + slab_rows - 1) / slab_rows;
  Workspace partial(ctx, static_cast<std::size_t>(slabs * width) * sizeof(float));
  const bool vec = width % 4 == 0 && (positive != nullptr || four_aligned(h)) && four_aligned(dh) && four_aligned(dz);
  const int per_thread = vec ? 4 : 1;
  const dim3 grid(static_cast<unsigned>((width + kColumnSumCols * per_thread - 1) / (kColumnSumCols * per_thread)),
                  static_cast<unsigned>(slabs));
  const dim3 block(kColumnSumCols, kColumnSumRowLanes);
  if (vec) {
    relu_dropout_backward_sum_kernel<T, 4><<<grid, block, 0, ctx.stream>>>(h, dh, rows, width, slab_rows, scale, dz,
                                                                           partial.as<float>(), positive);
  } else {
    relu_dropout_backward_sum_kernel<T, 1><<<grid, block, 0, ctx.stream>>>(h, dh, rows, width, slab_rows, scale, dz,
                                                                           partial.as<float>(), positive);
  }
  GCNPART_CUDA_TRY(cudaGetLastError());
  launch_column_sum_finish(ctx, partial.as<float>(), slabs, width, sums);
}

template <class T>
void column_sum_impl(const Context& ctx, const T* x, std::int64_t rows, std::int64_t width, float* out) {
  if (rows == 0) {
    GCNPART_CUDA_TRY(cudaMemsetAsync(out, 0, static_cast<std::size_t>(width) * sizeof(float), ctx.stream));
    return;
  }
  const std::int64_t slab_rows = column_sum_slab_rows(rows);
  const std::int64_t slabs = (rows + slab_rows - 1) / slab_rows;
  Workspace partial(ctx, static_cast<std::size_t>(slabs * width) * sizeof(float));
  const dim3 grid(static_cast<unsigned>((width + kColumnSumCols - 1) / kColumnSumCols), static_cast<unsigned>(slabs));
  column_sum_slabs_kernel<<<grid, dim3(kColumnSumCols, kColumnSumRowLanes), 0, ctx.stream>>>(
      x, rows, width, slab_rows, partial.as<float>());
  GCNPART_CUDA_TRY(cudaGetLastError());
  launch_column_sum_finish(ctx, partial.as<float>(), slabs, width, out);
}
}  // namespace

void column_sum(const Context& ctx, const float* x, std::int64_t rows, std::int64_t width, float* out) {
  column_sum_impl(ctx, x, rows, width, out);
}

void column_sum_bf16(const Context& ctx, const Bf16* x, std::int64_t rows, std::int64_t width, float* out) {
  column_sum_impl(ctx, x, rows, width, out);
}

void gemm_bf16(const Context& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k,
               float alpha, const Bf16* a, std::int64_t lda, const Bf16* b, std::int64_t ldb, float beta, void* c,
               bool c_bf16, std::int64_t ldc) {
  if (k == 0 || alpha == 0.0f) {
    if (c_bf16) {  // beta == 0 (checked at the entry point)
      GCNPART_CUDA_TRY(cudaMemset2DAsync(c, static_cast<std::size_t>(ldc) * sizeof(Bf16), 0,
                                         static_cast<std::size_t>(n) * sizeof(Bf16), static_cast<std::size_t>(m),
                                         ctx.stream));
      return;
    }
    gemm(ctx, trans_a, trans_b, m, n, 0, alpha, nullptr, lda, nullptr, ldb, beta, static_cast<float*>(c), ldc);
    return;
  }
  // As gemm: row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T. bf16 inputs, float32 compute
  // (bf16 tensor cores), C in float32 or rounded to bf16 by cuBLAS.
  bind_blas(ctx);
  GCNPART_CUBLAS_TRY(cublasGemmEx_64(ctx.cublas, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N,
                                     n, m, k, &alpha, b, CUDA_R_16BF, ldb, a, CUDA_R_16BF, lda, &beta, c,
                                     c_bf16 ? CUDA_R_16BF : CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// ------------------------------------------------------------------------------------------------ epilogues

void bias_act_dropout(const Context& ctx, const float* z, const float* bias, std::int64_t rows, std::int64_t width,
                      bool relu, const Dropout& dropout, float* out, std::uint8_t* positive) {
  launch_bias_act_dropout(ctx, z, bias, rows, width, relu, dropout, out, positive);
}

void bias_act_dropout_backward(const Context& ctx, const float* h, const float* dh, std::int64_t rows,
                               std::int64_t width, bool relu, float p, float* dz) {
  const std::int64_t n = rows * width;
  if (!relu) {  // p == 0 here (checked at the entry point): dz = dh
    if (dz != dh) copy(ctx, dz, dh, static_cast<std::size_t>(n) * sizeof(float));
    return;
  }
  const float scale = p > 0.0f ? dropout_scale(p) : 1.0f;
  launch_relu_dropout_backward(ctx, h, dh, n, scale, dz);
}

void bias_act_dropout_to_bf16(const Context& ctx, const float* z, const float* bias, std::int64_t rows,
                              std::int64_t width, bool relu, const Dropout& dropout, Bf16* out,
                              std::uint8_t* positive) {
  launch_bias_act_dropout(ctx, z, bias, rows, width, relu, dropout, out, positive);
}

void dropout_bf16(const Context& ctx, const Bf16* x, std::int64_t rows, std::int64_t width, const Dropout& dropout,
                  Bf16* out) {
  launch_bias_act_dropout(ctx, x, static_cast<const float*>(nullptr), rows, width, false, dropout, out);
}

void relu_dropout_backward_bf16(const Context& ctx, const Bf16* h, const Bf16* dh, std::int64_t n, float p, Bf16* dz) {
  const float scale = p > 0.0f ? dropout_scale(p) : 1.0f;
  launch_relu_dropout_backward(ctx, h, dh, n, scale, dz);
}

void relu_dropout_backward_sum_bf16(const Context& ctx, const Bf16* h, const Bf16* dh, std::int64_t rows,
                                    std::int64_t width, float p, Bf16* dz, float* sums,
                                    const std::uint8_t* positive) {
  relu_dropout_backward_sum_impl(ctx, h, dh, rows, width, p, dz, sums, positive);
}

void relu_dropout_backward_sum(const Context& ctx, const float* h, const float* dh, std::int64_t rows,
                               std::int64_t width, float p, float* dz, float* sums,
                               const std::uint8_t* positive) {
  relu_dropout_backward_sum_impl(ctx, h, dh, rows, width, p, dz, sums, positive);
}

// ------------------------------------------------------------------------------------------------ loss

void softmax_cross_entropy(const Context& ctx, const float* logits, std::int64_t num_rows, std::int64_t classes,
                           std::int64_t ld, const std::int32_t* labels, const NodeId* rows, std::int64_t count,
                           float grad_scale, float* loss_sum, float* grad) {
  if (grad != nullptr) memset_zero(ctx, grad, static_cast<std::size_t>(num_rows * ld) * sizeof(float));
  if (count == 0) {
    memset_zero(ctx, loss_sum, sizeof(float));
    return;
  }
  std::size_t temp_bytes = 0;
  GCNPART_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, temp_bytes, static_cast<const float*>(nullptr), loss_sum, count,
                                          ctx.stream));
  const std::size_t losses_bytes = Workspace::align_up(static_cast<std::size_t>(count) * sizeof(float));
  Workspace scratch(ctx, losses_bytes + temp_bytes);
  float* row_loss = scratch.as<float>();
  constexpr int kNarrowLanes = 8, kNarrowPer = 8;  // up to 64 classes
  if (classes <= kNarrowLanes * kNarrowPer) {
    softmax_cross_entropy_narrow_kernel<kNarrowLanes, kNarrowPer>
        <<<elementwise_blocks(count * kNarrowLanes), kElementwiseThreads, 0, ctx.stream>>>(
            logits, num_rows, classes, ld, labels, rows, count, grad_scale, row_loss, grad);
  } else {
    softmax_cross_entropy_kernel<<<elementwise_blocks(count * kWarp), kElementwiseThreads, 0, ctx.stream>>>(
        logits, num_rows, classes, ld, labels, rows, count, grad_scale, row_loss, grad);
  }
  GCNPART_CUDA_TRY(cudaGetLastError());
  GCNPART_CUDA_TRY(
      cub::DeviceReduce::Sum(scratch.as<void>(losses_bytes), temp_bytes, row_loss, loss_sum, count, ctx.stream));
}

namespace {
template <int kLanes, int kPer, class G>
void launch_bias_softmax_loss(const Context& ctx, float* logits, const float* bias, std::int64_t num_rows,
                              std::int64_t classes, std::int64_t ld, const std::int32_t* labels,
                              const std::int32_t* slots, float grad_scale, float* row_loss, G* grad,
                              float* grad_column_sums) {
  constexpr std::int64_t kRowsPerBlock = kElementwiseThreads / kLanes * kLossRowsPerGroup;
  const std::int64_t blocks = std::max<std::int64_t>(1, (num_rows + kRowsPerBlock - 1) / kRowsPerBlock);
  Workspace partial(ctx, static_cast<std::size_t>(blocks * ld) * sizeof(float));
  bias_softmax_loss_kernel<kLanes, kPer, G><<<static_cast<unsigned>(blocks), kElementwiseThreads, 0, ctx.stream>>>(
      logits, bias, num_rows, static_cast<int>(classes), static_cast<int>(ld), labels, slots, grad_scale, row_loss, grad,
      partial.as<float>());
  GCNPART_CUDA_TRY(cudaGetLastError());
  launch_column_sum_finish(ctx, partial.as<float>(), blocks, ld, grad_column_sums);
}
}  // namespace

void bias_softmax_cross_entropy(const Context& ctx, float* logits, const float* bias, std::int64_t num_rows,
                                std::int64_t classes, std::int64_t ld, const std::int32_t* labels, const NodeId* rows,
                                const std::int32_t* row_slots, std::int64_t count, float grad_scale, float* loss_sum,
                                float* grad, Bf16* grad16, float* grad_column_sums) {
  if (num_rows == 0) {
    memset_zero(ctx, loss_sum, sizeof(float));
    memset_zero(ctx, grad_column_sums, static_cast<std::size_t>(ld) * sizeof(float));
    return;
  }
  constexpr std::int64_t kMaxFusedWidth = kWarp * 16;
  if (ld > kMaxFusedWidth) {
    // Wider than the fused kernel holds in registers: the separate passes, with a float gradient.
    launch_bias_act_dropout(ctx, static_cast<const float*>(logits), bias, num_rows, ld, false, Dropout{}, logits);
    Workspace wide;
    float* g = grad;
    if (g == nullptr) {
      wide = Workspace(ctx, static_cast<std::size_t>(num_rows * ld) * sizeof(float));
      g = wide.as<float>();
    }
    softmax_cross_entropy(ctx, logits, num_rows, classes, ld, labels, rows, count, grad_scale, loss_sum, g);
    column_sum_impl(ctx, static_cast<const float*>(g), num_rows, ld, grad_column_sums);
    if (grad16 != nullptr) convert_to_bf16(ctx, g, num_rows * ld, grad16);
    return;
  }
  std::size_t temp_bytes = 0;
  if (count > 0)
    GCNPART_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, temp_bytes, static_cast<const float*>(nullptr), loss_sum, count,
                                            ctx.stream));
  const std::size_t losses_bytes = Workspace::align_up(static_cast<std::size_t>(std::max<std::int64_t>(count, 1)) *
                                                       sizeof(float));
  Workspace scratch(ctx, losses_bytes + temp_bytes);
  float* row_loss = scratch.as<float>();
  auto go = [&]<class G>(G* g) {
    if (ld <= 64)
      launch_bias_softmax_loss<8, 8>(ctx, logits, bias, num_rows, classes, ld, labels, row_slots, grad_scale,
                                     row_loss, g, grad_column_sums);
    else if (ld <= 128)
      launch_bias_softmax_loss<32, 4>(ctx, logits, bias, num_rows, classes, ld, labels, row_slots, grad_scale,
                                      row_loss, g, grad_column_sums);
    else
      launch_bias_softmax_loss<32, 16>(ctx, logits, bias, num_rows, classes, ld, labels, row_slots, grad_scale,
                                       row_loss, g, grad_column_sums);
  };
  if (grad16 != nullptr)
    go(grad16);
  else
    go(grad);
  if (count == 0) {
    memset_zero(ctx, loss_sum, sizeof(float));
    return;
  }
  GCNPART_CUDA_TRY(
      cub::DeviceReduce::Sum(scratch.as<void>(losses_bytes), temp_bytes, row_loss, loss_sum, count, ctx.stream));
}

void count_correct(const Context& ctx, const float* logits, std::int64_t classes, std::int64_t ld,
                   const std::int32_t* labels, const NodeId* rows, std::int64_t count, std::int64_t* correct) {
  if (count == 0) {
    memset_zero(ctx, correct, sizeof(std::int64_t));
    return;
  }
  const thrust::counting_iterator<std::int64_t> first(0);
  const IsCorrect is_correct{logits, classes, ld, labels, rows};
  std::size_t temp_bytes = 0;
  GCNPART_CUDA_TRY(cub::DeviceReduce::TransformReduce(nullptr, temp_bytes, first, correct, count,
                                                      ::cuda::std::plus<std::int64_t>{}, is_correct,
                                                      std::int64_t{0}, ctx.stream));
  Workspace temp(ctx, std::max<std::size_t>(temp_bytes, 1));  // null storage would mean "size query"
  GCNPART_CUDA_TRY(cub::DeviceReduce::TransformReduce(temp.get(), temp_bytes, first, correct, count,
                                                      ::cuda::std::plus<std::int64_t>{}, is_correct,
                                                      std::int64_t{0}, ctx.stream));
}

// ------------------------------------------------------------------------------------------------ optimiser etc.

void adam_step(const Context& ctx, float* w, const float* g, float* m, float* v, std::int64_t n, const AdamParams& p) {
  adam_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, ctx.stream>>>(w, g, m, v, n, p, adam_corrections(p));
  GCNPART_CUDA_TRY(cudaGetLastError());
}

void inv_sqrt_degree(const Context& ctx, const RowOffset* row_offsets, std::int64_t n, float extra, float* dinv) {
  inv_sqrt_degree_kernel<<<elementwise_blocks(n), kElementwiseThreads, 0, ctx.stream>>>(row_offsets, n, extra, dinv);
  GCNPART_CUDA_TRY(cudaGetLastError());
}

void gather_rows(const Context& ctx, const float* src, const NodeId* idx, std::int64_t count, std::int64_t width,
                 float* dst) {
  gather_rows_kernel<<<elementwise_blocks(count * width), kElementwiseThreads, 0, ctx.stream>>>(src, idx, count,
                                                                                               width, dst);
  GCNPART_CUDA_TRY(cudaGetLastError());
}

void gather_rows_bf16(const Context& ctx, const Bf16* src, const NodeId* idx, std::int64_t count, std::int64_t width,
                      Bf16* dst) {
  gather_rows_kernel<<<elementwise_blocks(count * width), kElementwiseThreads, 0, ctx.stream>>>(src, idx, count,
                                                                                               width, dst);
  GCNPART_CUDA_TRY(cudaGetLastError());
}

void scatter_add_rows(const Context& ctx, const float* src, const NodeId* idx, std::int64_t count,
                      std::int64_t width, float* dst) {
  scatter_add_rows_kernel<<<elementwise_blocks(count * width), kElementwiseThreads, 0, ctx.stream>>>(src, idx, count,
                                                                                                    width, dst);
  GCNPART_CUDA_TRY(cudaGetLastError());
}

// ------------------------------------------------------------------------------------------------ reductions

void sum(const Context& ctx, const float* x, std::int64_t n, float* out) {
  if (n == 0) {
    memset_zero(ctx, out, sizeof(float));
    return;
  }
  std::size_t temp_bytes = 0;
  GCNPART_CUDA_TRY(cub::DeviceReduce::Sum(nullptr, temp_bytes, x, out, n, ctx.stream));
  Workspace temp(ctx, std::max<std::size_t>(temp_bytes, 1));  // null storage would mean "size query"
  GCNPART_CUDA_TRY(cub::DeviceReduce::Sum(temp.get(), temp_bytes, x, out, n, ctx.stream));
}

void sum_squares(const Context& ctx, const float* x, std::int64_t n, float* out) {
  if (n == 0) {
    memset_zero(ctx, out, sizeof(float));
    return;
  }
  std::size_t temp_bytes = 0;
  GCNPART_CUDA_TRY(cub::DeviceReduce::TransformReduce(nullptr, temp_bytes, x, out, n, ::cuda::std::plus<float>{},
                                                      Square{}, 0.0f, ctx.stream));
  Workspace temp(ctx, std::max<std::size_t>(temp_bytes, 1));  // null storage would mean "size query"
  GCNPART_CUDA_TRY(cub::DeviceReduce::TransformReduce(temp.get(), temp_bytes, x, out, n, ::cuda::std::plus<float>{},
                                                      Square{}, 0.0f, ctx.stream));
}

}  // namespace gcnpart::kernels::detail::cuda
