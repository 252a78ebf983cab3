// Test-only helpers for the kernel tests: random inputs and naive double-precision references.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "base/csr_view.hpp"

namespace gcnpart::testing {

/// A CSR matrix owned in host vectors.
struct HostCsr {
  std::int64_t rows = 0, cols = 0;
  std::vector<RowOffset> offsets;
  std::vector<NodeId> col_ids;
  std::vector<float> values;

  [[nodiscard]] std::int64_t nnz() const { return offsets.empty() ? 0 : offsets.back(); }
  [[nodiscard]] CsrView view(bool with_values = true) const {
    return CsrView{rows, cols, offsets.data(), col_ids.data(), with_values ? values.data() : nullptr,
                   static_cast<std::int64_t>(col_ids.size())};
  }
};

inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

/// A row given an exact number of distinct neighbours.
struct HeavyRow {
  std::int64_t row;
  std::int64_t degree;
};

/// Random CSR: degrees uniform in [0, 2 * avg_degree], a fraction of rows forced empty, and `heavy` rows with
/// exactly the given number of distinct neighbours. Values in [0.1, 1).
inline HostCsr random_csr(std::int64_t rows, std::int64_t cols, int avg_degree, std::uint64_t seed,
                          double empty_fraction = 0.1, const std::vector<HeavyRow>& heavy = {}) {
  std::mt19937_64 gen(seed);
  std::uniform_int_distribution<int> degree(0, 2 * avg_degree);
  std::uniform_int_distribution<NodeId> column(0, static_cast<NodeId>(std::max<std::int64_t>(cols, 1) - 1));
  std::uniform_real_distribution<float> value(0.1f, 1.0f);
  std::bernoulli_distribution empty(empty_fraction);
  HostCsr a;
  a.rows = rows;
  a.cols = cols;
  a.offsets.push_back(0);
  for (std::int64_t i = 0; i < rows; ++i) {
    std::int64_t heavy_degree = -1;
    for (const HeavyRow& h : heavy)
      if (h.row == i) heavy_degree = h.degree;
    if (heavy_degree >= 0) {
      std::vector<NodeId> all(static_cast<std::size_t>(cols));
      for (std::int64_t j = 0; j < cols; ++j) all[static_cast<std::size_t>(j)] = static_cast<NodeId>(j);
      std::shuffle(all.begin(), all.end(), gen);
      all.resize(static_cast<std::size_t>(std::min(heavy_degree, cols)));
      std::sort(all.begin(), all.end());
      for (NodeId j : all) {
        a.col_ids.push_back(j);
        a.values.push_back(value(gen));
      }
    } else if (cols > 0 && !empty(gen)) {
      const int d = degree(gen);
      for (int e = 0; e < d; ++e) {
        a.col_ids.push_back(column(gen));
        a.values.push_back(value(gen));
      }
    }
    a.offsets.push_back(static_cast<RowOffset>(a.col_ids.size()));
  }
  return a;
}

/// Exact-ish reference of Y = diag(rs) A diag(cs) X and, per element, the sum of |terms| (the scale against which
/// float rounding is judged).
struct DenseReference {
  std::vector<double> value, magnitude;
};

inline DenseReference reference_spmm(const HostCsr& a, bool with_values, const float* rs, const float* cs,
                                     const std::vector<float>& x, std::int64_t ldx, std::int64_t width) {
  DenseReference r;
  r.value.assign(static_cast<std::size_t>(a.rows * width), 0.0);
  r.magnitude.assign(static_cast<std::size_t>(a.rows * width), 0.0);
  for (std::int64_t i = 0; i < a.rows; ++i) {
    for (RowOffset e = a.offsets[i]; e < a.offsets[i + 1]; ++e) {
      const NodeId j = a.col_ids[e];
      double w = with_values ? a.values[e] : 1.0;
      if (cs != nullptr) w *= cs[j];
      if (rs != nullptr) w *= rs[i];
      for (std::int64_t c = 0; c < width; ++c) {
        const double t = w * x[static_cast<std::size_t>(j * ldx + c)];
        r.value[static_cast<std::size_t>(i * width + c)] += t;
        r.magnitude[static_cast<std::size_t>(i * width + c)] += std::abs(t);
      }
    }
  }
  return r;
}

/// C = alpha op(A) op(B) + beta C0 in double (beta == 0 ignores C0), with the magnitude of the product terms.
inline DenseReference reference_gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
                                     const std::vector<float>& a, std::int64_t lda, const std::vector<float>& b,
                                     std::int64_t ldb, float beta, const std::vector<float>& c0, std::int64_t ldc) {
  DenseReference r;
  r.value.assign(static_cast<std::size_t>(m * n), 0.0);
  r.magnitude.assign(static_cast<std::size_t>(m * n), 0.0);
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0.0, mag = 0.0;
      for (std::int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[static_cast<std::size_t>(p * lda + i)] : a[static_cast<std::size_t>(i * lda + p)];
        const double bv = tb ? b[static_cast<std::size_t>(j * ldb + p)] : b[static_cast<std::size_t>(p * ldb + j)];
        s += av * bv;
        mag += std::abs(av * bv);
      }
      const double prior = beta == 0.0f ? 0.0 : static_cast<double>(beta) * c0[static_cast<std::size_t>(i * ldc + j)];
      r.value[static_cast<std::size_t>(i * n + j)] = alpha * s + prior;
      r.magnitude[static_cast<std::size_t>(i * n + j)] = std::abs(alpha) * mag + std::abs(prior);
    }
  }
  return r;
}

/// Largest violation of |got - want| <= rtol * magnitude + atol over a row-major matrix (ld for got), as a ratio:
/// <= 1 passes. Returns +inf for a NaN.
inline double worst_ratio(const std::vector<float>& got, std::int64_t ld, const DenseReference& want,
                          std::int64_t rows, std::int64_t width, double rtol, double atol = 1e-30) {
  double worst = 0.0;
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t c = 0; c < width; ++c) {
      const double g = got[static_cast<std::size_t>(i * ld + c)];
      const std::size_t w = static_cast<std::size_t>(i * width + c);
      if (std::isnan(g)) return std::numeric_limits<double>::infinity();
      const double allowed = rtol * want.magnitude[w] + atol;
      worst = std::max(worst, std::abs(g - want.value[w]) / allowed);
    }
  }
  return worst;
}

/// Float summation error bound for n terms (first order, recursive summation): n * 2^-24, at least `floor`.
inline double summation_rtol(std::int64_t n, double floor = 1e-5) {
  return std::max(floor, static_cast<double>(n) * 5.96e-8);
}

}  // namespace gcnpart::testing
