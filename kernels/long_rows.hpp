// The long rows of a CSR matrix, listed once with the matrix (host side) for the own CUDA SpMM: with the list, a
// product runs the long rows' entries and the other rows in one launch (kernels/detail/spmm.cu) instead of a row
// kernel that lists them and a segment kernel after it.
#pragma once

#include <cstdint>
#include <vector>

#include "base/csr_view.hpp"

namespace gcnpart::kernels {

/// The host list of LongRowsView: rows of more than `floor` entries, most entries first (ties: lower row first),
/// and prefix[i] = entries of rows[0..i).
struct LongRows {
  std::int64_t floor = 0;
  std::vector<NodeId> rows;
  std::vector<std::int64_t> prefix{0};
};

/// Lists the rows of offsets[0..num_rows] above `floor` entries. @throws InvalidInput for a negative row count or
/// floor, or offsets that decrease.
[[nodiscard]] LongRows list_long_rows(const RowOffset* offsets, std::int64_t num_rows, std::int64_t floor);

}  // namespace gcnpart::kernels
