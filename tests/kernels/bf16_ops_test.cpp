// The CPU bf16-storage kernels (the reference of the --precision bf16 path) against naive double-precision
// computations on the bf16-widened inputs, and against the float kernels they are specified by: widen exactly,
// compute in float32, round the stored result to bf16 once.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "base/error.hpp"
#include "base/philox.hpp"
#include "kernels/ops.hpp"
#include "ops_reference.hpp"

using namespace gcnpart;
using namespace gcnpart::kernels;
using gcnpart::testing::random_floats;
using gcnpart::testing::reference_gemm;
using gcnpart::testing::summation_rtol;
using gcnpart::testing::worst_ratio;

namespace {

const Context kCpu{};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr Bf16 kBf16NaN = Bf16::from_bits(0x7fc0);       // a quiet NaN: marks padding that must not be read
constexpr Bf16 kBf16Sentinel = Bf16::from_bits(0x7fc1);  // another quiet NaN: marks padding that must not be written

std::vector<Bf16> to_bf16(const std::vector<float>& x) {
  std::vector<Bf16> b(x.size());
  convert_to_bf16_async(kCpu, x.data(), static_cast<std::int64_t>(x.size()), b.data());
  return b;
}

std::vector<float> widen(const std::vector<Bf16>& b) {
  std::vector<float> x(b.size());
  convert_from_bf16_async(kCpu, b.data(), static_cast<std::int64_t>(b.size()), x.data());
  return x;
}

/// Random bf16 values (uniform floats rounded), with every element of the padding columns [width, ld) of each of
/// `rows` rows set to NaN: a kernel that reads padding poisons its result.
std::vector<Bf16> random_bf16_matrix(std::int64_t rows, std::int64_t width, std::int64_t ld, std::uint64_t seed,
                                     float lo = -1.0f, float hi = 1.0f) {
  auto b = to_bf16(random_floats(static_cast<std::size_t>(rows * ld), seed, lo, hi));
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t c = width; c < ld; ++c) b[static_cast<std::size_t>(i * ld + c)] = kBf16NaN;
  return b;
}

/// Position of a bf16 pattern on the number line (consecutive finite bf16 values differ by 1; +0 and -0 are 0).
std::int32_t bf16_ordinal(Bf16 b) {
  const std::int32_t magnitude = b.bits() & 0x7fff;
  return (b.bits() & 0x8000) != 0 ? -magnitude : magnitude;
}

/// Distance in bf16 ulps between two finite patterns.
std::int32_t bf16_ulps(Bf16 a, Bf16 b) { return std::abs(bf16_ordinal(a) - bf16_ordinal(b)); }

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

/// The inputs of the epilogue tests: random values plus a few that exercise the rounding (ties to even, a value
/// that overflows bf16's range only when rounded, a float subnormal, the largest finite float).
std::vector<float> epilogue_input(std::size_t n, std::uint64_t seed) {
  auto z = random_floats(n, seed, -2.0f, 2.0f);
  const std::uint32_t specials[] = {0x3f808000u, 0x3f818000u, 0x7f7f8000u, 0xff7f8000u,
                                    0x00018000u, 0x7f7fffffu, 0x40490fdbu, 0xbf8080a0u};
  for (std::size_t i = 0; i < std::size(specials); ++i) z[(i * 31) % n] = float_of(specials[i]);
  return z;
}

}  // namespace

TEST_CASE("CPU bf16 GEMM matches a double reference on the widened inputs for all transposes and padded lds") {
  struct Shape {
    std::int64_t m, n, k;
  };
  for (const Shape s : {Shape{37, 19, 53}, Shape{1, 1, 1}, Shape{64, 7, 1433}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        CAPTURE(s.m);
        CAPTURE(s.k);
        CAPTURE(ta);
        CAPTURE(tb);
        const std::int64_t lda = (ta ? s.m : s.k) + 2, ldb = (tb ? s.k : s.n) + 1, ldc = s.n + 3;
        const auto a = random_bf16_matrix(ta ? s.k : s.m, ta ? s.m : s.k, lda, 21);
        const auto b = random_bf16_matrix(tb ? s.n : s.k, tb ? s.k : s.n, ldb, 22);
        const auto a32 = widen(a), b32 = widen(b);
        for (float beta : {0.0f, 0.5f}) {
          CAPTURE(beta);
          auto c = random_floats(static_cast<std::size_t>(s.m * ldc), 23);
          if (beta == 0.0f) std::fill(c.begin(), c.end(), kNaN);  // beta = 0 must not read C
          const auto before = c;
          const auto want = reference_gemm(ta, tb, s.m, s.n, s.k, 1.5f, a32, lda, b32, ldb, beta, c, ldc);
          gemm_bf16_async(kCpu, ta, tb, 1.5f, make_view(a.data(), (ta ? s.k : s.m), (ta ? s.m : s.k), lda),
                          make_view(b.data(), (tb ? s.n : s.k), (tb ? s.k : s.n), ldb), beta,
                          make_view(c.data(), s.m, s.n, ldc));
          // bf16 x bf16 products are exact in float: only the float summation errs (first-order bound).
          CHECK(worst_ratio(c, ldc, want, s.m, s.n, summation_rtol(s.k)) <= 1.0);
          std::int64_t padding_written = 0;  // C's padding columns keep their bits
          for (std::int64_t i = 0; i < s.m; ++i)
            for (std::int64_t j = s.n; j < ldc; ++j) {
              const auto t = static_cast<std::size_t>(i * ldc + j);
              padding_written += bits_of(c[t]) == bits_of(before[t]) ? 0 : 1;
            }
          CHECK(padding_written == 0);
        }
      }
    }
  }
}

TEST_CASE("CPU bf16 GEMM with a bf16 C stores the float result rounded to nearest even, within one bf16 ulp") {
  const std::int64_t m = 37, n = 19, k = 53;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const std::int64_t lda = (ta ? m : k) + 1, ldb = (tb ? k : n) + 2, ldc = n + 5;
      const auto a = random_bf16_matrix(ta ? k : m, ta ? m : k, lda, 31);
      const auto b = random_bf16_matrix(tb ? n : k, tb ? k : n, ldb, 32);
      std::vector<float> c32(static_cast<std::size_t>(m * n), kNaN);
      gemm_bf16_async(kCpu, ta, tb, -0.75f, make_view(a.data(), (ta ? k : m), (ta ? m : k), lda),
                      make_view(b.data(), (tb ? n : k), (tb ? k : n), ldb), 0.0f, make_view(c32.data(), m, n));
      std::vector<Bf16> c16(static_cast<std::size_t>(m * ldc), kBf16Sentinel);
      gemm_bf16_async(kCpu, ta, tb, -0.75f, make_view(a.data(), (ta ? k : m), (ta ? m : k), lda),
                      make_view(b.data(), (tb ? n : k), (tb ? k : n), ldb), 0.0f, make_view(c16.data(), m, n, ldc));
      const auto rounded = to_bf16(c32);
      const auto want = reference_gemm(ta, tb, m, n, k, -0.75f, widen(a), lda, widen(b), ldb, 0.0f, {}, 0);
      std::int32_t worst_ulps = 0;
      double worst = 0.0;
      std::int64_t padding_written = 0;
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < ldc; ++j) {
          const Bf16 got = c16[static_cast<std::size_t>(i * ldc + j)];
          if (j >= n) {
            padding_written += got == kBf16Sentinel ? 0 : 1;
            continue;
          }
          const std::size_t t = static_cast<std::size_t>(i * n + j);
          worst_ulps = std::max(worst_ulps, bf16_ulps(got, rounded[t]));
          // Against double: the float sum's error plus half a bf16 ulp (2^-9 relative) of rounding.
          const double g = widen(std::vector<Bf16>{got})[0];
          const double allowed = summation_rtol(k) * want.magnitude[t] + std::ldexp(std::abs(want.value[t]), -8);
          worst = std::max(worst, std::abs(g - want.value[t]) / allowed);
        }
      }
      CHECK(worst_ulps <= 1);
      CHECK(worst <= 1.0);
      CHECK(padding_written == 0);
    }
  }
}

TEST_CASE("CPU bf16 GEMM with k = 0 or alpha = 0 only scales a float C and zeroes a bf16 C") {
  std::vector<float> c = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  gemm_bf16_async(kCpu, false, false, 1.0f, ConstBf16MatrixView{nullptr, 2, 0, 1},
                  ConstBf16MatrixView{nullptr, 0, 3, 3}, 0.5f, make_view(c.data(), 2, 3));
  CHECK(c == std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f});
  std::vector<float> nan_c(6, kNaN);
  gemm_bf16_async(kCpu, true, true, 1.0f, ConstBf16MatrixView{nullptr, 0, 2, 2}, ConstBf16MatrixView{nullptr, 3, 0, 1},
                  0.0f, make_view(nan_c.data(), 2, 3));
  CHECK(nan_c == std::vector<float>(6, 0.0f));

  // bf16 C, ldc 4 > n 3: the padding column keeps its sentinel.
  std::vector<Bf16> c16(8, kBf16Sentinel);
  gemm_bf16_async(kCpu, false, false, 1.0f, ConstBf16MatrixView{nullptr, 2, 0, 1},
                  ConstBf16MatrixView{nullptr, 0, 3, 3}, 0.0f, make_view(c16.data(), 2, 3, 4));
  CHECK(c16 == std::vector<Bf16>{Bf16{}, Bf16{}, Bf16{}, kBf16Sentinel,  // +0 where written, padding untouched
                                 Bf16{}, Bf16{}, Bf16{}, kBf16Sentinel});
  const std::vector<Bf16> ones(6, Bf16::from_bits(0x3f80));  // 1.0
  std::fill(c16.begin(), c16.end(), kBf16Sentinel);
  gemm_bf16_async(kCpu, false, false, 0.0f, make_view(ones.data(), 2, 2), make_view(ones.data(), 2, 3), 0.0f,
                  make_view(c16.data(), 2, 3, 4));
  CHECK(c16 == std::vector<Bf16>{Bf16{}, Bf16{}, Bf16{}, kBf16Sentinel,  // +0 where written, padding untouched
                                 Bf16{}, Bf16{}, Bf16{}, kBf16Sentinel});
  gemm_bf16_async(kCpu, false, false, 1.0f, ConstBf16MatrixView{nullptr, 0, 2, 2},
                  ConstBf16MatrixView{nullptr, 2, 3, 3}, 0.0f, make_view(static_cast<Bf16*>(nullptr), 0, 3));
}

TEST_CASE("CPU bf16 GEMM products are exact: integer-valued inputs give the exact integer sums") {
  // Entries in -8..8 are exact in bf16 and every partial sum (|s| <= 64 * 64 * 4) is an integer below 2^24, so the
  // float result must equal the exact dot product whatever the summation order.
  const std::int64_t m = 9, n = 11, k = 64;
  std::vector<float> a(static_cast<std::size_t>(m * k)), b(static_cast<std::size_t>(k * n));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(static_cast<int>((i * 7) % 17) - 8);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(static_cast<int>((i * 5) % 17) - 8);
  const auto a16 = to_bf16(a), b16 = to_bf16(b);
  REQUIRE(widen(a16) == a);
  std::vector<float> c(static_cast<std::size_t>(m * n));
  gemm_bf16_async(kCpu, false, false, 1.0f, make_view(a16.data(), m, k), make_view(b16.data(), k, n), 0.0f,
                  make_view(c.data(), m, n));
  bool exact = true;
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0.0;
      for (std::int64_t p = 0; p < k; ++p) s += static_cast<double>(a[i * k + p]) * b[p * n + j];
      exact = exact && c[static_cast<std::size_t>(i * n + j)] == static_cast<float>(s);
    }
  CHECK(exact);
}

TEST_CASE("CPU column_sum over bf16 equals the float column_sum of the widened values and a double sum") {
  for (const auto& [rows, width] : {std::pair<std::int64_t, std::int64_t>{40000, 5}, {1000, 37}, {1, 3}}) {
    CAPTURE(rows);
    CAPTURE(width);
    const auto x16 = to_bf16(random_floats(static_cast<std::size_t>(rows * width), 81));
    const auto x32 = widen(x16);
    std::vector<float> got(static_cast<std::size_t>(width), kNaN), want(static_cast<std::size_t>(width), kNaN);
    column_sum_async(kCpu, make_view(x16.data(), rows, width), got.data());
    column_sum_async(kCpu, make_view(x32.data(), rows, width), want.data());
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    for (std::int64_t c = 0; c < width; ++c) {
      double s = 0.0, magnitude = 0.0;
      for (std::int64_t i = 0; i < rows; ++i) {
        s += x32[static_cast<std::size_t>(i * width + c)];
        magnitude += std::abs(x32[static_cast<std::size_t>(i * width + c)]);
      }
      // Exact bf16 terms: only the float summation errs.
      CHECK(std::abs(got[static_cast<std::size_t>(c)] - s) <= summation_rtol(rows) * magnitude);
    }
  }
  std::vector<float> zero_rows(3, kNaN);
  column_sum_async(kCpu, make_view(static_cast<const Bf16*>(nullptr), 0, 3), zero_rows.data());
  CHECK(zero_rows == std::vector<float>(3, 0.0f));
}

TEST_CASE("bias_act_dropout into bf16 stores the float epilogue rounded, bit for bit, with the same mask") {
  const std::int64_t rows = 500, width = 37;  // odd width: a partial block of four columns per row
  const auto z = epilogue_input(static_cast<std::size_t>(rows * width), 51);
  const auto bias = random_floats(static_cast<std::size_t>(width), 52);
  std::vector<NodeId> ids(static_cast<std::size_t>(rows));
  for (std::int64_t i = 0; i < rows; ++i) ids[static_cast<std::size_t>(i)] = static_cast<NodeId>(3 * i + 7);
  for (float p : {0.0f, 0.3f, 0.5f}) {
    for (bool relu : {false, true}) {
      for (bool with_bias : {false, true}) {
        for (bool use_ids : {false, true}) {
          CAPTURE(p);
          CAPTURE(relu);
          CAPTURE(with_bias);
          CAPTURE(use_ids);
          Dropout d;
          d.p = p;
          d.key = rng::stream_key(42, rng::kDropout, 3, 1);
          if (use_ids) d.global_ids = ids.data();
          else d.global_offset = 1000;
          const float* b = with_bias ? bias.data() : nullptr;
          std::vector<float> h32(z.size());
          bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), b, relu, d,
                                 make_view(h32.data(), rows, width));
          std::vector<Bf16> h16(z.size(), kBf16Sentinel);
          bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), b, relu, d,
                                 make_view(h16.data(), rows, width));
          CHECK(h16 == to_bf16(h32));
          if (p > 0.0f) {  // the mask itself: zero exactly where dropout_keep drops (inputs are non-zero)
            bool mask_agrees = true;
            for (std::int64_t i = 0; i < rows; ++i) {
              const std::int64_t node = use_ids ? 3 * i + 7 : 1000 + i;
              for (std::int64_t c = 0; c < width; ++c)
                if (!dropout_keep(d, node, c))
                  mask_agrees = mask_agrees && (h16[static_cast<std::size_t>(i * width + c)].bits() & 0x7fff) == 0;
            }
            CHECK(mask_agrees);
          }
        }
      }
    }
  }
}

TEST_CASE("dropout on bf16 equals the float dropout of the widened input, rounded, in place or not") {
  const std::int64_t rows = 700, width = 37;
  auto x16 = to_bf16(epilogue_input(static_cast<std::size_t>(rows * width), 53));
  for (std::size_t i = 0; i < x16.size(); i += 9) x16[i] = Bf16{};  // zeros and all-zero blocks skip the draw
  for (std::size_t i = 0; i < 4 * 37; ++i) x16[i] = Bf16{};
  for (float p : {0.0f, 0.1f, 0.3f, 0.9f}) {
    CAPTURE(p);
    Dropout d;
    d.p = p;
    d.key = rng::stream_key(5, rng::kDropout, 2, 0);
    d.global_offset = 77;
    const auto x32 = widen(x16);
    std::vector<float> want32(x32.size());
    dropout_async(kCpu, make_view(x32.data(), rows, width), d, make_view(want32.data(), rows, width));
    const auto want = to_bf16(want32);
    std::vector<Bf16> out(x16.size(), kBf16Sentinel);
    dropout_async(kCpu, make_view(x16.data(), rows, width), d, make_view(out.data(), rows, width));
    CHECK(out == want);
    auto in_place = x16;
    dropout_async(kCpu, make_view(in_place.data(), rows, width), d, make_view(in_place.data(), rows, width));
    CHECK(in_place == want);
    if (p == 0.0f) CHECK(out == x16);  // the identity, bit for bit
  }
}

TEST_CASE("the bf16 backward epilogue passes gradients where the relu output is positive, scaled by 1 / (1 - p)") {
  // Hand-picked: every product is exact in bf16, so the rounding is the identity.
  const std::vector<float> h = {0.0f, 2.0f, -1.0f, 0.5f, -0.0f, 3.0f};
  const std::vector<float> dh = {1.0f, 2.0f, 3.0f, -4.0f, 5.0f, 6.0f};
  const auto h16 = to_bf16(h);
  auto dh16 = to_bf16(dh);
  std::vector<Bf16> dz(6, kBf16Sentinel);
  bias_act_dropout_backward_async(kCpu, make_view(h16.data(), 2, 3), make_view(dh16.data(), 2, 3), true, 0.5f,
                                  make_view(dz.data(), 2, 3));
  CHECK(widen(dz) == std::vector<float>{0.0f, 4.0f, 0.0f, -8.0f, 0.0f, 12.0f});
  bias_act_dropout_backward_async(kCpu, make_view(h16.data(), 2, 3), make_view(dh16.data(), 2, 3), true, 0.0f,
                                  make_view(dh16.data(), 2, 3));  // in place
  CHECK(widen(dh16) == std::vector<float>{0.0f, 2.0f, 0.0f, -4.0f, 0.0f, 6.0f});
  std::fill(dz.begin(), dz.end(), kBf16Sentinel);
  bias_act_dropout_backward_async(kCpu, make_view(static_cast<const Bf16*>(nullptr), 2, 3),
                                  make_view(dh16.data(), 2, 3), false, 0.0f, make_view(dz.data(), 2, 3));
  CHECK(dz == dh16);  // without relu or dropout: a copy
  CHECK_THROWS_AS(bias_act_dropout_backward_async(kCpu, make_view(h16.data(), 2, 3), make_view(dh16.data(), 2, 3),
                                                  false, 0.5f, make_view(dz.data(), 2, 3)),
                  LogicError);

  // Random values: equal to the float backward of the widened values, rounded (scale 1 / 0.7 is inexact).
  const std::int64_t rows = 300, width = 29;
  const auto hr = to_bf16(random_floats(static_cast<std::size_t>(rows * width), 54));
  const auto dhr = to_bf16(random_floats(static_cast<std::size_t>(rows * width), 55, -3.0f, 3.0f));
  std::vector<float> want32(hr.size());
  bias_act_dropout_backward_async(kCpu, make_view(widen(hr).data(), rows, width),
                                  make_view(widen(dhr).data(), rows, width), true, 0.3f,
                                  make_view(want32.data(), rows, width));
  std::vector<Bf16> got(hr.size());
  bias_act_dropout_backward_async(kCpu, make_view(hr.data(), rows, width), make_view(dhr.data(), rows, width), true,
                                  0.3f, make_view(got.data(), rows, width));
  CHECK(got == to_bf16(want32));
}

TEST_CASE("bf16 kernels reject beta != 0 with a bf16 C, negative sizes and short leading dimensions") {
  std::vector<Bf16> buf16(64, Bf16::from_bits(0x3f80));
  std::vector<float> buf(64, 1.0f);
  // A bf16 C cannot be accumulated into: it would be rounded twice.
  CHECK_THROWS_AS(gemm_bf16_async(kCpu, false, false, 1.0f, make_view(buf16.data(), 2, 2),
                                  make_view(buf16.data(), 2, 2), 1.0f, make_view(buf16.data(), 2, 2)),
                  InvalidInput);
  CHECK_THROWS_AS(gemm_bf16_async(kCpu, false, false, 1.0f, make_view(buf16.data(), 2, 2),
                                  make_view(buf16.data(), 2, 2), 0.5f, make_view(buf16.data(), 2, 2)),
                  InvalidInput);
  for (const auto& [m, n, k] : {std::tuple<int, int, int>{-1, 2, 2}, {2, -1, 2}, {2, 2, -1}}) {
    CAPTURE(m);
    CAPTURE(n);
    CAPTURE(k);
    CHECK_THROWS_AS(gemm_bf16_async(kCpu, false, false, 1.0f, make_view(buf16.data(), m, k, 2),
                                    make_view(buf16.data(), k, n, 2), 0.0f, make_view(buf.data(), m, n, 2)),
                    InvalidInput);
    CHECK_THROWS_AS(gemm_bf16_async(kCpu, false, false, 1.0f, make_view(buf16.data(), m, k, 2),
                                    make_view(buf16.data(), k, n, 2), 0.0f, make_view(buf16.data(), m, n, 2)),
                    InvalidInput);
  }
  // Leading dimensions below the stored widths: lda for A (3 x 4, or 4 x 3 transposed), ldb, ldc.
  CHECK_THROWS_AS(gemm_bf16_async(kCpu, false, false, 1.0f, make_view(buf16.data(), 3, 4, 3),
                                  make_view(buf16.data(), 4, 2), 0.0f, make_view(buf.data(), 3, 2)),
                  InvalidInput);
  CHECK_THROWS_AS(gemm_bf16_async(kCpu, true, false, 1.0f, make_view(buf16.data(), 4, 3, 2),
                                  make_view(buf16.data(), 4, 2), 0.0f, make_view(buf.data(), 3, 2)),
                  InvalidInput);
  CHECK_THROWS_AS(gemm_bf16_async(kCpu, false, true, 1.0f, make_view(buf16.data(), 3, 4),
                                  make_view(buf16.data(), 2, 4, 3), 0.0f, make_view(buf.data(), 3, 2)),
                  InvalidInput);
  CHECK_THROWS_AS(gemm_bf16_async(kCpu, false, false, 1.0f, make_view(buf16.data(), 3, 4),
                                  make_view(buf16.data(), 4, 2), 0.0f, make_view(buf16.data(), 3, 2, 1)),
                  InvalidInput);
  CHECK_THROWS_AS(gemm_bf16_async(kCpu, false, false, 1.0f, ConstBf16MatrixView{nullptr, 2, 2, 2},
                                  make_view(buf16.data(), 2, 2), 0.0f, make_view(buf.data(), 2, 2)),
                  LogicError);  // a missing buffer is a programming error

  CHECK_THROWS_AS(column_sum_async(kCpu, make_view(buf16.data(), -1, 2), buf.data()), InvalidInput);
  CHECK_THROWS_AS(column_sum_async(kCpu, make_view(buf16.data(), 2, -1), buf.data()), InvalidInput);
  CHECK_THROWS_AS(bias_act_dropout_async(kCpu, make_view(buf.data(), -1, 2), nullptr, true, Dropout{},
                                         make_view(buf16.data(), -1, 2)),
                  InvalidInput);
  CHECK_THROWS_AS(bias_act_dropout_async(kCpu, make_view(buf.data(), 2, 2), nullptr, true, Dropout{1.0f},
                                         make_view(buf16.data(), 2, 2)),
                  InvalidInput);
  CHECK_THROWS_AS(dropout_async(kCpu, make_view(buf16.data(), 2, -2), Dropout{}, make_view(buf16.data(), 2, -2)),
                  InvalidInput);
  CHECK_THROWS_AS(dropout_async(kCpu, make_view(buf16.data(), 2, 2), Dropout{-0.1f}, make_view(buf16.data(), 2, 2)),
                  InvalidInput);
  CHECK_THROWS_AS(bias_act_dropout_backward_async(kCpu, make_view(buf16.data(), -1, 2), make_view(buf16.data(), -1, 2),
                                                  true, 0.5f, make_view(buf16.data(), -1, 2)),
                  InvalidInput);
  CHECK_THROWS_AS(bias_act_dropout_backward_async(kCpu, make_view(buf16.data(), 2, 2), make_view(buf16.data(), 2, 2),
                                                  true, 1.0f, make_view(buf16.data(), 2, 2)),
                  InvalidInput);
  // Empty shapes are no-ops, whatever the buffers.
  dropout_async(kCpu, make_view(static_cast<const Bf16*>(nullptr), 0, 5), Dropout{0.5f},
                make_view(static_cast<Bf16*>(nullptr), 0, 5));
  bias_act_dropout_async(kCpu, ConstMatrixView{nullptr, 4, 0, 0}, nullptr, true, Dropout{},
                         make_view(static_cast<Bf16*>(nullptr), 4, 0));
}
