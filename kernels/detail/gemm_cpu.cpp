// CPU GEMM, row-major, C = alpha op(A) op(B) + beta C. Written for GCN shapes: A is often a sparse bag-of-words
// feature matrix (about 1% non-zero) or an activation matrix, op(B) is a thin weight matrix. The loops therefore
// walk A once, skip its zero entries (found 32 at a time with vector compares), and for every non-zero a_ik
// add a_ik * B[k, :] to C[i, :] with a vectorised axpy. Each C element is accumulated in a fixed order, so the
// result does not depend on the thread count.
//
// Skipping zeros means 0 * inf or 0 * NaN in B contributes nothing (not NaN), as in a sparse product.
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cstdint>

#include "kernels/detail/backends.hpp"
#include "kernels/detail/nonzero_scan.hpp"
#include "kernels/detail/workspace.hpp"

namespace gcnpart::kernels::detail::cpu {
namespace {

// Tuning constants of the CPU GEMM (one place).
constexpr std::int64_t kRowBlock = 16;            // rows of C per task (plain A)
constexpr std::int64_t kKBlock = 256;             // rows of op(B) kept hot while a row block sweeps them
constexpr std::int64_t kColumnTileBytes = 64 << 10;  // C tile per task (transposed A)
constexpr std::int64_t kTasksPerThread = 4;       // load balance for the transposed-A split
constexpr std::int64_t kSplitKRows = 4096;        // k rows per partial product when m is too small to split
constexpr std::int64_t kSplitKMaxM = 64;          // m below which a long transposed-A product splits over k
constexpr std::int64_t kTransposeTile = 32;
constexpr std::int64_t kParallelMinWork = 1 << 15;  // m * k (entries of A) below which one thread does it all

/// y += a x. Fixed 16-wide steps compile to straight vector code with no alignment peeling or alias checks, which
/// matters when it runs once per non-zero of A over a row of 16 (the usual GCN hidden width).
inline void axpy(float* __restrict y, const float* __restrict x, float a, std::int64_t n) {
  std::int64_t j = 0;
  for (; j + 16 <= n; j += 16)
    for (int u = 0; u < 16; ++u) y[j + u] += a * x[j + u];
  for (; j < n; ++j) y[j] += a * x[j];
}

/// C[i0..i1, :] *= beta, where beta == 0 writes zeros without reading C.
inline void scale_rows(float* c, std::int64_t ldc, std::int64_t i0, std::int64_t i1, std::int64_t n, float beta) {
  if (beta == 1.0f) return;
  for (std::int64_t i = i0; i < i1; ++i) {
    float* __restrict row = c + i * ldc;
    if (beta == 0.0f) {
      for (std::int64_t j = 0; j < n; ++j) row[j] = 0.0f;
    } else {
#pragma omp simd
      for (std::int64_t j = 0; j < n; ++j) row[j] *= beta;
    }
  }
}

/// op(A) = A (m x k, row-major): tasks own blocks of C rows.
void gemm_plain_a(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a, std::int64_t lda,
                  const float* bp, std::int64_t ldbp, float beta, float* c, std::int64_t ldc, bool product) {
  const std::int64_t blocks = (m + kRowBlock - 1) / kRowBlock;
#pragma omp parallel for schedule(static) if (m * std::max<std::int64_t>(k, n) > kParallelMinWork)
  for (std::int64_t blk = 0; blk < blocks; ++blk) {
    const std::int64_t i0 = blk * kRowBlock, i1 = std::min(m, i0 + kRowBlock);
    scale_rows(c, ldc, i0, i1, n, beta);
    if (!product) continue;
    for (std::int64_t k0 = 0; k0 < k; k0 += kKBlock) {
      const std::int64_t kn = std::min(k, k0 + kKBlock) - k0;
      for (std::int64_t i = i0; i < i1; ++i) {
        float* crow = c + i * ldc;
        const float* brows = bp + k0 * ldbp;
        for_each_nonzero(a + i * lda + k0, kn,
                         [&](std::int64_t t, float v) { axpy(crow, brows + t * ldbp, alpha * v, n); });
      }
    }
  }
}

/// op(A) = A^T with A stored k x m: tasks own blocks of C rows (= columns of the stored A) and sweep all k rows.
void gemm_transposed_a(std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                       std::int64_t lda, const float* bp, std::int64_t ldbp, float beta, float* c, std::int64_t ldc,
                       bool product) {
  const std::int64_t threads = omp_get_max_threads();
  std::int64_t tile = std::max<std::int64_t>(8, kColumnTileBytes / (4 * std::max<std::int64_t>(n, 1)));
  tile = std::min(tile, std::max<std::int64_t>(8, (m + threads * kTasksPerThread - 1) / (threads * kTasksPerThread)));
  const std::int64_t tiles = (m + tile - 1) / tile;
#pragma omp parallel for schedule(dynamic, 1) if (m * std::max<std::int64_t>(k, n) > kParallelMinWork)
  for (std::int64_t t = 0; t < tiles; ++t) {
    const std::int64_t i0 = t * tile, i1 = std::min(m, i0 + tile);
    scale_rows(c, ldc, i0, i1, n, beta);
    if (!product) continue;
    float* ctile = c + i0 * ldc;
    for (std::int64_t kk = 0; kk < k; ++kk) {
      const float* brow = bp + kk * ldbp;
      for_each_nonzero(a + kk * lda + i0, i1 - i0,
                       [&](std::int64_t u, float v) { axpy(ctile + u * ldc, brow, alpha * v, n); });
    }
  }
}

/// op(A) = A^T with few columns m and many rows k: fixed-size k chunks make private partial products (so that
/// the result does not depend on the thread count), summed in chunk order.
void gemm_transposed_a_split_k(const Context& ctx, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                               const float* a, std::int64_t lda, const float* bp, std::int64_t ldbp, float beta,
                               float* c, std::int64_t ldc) {
  const std::int64_t chunks = (k + kSplitKRows - 1) / kSplitKRows;
  Workspace partials(ctx, static_cast<std::size_t>(chunks * m * n) * sizeof(float));
  float* const part = partials.as<float>();
#pragma omp parallel for schedule(dynamic, 1)
  for (std::int64_t ch = 0; ch < chunks; ++ch) {
    float* p = part + ch * m * n;
    std::fill(p, p + m * n, 0.0f);
    const std::int64_t k1 = std::min(k, (ch + 1) * kSplitKRows);
    for (std::int64_t kk = ch * kSplitKRows; kk < k1; ++kk) {
      const float* brow = bp + kk * ldbp;
      for_each_nonzero(a + kk * lda, m, [&](std::int64_t i, float v) { axpy(p + i * n, brow, alpha * v, n); });
    }
  }
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < m; ++i) {
    float* crow = c + i * ldc;
    for (std::int64_t j = 0; j < n; ++j) {
      float s = 0.0f;
      for (std::int64_t ch = 0; ch < chunks; ++ch) s += part[(ch * m + i) * n + j];
      crow[j] = beta == 0.0f ? s : beta * crow[j] + s;
    }
  }
}

/// bp[kk * n + j] = b[j * ldb + kk]: op(B) = B^T materialised row-major (k x n).
void transpose_into(const float* b, std::int64_t ldb, std::int64_t k, std::int64_t n, float* bp) {
  const std::int64_t kt = (k + kTransposeTile - 1) / kTransposeTile;
#pragma omp parallel for schedule(static) if (k * n > kParallelMinWork)
  for (std::int64_t tk = 0; tk < kt; ++tk) {
    const std::int64_t k0 = tk * kTransposeTile, k1 = std::min(k, k0 + kTransposeTile);
    for (std::int64_t j0 = 0; j0 < n; j0 += kTransposeTile) {
      const std::int64_t j1 = std::min(n, j0 + kTransposeTile);
      for (std::int64_t kk = k0; kk < k1; ++kk)
        for (std::int64_t j = j0; j < j1; ++j) bp[kk * n + j] = b[j * ldb + kk];
    }
  }
}

}  // namespace

void gemm(const Context& ctx, bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc) {
  const bool product = alpha != 0.0f && k > 0;
  const float* bp = b;
  std::int64_t ldbp = ldb;
  Workspace packed;
  if (product && trans_b) {
    packed = Workspace(ctx, static_cast<std::size_t>(k * n) * sizeof(float));
    transpose_into(b, ldb, k, n, packed.as<float>());
    bp = packed.as<float>();
    ldbp = n;
  }
  if (!trans_a) {
    gemm_plain_a(m, n, k, alpha, a, lda, bp, ldbp, beta, c, ldc, product);
  } else if (product && m < kSplitKMaxM && k >= 2 * kSplitKRows) {
    gemm_transposed_a_split_k(ctx, m, n, k, alpha, a, lda, bp, ldbp, beta, c, ldc);
  } else {
    gemm_transposed_a(m, n, k, alpha, a, lda, bp, ldbp, beta, c, ldc, product);
  }
}

}  // namespace gcnpart::kernels::detail::cpu
