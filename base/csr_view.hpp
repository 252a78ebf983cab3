// Non-owning view of a CSR graph: what kernels take. Host or device memory, as the owner decides.
#pragma once

#include <cstdint>

#include "base/host_device.hpp"

namespace gcnpart {

/// Row offsets are int64 (graphs past 2^31 edges), column ids int32 (nodes below 2^31).
using RowOffset = std::int64_t;
using NodeId = std::int32_t;

/// A matrix's long rows, listed once with the matrix (kernels/long_rows.hpp) for the own CUDA SpMM: every row of
/// more than `floor` entries, by entry count, most first (ties by row). prefix[i] = entries of rows[0..i).
struct LongRowsView {
  const RowOffset* row_offsets = nullptr;  ///< the matrix's offsets and rows, which the SpMM checks against its view's
  std::int64_t num_rows = 0;
  std::int64_t floor = 0;
  std::int64_t count = 0;
  const NodeId* rows = nullptr;               ///< device: count rows
  const std::int64_t* prefix = nullptr;       ///< device: count + 1 sums
  const std::int64_t* host_prefix = nullptr;  ///< host: the same count + 1 sums
};

/// A CSR matrix view: `row_offsets` has num_rows + 1 entries, `col_ids` and (optional) `values` have
/// row_offsets[num_rows] entries. `values == nullptr` means every stored entry is 1.
struct CsrView {
  std::int64_t num_rows = 0;
  std::int64_t num_cols = 0;
  const RowOffset* row_offsets = nullptr;
  const NodeId* col_ids = nullptr;
  const float* values = nullptr;
  /// At least row_offsets[num_rows] - row_offsets[0], as the host knows it (it cannot read device offsets); -1:
  /// unknown (the own CUDA SpMM then reads it from the device, a synchronising copy).
  std::int64_t entries_bound = -1;
  /// The matrix's long rows (null: not listed; the own CUDA SpMM then lists them per product). A view of some of
  /// the matrix's rows must not carry the whole matrix's list; it may carry a list of its own rows (same offsets
  /// pointer and row count as the view: engine/aggregation.cpp, RangeLongRows).
  const LongRowsView* long_rows = nullptr;

  GCNPART_HD std::int64_t num_entries() const { return num_rows == 0 ? 0 : row_offsets[num_rows]; }
  GCNPART_HD std::int64_t degree(std::int64_t row) const { return row_offsets[row + 1] - row_offsets[row]; }
};

}  // namespace gcnpart
