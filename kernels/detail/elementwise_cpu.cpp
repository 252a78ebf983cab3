// CPU reference of the epilogues, loss, accuracy, Adam, normalisation, row movement and reductions. Sums are
// formed in double over fixed-size chunks combined in order, so results do not depend on the thread count.
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "kernels/detail/backends.hpp"
#include "kernels/detail/dropout_mask.hpp"
#include "kernels/detail/nonzero_scan.hpp"

namespace gcnpart::kernels::detail::cpu {
namespace {

constexpr std::int64_t kReduceChunk = 1 << 14;  // elements per partial sum
constexpr std::int64_t kColumnBlock = 16;        // columns per task in the order-preserving scatter-add
// Loops over fewer elements than this run on the calling thread: a parallel region costs microseconds, more
// when several virtual devices share the cores.
constexpr std::int64_t kParallelMinWork = 1 << 15;

template <class F>
double chunked_sum(std::int64_t n, F&& term) {
  const std::int64_t chunks = (n + kReduceChunk - 1) / kReduceChunk;
  std::vector<double> partial(static_cast<std::size_t>(chunks), 0.0);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (std::int64_t ch = 0; ch < chunks; ++ch) {
    const std::int64_t end = std::min(n, (ch + 1) * kReduceChunk);
    double s = 0.0;
    for (std::int64_t i = ch * kReduceChunk; i < end; ++i) s += term(i);
    partial[static_cast<std::size_t>(ch)] = s;
  }
  double total = 0.0;
  for (double s : partial) total += s;
  return total;
}

}  // namespace

void synchronize(const Context&) {}

void copy(const Context&, void* dst, const void* src, std::size_t bytes) { std::memmove(dst, src, bytes); }

void memset_zero(const Context&, void* dst, std::size_t bytes) { std::memset(dst, 0, bytes); }
void set_blas_workspace(const Context&, void*, std::size_t) {}  // the CPU GEMM takes no workspace
void reset_blas_workspace(const Context&) {}

void column_sum(const Context&, const float* x, std::int64_t rows, std::int64_t width, float* out) {
  const std::int64_t chunks = (rows + kReduceChunk - 1) / kReduceChunk;
  std::vector<double> partial(static_cast<std::size_t>(chunks * width), 0.0);
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (std::int64_t ch = 0; ch < chunks; ++ch) {
    double* p = partial.data() + ch * width;
    const std::int64_t end = std::min(rows, (ch + 1) * kReduceChunk);
    for (std::int64_t i = ch * kReduceChunk; i < end; ++i) {
      const float* row = x + i * width;
      for (std::int64_t j = 0; j < width; ++j) p[j] += row[j];
    }
  }
  for (std::int64_t j = 0; j < width; ++j) {
    double s = 0.0;
    for (std::int64_t ch = 0; ch < chunks; ++ch) s += partial[static_cast<std::size_t>(ch * width + j)];
    out[j] = static_cast<float>(s);
  }
}

void fill_positive_mask(const float* v, std::int64_t rows, std::int64_t width, std::uint8_t* positive) {
  const std::int64_t blocks = positive_mask_blocks(width);
#pragma omp parallel for schedule(static) if (rows * width > kParallelMinWork)
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t b = 0; b < blocks; ++b) {
      unsigned bits = 0;
      for (std::int64_t u = 0; u < 4 && 4 * b + u < width; ++u)
        if (v[i * width + 4 * b + u] > 0.0f) bits |= 1u << u;
      positive[i * blocks + b] = static_cast<std::uint8_t>(bits);
    }
  }
}

std::vector<float> positive_mask_values(const std::uint8_t* positive, std::int64_t rows, std::int64_t width) {
  const std::int64_t blocks = positive_mask_blocks(width);
  std::vector<float> h(static_cast<std::size_t>(rows * width));
#pragma omp parallel for schedule(static) if (rows * width > kParallelMinWork)
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t c = 0; c < width; ++c)
      h[static_cast<std::size_t>(i * width + c)] = (positive[i * blocks + c / 4] >> (c % 4)) & 1u ? 1.0f : 0.0f;
  return h;
}

void bias_act_dropout(const Context&, const float* z, const float* bias, std::int64_t rows, std::int64_t width,
                      bool relu, const Dropout& d, float* out, std::uint8_t* positive) {
  const bool drop = d.p > 0.0f;
  const float keep_probability = dropout_keep_probability(d.p);
  const std::uint64_t key = drop ? dropout_key(d) : 0;
  const float scale = drop ? dropout_scale(d.p) : 1.0f;
  constexpr std::int64_t kDraw = kDropoutColumnsPerDraw;
#pragma omp parallel for schedule(static) if (rows * width > kParallelMinWork)
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* zr = z + i * width;
    float* orow = out + i * width;
    // Pass 1, vectorised: bias and activation (out may alias z: element-wise in place).
    if (bias != nullptr && relu) {
      for (std::int64_t c = 0; c < width; ++c) {
        const float v = zr[c] + bias[c];
        orow[c] = v > 0.0f ? v : 0.0f;
      }
    } else if (bias != nullptr) {
      for (std::int64_t c = 0; c < width; ++c) orow[c] = zr[c] + bias[c];
    } else if (relu) {
      for (std::int64_t c = 0; c < width; ++c) orow[c] = zr[c] > 0.0f ? zr[c] : 0.0f;
    } else if (orow != zr) {
      std::memcpy(orow, zr, static_cast<std::size_t>(width) * sizeof(float));
    }
    if (!drop) continue;
    // Pass 2: one Philox draw per block of four columns holding a non-zero; all-zero blocks stay as they are
    // (see dropout_mask.hpp), which skips almost all the work on sparse input features.
    const std::int64_t node = dropout_global_node(d, i);
    auto apply_block = [&](std::int64_t block) {
      const rng::Philox4 r = dropout_draw(key, node, block);
      const std::int64_t c0 = block * kDraw, n = std::min(kDraw, width - c0);
      for (std::int64_t u = 0; u < n; ++u)
        orow[c0 + u] = dropout_word_keeps(r.v[u], keep_probability) ? orow[c0 + u] * scale : 0.0f;
    };
    std::int64_t last_block = -1;
    for_each_nonzero(orow, width, [&](std::int64_t c, float) {
      const std::int64_t block = c / kDraw;
      if (block != last_block) {  // non-zeros come in increasing order: each block once
        apply_block(block);
        last_block = block;
      }
    });
  }
  if (positive != nullptr) fill_positive_mask(out, rows, width, positive);
}

void dropout_csr_values(const Context&, const CsrView& a, bool transposed, const Dropout& d, float* out) {
  const float scale = d.p > 0.0f ? dropout_scale(d.p) : 1.0f;
  const std::uint64_t key = d.p > 0.0f ? dropout_key(d) : 0;
#pragma omp parallel for schedule(dynamic, 256) if (a.num_entries() > kParallelMinWork)
  for (std::int64_t r = 0; r < a.num_rows; ++r) {
    for (RowOffset e = a.row_offsets[r]; e < a.row_offsets[r + 1]; ++e) {
      const std::int64_t c = a.col_ids[e];
      const std::int64_t node = dropout_global_node(d, transposed ? c : r);
      const std::int64_t feature = transposed ? r : c;
      const bool keep = d.p == 0.0f || dropout_element_keeps(key, d.p, node, feature);
      out[e] = keep ? a.values[e] * scale : 0.0f;
    }
  }
}

void bias_act_dropout_backward(const Context&, const float* h, const float* dh, std::int64_t rows,
                               std::int64_t width, bool relu, float p, float* dz) {
  const std::int64_t n = rows * width;
  const float scale = p > 0.0f ? dropout_scale(p) : 1.0f;
  if (!relu) {
    if (dz != dh) std::memcpy(dz, dh, static_cast<std::size_t>(n) * sizeof(float));
    return;
  }
#pragma omp parallel for schedule(static) if (n > kParallelMinWork)
  for (std::int64_t i = 0; i < n; ++i) dz[i] = h[i] > 0.0f ? dh[i] * scale : 0.0f;
}

void softmax_cross_entropy(const Context&, const float* logits, std::int64_t num_rows, std::int64_t classes,
                           std::int64_t ld, const std::int32_t* labels, const NodeId* rows, std::int64_t count,
                           float grad_scale, float* loss_sum, float* grad) {
  for (std::int64_t t = 0; t < count; ++t) {
    const std::int64_t r = rows[t];
    if (r < 0 || r >= num_rows)
      throw InvalidInput::parameter("rows[" + std::to_string(t) + "]", std::to_string(r),
                                    "a row below num_rows = " + std::to_string(num_rows));
    if (labels[r] < 0 || labels[r] >= classes)
      throw InvalidInput::parameter("labels[" + std::to_string(r) + "]", std::to_string(labels[r]),
                                    "a class below " + std::to_string(classes));
  }
  if (grad != nullptr) std::memset(grad, 0, static_cast<std::size_t>(num_rows * ld) * sizeof(float));
  std::vector<float> row_loss(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static) if (count * classes > kParallelMinWork)
  for (std::int64_t t = 0; t < count; ++t) {
    const std::int64_t r = rows[t];
    const float* l = logits + r * ld;
    float mx = l[0];
    for (std::int64_t c = 1; c < classes; ++c) mx = std::max(mx, l[c]);
    float se = 0.0f;
    for (std::int64_t c = 0; c < classes; ++c) se += std::exp(l[c] - mx);
    const float lse = mx + std::log(se);
    const std::int32_t label = labels[r];
    row_loss[static_cast<std::size_t>(t)] = lse - l[label];
    if (grad != nullptr) {
      float* g = grad + r * ld;
      for (std::int64_t c = 0; c < classes; ++c)
        g[c] = (std::exp(l[c] - lse) - (c == label ? 1.0f : 0.0f)) * grad_scale;
    }
  }
  double total = 0.0;
  for (float v : row_loss) total += v;
  *loss_sum = static_cast<float>(total);
}

void count_correct(const Context&, const float* logits, std::int64_t classes, std::int64_t ld,
                   const std::int32_t* labels, const NodeId* rows, std::int64_t count, std::int64_t* correct) {
  std::int64_t hits = 0;
#pragma omp parallel for schedule(static) reduction(+ : hits) if (count * classes > kParallelMinWork)
  for (std::int64_t t = 0; t < count; ++t) {
    const std::int64_t r = rows[t];
    const float* l = logits + r * ld;
    std::int64_t best = 0;
    for (std::int64_t c = 1; c < classes; ++c)
      if (l[c] > l[best]) best = c;  // strict: ties go to the lowest index
    hits += best == labels[r] ? 1 : 0;
  }
  *correct = hits;
}

void adam_step(const Context&, float* w, const float* g, float* m, float* v, std::int64_t n, const AdamParams& p) {
  const AdamCorrections bc = adam_corrections_of(p, adam_corrections(p));
#pragma omp parallel for schedule(static) if (n > kParallelMinWork)
  for (std::int64_t i = 0; i < n; ++i) {
    const float gi = g[i] + p.weight_decay * w[i];
    const float mi = p.beta1 * m[i] + (1.0f - p.beta1) * gi;
    const float vi = p.beta2 * v[i] + (1.0f - p.beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    const float m_hat = mi / bc.one_minus_beta1_pow;
    const float v_hat = vi / bc.one_minus_beta2_pow;
    w[i] -= p.lr * m_hat / (std::sqrt(v_hat) + p.eps);
  }
}

void inv_sqrt_degree(const Context&, const RowOffset* row_offsets, std::int64_t n, float extra, float* dinv) {
#pragma omp parallel for schedule(static) if (n > kParallelMinWork)
  for (std::int64_t i = 0; i < n; ++i) {
    const float d = static_cast<float>(row_offsets[i + 1] - row_offsets[i]) + extra;
    dinv[i] = d > 0.0f ? 1.0f / std::sqrt(d) : 0.0f;
  }
}

void gather_rows(const Context&, const float* src, const NodeId* idx, std::int64_t count, std::int64_t width,
                 float* dst) {
#pragma omp parallel for schedule(static) if (count * width > kParallelMinWork)
  for (std::int64_t i = 0; i < count; ++i)
    std::memcpy(dst + i * width, src + static_cast<std::int64_t>(idx[i]) * width,
                static_cast<std::size_t>(width) * sizeof(float));
}

void gather_rows_bf16(const Context&, const Bf16* src, const NodeId* idx, std::int64_t count, std::int64_t width,
                      Bf16* dst) {
#pragma omp parallel for schedule(static) if (count * width > kParallelMinWork)
  for (std::int64_t i = 0; i < count; ++i)
    std::memcpy(dst + i * width, src + static_cast<std::int64_t>(idx[i]) * width,
                static_cast<std::size_t>(width) * sizeof(Bf16));
}

void scatter_add_rows(const Context&, const float* src, const NodeId* idx, std::int64_t count, std::int64_t width,
                      float* dst) {
  // Tasks own column blocks and walk the rows in order: no races with repeated indices, and every element is
  // summed in index order whatever the thread count.
  const std::int64_t blocks = (width + kColumnBlock - 1) / kColumnBlock;
#pragma omp parallel for schedule(static) if (count * width > kParallelMinWork)
  for (std::int64_t b = 0; b < blocks; ++b) {
    const std::int64_t c0 = b * kColumnBlock, c1 = std::min(width, c0 + kColumnBlock);
    for (std::int64_t i = 0; i < count; ++i) {
      float* d = dst + static_cast<std::int64_t>(idx[i]) * width;
      const float* s = src + i * width;
      for (std::int64_t c = c0; c < c1; ++c) d[c] += s[c];
    }
  }
}

void sum(const Context&, const float* x, std::int64_t n, float* out) {
  *out = static_cast<float>(chunked_sum(n, [x](std::int64_t i) { return static_cast<double>(x[i]); }));
}

void sum_squares(const Context&, const float* x, std::int64_t n, float* out) {
  *out = static_cast<float>(chunked_sum(n, [x](std::int64_t i) {
    const double v = x[i];
    return v * v;
  }));
}

void relu_dropout_backward_sum(const Context& ctx, const float* h, const float* dh, std::int64_t rows,
                               std::int64_t width, float p, float* dz, float* sums, const std::uint8_t* positive) {
  std::vector<float> from_mask;
  if (positive != nullptr) {
    from_mask = positive_mask_values(positive, rows, width);
    h = from_mask.data();
  }
  bias_act_dropout_backward(ctx, h, dh, rows, width, true, p, dz);
  column_sum(ctx, dz, rows, width, sums);
}

}  // namespace gcnpart::kernels::detail::cpu
