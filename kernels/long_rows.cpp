#include "kernels/long_rows.hpp"

#include <algorithm>
#include <string>

#include "base/error.hpp"

namespace gcnpart::kernels {

LongRows list_long_rows(const RowOffset* offsets, std::int64_t num_rows, std::int64_t floor) {
  if (num_rows < 0) throw InvalidInput::parameter("num_rows", std::to_string(num_rows), ">= 0");
  if (floor < 0) throw InvalidInput::parameter("floor", std::to_string(floor), ">= 0");
  LongRows out;
  out.floor = floor;
  for (std::int64_t r = 0; r < num_rows; ++r) {
    const std::int64_t d = offsets[r + 1] - offsets[r];
    if (d < 0)
      throw InvalidInput::parameter("row_offsets[" + std::to_string(r + 1) + "]", std::to_string(offsets[r + 1]),
                                    ">= row_offsets[" + std::to_string(r) + "] = " + std::to_string(offsets[r]));
    if (d > floor) out.rows.push_back(static_cast<NodeId>(r));
  }
  auto degree = [&](NodeId r) { return offsets[r + 1] - offsets[r]; };
  std::stable_sort(out.rows.begin(), out.rows.end(), [&](NodeId a, NodeId b) { return degree(a) > degree(b); });
  out.prefix.assign(out.rows.size() + 1, 0);
  for (std::size_t i = 0; i < out.rows.size(); ++i) out.prefix[i + 1] = out.prefix[i] + degree(out.rows[i]);
  return out;
}

}  // namespace gcnpart::kernels
