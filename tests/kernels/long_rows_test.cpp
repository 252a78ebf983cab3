// The long-row list the own CUDA SpMM keeps with a matrix (kernels/long_rows.hpp) and the bounds the memory model
// prices it with (base/spmm_layout.hpp).
#include "kernels/long_rows.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "base/error.hpp"
#include "base/spmm_layout.hpp"

using namespace gcnpart;
using namespace gcnpart::kernels;

namespace {

std::vector<RowOffset> offsets_of(const std::vector<std::int64_t>& degrees) {
  std::vector<RowOffset> off(degrees.size() + 1, 0);
  for (std::size_t i = 0; i < degrees.size(); ++i) off[i + 1] = off[i] + degrees[i];
  return off;
}

}  // namespace

TEST_CASE("list_long_rows lists the rows above the floor, most entries first, ties by row, with entry sums") {
  const std::vector<std::int64_t> degrees{3, 40, 0, 33, 32, 100, 40, 5, 1000};
  const auto off = offsets_of(degrees);
  const LongRows l = list_long_rows(off.data(), static_cast<std::int64_t>(degrees.size()), 32);
  CHECK(l.floor == 32);
  CHECK(l.rows == std::vector<NodeId>{8, 5, 1, 6, 3});  // 32 itself is not above the floor
  CHECK(l.prefix == std::vector<std::int64_t>{0, 1000, 1100, 1140, 1180, 1213});
  const LongRows none = list_long_rows(off.data(), static_cast<std::int64_t>(degrees.size()), 1000);
  CHECK(none.rows.empty());
  CHECK(none.prefix == std::vector<std::int64_t>{0});
  const LongRows empty = list_long_rows(off.data(), 0, 0);
  CHECK(empty.rows.empty());
}

TEST_CASE("list_long_rows refuses decreasing offsets and negative sizes, naming the value") {
  const std::vector<RowOffset> bad{0, 5, 3, 9};
  CHECK_THROWS_WITH_AS(list_long_rows(bad.data(), 3, 0), doctest::Contains("row_offsets[2]"), InvalidInput);
  CHECK_THROWS_AS(list_long_rows(bad.data(), -1, 0), InvalidInput);
  CHECK_THROWS_AS(list_long_rows(bad.data(), 1, -2), InvalidInput);
}

TEST_CASE("the long-row list fits its priced capacity, and its floor is at or below every automatic threshold") {
  std::mt19937_64 gen(5);
  for (const std::int64_t rows : {1, 50, 3000, 200000}) {
    for (const double alpha : {1.5, 2.0, 3.0}) {  // power-law degrees, heavy to light tails
      std::vector<std::int64_t> degrees(static_cast<std::size_t>(rows));
      std::uniform_real_distribution<double> u(1e-9, 1.0);
      for (auto& d : degrees) d = std::min<std::int64_t>(static_cast<std::int64_t>(std::pow(u(gen), -1.0 / (alpha - 1.0))), 1000000);
      const auto off = offsets_of(degrees);
      const std::int64_t entries = off.back();
      const std::int64_t floor = spmm_long_rows_floor(entries);
      const LongRows l = list_long_rows(off.data(), rows, floor);
      CAPTURE(rows);
      CAPTURE(alpha);
      CHECK(static_cast<std::int64_t>(l.rows.size()) <= spmm_long_rows_capacity(rows, entries));
      CHECK(l.prefix.back() <= entries);
      for (std::size_t i = 1; i < l.rows.size(); ++i)
        CHECK(l.prefix[i + 1] - l.prefix[i] <= l.prefix[i] - l.prefix[i - 1]);
      // Any GPU of up to kSpmmListedResidentGroups resident lane groups picks a threshold the list covers.
      for (const std::int64_t groups : {std::int64_t{1}, std::int64_t{4096}, std::int64_t{132} * 2048 / 4,
                                        std::int64_t{132} * 2048, kSpmmListedResidentGroups})
        CHECK(spmm_auto_long_row(entries, groups) >= floor);
    }
  }
}

TEST_CASE("a row range's list with the matrix's floor is the matrix's listed rows in the range, rebased: disjoint "
          "ranges fit the matrix's capacity together") {
  // The boundary strategy's products run on row ranges (offsets + begin) and list each range with the whole
  // matrix's floor (engine/aggregation.cpp, RangeLongRows); the memory model prices them at the matrix's capacity.
  std::mt19937_64 gen(11);
  std::uniform_real_distribution<double> u(1e-9, 1.0);
  for (const std::int64_t rows : {7, 3000, 100000}) {
    std::vector<std::int64_t> degrees(static_cast<std::size_t>(rows));
    for (auto& d : degrees) d = std::min<std::int64_t>(static_cast<std::int64_t>(std::pow(u(gen), -1.0 / 0.8)), 50000);
    const auto off = offsets_of(degrees);
    const std::int64_t entries = off.back();
    const std::int64_t floor = spmm_long_rows_floor(entries);
    const LongRows whole = list_long_rows(off.data(), rows, floor);
    for (const std::int64_t cut : {std::int64_t{0}, rows / 3, rows}) {
      CAPTURE(rows);
      CAPTURE(cut);
      const LongRows a = list_long_rows(off.data(), cut, floor);
      const LongRows b = list_long_rows(off.data() + cut, rows - cut, floor);
      CHECK(a.floor == floor);
      CHECK(b.floor == floor);
      // The matrix's list, split by range and rebased, keeps its order (most entries first, ties by row).
      std::vector<NodeId> in_a, in_b;
      for (const NodeId r : whole.rows) (r < cut ? in_a : in_b).push_back(r < cut ? r : static_cast<NodeId>(r - cut));
      CHECK(a.rows == in_a);
      CHECK(b.rows == in_b);
      CHECK(a.prefix.back() + b.prefix.back() == whole.prefix.back());
      CHECK(static_cast<std::int64_t>(a.rows.size() + b.rows.size()) <= spmm_long_rows_capacity(rows, entries));
    }
  }
}
