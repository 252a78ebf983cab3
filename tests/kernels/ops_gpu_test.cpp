// Every CUDA kernel against the CPU implementation on the same random inputs (TEST_SUITE("gpu"): needs a GPU and
// fails loudly without one). Tolerances are explicit: sums are compared relative to the sum of the magnitudes of
// their terms (1e-5 for fp32, widened by the n * 2^-24 recursive-summation bound for very long sums).
#include <cuda_runtime_api.h>
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include "device_fixture.hpp"
#include "base/error.hpp"
#include "base/philox.hpp"
#include "base/spmm_layout.hpp"
#include "kernels/long_rows.hpp"
#include "kernels/ops.hpp"
#include "ops_reference.hpp"

using namespace gcnpart;
using namespace gcnpart::kernels;
using namespace gcnpart::testing;

namespace {

const Context kCpu{};
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

/// A CSR matrix copied to the device; with `list_floor` >= 0 also its long-row list (kernels/long_rows.hpp) above
/// that floor, which view() then carries (the own SpMM's one-launch path).
struct DeviceCsr {
  DeviceBuffer<RowOffset> offsets;
  DeviceBuffer<NodeId> cols;
  DeviceBuffer<float> values;
  std::int64_t rows, num_cols;
  LongRows long_rows;
  DeviceBuffer<NodeId> long_ids;
  DeviceBuffer<std::int64_t> long_prefix;
  LongRowsView long_view{};
  bool listed = false;
  explicit DeviceCsr(const HostCsr& a, std::int64_t list_floor = -1)
      : offsets(a.offsets), cols(a.col_ids), values(a.values), rows(a.rows), num_cols(a.cols), listed(list_floor >= 0) {
    if (!listed) return;
    long_rows = list_long_rows(a.offsets.data(), a.rows, list_floor);
    long_ids = DeviceBuffer<NodeId>(long_rows.rows);
    long_prefix = DeviceBuffer<std::int64_t>(long_rows.prefix);
    long_view = LongRowsView{offsets.data(), rows, long_rows.floor, static_cast<std::int64_t>(long_rows.rows.size()),
                             long_ids.data(), long_prefix.data(), long_rows.prefix.data()};
  }
  [[nodiscard]] CsrView view(bool with_values = true) const {
    CsrView v{rows, num_cols, offsets.data(), cols.data(), with_values ? values.data() : nullptr,
              static_cast<std::int64_t>(cols.size())};
    v.long_rows = listed ? &long_view : nullptr;
    return v;
  }
};

DeviceBuffer<float> nan_buffer(std::size_t n) {
  DeviceBuffer<float> b(n);
  GCNPART_CUDA_TRY(cudaMemset(b.data(), 0xff, n * sizeof(float)));  // all-ones bits: NaN
  return b;
}

/// max over elements of |got - want| / (rtol * magnitude + atol); <= 1 passes, +inf for a NaN.
double worst_vs(const std::vector<float>& got, std::int64_t ld_got, const std::vector<float>& want,
                std::int64_t ld_want, const std::vector<double>& magnitude, std::int64_t rows, std::int64_t width,
                double rtol, double atol = 1e-30) {
  double worst = 0.0;
  for (std::int64_t i = 0; i < rows; ++i) {
    for (std::int64_t c = 0; c < width; ++c) {
      const double g = got[static_cast<std::size_t>(i * ld_got + c)];
      const double w = want[static_cast<std::size_t>(i * ld_want + c)];
      if (std::isnan(g) != std::isnan(w)) return std::numeric_limits<double>::infinity();
      if (std::isnan(g)) continue;
      worst = std::max(worst, std::abs(g - w) / (rtol * magnitude[static_cast<std::size_t>(i * width + c)] + atol));
    }
  }
  return worst;
}

std::int64_t max_degree(const HostCsr& a) {
  std::int64_t d = 0;
  for (std::int64_t i = 0; i < a.rows; ++i) d = std::max(d, a.offsets[i + 1] - a.offsets[i]);
  return d;
}

enum class SpmmCase { kOwn, kOwnMisaligned, kCusparseOnce };

/// Runs one SpMM configuration on both backends and compares.
void compare_spmm(DeviceFixture& f, const HostCsr& a, const DeviceCsr& da, std::int64_t width, bool with_values,
                  bool with_scales, std::int64_t pad, std::uint64_t seed, SpmmCase path = SpmmCase::kOwn,
                  const SpmmTuning& tuning = {}) {
  const std::int64_t ldx = width + pad, ldy = width + pad;
  const std::int64_t shift = path == SpmmCase::kOwnMisaligned ? 1 : 0;  // X one float off 16-byte alignment
  const auto x = random_floats(static_cast<std::size_t>(a.cols * ldx + shift), seed);
  const auto rs = random_floats(static_cast<std::size_t>(a.rows), seed + 1, 0.2f, 1.0f);
  const auto cs = random_floats(static_cast<std::size_t>(a.cols), seed + 2, 0.2f, 1.0f);
  const DeviceBuffer<float> dx(x), drs(rs), dcs(cs);
  auto dy = nan_buffer(static_cast<std::size_t>(a.rows * ldy));
  const float* row_scale = with_scales ? rs.data() : nullptr;
  const float* col_scale = with_scales ? cs.data() : nullptr;
  spmm_async(f.ctx, da.view(with_values), with_scales ? drs.data() : nullptr, with_scales ? dcs.data() : nullptr,
             make_view(dx.data() + shift, a.cols, width, ldx), make_view(dy.data(), a.rows, width, ldy),
             path == SpmmCase::kCusparseOnce ? SpmmAlgo::kCusparse : SpmmAlgo::kOwn, tuning);
  std::vector<float> y(static_cast<std::size_t>(a.rows * ldy), kNaN);
  spmm_async(kCpu, a.view(with_values), row_scale, col_scale, make_view(x.data() + shift, a.cols, width, ldx),
             make_view(y.data(), a.rows, width, ldy));
  const auto ref = reference_spmm(a, with_values, row_scale, col_scale,
                                  std::vector<float>(x.begin() + shift, x.end()), ldx, width);
  CHECK(worst_vs(dy.to_host(), ldy, y, ldy, ref.magnitude, a.rows, width, 2 * summation_rtol(max_degree(a))) <= 1.0);
}

std::vector<Bf16> host_bf16(const std::vector<float>& x);
std::vector<float> host_widen(const std::vector<Bf16>& b);

/// One bf16 SpMM configuration: X rounded to bf16 on the host; the CUDA kernel against the CPU bf16 kernel, judged
/// against the double reference of the rounded X. `shift` puts X that many bf16 values past a 256-byte boundary
/// (1: 2-byte aligned, scalar loads; 4: 8-byte aligned, at most 4-wide loads). Y's padding must stay untouched.
void compare_spmm_bf16(DeviceFixture& f, const HostCsr& a, const DeviceCsr& da, std::int64_t width, bool with_values,
                       bool with_scales, std::int64_t pad, std::int64_t shift, std::uint64_t seed,
                       const SpmmTuning& tuning = {}) {
  const std::int64_t ldx = width + pad, ldy = width + pad;
  const auto x = random_floats(static_cast<std::size_t>(a.cols * ldx + shift), seed);
  std::vector<Bf16> xb(x.size());
  std::vector<float> rounded(x.size());
  convert_to_bf16_async(kCpu, x.data(), static_cast<std::int64_t>(x.size()), xb.data());
  convert_from_bf16_async(kCpu, xb.data(), static_cast<std::int64_t>(xb.size()), rounded.data());
  const auto rs = random_floats(static_cast<std::size_t>(a.rows), seed + 1, 0.2f, 1.0f);
  const auto cs = random_floats(static_cast<std::size_t>(a.cols), seed + 2, 0.2f, 1.0f);
  const DeviceBuffer<Bf16> dx(xb);
  const DeviceBuffer<float> drs(rs), dcs(cs);
  auto dy = nan_buffer(static_cast<std::size_t>(a.rows * ldy));
  const float* row_scale = with_scales ? rs.data() : nullptr;
  const float* col_scale = with_scales ? cs.data() : nullptr;
  spmm_bf16_async(f.ctx, da.view(with_values), with_scales ? drs.data() : nullptr, with_scales ? dcs.data() : nullptr,
                  make_view(dx.data() + shift, a.cols, width, ldx), make_view(dy.data(), a.rows, width, ldy), tuning);
  std::vector<float> y(static_cast<std::size_t>(a.rows * ldy), kNaN);
  spmm_bf16_async(kCpu, a.view(with_values), row_scale, col_scale, make_view(xb.data() + shift, a.cols, width, ldx),
                  make_view(y.data(), a.rows, width, ldy));
  const auto ref = reference_spmm(a, with_values, row_scale, col_scale,
                                  std::vector<float>(rounded.begin() + shift, rounded.end()), ldx, width);
  const auto got = dy.to_host();
  // Both are float sums of the same products: 1e-5 of the terms' magnitude, widened by 2 n 2^-24 for long rows.
  CHECK(worst_vs(got, ldy, y, ldy, ref.magnitude, a.rows, width, summation_rtol(2 * max_degree(a))) <= 1.0);
  std::int64_t padding_written = 0;
  for (std::int64_t i = 0; i < a.rows; ++i)
    for (std::int64_t c = width; c < ldy; ++c)
      padding_written += std::isnan(got[static_cast<std::size_t>(i * ldy + c)]) ? 0 : 1;
  CHECK(padding_written == 0);

  // The same product with Y stored as bf16 (rounded in the kernel; long rows' sums in the float scratch): bit for
  // bit the float Y above rounded, except rows the kernel may split (their sums' order varies), which stay within
  // one bf16 step of it. Y's padding (sentinel) untouched.
  const Bf16 sentinel = Bf16::from_bits(0xffff);
  std::vector<Bf16> y16_init(static_cast<std::size_t>(a.rows * ldy), sentinel);
  const DeviceBuffer<Bf16> dy16(y16_init);
  auto dscratch = nan_buffer(static_cast<std::size_t>(a.rows * width));
  spmm_bf16_async(f.ctx, da.view(with_values), with_scales ? drs.data() : nullptr, with_scales ? dcs.data() : nullptr,
                  make_view(dx.data() + shift, a.cols, width, ldx), make_view(dy16.data(), a.rows, width, ldy),
                  make_view(dscratch.data(), a.rows, width), tuning);
  const auto got16 = dy16.to_host();
  const auto rounded_float_y = host_bf16(got);  // the float-output kernel's Y, rounded on the host
  const auto widened16 = host_widen(got16);
  const std::int64_t may_split = tuning.long_row > 0 ? tuning.long_row : 32;  // the automatic threshold's floor
  std::int64_t exact_misses = 0, padding16_written = 0;
  for (std::int64_t i = 0; i < a.rows; ++i) {
    const bool split = a.offsets[static_cast<std::size_t>(i + 1)] - a.offsets[static_cast<std::size_t>(i)] > may_split;
    for (std::int64_t c = 0; c < ldy; ++c) {
      const auto t = static_cast<std::size_t>(i * ldy + c);
      if (c >= width) {
        padding16_written += got16[t] == sentinel ? 0 : 1;
      } else if (!split && got16[t] != rounded_float_y[t]) {
        ++exact_misses;
      }
    }
  }
  CHECK(exact_misses == 0);
  CHECK(padding16_written == 0);
  // Every row, split ones included: the CPU's float Y within the sums' bound plus one bf16 rounding (2^-9 of a
  // value no larger than the terms' magnitude).
  CHECK(worst_vs(widened16, ldy, y, ldy, ref.magnitude, a.rows, width,
                 summation_rtol(2 * max_degree(a)) + 1.0 / 256) <= 1.0);
}

}  // namespace

// ---------------------------------------------------------------------------------------------------- bf16 helpers

namespace {

// a NaN (cudaMemset with 0xff bytes): marks padding that must stay unwritten
constexpr Bf16 kBf16Sentinel = Bf16::from_bits(0xffff);

std::vector<Bf16> host_bf16(const std::vector<float>& x) {
  std::vector<Bf16> b(x.size());
  convert_to_bf16_async(kCpu, x.data(), static_cast<std::int64_t>(x.size()), b.data());
  return b;
}

std::vector<float> host_widen(const std::vector<Bf16>& b) {
  std::vector<float> x(b.size());
  convert_from_bf16_async(kCpu, b.data(), static_cast<std::int64_t>(b.size()), x.data());
  return x;
}

DeviceBuffer<Bf16> sentinel_bf16_buffer(std::size_t n) {
  DeviceBuffer<Bf16> b(n);
  GCNPART_CUDA_TRY(cudaMemset(b.data(), 0xff, n * sizeof(Bf16)));
  return b;
}

/// Random bf16 matrix (rows x width, leading dimension ld), optionally sparse like bag-of-words features.
std::vector<Bf16> random_bf16(std::int64_t rows, std::int64_t ld, std::uint64_t seed, double density = 1.0) {
  auto x = random_floats(static_cast<std::size_t>(rows * ld), seed);
  if (density < 1.0) {
    std::mt19937_64 gen(seed + 1);
    std::bernoulli_distribution keep(density);
    for (auto& v : x) v = keep(gen) ? v : 0.0f;
  }
  return host_bf16(x);
}

}  // namespace

TEST_SUITE("gpu") {

TEST_CASE("CUDA SpMM matches the CPU kernel over widths, empty rows, null scales and seeds") {
  DeviceFixture f;
  for (std::uint64_t seed : {1u, 2u, 3u}) {
    const HostCsr a = random_csr(1500, 1200, 8, seed, 0.1);
    const DeviceCsr da(a);
    for (std::int64_t width : {1, 2, 3, 4, 7, 16, 33, 40, 64, 128, 256, 516, 602}) {
      for (bool with_values : {true, false}) {
        for (bool with_scales : {true, false}) {
          CAPTURE(seed);
          CAPTURE(width);
          CAPTURE(with_values);
          CAPTURE(with_scales);
          compare_spmm(f, a, da, width, with_values, with_scales, 0, seed * 100 + width);
          compare_spmm(f, a, da, width, with_values, with_scales, 4, seed * 200 + width);  // padded, still aligned
        }
      }
      compare_spmm(f, a, da, width, true, true, 1, seed * 300 + width);                     // odd leading dims
      compare_spmm(f, a, da, width, true, true, 0, seed * 400 + width, SpmmCase::kOwnMisaligned);
    }
  }
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA SpMM shares rows longer than one lane group's limit across the block") {
  DeviceFixture f;
  // Rows at, just past and far past the long-row threshold (2048), two of them in the same block, plus a row with
  // 10^5 neighbours.
  const HostCsr a = random_csr(3000, 120000, 4, 7, 0.1,
                               {{5, 2048}, {6, 2049}, {9, 5000}, {700, 100000}, {2999, 4097}});
  const DeviceCsr da(a);
  for (std::int64_t width : {1, 7, 16, 64, 128, 516, 602}) {
    CAPTURE(width);
    compare_spmm(f, a, da, width, true, true, 0, 11 + width);
    compare_spmm(f, a, da, width, false, false, 0, 12 + width);
  }
}

TEST_CASE("CUDA SpMM and bf16 SpMM follow their tuning: every row long, segments of 1 to 300 entries") {
  DeviceFixture f;
  const HostCsr a = random_csr(2000, 5000, 6, 31, 0.1, {{3, 129}, {4, 1000}, {1999, 4000}});
  const DeviceCsr da(a);
  for (const SpmmTuning tuning : {SpmmTuning{1, 1}, SpmmTuning{1, 3}, SpmmTuning{4, 2}, SpmmTuning{2048, 300}}) {
    CAPTURE(tuning.long_row);
    CAPTURE(tuning.segment);
    for (std::int64_t width : {1, 16, 130}) {
      CAPTURE(width);
      compare_spmm(f, a, da, width, true, true, 0, 41 + width, SpmmCase::kOwn, tuning);
      compare_spmm_bf16(f, a, da, width, true, true, 0, 0, 42 + width, tuning);
    }
  }
  CHECK(f.allocator.in_use() == 0);
}

namespace {

/// The own SpMM of a matrix that carries its long-row list, four ways: fp32 X with values and scales (unpadded) and
/// without (padded by 4); bf16 X likewise (the second padded by 8 and 8-byte aligned). Seeds seed, +1, +3, +4.
void compare_listed_spmm(DeviceFixture& f, const HostCsr& a, const DeviceCsr& listed, std::int64_t width,
                         std::uint64_t seed, const SpmmTuning& tuning) {
  compare_spmm(f, a, listed, width, true, true, 0, seed, SpmmCase::kOwn, tuning);
  compare_spmm(f, a, listed, width, false, false, 4, seed + 1, SpmmCase::kOwn, tuning);
  compare_spmm_bf16(f, a, listed, width, true, true, 0, 0, seed + 3, tuning);
  compare_spmm_bf16(f, a, listed, width, false, true, 8, 4, seed + 4, tuning);
}

}  // namespace

TEST_CASE("CUDA SpMM with the matrix's long-row list (one launch) agrees with the CPU kernel, fp32 and bf16") {
  DeviceFixture f;
  // Hubs at, just past and far past the thresholds a product this small takes (32 automatic, 64 and 200 below),
  // two in one block, a row of 10^5 entries, and many short rows: the long rows' warps cross from one listed row
  // into the next.
  const HostCsr a = random_csr(3000, 120000, 6, 91, 0.1,
                               {{5, 128}, {6, 129}, {9, 5000}, {10, 257}, {11, 32}, {12, 33}, {13, 65}, {14, 201},
                                {700, 100000}, {2999, 4097}});
  const std::int64_t floor = spmm_long_rows_floor(static_cast<std::int64_t>(a.col_ids.size()));
  CHECK(floor == 32);
  const DeviceCsr listed(a, floor);
  REQUIRE(listed.long_view.count > 0);
  const DeviceCsr high(a, 100);  // a list above the automatic threshold: those products list their rows themselves
  SpmmTuning at_64, below_floor, slabs;
  at_64.long_row = 64;
  below_floor.long_row = 8;
  slabs.long_row = 200;
  slabs.slab = 24;
  for (const SpmmTuning& tuning : {SpmmTuning{}, at_64, below_floor, slabs}) {
    CAPTURE(tuning.long_row);
    CAPTURE(tuning.slab);
    for (std::int64_t width : {1, 7, 16, 32, 41, 64, 100, 128, 256, 516}) {
      CAPTURE(width);
      compare_listed_spmm(f, a, listed, width, 71 + width, tuning);
      compare_spmm(f, a, high, width, true, true, 0, 73 + width, SpmmCase::kOwn, tuning);
    }
  }
  // Thousands of long rows (the warps' search takes several rounds), a matrix without long rows (an empty list) and
  // one of empty rows.
  const HostCsr many = random_csr(6000, 8000, 40, 93, 0.05);
  const DeviceCsr many_listed(many, 32);
  CHECK(many_listed.long_view.count > 2000);
  const HostCsr flat = random_csr(2000, 1500, 5, 92, 0.1);
  const DeviceCsr flat_listed(flat, 32);
  CHECK(flat_listed.long_view.count == 0);
  const HostCsr empty_rows = random_csr(500, 300, 0, 94, 1.0);
  const DeviceCsr empty_listed(empty_rows, 32);
  for (std::int64_t width : {16, 64, 256}) {
    compare_spmm(f, many, many_listed, width, true, true, 0, 78 + width);
    compare_spmm_bf16(f, many, many_listed, width, true, true, 0, 0, 79 + width);
    compare_spmm(f, flat, flat_listed, width, true, true, 0, 76 + width);
    compare_spmm_bf16(f, flat, flat_listed, width, true, true, 0, 0, 77 + width);
    compare_spmm(f, empty_rows, empty_listed, width, true, true, 0, 80 + width);
  }
  // A view whose list is another matrix's is refused.
  CsrView wrong = flat_listed.view();
  wrong.long_rows = &many_listed.long_view;
  std::vector<float> zeros(static_cast<std::size_t>(flat.cols * 16), 0.0f);
  const DeviceBuffer<float> dx(zeros);
  DeviceBuffer<float> dy(static_cast<std::size_t>(flat.rows * 16));
  CHECK_THROWS(spmm_async(f.ctx, wrong, nullptr, nullptr, make_view(dx.data(), flat.cols, 16),
                          make_view(dy.data(), flat.rows, 16), SpmmAlgo::kOwn));
  synchronize(f.ctx);
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA SpMM's fused kernel agrees with the CPU kernel on narrow rows of equal degree, long and empty") {
  DeviceFixture f;
  // Rows of exactly 64 entries (every lane group of a block as long as the others, so the 32-bit addressing of X
  // rows is exercised with full batches); row 40 has 65, row 100 has 600 (long at a threshold of 100: added by the
  // long-row blocks, skipped by the row blocks); rows 200..231 are empty. Widths of 1..8 lanes per row, fp32 and
  // bf16 X, padded and unpadded.
  std::vector<HeavyRow> degrees;
  for (std::int64_t i = 0; i < 320; ++i) {
    const std::int64_t d = i == 40 ? 65 : i == 100 ? 600 : (i >= 200 && i < 232) ? 0 : 64;
    degrees.push_back({i, d});
  }
  const HostCsr a = random_csr(320, 700, 4, 97, 0.0, degrees);
  REQUIRE(a.offsets[32] == 2048);
  const DeviceCsr listed(a, spmm_long_rows_floor(static_cast<std::int64_t>(a.col_ids.size())));
  SpmmTuning tuning;
  tuning.long_row = 100;
  for (std::int64_t width : {4, 8, 16, 20, 32}) {
    CAPTURE(width);
    compare_listed_spmm(f, a, listed, width, 91 + width, tuning);
  }
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA SpMM refuses X rows of 2 GiB or more (32-bit row strides) with a typed error") {
  DeviceFixture f;
  const HostCsr a = random_csr(4, 1, 1, 98, 0.0);
  const DeviceCsr da(a);
  const DeviceBuffer<float> dx(std::vector<float>(16, 1.0f));
  DeviceBuffer<float> dy(16);
  const std::int64_t huge_ld = std::int64_t{1} << 29;  // 2^29 floats = 2 GiB per row
  CHECK_THROWS_WITH_AS(spmm_async(f.ctx, da.view(), nullptr, nullptr, ConstMatrixView{dx.data(), 1, 4, huge_ld},
                                  make_view(dy.data(), 4, 4), SpmmAlgo::kOwn),
                       doctest::Contains("2 GiB"), InvalidInput);
  synchronize(f.ctx);
}

TEST_CASE("CUDA SpMM gathers X rows beyond 2 GiB from X's start (64-bit offsets of 32-bit strides)") {
  DeviceFixture f;
  // X of 5 rows 2^27 floats apart (2.5 GiB): row 4 starts 2 GiB in, where a 32-bit product of column and stride
  // would wrap. One row of A takes columns 4, 0, 3 (weights 1, 2, 4); fp32 at widths 4 (one lane) and 32 (8 lanes).
  const std::int64_t ld = std::int64_t{1} << 27, rows = 5;
  DeviceBuffer<float> dx(static_cast<std::size_t>(rows * ld));
  GCNPART_CUDA_TRY(cudaMemset(dx.data(), 0, static_cast<std::size_t>(rows * ld) * sizeof(float)));
  std::vector<float> head(32);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (int c = 0; c < 32; ++c) head[static_cast<std::size_t>(c)] = static_cast<float>(100 * r + c);
    GCNPART_CUDA_TRY(cudaMemcpy(dx.data() + r * ld, head.data(), head.size() * sizeof(float), cudaMemcpyHostToDevice));
  }
  HostCsr a;
  a.rows = 1;
  a.cols = rows;
  a.offsets = {0, 3};
  a.col_ids = {4, 0, 3};
  a.values = {1.0f, 2.0f, 4.0f};
  const DeviceCsr da(a);
  for (const std::int64_t width : {4, 32}) {
    CAPTURE(width);
    DeviceBuffer<float> dy(static_cast<std::size_t>(width));
    spmm_async(f.ctx, da.view(true), nullptr, nullptr, ConstMatrixView{dx.data(), rows, width, ld},
               make_view(dy.data(), 1, width), SpmmAlgo::kOwn);
    const auto y = dy.to_host();
    for (std::int64_t c = 0; c < width; ++c) {
      CAPTURE(c);
      CHECK(y[static_cast<std::size_t>(c)] == static_cast<float>((400 + c) + 2 * c + 4 * (300 + c)));
    }
  }
}

TEST_CASE("CUDA SpMM with four lanes per row (--spmm-lanes 0 / 4) or sized to the row (32) agrees with the CPU kernel") {
  DeviceFixture f;
  const HostCsr a = random_csr(2500, 2000, 9, 78, 0.05, {{17, 3000}, {900, 700}});
  const DeviceCsr da(a);
  // Widths of 1..16 vectors of 4 and around them: 4-lane groups with 2, 3 and 4 vectors per lane (partial last
  // vectors at 41 / 47), the usual layouts below 5 and above 16 vectors; long rows split or not.
  for (const auto& [lanes, long_row] : {std::pair{4, 0}, std::pair{4, 64}, std::pair{0, 0}, std::pair{0, 64}, std::pair{32, 0}}) {
    SpmmTuning tuning;
    tuning.lanes = lanes;
    tuning.long_row = long_row;
    CAPTURE(lanes);
    CAPTURE(long_row);
    for (std::int64_t width : {8, 17, 20, 32, 40, 41, 47, 48, 52, 64, 65, 100}) {
      CAPTURE(width);
      compare_spmm(f, a, da, width, true, true, 0, 61 + width, SpmmCase::kOwn, tuning);
      compare_spmm(f, a, da, width, true, true, 4, 62 + width, SpmmCase::kOwn, tuning);
      compare_spmm_bf16(f, a, da, width, true, true, 0, 0, 63 + width, tuning);
      compare_spmm_bf16(f, a, da, width, false, true, 4, 4, 64 + width, tuning);
    }
  }
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA SpMM by slabs of columns and with padded copies of unaligned X agrees with the CPU kernel") {
  DeviceFixture f;
  const HostCsr a = random_csr(2500, 2000, 9, 77, 0.05, {{17, 3000}});
  const DeviceCsr da(a);
  for (const std::int64_t slab : {0, 8, 24, 64}) {
    for (const bool pad : {true, false}) {
      const SpmmTuning tuning{128, 256, slab, pad};
      CAPTURE(slab);
      CAPTURE(pad);
      for (std::int64_t width : {5, 41, 47, 100, 256}) {
        CAPTURE(width);
        compare_spmm(f, a, da, width, true, true, 0, 51 + width, SpmmCase::kOwn, tuning);   // ld = width
        compare_spmm(f, a, da, width, true, true, 3, 52 + width, SpmmCase::kOwn, tuning);   // ld = width + 3
        compare_spmm_bf16(f, a, da, width, true, true, 0, 0, 53 + width, tuning);
        compare_spmm_bf16(f, a, da, width, true, true, 1, 0, 54 + width, tuning);
      }
    }
  }
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA SpMM of an unaligned X takes exactly the padded workspace the memory model prices") {
  DeviceFixture f;
  const HostCsr a = random_csr(3000, 2000, 6, 5, 0.0);
  const DeviceCsr da(a);
  for (const std::int64_t width : {41, 64}) {
    CAPTURE(width);
    // X and Y of compare_spmm come from cudaMalloc directly; the allocator sees the kernel's workspaces only.
    f.allocator.reset_peak();
    const auto before = static_cast<std::int64_t>(f.allocator.peak());
    compare_spmm(f, a, da, width, true, true, 0, 9, SpmmCase::kOwn);
    const std::int64_t priced = spmm_padding_bytes(a.cols, width, width, 4, true);
    const auto taken = static_cast<std::int64_t>(f.allocator.peak()) - before;
    CHECK(priced == (width == 41 ? a.cols * 44 * 4 : 0));
    CHECK(taken >= priced);
    CHECK(taken < priced + 64 * 1024);  // plus the long-row scan's two ints per row
  }
}

TEST_CASE("CUDA SpMM on an empty matrix and an all-empty-rows matrix") {
  DeviceFixture f;
  const HostCsr empty_rows = random_csr(100, 50, 3, 5, 1.0);
  const DeviceCsr de(empty_rows);
  compare_spmm(f, empty_rows, de, 16, true, true, 0, 1);
  compare_spmm(f, empty_rows, de, 16, true, true, 0, 1, SpmmCase::kCusparseOnce);
  const HostCsr none = random_csr(0, 0, 3, 5);
  const DeviceCsr dn(none);
  spmm_async(f.ctx, dn.view(), nullptr, nullptr, ConstMatrixView{nullptr, none.cols, 4, 4},
             MatrixView{nullptr, none.rows, 4, 4});  // nothing to do, no launch
  synchronize(f.ctx);
}

TEST_CASE("CUDA bf16 SpMM matches the CPU bf16 kernel over widths, load widths, empty rows and null scales") {
  DeviceFixture f;
  for (std::uint64_t seed : {1u, 2u}) {
    const HostCsr a = random_csr(1500, 1200, 8, seed, 0.1);
    const DeviceCsr da(a);
    for (std::int64_t width : {1, 2, 4, 7, 8, 12, 16, 24, 64, 100, 128, 256, 520, 602, 1032}) {
      CAPTURE(seed);
      CAPTURE(width);
      for (bool with_values : {true, false}) {
        for (bool with_scales : {true, false}) {
          CAPTURE(with_values);
          CAPTURE(with_scales);
          compare_spmm_bf16(f, a, da, width, with_values, with_scales, 0, 0, seed * 100 + width);
        }
      }
      compare_spmm_bf16(f, a, da, width, true, true, 8, 0, seed * 200 + width);  // padded, 16-byte loads stay
      compare_spmm_bf16(f, a, da, width, true, true, 4, 0, seed * 300 + width);  // ld % 8 == 4: 8-byte loads
      compare_spmm_bf16(f, a, da, width, true, true, 1, 0, seed * 400 + width);  // odd leading dims: scalar
      compare_spmm_bf16(f, a, da, width, true, true, 0, 4, seed * 500 + width);  // X 8-byte aligned only
      compare_spmm_bf16(f, a, da, width, true, true, 0, 1, seed * 600 + width);  // X 2-byte aligned only
    }
  }
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA bf16 SpMM shares long rows, up to 10^5 entries, over the grid") {
  DeviceFixture f;
  // Rows at and just past the automatic long-row threshold of a product this small (32) and of larger ones (128),
  // at and past one automatic segment (64) and the large products' segment (256), two in the same block, and a
  // row with 10^5 neighbours.
  const HostCsr a = random_csr(3000, 120000, 4, 17, 0.1,
                               {{5, 128}, {6, 129}, {9, 5000}, {10, 257}, {11, 32}, {12, 33}, {13, 65},
                                {700, 100000}, {2999, 4097}});
  const DeviceCsr da(a);
  for (std::int64_t width : {1, 7, 8, 64, 256, 602, 1032}) {
    CAPTURE(width);
    compare_spmm_bf16(f, a, da, width, true, true, 0, 0, 21 + width);
    compare_spmm_bf16(f, a, da, width, false, false, 0, 0, 22 + width);
    compare_spmm_bf16(f, a, da, width, true, true, 0, 4, 23 + width);
  }
  const HostCsr none = random_csr(0, 0, 3, 5);
  const DeviceCsr dn(none);
  spmm_bf16_async(f.ctx, dn.view(), nullptr, nullptr, ConstBf16MatrixView{nullptr, none.cols, 4, 4},
                  MatrixView{nullptr, none.rows, 4, 4});  // nothing to do, no launch
  synchronize(f.ctx);
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA conversions to and from bf16 match the CPU bit for bit, aligned or not") {
  DeviceFixture f;
  auto x = random_floats(1000003, 61, -3.0f, 3.0f);
  const std::uint32_t specials[] = {0x3f808000u, 0x3f818000u, 0x7f7fffffu, 0x7f800000u, 0xff800000u,
                                    0x7f800001u, 0xffc00000u, 0x00018000u, 0x80000000u, 0x7f7f8000u};
  for (std::size_t i = 0; i < std::size(specials); ++i) std::memcpy(&x[i * 7], &specials[i], sizeof(float));
  const DeviceBuffer<float> dx(x);
  DeviceBuffer<Bf16> db(x.size());
  DeviceBuffer<float> dback(x.size());
  for (const std::int64_t n : {1, 3, 4, 5, 1000, 1000003 - 1}) {
    for (const std::int64_t offset : {0, 1}) {
      CAPTURE(n);
      CAPTURE(offset);
      const std::int64_t count = std::min<std::int64_t>(n, static_cast<std::int64_t>(x.size()) - offset);
      GCNPART_CUDA_TRY(cudaMemset(db.data(), 0, db.size() * sizeof(Bf16)));
      convert_to_bf16_async(f.ctx, dx.data() + offset, count, db.data() + offset);
      std::vector<Bf16> want(static_cast<std::size_t>(count));
      convert_to_bf16_async(kCpu, x.data() + offset, count, want.data());
      const auto got = db.to_host();
      CHECK(std::equal(want.begin(), want.end(), got.begin() + offset));
      if (offset + count < static_cast<std::int64_t>(got.size()))
        CHECK(got[static_cast<std::size_t>(offset + count)] == Bf16{});  // nothing written past the end
      convert_from_bf16_async(f.ctx, db.data() + offset, count, dback.data() + offset);
      std::vector<float> back(static_cast<std::size_t>(count));
      convert_from_bf16_async(kCpu, want.data(), count, back.data());
      const auto got_back = dback.to_host();
      CHECK(std::memcmp(back.data(), got_back.data() + offset, back.size() * sizeof(float)) == 0);
    }
  }
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CusparseSpmm matches the CPU kernel for algorithms 0 to 3") {
  DeviceFixture f;
  const HostCsr a = random_csr(2000, 1800, 10, 21, 0.1, {{100, 30000}});
  const DeviceCsr da(a);
  const auto rs = random_floats(static_cast<std::size_t>(a.rows), 22, 0.2f, 1.0f);
  const auto cs = random_floats(static_cast<std::size_t>(a.cols), 23, 0.2f, 1.0f);
  const DeviceBuffer<float> drs(rs), dcs(cs);
  for (int algorithm : {0, 1, 2, 3}) {
    for (std::int64_t width : {7, 16, 64}) {
      CAPTURE(algorithm);
      CAPTURE(width);
      const auto x = random_floats(static_cast<std::size_t>(a.cols * width), 24 + width);
      const DeviceBuffer<float> dx(x);
      auto dy = nan_buffer(static_cast<std::size_t>(a.rows * width));  // beta = 0 must not read Y
      {
        CusparseSpmm plan(f.ctx, da.view(), drs.data(), dcs.data(), width, algorithm);
        CHECK(plan.workspace_bytes() > 0);
        plan.run_async(make_view(dx.data(), a.cols, width), make_view(dy.data(), a.rows, width));
        CHECK_THROWS_AS(plan.run_async(make_view(dx.data(), a.cols, width), make_view(dy.data(), a.rows - 1, width)),
                        InvalidInput);
        plan.run_async(make_view(dx.data(), a.cols, width),
                       make_view(dy.data(), a.rows, width));  // a second call reuses descriptors and buffer
        synchronize(f.ctx);
      }
      std::vector<float> y(static_cast<std::size_t>(a.rows * width));
      spmm_async(kCpu, a.view(), rs.data(), cs.data(), make_view(x.data(), a.cols, width),
                 make_view(y.data(), a.rows, width));
      const auto ref = reference_spmm(a, true, rs.data(), cs.data(), x, width, width);
      CHECK(worst_vs(dy.to_host(), width, y, width, ref.magnitude, a.rows, width, 2 * summation_rtol(max_degree(a))) <=
            1.0);
    }
  }
  CHECK_THROWS_AS(CusparseSpmm(f.ctx, da.view(), nullptr, nullptr, 8, 4), InvalidInput);
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("spmm_async with the cuSPARSE algorithm accepts padded leading dimensions") {
  DeviceFixture f;
  const HostCsr a = random_csr(500, 400, 6, 31);
  const DeviceCsr da(a);
  compare_spmm(f, a, da, 16, true, true, 3, 32, SpmmCase::kCusparseOnce);
  compare_spmm(f, a, da, 9, false, false, 0, 33, SpmmCase::kCusparseOnce);
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("cuBLAS GEMM matches the CPU GEMM for all transpose combinations, beta 0 never reading C") {
  DeviceFixture f;
  struct Shape {
    std::int64_t m, n, k;
    double density;
  };
  for (const Shape s : {Shape{37, 19, 53, 1.0}, Shape{2708, 16, 1433, 0.013}, Shape{1, 1, 1, 1.0}}) {
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        for (float beta : {0.0f, 0.5f}) {
          CAPTURE(s.m);
          CAPTURE(ta);
          CAPTURE(tb);
          CAPTURE(beta);
          const std::int64_t lda = (ta ? s.m : s.k) + 1, ldb = (tb ? s.k : s.n) + 2, ldc = s.n + 3;
          auto a = random_floats(static_cast<std::size_t>((ta ? s.k : s.m) * lda), 41);
          if (s.density < 1.0) {
            std::mt19937_64 gen(42);
            std::bernoulli_distribution keep(s.density);
            for (auto& v : a) v = keep(gen) ? v : 0.0f;
          }
          const auto b = random_floats(static_cast<std::size_t>((tb ? s.n : s.k) * ldb), 43);
          auto c = random_floats(static_cast<std::size_t>(s.m * ldc), 44);
          if (beta == 0.0f) std::fill(c.begin(), c.end(), kNaN);
          const DeviceBuffer<float> da(a), db(b);
          DeviceBuffer<float> dc(c);
          const auto ref = reference_gemm(ta, tb, s.m, s.n, s.k, 1.25f, a, lda, b, ldb, beta, c, ldc);
          gemm_async(f.ctx, ta, tb, 1.25f, make_view(da.data(), (ta ? s.k : s.m), (ta ? s.m : s.k), lda),
                     make_view(db.data(), (tb ? s.n : s.k), (tb ? s.k : s.n), ldb), beta,
                     make_view(dc.data(), s.m, s.n, ldc));
          gemm_async(kCpu, ta, tb, 1.25f, make_view(a.data(), (ta ? s.k : s.m), (ta ? s.m : s.k), lda),
                     make_view(b.data(), (tb ? s.n : s.k), (tb ? s.k : s.n), ldb), beta,
                     make_view(c.data(), s.m, s.n, ldc));
          CHECK(worst_vs(dc.to_host(), ldc, c, ldc, ref.magnitude, s.m, s.n, 2e-5) <= 1.0);
          if (beta == 0.0f) {  // TF32 tensor cores: 10-bit mantissa inputs
            Context tf32 = f.ctx;
            tf32.precision = Precision::kTf32;
            gemm_async(tf32, ta, tb, 1.25f, make_view(da.data(), (ta ? s.k : s.m), (ta ? s.m : s.k), lda),
                       make_view(db.data(), (tb ? s.n : s.k), (tb ? s.k : s.n), ldb), beta,
                       make_view(dc.data(), s.m, s.n, ldc));
            CHECK(worst_vs(dc.to_host(), ldc, c, ldc, ref.magnitude, s.m, s.n, 2e-3) <= 1.0);
          }
        }
      }
    }
  }
  // k = 0 scales C; beta = 0 then writes zeros over NaN.
  auto dc = nan_buffer(6);
  gemm_async(f.ctx, false, false, 1.0f, ConstMatrixView{nullptr, 2, 0, 1}, ConstMatrixView{nullptr, 0, 3, 3}, 0.0f,
             make_view(dc.data(), 2, 3));
  CHECK(dc.to_host() == std::vector<float>(6, 0.0f));
}

TEST_CASE("CUDA epilogues reproduce the CPU outputs and dropout masks bit for bit") {
  DeviceFixture f;
  // 37 columns: element by element; 64: four per vector load and store.
  for (const std::int64_t width : {37, 64}) {
    CAPTURE(width);
    const std::int64_t rows = 3001;
    const auto z = random_floats(static_cast<std::size_t>(rows * width), 51);
    const auto bias = random_floats(static_cast<std::size_t>(width), 52);
    std::vector<NodeId> ids(static_cast<std::size_t>(rows));
    for (std::int64_t i = 0; i < rows; ++i) ids[static_cast<std::size_t>(i)] = static_cast<NodeId>(5 * i + 1);
    const DeviceBuffer<float> dz(z), dbias(bias);
    const DeviceBuffer<NodeId> dids(ids);
    for (float p : {0.0f, 0.1f, 0.5f, 0.9f}) {
      for (bool relu : {false, true}) {
        for (bool use_ids : {false, true}) {
          CAPTURE(p);
          CAPTURE(relu);
          CAPTURE(use_ids);
          Dropout d;
          d.p = p;
          d.key = rng::stream_key(7, rng::kDropout, 2, 1);
          d.global_offset = 12345;
          Dropout dd = d;
          if (use_ids) {
            d.global_ids = ids.data();
            dd.global_ids = dids.data();
          }
          std::vector<float> out(z.size());
          DeviceBuffer<float> dout(z.size());
          const auto mask_bytes = static_cast<std::size_t>(positive_mask_bytes(rows, width));
          std::vector<std::uint8_t> mask(mask_bytes);
          DeviceBuffer<std::uint8_t> dmask(std::vector<std::uint8_t>(mask_bytes, 0xee));
          bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), bias.data(), relu, d,
                                 make_view(out.data(), rows, width), mask.data());
          bias_act_dropout_async(f.ctx, make_view(dz.data(), rows, width), dbias.data(), relu, dd,
                                 make_view(dout.data(), rows, width), dmask.data());
          CHECK(dout.to_host() == out);
          CHECK(dmask.to_host() == mask);
          dropout_async(kCpu, make_view(z.data(), rows, width), d, make_view(out.data(), rows, width));
          dropout_async(f.ctx, make_view(dz.data(), rows, width), dd, make_view(dout.data(), rows, width));
          CHECK(dout.to_host() == out);
          if (relu) {
            // Backward from the relu output just computed, in place on the device copy of dh.
            bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), bias.data(), true, d,
                                   make_view(out.data(), rows, width));
            const DeviceBuffer<float> dh_host_out(out);
            const auto dh = random_floats(z.size(), 53);
            DeviceBuffer<float> ddh(dh);
            std::vector<float> dzz(z.size());
            bias_act_dropout_backward_async(kCpu, make_view(out.data(), rows, width), make_view(dh.data(), rows, width),
                                            true, p, make_view(dzz.data(), rows, width));
            bias_act_dropout_backward_async(f.ctx, make_view(dh_host_out.data(), rows, width),
                                            make_view(ddh.data(), rows, width), true, p,
                                            make_view(ddh.data(), rows, width));
            CHECK(ddh.to_host() == dzz);
          }
        }
      }
    }
  }
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA softmax cross-entropy matches the CPU loss and gradient, and count_correct agrees") {
  DeviceFixture f;
  // pad: a padded layout's extra columns (ld = classes + pad) hold large values that must never be read, and the
  // gradient's padding must come back zero.
  for (const auto& [classes, pad] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1, 0}, {7, 0}, {40, 0}, {64, 0}, {65, 3}, {100, 0}, {7, 1}, {47, 1}, {41, 7}}) {
    const std::int64_t num_rows = 2500, ld = classes + pad;
    CAPTURE(classes);
    CAPTURE(pad);
    auto logits = random_floats(static_cast<std::size_t>(num_rows * ld), 61 + classes, -4.0f, 4.0f);
    for (std::int64_t i = 0; i < num_rows; i += 7) logits[static_cast<std::size_t>(i * ld)] = 1.0f;  // ties
    for (std::int64_t i = 0; i < num_rows; i += 7) logits[static_cast<std::size_t>(i * ld + classes / 2)] = 1.0f;
    for (std::int64_t i = 0; i < num_rows; ++i)
      for (std::int64_t c = classes; c < ld; ++c) logits[static_cast<std::size_t>(i * ld + c)] = 50.0f;
    std::vector<std::int32_t> labels(static_cast<std::size_t>(num_rows));
    std::mt19937_64 gen(62);
    for (auto& l : labels) l = static_cast<std::int32_t>(gen() % static_cast<std::uint64_t>(classes));
    std::vector<NodeId> rows;
    for (std::int64_t i = 0; i < num_rows; i += 3) rows.push_back(static_cast<NodeId>(i));
    const auto count = static_cast<std::int64_t>(rows.size());
    const DeviceBuffer<float> dlogits(logits);
    const DeviceBuffer<std::int32_t> dlabels(labels);
    const DeviceBuffer<NodeId> drows(rows);
    auto dgrad = nan_buffer(logits.size());
    DeviceBuffer<float> dloss(1);
    DeviceBuffer<std::int64_t> dcorrect(1);
    const float scale = 1.0f / static_cast<float>(count);
    std::vector<float> grad(logits.size(), kNaN);
    float loss = 0.0f;
    softmax_cross_entropy_async(kCpu, make_view(logits.data(), num_rows, classes, ld), labels.data(), rows.data(),
                                count, scale, &loss, make_view(grad.data(), num_rows, classes, ld));
    softmax_cross_entropy_async(f.ctx, make_view(dlogits.data(), num_rows, classes, ld), dlabels.data(),
                                drows.data(), count, scale, dloss.data(), make_view(dgrad.data(), num_rows, classes, ld));
    CHECK(dloss.to_host()[0] == doctest::Approx(loss).epsilon(1e-5));
    const auto g = dgrad.to_host();
    double worst = 0.0;
    for (std::size_t t = 0; t < g.size(); ++t) worst = std::max(worst, static_cast<double>(std::abs(g[t] - grad[t])));
    CHECK(worst <= 1e-6 * scale * 10);
    bool padding_zero = true;
    for (std::int64_t i = 0; i < num_rows; ++i)
      for (std::int64_t c = classes; c < ld; ++c) padding_zero = padding_zero && g[static_cast<std::size_t>(i * ld + c)] == 0.0f;
    CHECK(padding_zero);
    std::int64_t correct = -1;
    count_correct_async(kCpu, make_view(logits.data(), num_rows, classes, ld), labels.data(), rows.data(), count,
                        &correct);
    count_correct_async(f.ctx, make_view(dlogits.data(), num_rows, classes, ld), dlabels.data(), drows.data(), count,
                        dcorrect.data());
    CHECK(dcorrect.to_host()[0] == correct);
    if (pad > 0) CHECK(correct > 0);  // the padding's 50s would win every argmax if they were read
  }
  // An out-of-range label cannot throw on the device: the loss is NaN instead.
  const DeviceBuffer<float> dlogits(std::vector<float>(8, 0.0f));
  const DeviceBuffer<std::int32_t> dlabels(std::vector<std::int32_t>{0, 9});
  const DeviceBuffer<NodeId> drows(std::vector<NodeId>{0, 1});
  DeviceBuffer<float> dloss(1);
  softmax_cross_entropy_async(f.ctx, make_view(dlogits.data(), 2, 4), dlabels.data(), drows.data(), 2, 1.0f,
                              dloss.data(), MatrixView{});
  CHECK(std::isnan(dloss.to_host()[0]));
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA fused output loss matches the CPU: logits, loss, float and bf16 gradients, bias gradient") {
  DeviceFixture f;
  // ld: the register layouts (8 lanes up to 64 columns, 32 lanes x 4 up to 128, 32 x 16 up to 512) and the separate
  // passes past 512; rows past one block's slab and a partial last slab.
  for (const auto& [classes, ld] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1, 4}, {7, 8}, {47, 48}, {64, 64}, {65, 68}, {100, 104}, {129, 136}, {500, 512}, {600, 600}}) {
    for (const std::int64_t num_rows : {std::int64_t{1}, std::int64_t{3000}}) {
      CAPTURE(classes);
      CAPTURE(ld);
      CAPTURE(num_rows);
      auto z = random_floats(static_cast<std::size_t>(num_rows * ld), 71 + classes, -4.0f, 4.0f);
      for (std::int64_t i = 0; i < num_rows; ++i)
        for (std::int64_t c = classes; c < ld; ++c) z[static_cast<std::size_t>(i * ld + c)] = 0.0f;
      auto bias = random_floats(static_cast<std::size_t>(ld), 72);
      for (std::int64_t c = classes; c < ld; ++c) bias[static_cast<std::size_t>(c)] = 0.0f;
      std::vector<std::int32_t> labels(static_cast<std::size_t>(num_rows));
      std::mt19937_64 gen(73);
      for (auto& l : labels) l = static_cast<std::int32_t>(gen() % static_cast<std::uint64_t>(classes));
      std::vector<NodeId> rows;
      for (std::int64_t i = num_rows - 1; i >= 0; i -= 2) rows.push_back(static_cast<NodeId>(i));  // descending
      const auto slots = loss_row_slots(rows, num_rows);
      const auto count = static_cast<std::int64_t>(rows.size());
      const float scale = 1.0f / static_cast<float>(count);
      std::vector<float> logits(z), grad(z.size()), sums(static_cast<std::size_t>(ld));
      float loss = 0.0f;
      bias_softmax_cross_entropy_async(kCpu, make_view(logits.data(), num_rows, classes, ld), bias.data(),
                                       labels.data(), rows.data(), slots.data(), count, scale, &loss,
                                       make_view(grad.data(), num_rows, classes, ld), sums.data());
      const DeviceBuffer<float> dbias(bias);
      const DeviceBuffer<std::int32_t> dlabels(labels), dslots(slots);
      const DeviceBuffer<NodeId> drows(rows);
      for (const bool bf16 : {false, true}) {
        CAPTURE(bf16);
        DeviceBuffer<float> dlogits(z), dloss(1);
        DeviceBuffer<float> dsums(std::vector<float>(static_cast<std::size_t>(ld), kNaN));
        auto dgrad = nan_buffer(z.size());
        auto dgrad16 = sentinel_bf16_buffer(z.size());
        if (bf16) {
          bias_softmax_cross_entropy_async(f.ctx, make_view(dlogits.data(), num_rows, classes, ld), dbias.data(),
                                           dlabels.data(), drows.data(), dslots.data(), count, scale, dloss.data(),
                                           make_view(dgrad16.data(), num_rows, classes, ld), dsums.data());
        } else {
          bias_softmax_cross_entropy_async(f.ctx, make_view(dlogits.data(), num_rows, classes, ld), dbias.data(),
                                           dlabels.data(), drows.data(), dslots.data(), count, scale, dloss.data(),
                                           make_view(dgrad.data(), num_rows, classes, ld), dsums.data());
        }
        CHECK(dlogits.to_host() == logits);  // the same float additions
        CHECK(dloss.to_host()[0] == doctest::Approx(loss).epsilon(1e-5));
        std::vector<float> g;
        if (bf16) {
          std::vector<float> widened(z.size());
          const auto g16 = dgrad16.to_host();
          convert_from_bf16_async(kCpu, g16.data(), static_cast<std::int64_t>(g16.size()), widened.data());
          g = widened;
        } else {
          g = dgrad.to_host();
        }
        double worst = 0.0;
        bool zero_elsewhere = true;
        for (std::int64_t i = 0; i < num_rows; ++i)
          for (std::int64_t c = 0; c < ld; ++c) {
            const auto t = static_cast<std::size_t>(i * ld + c);
            if (slots[static_cast<std::size_t>(i)] < 0 || c >= classes) zero_elsewhere = zero_elsewhere && g[t] == 0.0f;
            worst = std::max(worst, static_cast<double>(std::abs(g[t] - grad[t])) / (bf16 ? 1.0 / 128 : 1e-5));
          }
        CHECK(zero_elsewhere);
        CHECK(worst <= scale * 10);  // fp32: 1e-6 of scale; bf16: the rounding, 2^-8 relative
        const auto s = dsums.to_host();
        double worst_sum = 0.0;
        for (std::int64_t c = 0; c < ld; ++c)
          worst_sum = std::max(worst_sum, std::abs(static_cast<double>(s[static_cast<std::size_t>(c)]) -
                                                   sums[static_cast<std::size_t>(c)]));
        CHECK(worst_sum <= 1e-5);  // sums of count * scale = 1 in magnitude
      }
    }
  }
  // An out-of-range label: NaN loss, zero gradient row.
  const DeviceBuffer<float> dbias(std::vector<float>(4, 0.0f));
  DeviceBuffer<float> dlogits(std::vector<float>(8, 0.0f)), dloss(1), dgrad(8), dsums(4);
  const DeviceBuffer<std::int32_t> dlabels(std::vector<std::int32_t>{0, 9}), dslots(std::vector<std::int32_t>{0, 1});
  const DeviceBuffer<NodeId> drows(std::vector<NodeId>{0, 1});
  bias_softmax_cross_entropy_async(f.ctx, make_view(dlogits.data(), 2, 4), dbias.data(), dlabels.data(), drows.data(),
                                   dslots.data(), 2, 1.0f, dloss.data(), make_view(dgrad.data(), 2, 4), dsums.data());
  CHECK(std::isnan(dloss.to_host()[0]));
  const auto g = dgrad.to_host();
  CHECK(std::all_of(g.begin() + 4, g.end(), [](float v) { return v == 0.0f; }));
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA Adam, inv_sqrt_degree, gathers and scatters match the CPU kernels") {
  DeviceFixture f;
  const std::int64_t n = 100003;
  auto w = random_floats(n, 71), g = random_floats(n, 72), m = random_floats(n, 73, -0.1f, 0.1f),
       v = random_floats(n, 74, 0.0f, 0.01f);
  DeviceBuffer<float> dw(w), dm(m), dv(v);
  const DeviceBuffer<float> dg(g);
  AdamParams p;
  p.weight_decay = 5e-4f;
  for (std::int64_t step = 1; step <= 3; ++step) {
    p.step = step;
    adam_step_async(kCpu, w.data(), g.data(), m.data(), v.data(), n, p);
    adam_step_async(f.ctx, dw.data(), dg.data(), dm.data(), dv.data(), n, p);
  }
  const auto hw = dw.to_host(), hm = dm.to_host(), hv = dv.to_host();
  for (std::int64_t i = 0; i < n; i += 97) {
    REQUIRE(hw[static_cast<std::size_t>(i)] == doctest::Approx(w[static_cast<std::size_t>(i)]).epsilon(1e-6));
    REQUIRE(hm[static_cast<std::size_t>(i)] == doctest::Approx(m[static_cast<std::size_t>(i)]).epsilon(1e-6));
    REQUIRE(hv[static_cast<std::size_t>(i)] == doctest::Approx(v[static_cast<std::size_t>(i)]).epsilon(1e-6));
  }

  const HostCsr a = random_csr(5000, 5000, 5, 75, 0.2);
  const DeviceCsr da(a);
  for (float extra : {0.0f, 1.0f}) {
    std::vector<float> d(5000);
    DeviceBuffer<float> dd(5000);
    inv_sqrt_degree_async(kCpu, a.offsets.data(), 5000, extra, d.data());
    inv_sqrt_degree_async(f.ctx, da.offsets.data(), 5000, extra, dd.data());
    CHECK(dd.to_host() == d);
  }

  const std::int64_t width = 19, src_rows = 300, count = 5000;
  const auto src = random_floats(static_cast<std::size_t>(count * width), 76);
  std::vector<NodeId> idx(count);
  std::mt19937_64 gen(77);
  for (auto& i : idx) i = static_cast<NodeId>(gen() % src_rows);  // many repeats
  const DeviceBuffer<float> dsrc(src);
  const DeviceBuffer<NodeId> didx(idx);
  std::vector<float> gathered(static_cast<std::size_t>(count * width));
  DeviceBuffer<float> dgathered(gathered.size());
  gather_rows_async(kCpu, make_view(src.data(), src_rows, width), idx.data(), make_view(gathered.data(), count, width));
  gather_rows_async(f.ctx, make_view(dsrc.data(), src_rows, width), didx.data(),
                    make_view(dgathered.data(), count, width));
  CHECK(dgathered.to_host() == gathered);
  {  // bf16 rows: the same rows, bit for bit (odd width)
    std::vector<Bf16> src16(src.size());
    for (std::size_t i = 0; i < src.size(); ++i)
      src16[i] = Bf16::from_bits(static_cast<std::uint16_t>(i * 2654435761u >> 16));
    const DeviceBuffer<Bf16> dsrc16(src16);
    std::vector<Bf16> gathered16(static_cast<std::size_t>(count * width));
    DeviceBuffer<Bf16> dgathered16(gathered16.size());
    gather_rows_async(kCpu, make_view<const Bf16>(src16.data(), src_rows, width), idx.data(),
                      make_view(gathered16.data(), count, width));
    gather_rows_async(f.ctx, make_view<const Bf16>(dsrc16.data(), src_rows, width), didx.data(),
                      make_view(dgathered16.data(), count, width));
    CHECK(dgathered16.to_host() == gathered16);
  }
  std::vector<float> acc(static_cast<std::size_t>(src_rows * width), 0.5f);
  DeviceBuffer<float> dacc(acc);
  scatter_add_rows_async(kCpu, make_view(src.data(), count, width), idx.data(), make_view(acc.data(), src_rows, width));
  scatter_add_rows_async(f.ctx, make_view(dsrc.data(), count, width), didx.data(),
                         make_view(dacc.data(), src_rows, width));
  const auto hacc = dacc.to_host();
  // Atomic adds sum in any order: compare with an absolute tolerance on the scale of the summands (~1).
  for (std::size_t t = 0; t < acc.size(); ++t) REQUIRE(hacc[t] == doctest::Approx(acc[t]).epsilon(1e-5).scale(1.0));
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA reductions match the CPU sums") {
  DeviceFixture f;
  for (std::int64_t rows : {0, 1, 1000, 70001, 3000000}) {
    for (std::int64_t width : {1, 16, 45}) {
      if (rows * width > 20000000) continue;
      CAPTURE(rows);
      CAPTURE(width);
      const auto x = random_floats(static_cast<std::size_t>(rows * width), 81, 0.0f, 1.0f);
      const DeviceBuffer<float> dx(x);
      std::vector<float> cols(static_cast<std::size_t>(width));
      DeviceBuffer<float> dcols(cols.size());
      column_sum_async(kCpu, make_view(x.data(), rows, width), cols.data());
      column_sum_async(f.ctx, make_view(dx.data(), rows, width), dcols.data());
      const auto hc = dcols.to_host();
      for (std::size_t c = 0; c < cols.size(); ++c) CHECK(hc[c] == doctest::Approx(cols[c]).epsilon(1e-5));
      float s = 0.0f, s2 = 0.0f;
      DeviceBuffer<float> ds(1), ds2(1);
      sum_async(kCpu, x.data(), rows * width, &s);
      sum_async(f.ctx, dx.data(), rows * width, ds.data());
      sum_squares_async(kCpu, x.data(), rows * width, &s2);
      sum_squares_async(f.ctx, dx.data(), rows * width, ds2.data());
      CHECK(ds.to_host()[0] == doctest::Approx(s).epsilon(1e-5));
      CHECK(ds2.to_host()[0] == doctest::Approx(s2).epsilon(1e-5));
    }
  }
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("copy_async moves bytes both ways and memset_zero_async clears them on the device") {
  DeviceFixture f;
  const std::vector<float> host = {1.0f, 2.0f, 3.0f, 4.0f};
  DeviceBuffer<float> d(4);
  copy_async(f.ctx, d.data(), host.data(), 4 * sizeof(float));
  memset_zero_async(f.ctx, d.data() + 1, sizeof(float));
  std::vector<float> back(4, 0.0f);
  copy_async(f.ctx, back.data(), d.data(), 4 * sizeof(float));
  synchronize(f.ctx);
  CHECK(back == std::vector<float>{1.0f, 0.0f, 3.0f, 4.0f});
}

TEST_CASE("CUDA bf16 GEMM matches the CPU bf16 GEMM for all transposes, padded lds, float and bf16 C") {
  DeviceFixture f;
  struct Shape {
    std::int64_t m, n, k;
    double density;
  };
  // Hand-picked, the Cora first layer (sparse X W), a hidden layer and a weight gradient with a long k.
  for (const Shape s : {Shape{37, 19, 53, 1.0}, Shape{2708, 16, 1433, 0.013}, Shape{2708, 64, 64, 1.0},
                        Shape{64, 7, 2708, 1.0}, Shape{1, 1, 1, 1.0}}) {
    // Both are float sums of exact bf16 x bf16 products. The CPU's error is at most the recursive bound
    // k 2^-24 of the terms' magnitude; tensor cores truncate inside their fp32 accumulation (Fasi et al. 2021),
    // twice that: three times summation_rtol(k) in all.
    const double rtol = 3 * summation_rtol(s.k);
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        CAPTURE(s.m);
        CAPTURE(s.n);
        CAPTURE(s.k);
        CAPTURE(ta);
        CAPTURE(tb);
        const std::int64_t lda = (ta ? s.m : s.k) + 1, ldb = (tb ? s.k : s.n) + 2, ldc = s.n + 3;
        const auto a = random_bf16(ta ? s.k : s.m, lda, 41, s.density);
        const auto b = random_bf16(tb ? s.n : s.k, ldb, 43);
        const DeviceBuffer<Bf16> da(a), db(b);
        for (float beta : {0.0f, 0.5f}) {
          CAPTURE(beta);
          auto c = random_floats(static_cast<std::size_t>(s.m * ldc), 44);
          if (beta == 0.0f) std::fill(c.begin(), c.end(), kNaN);  // beta = 0 must not read C
          const auto ref = reference_gemm(ta, tb, s.m, s.n, s.k, 1.25f, host_widen(a), lda, host_widen(b), ldb, beta, c,
                                          ldc);
          DeviceBuffer<float> dc(c);
          gemm_bf16_async(f.ctx, ta, tb, 1.25f, make_view(da.data(), (ta ? s.k : s.m), (ta ? s.m : s.k), lda),
                          make_view(db.data(), (tb ? s.n : s.k), (tb ? s.k : s.n), ldb), beta,
                          make_view(dc.data(), s.m, s.n, ldc));
          const auto before = c;
          gemm_bf16_async(kCpu, ta, tb, 1.25f, make_view(a.data(), (ta ? s.k : s.m), (ta ? s.m : s.k), lda),
                          make_view(b.data(), (tb ? s.n : s.k), (tb ? s.k : s.n), ldb), beta,
                          make_view(c.data(), s.m, s.n, ldc));
          const auto got = dc.to_host();
          CHECK(worst_vs(got, ldc, c, ldc, ref.magnitude, s.m, s.n, rtol) <= 1.0);
          std::int64_t padding_written = 0;
          for (std::int64_t i = 0; i < s.m; ++i)
            for (std::int64_t j = s.n; j < ldc; ++j) {
              const auto t = static_cast<std::size_t>(i * ldc + j);
              padding_written += std::memcmp(&got[t], &before[t], sizeof(float)) == 0 ? 0 : 1;
            }
          CHECK(padding_written == 0);
        }
        // bf16 C: each side rounds its float result once, so they may differ by one bf16 ulp (at most 2^-7 of
        // the larger value) on top of the accumulation difference.
        auto dc16 = sentinel_bf16_buffer(static_cast<std::size_t>(s.m * ldc));
        gemm_bf16_async(f.ctx, ta, tb, -0.5f, make_view(da.data(), (ta ? s.k : s.m), (ta ? s.m : s.k), lda),
                        make_view(db.data(), (tb ? s.n : s.k), (tb ? s.k : s.n), ldb), 0.0f,
                        make_view(dc16.data(), s.m, s.n, ldc));
        std::vector<Bf16> c16(static_cast<std::size_t>(s.m * ldc), kBf16Sentinel);
        gemm_bf16_async(kCpu, ta, tb, -0.5f, make_view(a.data(), (ta ? s.k : s.m), (ta ? s.m : s.k), lda),
                        make_view(b.data(), (tb ? s.n : s.k), (tb ? s.k : s.n), ldb), 0.0f,
                        make_view(c16.data(), s.m, s.n, ldc));
        const auto ref = reference_gemm(ta, tb, s.m, s.n, s.k, -0.5f, host_widen(a), lda, host_widen(b), ldb, 0.0f, {},
                                        0);
        const auto got16 = dc16.to_host();
        const auto got = host_widen(got16), want = host_widen(c16);
        double worst = 0.0;
        std::int64_t padding_written = 0;
        for (std::int64_t i = 0; i < s.m; ++i) {
          for (std::int64_t j = 0; j < ldc; ++j) {
            const auto t = static_cast<std::size_t>(i * ldc + j);
            if (j >= s.n) {
              padding_written += got16[t] == kBf16Sentinel ? 0 : 1;
              continue;
            }
            const double g = got[t], w = want[t];
            if (std::isnan(g)) {
              worst = std::numeric_limits<double>::infinity();
              continue;
            }
            const double allowed = std::ldexp(std::max(std::abs(g), std::abs(w)), -7) +
                                   rtol * ref.magnitude[static_cast<std::size_t>(i * s.n + j)] + 1e-30;
            worst = std::max(worst, std::abs(g - w) / allowed);
          }
        }
        CHECK(worst <= 1.0);
        CHECK(padding_written == 0);
      }
    }
  }
  // k = 0 (and alpha = 0): a float C is only scaled; a bf16 C becomes zeros and its padding stays.
  DeviceBuffer<float> dc(std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f});
  gemm_bf16_async(f.ctx, false, false, 1.0f, ConstBf16MatrixView{nullptr, 2, 0, 1},
                  ConstBf16MatrixView{nullptr, 0, 3, 3}, 0.5f, make_view(dc.data(), 2, 3));
  CHECK(dc.to_host() == std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f});
  auto dc16 = sentinel_bf16_buffer(8);
  gemm_bf16_async(f.ctx, false, false, 1.0f, ConstBf16MatrixView{nullptr, 2, 0, 1},
                  ConstBf16MatrixView{nullptr, 0, 3, 3}, 0.0f, make_view(dc16.data(), 2, 3, 4));
  CHECK(dc16.to_host() == std::vector<Bf16>{Bf16{}, Bf16{}, Bf16{}, kBf16Sentinel,
                                            Bf16{}, Bf16{}, Bf16{}, kBf16Sentinel});
  const DeviceBuffer<Bf16> ones(std::vector<Bf16>(6, Bf16::from_bits(0x3f80)));
  auto dz16 = sentinel_bf16_buffer(8);
  gemm_bf16_async(f.ctx, false, false, 0.0f, make_view(ones.data(), 2, 2), make_view(ones.data(), 2, 3), 0.0f,
                  make_view(dz16.data(), 2, 3, 4));
  CHECK(dz16.to_host() == std::vector<Bf16>{Bf16{}, Bf16{}, Bf16{}, kBf16Sentinel,
                                            Bf16{}, Bf16{}, Bf16{}, kBf16Sentinel});
  CHECK_THROWS_AS(gemm_bf16_async(f.ctx, false, false, 1.0f, make_view(ones.data(), 2, 2), make_view(ones.data(), 2, 3),
                                  1.0f, make_view(dz16.data(), 2, 3, 4)),
                  InvalidInput);
  synchronize(f.ctx);
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA bf16 epilogues and dropout reproduce the CPU bf16 outputs and masks bit for bit") {
  DeviceFixture f;
  for (const std::int64_t width : {37, 64, 1}) {
    const std::int64_t rows = 3001;
    auto z = random_floats(static_cast<std::size_t>(rows * width), 51 + width, -2.0f, 2.0f);
    // Rounding cases: ties to even both ways, rounding up to infinity, a float subnormal, the largest float.
    const std::uint32_t specials[] = {0x3f808000u, 0x3f818000u, 0x7f7f8000u, 0xff7f8000u, 0x00018000u, 0x7f7fffffu};
    for (std::size_t i = 0; i < std::size(specials); ++i) std::memcpy(&z[i * 13 % z.size()], &specials[i], 4);
    const auto bias = random_floats(static_cast<std::size_t>(width), 52);
    std::vector<NodeId> ids(static_cast<std::size_t>(rows));
    for (std::int64_t i = 0; i < rows; ++i) ids[static_cast<std::size_t>(i)] = static_cast<NodeId>(5 * i + 1);
    auto x16 = host_bf16(z);
    for (std::size_t i = 0; i < x16.size(); i += 7) x16[i] = Bf16{};  // zeros: blocks without a draw
    const DeviceBuffer<float> dz(z), dbias(bias);
    const DeviceBuffer<Bf16> dx16(x16);
    const DeviceBuffer<NodeId> dids(ids);
    const auto dh = host_bf16(random_floats(z.size(), 53, -3.0f, 3.0f));
    for (float p : {0.0f, 0.1f, 0.5f, 0.9f}) {
      for (bool relu : {false, true}) {
        for (bool use_ids : {false, true}) {
          CAPTURE(width);
          CAPTURE(p);
          CAPTURE(relu);
          CAPTURE(use_ids);
          Dropout d;
          d.p = p;
          d.key = rng::stream_key(7, rng::kDropout, 2, 1);
          d.global_offset = 12345;
          Dropout dd = d;
          if (use_ids) {
            d.global_ids = ids.data();
            dd.global_ids = dids.data();
          }
          // float z + bias -> bf16 h
          std::vector<Bf16> h(z.size());
          auto dout = sentinel_bf16_buffer(z.size());
          const auto mask_bytes = static_cast<std::size_t>(positive_mask_bytes(rows, width));
          std::vector<std::uint8_t> mask(mask_bytes);
          DeviceBuffer<std::uint8_t> dmask(std::vector<std::uint8_t>(mask_bytes, 0xee));
          bias_act_dropout_async(kCpu, make_view(z.data(), rows, width), bias.data(), relu, d,
                                 make_view(h.data(), rows, width), mask.data());
          bias_act_dropout_async(f.ctx, make_view(dz.data(), rows, width), dbias.data(), relu, dd,
                                 make_view(dout.data(), rows, width), dmask.data());
          CHECK(dout.to_host() == h);
          CHECK(dmask.to_host() == mask);  // the stored values' signs: the specials' rounding included
          // dropout of bf16 values, out of place and in place on the device
          std::vector<Bf16> dropped(x16.size());
          dropout_async(kCpu, make_view(x16.data(), rows, width), d, make_view(dropped.data(), rows, width));
          dropout_async(f.ctx, make_view(dx16.data(), rows, width), dd, make_view(dout.data(), rows, width));
          CHECK(dout.to_host() == dropped);
          DeviceBuffer<Bf16> in_place(x16);
          dropout_async(f.ctx, make_view(in_place.data(), rows, width), dd, make_view(in_place.data(), rows, width));
          CHECK(in_place.to_host() == dropped);
          if (relu) {  // backward from the relu output just computed, in place on the device copy of dh
            const DeviceBuffer<Bf16> dhout(h);
            DeviceBuffer<Bf16> ddh(dh);
            std::vector<Bf16> dzz(z.size());
            bias_act_dropout_backward_async(kCpu, make_view(h.data(), rows, width), make_view(dh.data(), rows, width),
                                            true, p, make_view(dzz.data(), rows, width));
            bias_act_dropout_backward_async(f.ctx, make_view(dhout.data(), rows, width),
                                            make_view(ddh.data(), rows, width), true, p,
                                            make_view(ddh.data(), rows, width));
            CHECK(ddh.to_host() == dzz);
          }
        }
      }
    }
  }
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA dropout over more blocks than one grid-stride pass reproduces the CPU bit for bit") {
  // The epilogue kernel runs at most 65,536 blocks of 256 threads (2^24 grid-stride steps of 4 columns per pass) and
  // each thread takes its steps two at a time: 2.2 passes give threads of two steps (one pair) and of three (a pair,
  // then a lone last one; threads of one step are the smaller tests'), and 3 blocks of 4 columns per row carry the
  // row across the stride (2^24 = 1 mod 3), once onto the row past the last. Width 12: vector loads; 11: element by
  // element.
  DeviceFixture f;
  for (const std::int64_t width : {12, 11}) {
    CAPTURE(width);
    const std::int64_t steps = (std::int64_t{1} << 24) * 22 / 10;
    const std::int64_t rows = steps / 3;
    std::vector<float> pattern(static_cast<std::size_t>(rows * width));
    for (std::size_t i = 0; i < pattern.size(); ++i)
      pattern[i] = static_cast<float>(static_cast<int>(i % 251) - 125) / 64.0f;
    const auto x16 = host_bf16(pattern);
    pattern = {};
    Dropout d;
    d.p = 0.5f;
    d.key = rng::stream_key(11, rng::kDropout, 1, 0);
    d.global_offset = 77;
    std::vector<Bf16> dropped(x16.size());
    dropout_async(kCpu, make_view(x16.data(), rows, width), d, make_view(dropped.data(), rows, width));
    DeviceBuffer<Bf16> dx(x16);
    dropout_async(f.ctx, make_view(dx.data(), rows, width), d, make_view(dx.data(), rows, width));  // in place
    const auto got = dx.to_host();
    REQUIRE(got.size() == dropped.size());
    // The index of the first differing element (bit for bit), not the vectors: doctest would print all of them.
    const auto first_difference = std::mismatch(got.begin(), got.end(), dropped.begin()).first - got.begin();
    CHECK(first_difference == static_cast<std::ptrdiff_t>(got.size()));
  }
  CHECK(f.allocator.in_use() == 0);
}

TEST_CASE("CUDA dropout keeps the sign of a negative zero input as the CPU does, in float and bf16") {
  // The CPU copies -0 through (and scales it when kept); the device must store the same bits.
  DeviceFixture f;
  const std::int64_t rows = 64, width = 8;
  std::vector<float> x(static_cast<std::size_t>(rows * width), -0.0f);
  for (std::size_t i = 0; i < x.size(); i += 3) x[i] = 1.0f;  // blocks with and without a non-zero
  for (std::size_t i = 0; i < 16; ++i) x[i] = -0.0f;          // two rows of all-zero blocks
  Dropout d;
  d.p = 0.5f;
  d.key = 3;
  for (float p : {0.0f, 0.5f}) {
    CAPTURE(p);
    d.p = p;
    std::vector<float> want(x.size());
    dropout_async(kCpu, make_view(x.data(), rows, width), d, make_view(want.data(), rows, width));
    const DeviceBuffer<float> dx(x);
    DeviceBuffer<float> dout(x.size());
    dropout_async(f.ctx, make_view(dx.data(), rows, width), d, make_view(dout.data(), rows, width));
    const auto got = dout.to_host();
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
    const auto x16 = host_bf16(x);
    std::vector<Bf16> want16(x.size());
    dropout_async(kCpu, make_view(x16.data(), rows, width), d, make_view(want16.data(), rows, width));
    const DeviceBuffer<Bf16> dx16(x16);
    auto dout16 = sentinel_bf16_buffer(x.size());
    dropout_async(f.ctx, make_view(dx16.data(), rows, width), d, make_view(dout16.data(), rows, width));
    CHECK(dout16.to_host() == want16);
  }
}

TEST_CASE("CUDA column_sum over bf16 matches the CPU bf16 column_sum") {
  DeviceFixture f;
  for (std::int64_t rows : {0, 1, 1000, 70001, 3000000}) {
    for (std::int64_t width : {1, 16, 45}) {
      if (rows * width > 20000000) continue;
      CAPTURE(rows);
      CAPTURE(width);
      const auto x = random_bf16(rows, width, 83 + static_cast<std::uint64_t>(width));
      const auto x32 = host_widen(x);
      const DeviceBuffer<Bf16> dx(x);
      std::vector<float> cols(static_cast<std::size_t>(width), kNaN);
      DeviceBuffer<float> dcols(cols);
      column_sum_async(kCpu, make_view(x.data(), rows, width), cols.data());
      column_sum_async(f.ctx, make_view(dx.data(), rows, width), dcols.data());
      const auto got = dcols.to_host();
      // The device's longest chain of float additions: 128 rows per lane, 8 lanes, then the slabs of 1024 rows
      // over 32 lanes and those lanes; the CPU sums in double. Bound: that chain's length x 2^-24 of the terms'
      // magnitude.
      const double rtol = summation_rtol(128 + 8 + ((rows + 1023) / 1024 + 31) / 32 + 32);
      double worst = 0.0;
      for (std::int64_t c = 0; c < width; ++c) {
        double magnitude = 0.0;
        for (std::int64_t i = 0; i < rows; ++i) magnitude += std::abs(x32[static_cast<std::size_t>(i * width + c)]);
        const auto t = static_cast<std::size_t>(c);
        if (std::isnan(got[t])) worst = std::numeric_limits<double>::infinity();
        else worst = std::max(worst, std::abs(static_cast<double>(got[t]) - cols[t]) / (rtol * magnitude + 1e-30));
      }
      CHECK(worst <= 1.0);
    }
  }
  CHECK(f.allocator.in_use() == 0);
}

/// The fused ReLU / dropout backward with column sums on the device against the two operations it replaces, also on
/// the device: dz and the sums bit for bit (the fused kernel keeps column_sum's order), in place or not, with vector
/// or element access, for rows around the slab and lane boundaries.
template <class T>
void check_fused_backward_sums(DeviceFixture& f, std::int64_t rows, std::int64_t width, std::int64_t shift,
                               bool in_place) {
  CAPTURE(rows);
  CAPTURE(width);
  CAPTURE(shift);
  CAPTURE(in_place);
  const auto n = static_cast<std::size_t>(rows * width + shift);
  const auto hf = random_floats(n, 91 + static_cast<std::uint64_t>(width));
  const auto gf = random_floats(n, 92 + static_cast<std::uint64_t>(rows));
  std::vector<T> h, g;
  if constexpr (std::is_same_v<T, Bf16>) {
    h = host_bf16(hf);
    g = host_bf16(gf);
  } else {
    h = hf;
    g = gf;
  }
  const DeviceBuffer<T> dh(h), dg(g);
  DeviceBuffer<T> dz_fused(n), dz_apart(n), dg_fused(g);
  const std::vector<float> nan_sums(static_cast<std::size_t>(width), kNaN);
  DeviceBuffer<float> sums_fused(nan_sums), sums_apart(nan_sums);
  const float p = 0.25f;
  using View = DenseView<const T>;
  const View hv(dh.data() + shift, rows, width, width), gv(dg.data() + shift, rows, width, width);
  const DenseView<T> out_fused(in_place ? dg_fused.data() + shift : dz_fused.data() + shift, rows, width, width);
  const View g_fused(in_place ? dg_fused.data() + shift : dg.data() + shift, rows, width, width);
  const DenseView<T> out_apart(dz_apart.data() + shift, rows, width, width);
  bias_act_dropout_backward_async(f.ctx, hv, g_fused, true, p, out_fused, sums_fused.data());
  bias_act_dropout_backward_async(f.ctx, hv, gv, true, p, out_apart);
  // The same from h's positive mask (h's data not read).
  std::vector<std::uint8_t> mask(static_cast<std::size_t>(positive_mask_bytes(rows, width)), 0);
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < width; ++c) {
      float v;
      if constexpr (std::is_same_v<T, Bf16>) {
        const std::uint32_t bits = static_cast<std::uint32_t>(h[static_cast<std::size_t>(r * width + c + shift)].raw) << 16;
        std::memcpy(&v, &bits, 4);
      } else {
        v = h[static_cast<std::size_t>(r * width + c + shift)];
      }
      if (v > 0.0f) mask[static_cast<std::size_t>(r * positive_mask_blocks(width) + c / 4)] |= 1u << (c % 4);
    }
  const DeviceBuffer<std::uint8_t> dmask(mask);
  DeviceBuffer<T> dz_mask(n), dg_mask(g);
  DeviceBuffer<float> sums_mask(nan_sums);
  const DenseView<T> out_mask(in_place ? dg_mask.data() + shift : dz_mask.data() + shift, rows, width, width);
  const View g_mask(in_place ? dg_mask.data() + shift : dg.data() + shift, rows, width, width);
  bias_act_dropout_backward_async(f.ctx, View(nullptr, rows, width, width), g_mask, true, p, out_mask,
                                  sums_mask.data(), dmask.data());
  {
    const auto from_mask = (in_place ? dg_mask : dz_mask).to_host();
    const auto from_h = (in_place ? dg_fused : dz_fused).to_host();
    bool same = true;
    for (std::size_t i = static_cast<std::size_t>(shift); i < n; ++i)
      same = same && std::memcmp(&from_mask[i], &from_h[i], sizeof(T)) == 0;
    CHECK(same);
    const auto a = sums_mask.to_host(), b = sums_fused.to_host();
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }
  column_sum_async(f.ctx, View(out_apart), sums_apart.data());
  const auto fused = (in_place ? dg_fused : dz_fused).to_host();
  const auto apart = dz_apart.to_host();
  bool same_dz = true;
  for (std::size_t i = static_cast<std::size_t>(shift); i < n; ++i) same_dz = same_dz && fused[i] == apart[i];
  CHECK(same_dz);
  const auto a = sums_fused.to_host(), b = sums_apart.to_host();
  bool same_sums = true;
  for (std::size_t c = 0; c < a.size(); ++c)
    same_sums = same_sums && std::memcmp(&a[c], &b[c], sizeof(float)) == 0;
  CHECK(same_sums);
}

TEST_CASE("CUDA ReLU / dropout backward with the bias gradient fused equals the two operations bit for bit") {
  DeviceFixture f;
  for (std::int64_t rows : {0, 1, 9, 17, 1000, 1025, 70001, 300000}) {
    for (std::int64_t width : {1, 7, 16, 45, 48, 256}) {
      if (rows * width > 20000000 || (rows > 100000 && width != 48)) continue;
      for (std::int64_t shift : {0, 1}) {
        for (bool in_place : {false, true}) {
          check_fused_backward_sums<float>(f, rows, width, shift, in_place);
          check_fused_backward_sums<Bf16>(f, rows, width, shift, in_place);
        }
      }
    }
  }
  CHECK(f.allocator.in_use() == 0);
}


TEST_CASE("CUDA dropout of stored CSR values matches the CPU bit for bit: empty and long rows, transposed, key_at") {
  DeviceFixture f;
  // Rows of 0 to 3000 entries (a transpose's word rows), 10 % empty rows, and a view whose offsets start past 0.
  const HostCsr a = random_csr(1200, 900, 12, 91, 0.1, {{5, 3000}, {600, 800}, {1199, 2500}});
  const DeviceBuffer<RowOffset> doff(a.offsets);
  const DeviceBuffer<NodeId> dcols(a.col_ids);
  const DeviceBuffer<float> dvals(a.values);
  std::vector<NodeId> ids(static_cast<std::size_t>(std::max(a.rows, a.cols)));
  for (std::size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<NodeId>(7 * i + 3);
  const DeviceBuffer<NodeId> dids(ids);
  const std::uint64_t key = rng::stream_key(5, rng::kDropout, 8, 0);
  const DeviceBuffer<std::uint64_t> dkey(std::vector<std::uint64_t>{key});
  for (float p : {0.0f, 0.5f, 0.8f}) {
    for (bool transposed : {false, true}) {
      for (int variant = 0; variant < 3; ++variant) {  // 0: key by value; 1: key_at; 2: no entries_bound, a sub-view
        CAPTURE(p);
        CAPTURE(transposed);
        CAPTURE(variant);
        Dropout d;
        d.p = p;
        d.key = key;
        d.global_ids = ids.data();
        Dropout dd = d;
        dd.global_ids = dids.data();
        if (variant == 1) {
          dd.key = 0;
          dd.key_at = dkey.data();
        }
        CsrView host = a.view(), dev{a.rows, a.cols, doff.data(), dcols.data(), dvals.data(), a.nnz()};
        if (variant == 2) {  // rows 300.. only: offsets start at row 300's; entries before it are not written
          host.num_rows = dev.num_rows = a.rows - 300;
          host.row_offsets += 300;
          dev.row_offsets = doff.data() + 300;
          dev.entries_bound = -1;
        }
        std::vector<float> out(static_cast<std::size_t>(a.nnz()), -7.0f);
        const DeviceBuffer<float> dout(out);
        dropout_csr_values_async(kCpu, host, transposed, d, out.data());
        dropout_csr_values_async(f.ctx, dev, transposed, dd, dout.data());
        const auto got = dout.to_host();
        CHECK(std::memcmp(got.data(), out.data(), out.size() * sizeof(float)) == 0);
        if (variant == 2) CHECK(got[static_cast<std::size_t>(a.offsets[300]) - 1] == -7.0f);
      }
    }
  }
}

}  // TEST_SUITE("gpu")
