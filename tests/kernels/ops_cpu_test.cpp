// The CPU kernels (the reference backend) against naive double-precision computations.
#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/philox.hpp"
#include "kernels/detail/dropout_mask.hpp"
#include "kernels/ops.hpp"
#include "ops_reference.hpp"

using namespace gcnpart;
using namespace gcnpart::kernels;
using gcnpart::testing::HostCsr;
using gcnpart::testing::random_csr;
using gcnpart::testing::random_floats;
using gcnpart::testing::reference_gemm;
using gcnpart::testing::reference_spmm;
using gcnpart::testing::summation_rtol;
using gcnpart::testing::worst_ratio;

namespace {

const Context kCpu{};  // backend kCpu, no allocator: host scratch from the heap

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

void check_spmm(const HostCsr& a, std::int64_t width, bool with_values, bool with_scales, std::int64_t pad,
                std::uint64_t seed) {
  const std::int64_t ldx = width + pad, ldy = width + pad;
  const auto x = random_floats(static_cast<std::size_t>(a.cols * ldx), seed);
  const auto rs = random_floats(static_cast<std::size_t>(a.rows), seed + 1, 0.2f, 1.0f);
  const auto cs = random_floats(static_cast<std::size_t>(a.cols), seed + 2, 0.2f, 1.0f);
  std::vector<float> y(static_cast<std::size_t>(a.rows * ldy), kNaN);
  const float* row_scale = with_scales ? rs.data() : nullptr;
  const float* col_scale = with_scales ? cs.data() : nullptr;
  spmm_async(kCpu, a.view(with_values), row_scale, col_scale, make_view(x.data(), a.cols, width, ldx),
             make_view(y.data(), a.rows, width, ldy));
  const auto want = reference_spmm(a, with_values, row_scale, col_scale, x, ldx, width);
  std::int64_t max_degree = 0;
  for (std::int64_t i = 0; i < a.rows; ++i) max_degree = std::max(max_degree, a.offsets[i + 1] - a.offsets[i]);
  CHECK(worst_ratio(y, ldy, want, a.rows, width, summation_rtol(max_degree)) <= 1.0);
  for (std::int64_t i = 0; i < a.rows; ++i)
    if (a.offsets[i] == a.offsets[i + 1])
      for (std::int64_t c = 0; c < width; ++c) REQUIRE(y[static_cast<std::size_t>(i * ldy + c)] == 0.0f);
}

}  // namespace

TEST_CASE("CPU SpMM matches a double reference for widths 1, 7, 64 and 602 with empty rows") {
  const HostCsr a = random_csr(300, 250, 6, 11, 0.15);
  for (std::int64_t width : {1, 7, 64, 602}) {
    for (bool with_values : {true, false}) {
      for (bool with_scales : {true, false}) {
        CAPTURE(width);
        CAPTURE(with_values);
        CAPTURE(with_scales);
        check_spmm(a, width, with_values, with_scales, 0, 100 + width);
        check_spmm(a, width, with_values, with_scales, 3, 200 + width);  // leading dimensions above the width
      }
    }
  }
}

TEST_CASE("CPU SpMM handles a row with 10^5 neighbours") {
  const HostCsr a = random_csr(40, 120000, 3, 12, 0.1, {{17, 100000}});
  REQUIRE(a.offsets[18] - a.offsets[17] == 100000);
  check_spmm(a, 7, true, true, 0, 5);
  check_spmm(a, 64, false, true, 0, 6);
}

TEST_CASE("CPU SpMM of an all-empty matrix writes zeros") {
  const HostCsr a = random_csr(20, 10, 3, 13, 1.0);
  REQUIRE(a.nnz() == 0);
  check_spmm(a, 5, true, true, 0, 7);
}

TEST_CASE("CPU SpMM with the cuSPARSE algorithm runs the CPU reference") {
  const HostCsr a = random_csr(50, 40, 4, 14);
  const auto x = random_floats(40 * 8, 1);
  std::vector<float> y1(50 * 8), y2(50 * 8);
  spmm_async(kCpu, a.view(), nullptr, nullptr, make_view(x.data(), a.cols, 8), make_view(y1.data(), a.rows, 8),
             SpmmAlgo::kOwn);
  spmm_async(kCpu, a.view(), nullptr, nullptr, make_view(x.data(), a.cols, 8), make_view(y2.data(), a.rows, 8),
             SpmmAlgo::kCusparse);
  CHECK(y1 == y2);
}

TEST_CASE("an SpMM tuning out of range is refused naming its option, and the CPU reference ignores a valid one") {
  const HostCsr a = random_csr(50, 40, 4, 16);
  const auto x = random_floats(40 * 8, 2);
  std::vector<float> y1(50 * 8), y2(50 * 8);
  const std::vector<Bf16> xb(40 * 8, Bf16::from_bits(0x3f80));  // 1.0 in bf16
  for (const SpmmTuning bad : {SpmmTuning{-1, 256}, SpmmTuning{128, -1}, SpmmTuning{-1, -1}, SpmmTuning{0, 256, -8}}) {
    CHECK_THROWS_WITH_AS(spmm_async(kCpu, a.view(), nullptr, nullptr, make_view(x.data(), a.cols, 8),
                                    make_view(y1.data(), a.rows, 8), SpmmAlgo::kOwn, bad),
                         doctest::Contains("--spmm-"), InvalidInput);
    CHECK_THROWS_AS(spmm_bf16_async(kCpu, a.view(), nullptr, nullptr, make_view(xb.data(), a.cols, 8),
                                    make_view(y1.data(), a.rows, 8), bad),
                    InvalidInput);
  }
  spmm_async(kCpu, a.view(), nullptr, nullptr, make_view(x.data(), a.cols, 8), make_view(y1.data(), a.rows, 8),
             SpmmAlgo::kOwn);
  spmm_async(kCpu, a.view(), nullptr, nullptr, make_view(x.data(), a.cols, 8), make_view(y2.data(), a.rows, 8),
             SpmmAlgo::kOwn, SpmmTuning{1, 1});
  CHECK(y1 == y2);
}

TEST_CASE("CusparseSpmm refuses the CPU backend") {
  const HostCsr a = random_csr(5, 5, 2, 15);
  CHECK_THROWS_AS(CusparseSpmm(kCpu, a.view(), nullptr, nullptr, 4), LogicError);
}

// ---------------------------------------------------------------------------------------------------- bf16

namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// The bf16 nearest to a finite float, ties to the even pattern, found by comparing the two candidates in double
/// (independent of the shift-and-add trick of the kernels). Overflow beyond the largest bf16 gives infinity.
std::uint16_t nearest_bf16(float f) {
  const std::uint32_t u = bits_of(f);
  const std::uint16_t down = static_cast<std::uint16_t>(u >> 16);  // towards zero
  const std::uint16_t up = static_cast<std::uint16_t>(down + 1);  // away from zero (may be infinity)
  const double d_down = std::abs(static_cast<double>(float_of(static_cast<std::uint32_t>(down) << 16)) - f);
  const double d_up = std::abs(static_cast<double>(float_of(static_cast<std::uint32_t>(up) << 16)) - f);
  if ((u & 0xffffu) == 0) return down;
  if ((down & 0x7fffu) == 0x7f7fu) {  // largest finite: above it only infinity, reached from half an ulp beyond
    return (u & 0xffffu) >= 0x8000u && !((u & 0xffffu) == 0x8000u && (down & 1u) == 0) ? up : down;
  }
  if (d_down != d_up) return d_down < d_up ? down : up;
  return (down & 1u) == 0 ? down : up;
}

std::vector<Bf16> to_bf16(const std::vector<float>& x) {
  std::vector<Bf16> b(x.size());
  convert_to_bf16_async(kCpu, x.data(), static_cast<std::int64_t>(x.size()), b.data());
  return b;
}

std::vector<float> from_bf16(const std::vector<Bf16>& b) {
  std::vector<float> x(b.size());
  convert_from_bf16_async(kCpu, b.data(), static_cast<std::int64_t>(b.size()), x.data());
  return x;
}

}  // namespace

TEST_CASE("conversion to bf16 rounds to nearest even on hand-picked values") {
  struct Case {
    std::uint32_t in;
    std::uint16_t out;
  };
  const Case cases[] = {
      {0x3f800000u, 0x3f80u},  // 1
      {0x3f808000u, 0x3f80u},  // 1 + 2^-8: halfway, 0x3f80 is even
      {0x3f818000u, 0x3f82u},  // halfway above the odd 0x3f81: up to even
      {0x3f808001u, 0x3f81u},  // just past halfway
      {0x3f807fffu, 0x3f80u},  // just below halfway
      {0xbf808000u, 0xbf80u},  // negative tie, to even (magnitude)
      {0xbf818000u, 0xbf82u},
      {0x00000000u, 0x0000u},  // +0
      {0x80000000u, 0x8000u},  // -0
      {0x00008000u, 0x0000u},  // subnormal tie to even zero
      {0x00018000u, 0x0002u},  // subnormal tie up to even
      {0x00000001u, 0x0000u},  // smallest subnormal
      {0x7f7f7fffu, 0x7f7fu},  // below half an ulp under the largest finite bf16
      {0x7f7f8000u, 0x7f80u},  // tie above the odd largest finite bf16: infinity
      {0x7f7fffffu, 0x7f80u},  // FLT_MAX overflows to infinity
      {0xff7fffffu, 0xff80u},  // -FLT_MAX to -infinity
      {0x7f800000u, 0x7f80u},  // +inf
      {0xff800000u, 0xff80u},  // -inf
      {0x7fc00000u, 0x7fc0u},  // quiet NaN
      {0xffc00001u, 0xffc0u},  // negative NaN keeps its sign
      {0x7f800001u, 0x7fc0u},  // a NaN whose payload sits in the dropped bits stays a NaN (quiet)
      {0x7fff8000u, 0x7fffu},  // a NaN next to the top must not round over into the sign bit
  };
  std::vector<float> in;
  for (const Case& c : cases) in.push_back(float_of(c.in));
  const auto out = to_bf16(in);
  for (std::size_t i = 0; i < std::size(cases); ++i) {
    CAPTURE(i);
    CHECK(out[i].bits() == cases[i].out);
  }
}

TEST_CASE("bf16 round trips: every bf16 pattern survives float and back, random floats go to the nearest bf16") {
  std::vector<Bf16> all(1 << 16);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = Bf16::from_bits(static_cast<std::uint16_t>(i));
  const auto widened = from_bf16(all);
  const auto back = to_bf16(widened);
  for (std::size_t i = 0; i < all.size(); ++i) {
    CAPTURE(i);
    REQUIRE(bits_of(widened[i]) == static_cast<std::uint32_t>(i) << 16);  // widening is exact
    if (std::isnan(widened[i]))
      REQUIRE((back[i].bits() & 0x7fffu) > 0x7f80u);
    else
      REQUIRE(back[i] == all[i]);
  }
  std::mt19937_64 gen(77);
  std::vector<float> x;
  while (x.size() < 200000) {
    const float f = float_of(static_cast<std::uint32_t>(gen()));
    if (std::isfinite(f)) x.push_back(f);
  }
  const auto b = to_bf16(x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    CAPTURE(bits_of(x[i]));
    REQUIRE(b[i].bits() == nearest_bf16(x[i]));
  }
}

TEST_CASE("CPU bf16 SpMM equals the fp32 SpMM of the bf16-rounded input") {
  const HostCsr a = random_csr(300, 250, 6, 31, 0.15);
  std::int64_t max_degree = 0;
  for (std::int64_t i = 0; i < a.rows; ++i) max_degree = std::max(max_degree, a.offsets[i + 1] - a.offsets[i]);
  for (std::int64_t width : {1, 7, 8, 64, 602}) {
    for (std::int64_t pad : {0, 3}) {
      for (bool with_scales : {true, false}) {
        CAPTURE(width);
        CAPTURE(pad);
        CAPTURE(with_scales);
        const std::int64_t ldx = width + pad, ldy = width + 2 * pad;
        const auto x = random_floats(static_cast<std::size_t>(a.cols * ldx), 300 + width);
        const auto rs = random_floats(static_cast<std::size_t>(a.rows), 1, 0.2f, 1.0f);
        const auto cs = random_floats(static_cast<std::size_t>(a.cols), 2, 0.2f, 1.0f);
        const float* row_scale = with_scales ? rs.data() : nullptr;
        const float* col_scale = with_scales ? cs.data() : nullptr;
        const auto xb = to_bf16(x);
        const auto rounded = from_bf16(xb);
        std::vector<float> y(static_cast<std::size_t>(a.rows * ldy), kNaN), y32(y.size(), kNaN);
        spmm_bf16_async(kCpu, a.view(), row_scale, col_scale, make_view(xb.data(), a.cols, width, ldx),
                        make_view(y.data(), a.rows, width, ldy));
        spmm_async(kCpu, a.view(), row_scale, col_scale, make_view(rounded.data(), a.cols, width, ldx),
                   make_view(y32.data(), a.rows, width, ldy));
        for (std::int64_t i = 0; i < a.rows; ++i)
          for (std::int64_t c = 0; c < width; ++c)
            REQUIRE(bits_of(y[static_cast<std::size_t>(i * ldy + c)]) ==
                    bits_of(y32[static_cast<std::size_t>(i * ldy + c)]));
        const auto want = reference_spmm(a, true, row_scale, col_scale, rounded, ldx, width);
        CHECK(worst_ratio(y, ldy, want, a.rows, width, summation_rtol(max_degree, 1e-6)) <= 1.0);
        for (std::int64_t i = 0; i < a.rows; ++i)  // padding between rows untouched
          for (std::int64_t c = width; c < ldy; ++c) REQUIRE(std::isnan(y[static_cast<std::size_t>(i * ldy + c)]));
        // bf16 Y: the float Y rounded once, padding untouched, through the caller's float scratch.
        std::vector<Bf16> y16(y.size(), Bf16::from_bits(0xffff));
        std::vector<float> scratch(static_cast<std::size_t>(a.rows * width), kNaN);
        spmm_bf16_async(kCpu, a.view(), row_scale, col_scale, make_view(xb.data(), a.cols, width, ldx),
                        make_view(y16.data(), a.rows, width, ldy), make_view(scratch.data(), a.rows, width));
        for (std::int64_t i = 0; i < a.rows; ++i)
          for (std::int64_t c = 0; c < ldy; ++c) {
            const auto t = static_cast<std::size_t>(i * ldy + c);
            if (c < width) {
              REQUIRE(y16[t] == to_bf16({y[t]})[0]);
            } else {
              REQUIRE(y16[t].bits() == 0xffff);
            }
          }
        // A scratch overlapping x or y is refused (the kernel would overwrite what it reads or writes).
        std::vector<float> big(static_cast<std::size_t>(a.rows * ldy + a.rows * width));
        CHECK_THROWS_AS(spmm_bf16_async(kCpu, a.view(), row_scale, col_scale,
                                        make_view(xb.data(), a.cols, width, ldx),
                                        make_view(reinterpret_cast<Bf16*>(big.data()), a.rows, width, ldy),
                                        make_view(big.data(), a.rows, width)),
                        LogicError);
        if (width > 1)  // a scratch narrower than Y is refused, naming it
          CHECK_THROWS_AS(spmm_bf16_async(kCpu, a.view(), row_scale, col_scale,
                                          make_view(xb.data(), a.cols, width, ldx),
                                          make_view(y16.data(), a.rows, width, ldy),
                                          make_view(scratch.data(), a.rows, width - 1)),
                          InvalidInput);
      }
    }
  }
}

TEST_CASE("CPU bf16 SpMM handles a row with 10^5 neighbours and an all-empty matrix") {
  const HostCsr a = random_csr(40, 120000, 3, 32, 0.1, {{17, 100000}});
  const auto x = random_floats(static_cast<std::size_t>(a.cols * 8), 33);
  const auto xb = to_bf16(x);
  std::vector<float> y(static_cast<std::size_t>(a.rows * 8), kNaN);
  spmm_bf16_async(kCpu, a.view(false), nullptr, nullptr, make_view(xb.data(), a.cols, 8),
                  make_view(y.data(), a.rows, 8));
  CHECK(worst_ratio(y, 8, reference_spmm(a, false, nullptr, nullptr, from_bf16(xb), 8, 8), a.rows, 8,
                    summation_rtol(100000, 1e-6)) <= 1.0);
  const HostCsr empty = random_csr(20, 10, 3, 34, 1.0);
  REQUIRE(empty.nnz() == 0);
  std::vector<float> z(20 * 3, kNaN);
  spmm_bf16_async(kCpu, empty.view(), nullptr, nullptr, make_view(xb.data(), empty.cols, 3),
                  make_view(z.data(), empty.rows, 3));
  CHECK(z == std::vector<float>(20 * 3, 0.0f));
}

TEST_CASE("bf16 entry points reject bad sizes with InvalidInput and missing buffers with LogicError") {
  std::vector<Bf16> xb(16);
  std::vector<float> y(16);
  const HostCsr a = random_csr(4, 4, 1, 92);
  CHECK_THROWS_AS(spmm_bf16_async(kCpu, a.view(), nullptr, nullptr, make_view(xb.data(), a.cols, 4, 2),
                                  make_view(y.data(), a.rows, 4)),
                  InvalidInput);
  CHECK_THROWS_AS(spmm_bf16_async(kCpu, a.view(), nullptr, nullptr, make_view(xb.data(), a.cols, 4),
                                  make_view(y.data(), a.rows, 4, 3)),
                  InvalidInput);
  CHECK_THROWS_AS(spmm_bf16_async(kCpu, a.view(), nullptr, nullptr, ConstBf16MatrixView{nullptr, a.cols, 4, 4},
                                  make_view(y.data(), a.rows, 4)),
                  LogicError);
  CHECK_THROWS_AS(spmm_bf16_async(kCpu, a.view(), nullptr, nullptr, make_view(xb.data(), a.cols, -1, 4),
                                  make_view(y.data(), a.rows, -1, 4)),
                  InvalidInput);
  CHECK_THROWS_AS(convert_to_bf16_async(kCpu, y.data(), -1, xb.data()), InvalidInput);
  CHECK_THROWS_AS(convert_from_bf16_async(kCpu, nullptr, 4, y.data()), LogicError);  // a missing buffer
  convert_to_bf16_async(kCpu, nullptr, 0, nullptr);  // nothing to do
}

TEST_CASE("CPU GEMM matches a double reference for all four transpose combinations") {
  const std::int64_t m = 37, n = 19, k = 53;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (float beta : {0.0f, 0.5f, 1.0f}) {
        CAPTURE(ta);
        CAPTURE(tb);
        CAPTURE(beta);
        const std::int64_t lda = (ta ? m : k) + 2, ldb = (tb ? k : n) + 1, ldc = n + 3;
        const auto a = random_floats(static_cast<std::size_t>((ta ? k : m) * lda), 21);
        const auto b = random_floats(static_cast<std::size_t>((tb ? n : k) * ldb), 22);
        auto c = random_floats(static_cast<std::size_t>(m * ldc), 23);
        if (beta == 0.0f) std::fill(c.begin(), c.end(), kNaN);  // must not be read
        const auto want = reference_gemm(ta, tb, m, n, k, 1.5f, a, lda, b, ldb, beta, c, ldc);
        gemm_async(kCpu, ta, tb, 1.5f, make_view(a.data(), (ta ? k : m), (ta ? m : k), lda),
                   make_view(b.data(), (tb ? n : k), (tb ? k : n), ldb), beta, make_view(c.data(), m, n, ldc));
        CHECK(worst_ratio(c, ldc, want, m, n, summation_rtol(k)) <= 1.0);
      }
    }
  }
}

TEST_CASE("CPU GEMM skips the zeros of a sparse A without changing the result") {
  // Bag-of-words-like A: 1% non-zero, including a negative zero; the transposed case is the weight gradient.
  const std::int64_t m = 120, n = 16, k = 700;
  std::mt19937_64 gen(31);
  std::bernoulli_distribution nonzero(0.01);
  std::vector<float> a(static_cast<std::size_t>(m * k), 0.0f);
  for (auto& v : a) v = nonzero(gen) ? 1.0f : 0.0f;
  a[5] = -0.0f;
  for (bool ta : {false, true}) {
    CAPTURE(ta);
    const std::int64_t mm = ta ? k : m, kk = ta ? m : k;  // op(A) is mm x kk
    const auto b = random_floats(static_cast<std::size_t>(kk * n), 32);
    std::vector<float> c(static_cast<std::size_t>(mm * n), kNaN);
    gemm_async(kCpu, ta, false, 1.0f, make_view(a.data(), (ta ? kk : mm), (ta ? mm : kk), ta ? mm : kk),
               make_view(b.data(), kk, n), 0.0f, make_view(c.data(), mm, n));
    const auto want = reference_gemm(ta, false, mm, n, kk, 1.0f, a, ta ? mm : kk, b, n, 0.0f, c, n);
    CHECK(worst_ratio(c, n, want, mm, n, 1e-5) <= 1.0);
  }
}

TEST_CASE("CPU GEMM with a few columns and many rows splits over k and still matches") {
  // A^T B with A stored 20000 x 12: the split-k path.
  const std::int64_t m = 12, n = 7, k = 20000;
  const auto a = random_floats(static_cast<std::size_t>(k * m), 41);
  const auto b = random_floats(static_cast<std::size_t>(k * n), 42);
  auto c = random_floats(static_cast<std::size_t>(m * n), 43);
  const auto want = reference_gemm(true, false, m, n, k, 0.5f, a, m, b, n, 2.0f, c, n);
  gemm_async(kCpu, true, false, 0.5f, make_view(a.data(), k, m), make_view(b.data(), k, n), 2.0f,
             make_view(c.data(), m, n));
  CHECK(worst_ratio(c, n, want, m, n, summation_rtol(k / 4)) <= 1.0);
}

TEST_CASE("CPU GEMM with k = 0 or alpha = 0 only scales C") {
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f};
  gemm_async(kCpu, false, false, 1.0f, ConstMatrixView{nullptr, 2, 0, 0}, ConstMatrixView{nullptr, 0, 2, 2}, 3.0f,
             make_view(c.data(), 2, 2));
  CHECK(c == std::vector<float>{3.0f, 6.0f, 9.0f, 12.0f});
  std::vector<float> nan_c(4, kNaN);
  const std::vector<float> a(4, 1.0f);
  gemm_async(kCpu, false, false, 0.0f, make_view(a.data(), 2, 2), make_view(a.data(), 2, 2), 0.0f,
             make_view(nan_c.data(), 2, 2));
  CHECK(nan_c == std::vector<float>(4, 0.0f));
}

TEST_CASE("dropout keeps close to 1 - p of the entries, exactly where dropout_keep says") {
  const std::int64_t rows = 2000, width = 37;  // odd width: a partial block of four columns per row
  const auto z = random_floats(static_cast<std::size_t>(rows * width), 51, 0.5f, 1.5f);  // all positive
  std::vector<NodeId> ids(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) ids[static_cast<std::size_t>(i)] = static_cast<NodeId>(3 * i + 7);
  for (int variant = 0; variant < 2; ++variant) {
    Dropout d;
    d.p = 0.3f;
    d.key = rng::stream_key(42, rng::kDropout, 3, 1);
    if (variant == 0) d.global_offset = 1000;
    else d.global_ids = ids.data();
    std::vector<float> out(z.size());
    dropout_async(kCpu, make_view(z.data(), rows, width), d, make_view(out.data(), rows, width));
    std::int64_t kept = 0;
    bool agrees = true;
    for (std::int64_t i = 0; i < rows; ++i) {
      const std::int64_t node = variant == 0 ? 1000 + i : 3 * i + 7;
      for (std::int64_t c = 0; c < width; ++c) {
        const std::size_t t = static_cast<std::size_t>(i * width + c);
        const bool keep = dropout_keep(d, node, c);
        kept += keep ? 1 : 0;
        agrees = agrees && (keep ? out[t] == z[t] * (1.0f / 0.7f) : out[t] == 0.0f);
      }
    }
    CHECK(agrees);
    const double n = static_cast<double>(rows * width), rate = static_cast<double>(kept) / n;
    CHECK(std::abs(rate - 0.7) < 4.0 * std::sqrt(0.7 * 0.3 / n));
  }
}

TEST_CASE("dropout with p = 0 is the identity and out may alias the input") {
  auto x = random_floats(100, 52);
  const auto before = x;
  dropout_async(kCpu, make_view(x.data(), 10, 10), Dropout{}, make_view(x.data(), 10, 10));
  CHECK(x == before);
  CHECK_THROWS_AS(dropout_async(kCpu, make_view(x.data(), 10, 10), Dropout{1.0f}, make_view(x.data(), 10, 10)),
                  InvalidInput);
}

TEST_CASE("bias_act_dropout adds the bias, applies relu and drops by the mask") {
  const std::int64_t rows = 50, width = 9;
  const auto z = random_floats(static_cast<std::size_t>(rows * width), 53);
  const auto bias = random_floats(static_cast<std::size_t>(width), 54);
  Dropout d;
  d.p = 0.5f;
  d.key = 99;
  std::vector<float> out(z.size());
  bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), bias.data(), true, d,
                         make_view(out.data(), rows, width));
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t c = 0; c < width; ++c) {
      const std::size_t t = static_cast<std::size_t>(i * width + c);
      const float pre = std::max(z[t] + bias[static_cast<std::size_t>(c)], 0.0f);
      REQUIRE(out[t] == (dropout_keep(d, i, c) ? pre * 2.0f : 0.0f));
    }
  }
  std::vector<float> plain(z.size());
  bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), nullptr, false, Dropout{},
                         make_view(plain.data(), rows, width));
  CHECK(plain == z);
}

TEST_CASE("the backward epilogue passes gradients where the relu output is positive, scaled by 1 / (1 - p)") {
  const std::vector<float> h = {0.0f, 2.0f, -1.0f, 0.5f, 0.0f, 3.0f};
  std::vector<float> dh = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  std::vector<float> dz(6);
  bias_act_dropout_backward_async(kCpu, make_view(h.data(), 2, 3), make_view(dh.data(), 2, 3), true, 0.5f,
                                  make_view(dz.data(), 2, 3));
  CHECK(dz == std::vector<float>{0.0f, 4.0f, 0.0f, 8.0f, 0.0f, 12.0f});
  bias_act_dropout_backward_async(kCpu, make_view(h.data(), 2, 3), make_view(dh.data(), 2, 3), true, 0.0f,
                                  make_view(dh.data(), 2, 3));  // in place
  CHECK(dh == std::vector<float>{0.0f, 2.0f, 0.0f, 4.0f, 0.0f, 6.0f});
  bias_act_dropout_backward_async(kCpu, ConstMatrixView{nullptr, 2, 3, 3}, make_view(dh.data(), 2, 3), false, 0.0f,
                                  make_view(dz.data(), 2, 3));
  CHECK(dz == dh);
  CHECK_THROWS_AS(bias_act_dropout_backward_async(kCpu, make_view(h.data(), 2, 3), make_view(dh.data(), 2, 3), false,
                                                  0.5f, make_view(dz.data(), 2, 3)),
                  LogicError);
}

TEST_CASE("the backward epilogue also gives the column sums of dz (the bias gradient) when asked") {
  const std::vector<float> h = {0.0f, 2.0f, -1.0f, 0.5f, 0.0f, 3.0f};
  const std::vector<float> dh = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  std::vector<float> dz(6), sums(3, -7.0f);
  bias_act_dropout_backward_async(kCpu, make_view(h.data(), 2, 3), make_view(dh.data(), 2, 3), true, 0.5f,
                                  make_view(dz.data(), 2, 3), sums.data());
  CHECK(dz == std::vector<float>{0.0f, 4.0f, 0.0f, 8.0f, 0.0f, 12.0f});
  CHECK(sums == std::vector<float>{8.0f, 4.0f, 12.0f});
  // bf16: the sums of the stored (rounded) dz.
  std::vector<float> dh_odd(dh);
  for (auto& v : dh_odd) v += 1.0f / 1024;  // not exact in bf16: dz is rounded
  const std::vector<Bf16> h16 = to_bf16(h), dh16 = to_bf16(dh_odd);
  std::vector<Bf16> dz16(6);
  bias_act_dropout_backward_async(kCpu, make_view(static_cast<const Bf16*>(h16.data()), 2, 3),
                                  make_view(static_cast<const Bf16*>(dh16.data()), 2, 3), true, 0.5f,
                                  make_view(dz16.data(), 2, 3), sums.data());
  std::vector<float> want(3, 0.0f);
  const std::vector<float> dz_stored = from_bf16(dz16);
  for (std::size_t i = 0; i < 6; ++i) want[i % 3] += dz_stored[i];
  CHECK(sums == want);
  // Without relu (p = 0): dz = dh, sums of dh; no rows: zero sums.
  bias_act_dropout_backward_async(kCpu, ConstMatrixView{nullptr, 2, 3, 3}, make_view(dh.data(), 2, 3), false, 0.0f,
                                  make_view(dz.data(), 2, 3), sums.data());
  CHECK(sums == std::vector<float>{5.0f, 7.0f, 9.0f});
  bias_act_dropout_backward_async(kCpu, make_view(h.data(), 0, 3), make_view(dh.data(), 0, 3), true, 0.5f,
                                  make_view(dz.data(), 0, 3), sums.data());
  CHECK(sums == std::vector<float>{0.0f, 0.0f, 0.0f});
}

namespace {
/// Mean cross-entropy over `rows` in double: the function whose gradient the kernel must produce.
double mean_loss(const std::vector<double>& logits, std::int64_t classes, const std::vector<std::int32_t>& labels,
                 const std::vector<NodeId>& rows) {
  double total = 0.0;
  for (NodeId r : rows) {
    const double* l = logits.data() + r * classes;
    double mx = l[0];
    for (std::int64_t c = 1; c < classes; ++c) mx = std::max(mx, l[c]);
    double se = 0.0;
    for (std::int64_t c = 0; c < classes; ++c) se += std::exp(l[c] - mx);
    total += mx + std::log(se) - l[labels[static_cast<std::size_t>(r)]];
  }
  return total / static_cast<double>(rows.size());
}
}  // namespace

TEST_CASE("softmax cross-entropy and its gradient match finite differences in double") {
  const std::int64_t num_rows = 5, classes = 4;
  auto logits = random_floats(static_cast<std::size_t>(num_rows * classes), 61, -3.0f, 3.0f);
  logits[4] = 80.0f;  // row 1: a large logit must not overflow (max-subtracted)
  const std::vector<std::int32_t> labels = {2, 0, 3, 1, 0};
  const std::vector<NodeId> rows = {0, 1, 3};
  const float scale = 1.0f / 3.0f;
  float loss = 0.0f;
  std::vector<float> grad(static_cast<std::size_t>(num_rows * classes), kNaN);  // all of it must be written
  softmax_cross_entropy_async(kCpu, make_view(logits.data(), num_rows, classes), labels.data(), rows.data(), 3, scale,
                              &loss, make_view(grad.data(), num_rows, classes));
  std::vector<double> ld(logits.begin(), logits.end());
  CHECK(loss / 3.0 == doctest::Approx(mean_loss(ld, classes, labels, rows)).epsilon(1e-6));
  const double h = 1e-6;
  for (std::size_t t = 0; t < ld.size(); ++t) {
    auto plus = ld, minus = ld;
    plus[t] += h;
    minus[t] -= h;
    const double fd = (mean_loss(plus, classes, labels, rows) - mean_loss(minus, classes, labels, rows)) / (2 * h);
    CAPTURE(t);
    CHECK(grad[t] == doctest::Approx(fd).epsilon(1e-5).scale(1.0));
  }
  for (std::int64_t c = 0; c < classes; ++c) {  // rows 2 and 4 are not listed
    CHECK(grad[static_cast<std::size_t>(2 * classes + c)] == 0.0f);
    CHECK(grad[static_cast<std::size_t>(4 * classes + c)] == 0.0f);
  }
  float none = 1.0f;
  softmax_cross_entropy_async(kCpu, make_view(logits.data(), num_rows, classes), labels.data(), rows.data(), 0, scale,
                              &none, MatrixView{});
  CHECK(none == 0.0f);
}

TEST_CASE("softmax cross-entropy and count_correct on padded logits read only the classes and zero the padding") {
  const std::int64_t num_rows = 6, classes = 5, ld = 8;
  const auto packed = random_floats(static_cast<std::size_t>(num_rows * classes), 63, -3.0f, 3.0f);
  std::vector<float> padded(static_cast<std::size_t>(num_rows * ld), 90.0f);  // padding that would win if read
  for (std::int64_t i = 0; i < num_rows; ++i)
    std::copy_n(packed.begin() + i * classes, classes, padded.begin() + i * ld);
  const std::vector<std::int32_t> labels = {4, 0, 3, 1, 0, 2};
  const std::vector<NodeId> rows = {0, 2, 3, 5};
  float loss_packed = 0.0f, loss_padded = 0.0f;
  std::vector<float> grad_packed(packed.size(), kNaN), grad_padded(padded.size(), kNaN);
  softmax_cross_entropy_async(kCpu, make_view(packed.data(), num_rows, classes), labels.data(), rows.data(), 4, 0.25f,
                              &loss_packed, make_view(grad_packed.data(), num_rows, classes));
  softmax_cross_entropy_async(kCpu, make_view(padded.data(), num_rows, classes, ld), labels.data(), rows.data(), 4,
                              0.25f, &loss_padded, make_view(grad_padded.data(), num_rows, classes, ld));
  CHECK(loss_padded == loss_packed);
  for (std::int64_t i = 0; i < num_rows; ++i) {
    for (std::int64_t c = 0; c < classes; ++c)
      CHECK(grad_padded[static_cast<std::size_t>(i * ld + c)] == grad_packed[static_cast<std::size_t>(i * classes + c)]);
    for (std::int64_t c = classes; c < ld; ++c) CHECK(grad_padded[static_cast<std::size_t>(i * ld + c)] == 0.0f);
  }
  std::int64_t correct_packed = -1, correct_padded = -1;
  count_correct_async(kCpu, make_view(packed.data(), num_rows, classes), labels.data(), rows.data(), 4,
                      &correct_packed);
  count_correct_async(kCpu, make_view(padded.data(), num_rows, classes, ld), labels.data(), rows.data(), 4,
                      &correct_padded);
  CHECK(correct_padded == correct_packed);
}

TEST_CASE("softmax cross-entropy rejects a label outside the classes") {
  const std::vector<float> logits(8, 0.0f);
  const std::vector<std::int32_t> labels = {0, 4};
  const std::vector<NodeId> rows = {1};
  float loss = 0.0f;
  CHECK_THROWS_AS(softmax_cross_entropy_async(kCpu, make_view(logits.data(), 2, 4), labels.data(), rows.data(), 1, 1.0f,
                                              &loss, MatrixView{}),
                  InvalidInput);
}

TEST_CASE("count_correct breaks argmax ties towards the lowest class index") {
  const std::vector<float> logits = {1.0f, 3.0f, 3.0f, 0.0f,   // tie between 1 and 2: argmax 1
                                     5.0f, 5.0f, 5.0f, 5.0f,   // all equal: argmax 0
                                     0.0f, 0.0f, 0.0f, 9.0f};  // argmax 3
  const std::vector<NodeId> rows = {0, 1, 2};
  std::int64_t correct = -1;
  const std::vector<std::int32_t> right = {1, 0, 3};
  count_correct_async(kCpu, make_view(logits.data(), 3, 4), right.data(), rows.data(), 3, &correct);
  CHECK(correct == 3);
  const std::vector<std::int32_t> wrong = {2, 1, 3};
  count_correct_async(kCpu, make_view(logits.data(), 3, 4), wrong.data(), rows.data(), 3, &correct);
  CHECK(correct == 1);
}

TEST_CASE("Adam takes the hand-computed steps") {
  // Step 1: g' = 0.5 + 0.1 * 1 = 0.6; m = 0.06, v = 0.00036; m_hat = 0.6, v_hat = 0.36; w = 1 - 0.1 * 0.6 / 0.6.
  std::vector<float> w = {1.0f, -2.0f}, g = {0.5f, 0.0f}, m = {0.0f, 0.0f}, v = {0.0f, 0.0f};
  AdamParams p;
  p.lr = 0.1f;
  p.weight_decay = 0.1f;
  p.eps = 0.0f;
  p.step = 1;
  adam_step_async(kCpu, w.data(), g.data(), m.data(), v.data(), 2, p);
  CHECK(m[0] == doctest::Approx(0.06));
  CHECK(v[0] == doctest::Approx(0.00036));
  CHECK(w[0] == doctest::Approx(0.9));
  CHECK(w[1] == doctest::Approx(-1.9));  // g' = -0.2: the step is lr * sign
  // Step 2 with g = 0.5 again: g' = 0.59; m = 0.9 * 0.06 + 0.1 * 0.59 = 0.113; v = 0.999 * 0.00036 + 0.001 * 0.3481.
  p.step = 2;
  adam_step_async(kCpu, w.data(), g.data(), m.data(), v.data(), 1, p);
  const double m2 = 0.113, v2 = 0.999 * 0.00036 + 0.001 * 0.59 * 0.59;
  const double w2 = 0.9 - 0.1 * (m2 / (1 - 0.81)) / std::sqrt(v2 / (1 - 0.998001));
  CHECK(m[0] == doctest::Approx(m2));
  CHECK(v[0] == doctest::Approx(v2));
  CHECK(w[0] == doctest::Approx(w2).epsilon(1e-5));
  CHECK_THROWS_AS(adam_step_async(kCpu, w.data(), g.data(), m.data(), v.data(), 1, AdamParams{.step = 0}),
                  InvalidInput);
}

TEST_CASE("inv_sqrt_degree gives 0 for a zero degree") {
  const std::vector<RowOffset> offsets = {0, 0, 3, 4, 4};
  std::vector<float> d(4);
  inv_sqrt_degree_async(kCpu, offsets.data(), 4, 0.0f, d.data());
  CHECK(d[0] == 0.0f);
  CHECK(d[1] == doctest::Approx(1.0 / std::sqrt(3.0)));
  CHECK(d[2] == 1.0f);
  CHECK(d[3] == 0.0f);
  inv_sqrt_degree_async(kCpu, offsets.data(), 4, 1.0f, d.data());
  CHECK(d[0] == 1.0f);
  CHECK(d[1] == 0.5f);
  CHECK(d[2] == doctest::Approx(1.0 / std::sqrt(2.0)));
}

TEST_CASE("gather_rows on bf16 rows copies the bits of the listed rows, odd widths and repeats included") {
  for (const std::int64_t width : {1, 7, 16}) {
    std::vector<Bf16> src(static_cast<std::size_t>(6 * width));
    for (std::size_t i = 0; i < src.size(); ++i) src[i] = Bf16::from_bits(static_cast<std::uint16_t>(0x3f80 + 37 * i));
    const std::vector<NodeId> idx = {5, 0, 5, 2};
    std::vector<Bf16> gathered(static_cast<std::size_t>(4 * width + 1), Bf16::from_bits(0xdead));
    gather_rows_async(kCpu, make_view<const Bf16>(src.data(), 6, width), idx.data(),
                      make_view(gathered.data(), 4, width));
    for (std::int64_t i = 0; i < 4; ++i)
      for (std::int64_t c = 0; c < width; ++c)
        REQUIRE(gathered[static_cast<std::size_t>(i * width + c)] == src[static_cast<std::size_t>(idx[i] * width + c)]);
    CHECK(gathered.back() == Bf16::from_bits(0xdead));  // nothing written past count x width
    gather_rows_async(kCpu, make_view<const Bf16>(src.data(), 6, width), idx.data(),
                      make_view(gathered.data(), 0, width));  // nothing to do: no throw
  }
  const std::vector<Bf16> one(2, Bf16::from_bits(1));
  std::vector<Bf16> out(2);
  CHECK_THROWS_AS(gather_rows_async(kCpu, make_view(one.data(), 1, 2), nullptr, make_view(out.data(), -1, 2)),
                  InvalidInput);
}

TEST_CASE("gather_rows and scatter_add_rows handle repeated indices") {
  const std::int64_t width = 20;
  const auto src = random_floats(5 * width, 71);
  const std::vector<NodeId> idx = {3, 0, 3, 4, 3};
  std::vector<float> gathered(5 * width);
  gather_rows_async(kCpu, make_view(src.data(), 5, width), idx.data(), make_view(gathered.data(), 5, width));
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t c = 0; c < width; ++c)
      REQUIRE(gathered[static_cast<std::size_t>(i * width + c)] == src[static_cast<std::size_t>(idx[i] * width + c)]);
  std::vector<float> dst(5 * width, 1.0f);
  scatter_add_rows_async(kCpu, make_view(src.data(), 5, width), idx.data(), make_view(dst.data(), 5, width));
  for (std::int64_t r = 0; r < 5; ++r) {
    for (std::int64_t c = 0; c < width; ++c) {
      double want = 1.0;
      for (std::int64_t i = 0; i < 5; ++i)
        if (idx[static_cast<std::size_t>(i)] == r) want += src[static_cast<std::size_t>(i * width + c)];
      REQUIRE(dst[static_cast<std::size_t>(r * width + c)] == doctest::Approx(want).epsilon(1e-6));
    }
  }
}

TEST_CASE("column_sum, sum and sum_squares match double sums") {
  const std::int64_t rows = 40000, width = 5;  // more rows than one reduction chunk
  const auto x = random_floats(static_cast<std::size_t>(rows * width), 81);
  std::vector<float> cols(width);
  column_sum_async(kCpu, make_view(x.data(), rows, width), cols.data());
  double total = 0.0, squares = 0.0;
  for (std::int64_t c = 0; c < width; ++c) {
    double s = 0.0;
    for (std::int64_t i = 0; i < rows; ++i) s += x[static_cast<std::size_t>(i * width + c)];
    CHECK(cols[static_cast<std::size_t>(c)] == doctest::Approx(s).epsilon(1e-6));
  }
  for (float v : x) {
    total += v;
    squares += static_cast<double>(v) * v;
  }
  float out = 0.0f;
  sum_async(kCpu, x.data(), rows * width, &out);
  CHECK(out == doctest::Approx(total).epsilon(1e-6));
  sum_squares_async(kCpu, x.data(), rows * width, &out);
  CHECK(out == doctest::Approx(squares).epsilon(1e-6));
  sum_async(kCpu, nullptr, 0, &out);
  CHECK(out == 0.0f);
  std::vector<float> zero_rows(3, kNaN);
  column_sum_async(kCpu, make_view(static_cast<const float*>(nullptr), 0, 3), zero_rows.data());
  CHECK(zero_rows == std::vector<float>(3, 0.0f));
}

TEST_CASE("copy_async and memset_zero_async move host bytes") {
  std::vector<float> a = {1, 2, 3}, b(3, 7.0f);
  copy_async(kCpu, b.data(), a.data(), 3 * sizeof(float));
  CHECK(b == a);
  memset_zero_async(kCpu, b.data(), 2 * sizeof(float));
  CHECK(b == std::vector<float>{0, 0, 3});
  synchronize(kCpu);
}

TEST_CASE("kernel entry points reject bad sizes with InvalidInput") {
  std::vector<float> buf(16);
  const HostCsr a = random_csr(4, 4, 1, 91);
  CHECK_THROWS_AS(spmm_async(kCpu, a.view(), nullptr, nullptr, make_view(buf.data(), a.cols, 4, 2),
                             make_view(buf.data(), a.rows, 4)),
                  InvalidInput);
  CHECK_THROWS_AS(gemm_async(kCpu, false, false, 1.0f, make_view(buf.data(), 2, -1, 2), make_view(buf.data(), -1, 2),
                             0.0f, make_view(buf.data(), 2, 2)),
                  InvalidInput);
  CHECK_THROWS_AS(gather_rows_async(kCpu, make_view(buf.data(), 8, 2), nullptr, make_view(buf.data(), -3, 2)),
                  InvalidInput);
}

TEST_CASE("CPU kernels give bit-identical results for any thread count") {
  const HostCsr a = random_csr(3000, 2000, 10, 95, 0.05, {{7, 20000}});
  const auto x = random_floats(2000 * 16, 96);
  const auto feats = random_floats(10000 * 210, 97);
  const auto b = random_floats(10000 * 16, 98);
  auto run = [&](int threads) {
    omp_set_num_threads(threads);
    std::vector<float> out(3000 * 16 + 210 * 16 + 12 * 16 + 2);
    spmm_async(kCpu, a.view(), nullptr, nullptr, make_view(x.data(), a.cols, 16), make_view(out.data(), a.rows, 16));
    gemm_async(kCpu, true, false, 1.0f, make_view(feats.data(), 10000, 210), make_view(b.data(), 10000, 16), 0.0f,
               make_view(out.data() + 3000 * 16, 210, 16));
    gemm_async(kCpu, true, false, 1.0f, make_view(feats.data(), 10000, 12, 210), make_view(b.data(), 10000, 16), 0.0f,
               make_view(out.data() + 3000 * 16 + 210 * 16, 12, 16));  // few columns: split over k
    sum_async(kCpu, feats.data(), 10000 * 210, &out[out.size() - 2]);
    column_sum_async(kCpu, make_view(feats.data(), 10000 * 210, 1), &out[out.size() - 1]);
    return out;
  };
  const int saved = omp_get_max_threads();
  const auto one = run(1), three = run(3), four = run(4);
  omp_set_num_threads(saved);
  CHECK(one == three);
  CHECK(one == four);
}

TEST_CASE("every memory category has a name") {
  for (int c = 0; c < static_cast<int>(MemoryCategory::kCount); ++c)
    CHECK(std::string(memory_category_name(static_cast<MemoryCategory>(c))) != "unknown");
  CHECK(std::string(memory_category_name(MemoryCategory::kWorkspace)) == "workspace");
}

TEST_CASE("a dropout key read as the kernel runs (Dropout::key_at) draws the mask of that key given by value") {
  const std::int64_t rows = 300, width = 19;
  const auto z = random_floats(static_cast<std::size_t>(rows * width), 61);
  const auto bias = random_floats(static_cast<std::size_t>(width), 62);
  const std::uint64_t key = rng::stream_key(9, rng::kDropout, 4, 1);
  Dropout by_value;
  by_value.p = 0.4f;
  by_value.key = key;
  by_value.global_offset = 17;
  Dropout at_run = by_value;
  at_run.key = rng::stream_key(9, rng::kDropout, 5, 1);  // a stale key: key_at must win
  at_run.key_at = &key;
  std::vector<float> a(z.size()), b(z.size());
  dropout_async(kCpu, make_view(z.data(), rows, width), by_value, make_view(a.data(), rows, width));
  dropout_async(kCpu, make_view(z.data(), rows, width), at_run, make_view(b.data(), rows, width));
  CHECK(a == b);
  bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), bias.data(), true, by_value,
                         make_view(a.data(), rows, width));
  bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), bias.data(), true, at_run,
                         make_view(b.data(), rows, width));
  CHECK(a == b);
  Dropout stale = at_run;
  stale.key_at = nullptr;
  bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), bias.data(), true, stale,
                         make_view(b.data(), rows, width));
  CHECK(a != b);  // the control: the stale key draws another mask
  for (std::int64_t c = 0; c < width; ++c) CHECK(dropout_keep(at_run, 40, c) == dropout_keep(by_value, 40, c));
  const HostCsr x = random_csr(rows, width, 5, 63);
  for (bool transposed : {false, true}) {  // rows are nodes, or (transposed) features
    std::vector<float> ca(static_cast<std::size_t>(x.nnz())), cb(ca.size());
    dropout_csr_values_async(kCpu, x.view(), transposed, by_value, ca.data());
    dropout_csr_values_async(kCpu, x.view(), transposed, at_run, cb.data());
    CHECK(ca == cb);
  }
}

TEST_CASE("Adam with its corrections read as the kernel runs (AdamParams::corrections_at) takes the same step") {
  const auto w0 = random_floats(50, 64), g = random_floats(50, 65);
  const auto m0 = random_floats(50, 66, 0.0f, 0.1f), v0 = random_floats(50, 67, 0.0f, 0.1f);
  AdamParams by_step;
  by_step.lr = 0.05f;
  by_step.weight_decay = 0.01f;
  by_step.step = 7;
  float corrections[2];
  adam_corrections(by_step, 7, corrections);
  CHECK(corrections[0] == doctest::Approx(1.0 - std::pow(0.9, 7)));
  CHECK(corrections[1] == doctest::Approx(1.0 - std::pow(0.999, 7)));
  AdamParams at_run = by_step;
  at_run.step = 1;  // stale: corrections_at must win
  at_run.corrections_at = corrections;
  auto w1 = w0, m1 = m0, v1 = v0, w2 = w0, m2 = m0, v2 = v0;
  adam_step_async(kCpu, w1.data(), g.data(), m1.data(), v1.data(), 50, by_step);
  adam_step_async(kCpu, w2.data(), g.data(), m2.data(), v2.data(), 50, at_run);
  CHECK(w1 == w2);
  CHECK(m1 == m2);
  CHECK(v1 == v2);
  at_run.corrections_at = nullptr;  // the control: step 1's corrections move w differently
  auto w3 = w0, m3 = m0, v3 = v0;
  adam_step_async(kCpu, w3.data(), g.data(), m3.data(), v3.data(), 50, at_run);
  CHECK(w3 != w1);
  CHECK_THROWS_AS(adam_corrections(by_step, 0, corrections), InvalidInput);
}

TEST_CASE("the integer keep test decides exactly as the float one, for any drop probability and word") {
  std::mt19937_64 gen(71);
  std::vector<float> ps = {0.5f, 0.1f, 0.9f, 1.0f / 3.0f, 0.2f, 0.7f, 1e-8f, 0.999999f, std::nextafter(0.5f, 1.0f)};
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (int i = 0; i < 200; ++i) ps.push_back(uniform(gen));
  std::uniform_int_distribution<std::uint32_t> words;
  for (float p : ps) {
    CAPTURE(p);
    const float k = kernels::detail::dropout_keep_probability(p);
    const std::uint32_t below = kernels::detail::dropout_keep_below(k);
    bool agree = true;
    auto check = [&](std::uint32_t w) {
      agree = agree && kernels::detail::dropout_word_keeps_below(w, below) == kernels::detail::dropout_word_keeps(w, k);
    };
    for (int j = 0; j < 2000; ++j) check(words(gen));
    for (std::int64_t v = std::int64_t{below} - 2; v <= std::int64_t{below} + 1; ++v)  // around the threshold
      if (v >= 0 && v < (std::int64_t{1} << 24))
        for (std::uint32_t low : {0u, 1u, 255u}) check((static_cast<std::uint32_t>(v) << 8) | low);
    check(0u);
    check(0xFFFFFFFFu);
    CHECK(agree);
  }
}

TEST_CASE("the positive mask is the stored output's > 0 bits, and the backward reads it instead of h, bit for bit") {
  for (const std::int64_t width : {1, 3, 4, 7, 16, 45}) {
    CAPTURE(width);
    const std::int64_t rows = 37;
    const auto z = random_floats(static_cast<std::size_t>(rows * width), 301 + static_cast<std::uint64_t>(width));
    const auto bias = random_floats(static_cast<std::size_t>(width), 302);
    const auto dh = random_floats(z.size(), 303);
    Dropout d;
    d.p = 0.5f;
    d.key = rng::stream_key(3, rng::kDropout, 1, 1);
    std::vector<float> out(z.size());
    std::vector<std::uint8_t> positive(static_cast<std::size_t>(positive_mask_bytes(rows, width)), 0xee);
    bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), bias.data(), true, d,
                           make_view(out.data(), rows, width), positive.data());
    bool bits_match = true;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t b = 0; b < positive_mask_blocks(width); ++b)
        for (std::int64_t u = 0; u < 4; ++u) {
          const std::int64_t c = 4 * b + u;
          const bool bit = (positive[static_cast<std::size_t>(r * positive_mask_blocks(width) + b)] >> u) & 1u;
          bits_match = bits_match && bit == (c < width && out[static_cast<std::size_t>(r * width + c)] > 0.0f);
        }
    CHECK(bits_match);
    // float: the backward from the mask (h's data never read) equals the one from h, dz and sums.
    std::vector<float> dz_h(z.size()), dz_mask(z.size()), sums_h(static_cast<std::size_t>(width)),
        sums_mask(static_cast<std::size_t>(width));
    bias_act_dropout_backward_async(kCpu, make_view(out.data(), rows, width), make_view(dh.data(), rows, width), true,
                                    d.p, make_view(dz_h.data(), rows, width), sums_h.data());
    bias_act_dropout_backward_async(kCpu, ConstMatrixView{nullptr, rows, width, width},
                                    make_view(dh.data(), rows, width), true, d.p,
                                    make_view(dz_mask.data(), rows, width), sums_mask.data(), positive.data());
    CHECK(dz_mask == dz_h);
    CHECK(sums_mask == sums_h);
    // bf16: the mask of the stored (rounded) values; the same backward from the mask as from h.
    std::vector<Bf16> out16(z.size());
    std::vector<std::uint8_t> positive16(positive.size(), 0xee);
    bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), bias.data(), true, d,
                           make_view(out16.data(), rows, width), positive16.data());
    CHECK(positive16 == positive);  // these values keep their sign when rounded
    const std::vector<Bf16> dh16 = to_bf16(dh);
    std::vector<Bf16> dz16_h(z.size()), dz16_mask(z.size());
    bias_act_dropout_backward_async(kCpu, make_view(static_cast<const Bf16*>(out16.data()), rows, width),
                                    make_view(dh16.data(), rows, width), true, d.p,
                                    make_view(dz16_h.data(), rows, width), sums_h.data());
    bias_act_dropout_backward_async(kCpu, ConstBf16MatrixView{nullptr, rows, width, width},
                                    make_view(dh16.data(), rows, width), true, d.p,
                                    make_view(dz16_mask.data(), rows, width), sums_mask.data(), positive16.data());
    CHECK(from_bf16(dz16_mask) == from_bf16(dz16_h));
    CHECK(sums_mask == sums_h);
  }
  // A mask stands for h only in the ReLU backward with column sums.
  std::vector<float> g(4, 1.0f), s(2);
  std::vector<std::uint8_t> m(2, 1);
  CHECK_THROWS_AS(bias_act_dropout_backward_async(kCpu, ConstMatrixView{nullptr, 2, 2, 2}, make_view(g.data(), 2, 2),
                                                  true, 0.5f, make_view(g.data(), 2, 2), nullptr, m.data()),
                  LogicError);
  CHECK_THROWS_AS(bias_act_dropout_backward_async(kCpu, ConstMatrixView{nullptr, 2, 2, 2}, make_view(g.data(), 2, 2),
                                                  false, 0.0f, make_view(g.data(), 2, 2), s.data(), m.data()),
                  LogicError);
}

TEST_CASE("the fused output loss adds the bias, and gives the listed rows' loss, gradient and its column sums") {
  const std::int64_t rows = 41, classes = 7, ld = 8;
  auto z = random_floats(static_cast<std::size_t>(rows * ld), 311, -3.0f, 3.0f);
  for (std::int64_t r = 0; r < rows; ++r) z[static_cast<std::size_t>(r * ld + classes)] = 0.0f;  // padding column
  auto bias = random_floats(static_cast<std::size_t>(ld), 312);
  bias[static_cast<std::size_t>(classes)] = 0.0f;
  std::vector<std::int32_t> labels(static_cast<std::size_t>(rows));
  for (std::int64_t r = 0; r < rows; ++r) labels[static_cast<std::size_t>(r)] = static_cast<std::int32_t>((r * 5) % classes);
  const std::vector<NodeId> listed = {3, 0, 17, 40, 22, 9};
  const auto slots = loss_row_slots(listed, rows);
  CHECK(slots[3] == 0);
  CHECK(slots[40] == 3);
  CHECK(slots[1] == -1);
  const auto count = static_cast<std::int64_t>(listed.size());
  const float scale = 1.0f / 6.0f;
  // The separate operations on a copy.
  std::vector<float> logits_apart(z.size()), grad_apart(z.size()), sums_apart(static_cast<std::size_t>(ld));
  float loss_apart = 0.0f;
  bias_act_dropout_async(kCpu, make_view(z.data(), rows, ld), bias.data(), false, Dropout{},
                         make_view(logits_apart.data(), rows, ld));
  softmax_cross_entropy_async(kCpu, make_view(logits_apart.data(), rows, classes, ld), labels.data(), listed.data(),
                              count, scale, &loss_apart, make_view(grad_apart.data(), rows, classes, ld));
  column_sum_async(kCpu, make_view(grad_apart.data(), rows, ld), sums_apart.data());
  // Fused, float and bf16 gradients.
  std::vector<float> logits(z), grad(z.size(), kNaN), sums(static_cast<std::size_t>(ld), kNaN);
  float loss = kNaN;
  bias_softmax_cross_entropy_async(kCpu, make_view(logits.data(), rows, classes, ld), bias.data(), labels.data(),
                                   listed.data(), slots.data(), count, scale, &loss,
                                   make_view(grad.data(), rows, classes, ld), sums.data());
  CHECK(logits == logits_apart);
  CHECK(loss == loss_apart);
  CHECK(grad == grad_apart);
  CHECK(sums == sums_apart);
  CHECK(grad[static_cast<std::size_t>(1 * ld + 2)] == 0.0f);  // an unlisted row
  CHECK(sums[static_cast<std::size_t>(classes)] == 0.0f);     // the padding column
  std::vector<float> logits16(z);
  std::vector<Bf16> grad16(z.size());
  bias_softmax_cross_entropy_async(kCpu, make_view(logits16.data(), rows, classes, ld), bias.data(), labels.data(),
                                   listed.data(), slots.data(), count, scale, &loss,
                                   make_view(grad16.data(), rows, classes, ld), sums.data());
  CHECK(from_bf16(grad16) == from_bf16(to_bf16(grad_apart)));
  CHECK(sums == sums_apart);  // the float gradient's sums
  // Bad input: slots that do not match the rows, a row listed twice, a row out of range, count above the rows.
  auto wrong = slots;
  wrong[5] = 2;
  std::vector<float> l2(z);
  CHECK_THROWS_AS(bias_softmax_cross_entropy_async(kCpu, make_view(l2.data(), rows, classes, ld), bias.data(),
                                                   labels.data(), listed.data(), wrong.data(), count, scale, &loss,
                                                   make_view(grad.data(), rows, classes, ld), sums.data()),
                  InvalidInput);
  CHECK_THROWS_AS(loss_row_slots({1, 2, 1}, rows), InvalidInput);
  CHECK_THROWS_AS(loss_row_slots({1, 41}, rows), InvalidInput);
  CHECK_THROWS_AS(bias_softmax_cross_entropy_async(kCpu, make_view(l2.data(), 2, classes, ld), bias.data(),
                                                   labels.data(), listed.data(), slots.data(), 3, scale, &loss,
                                                   make_view(grad.data(), 2, classes, ld), sums.data()),
                  InvalidInput);
}
