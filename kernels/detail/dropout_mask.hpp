// The one definition of the dropout keep mask, shared by the CPU kernels, the CUDA kernels and
// kernels::dropout_keep, so that masks are bit-identical across backends, devices and thread counts.
//
// Mapping: one Philox4x32-10 draw per (global node, block of 4 columns):
//   r = philox4x32(key, counter_lo = global_node, counter_hi = column / 4)
//   keep(node, column) = to_unit_float(r.v[column % 4]) < 1 - p        (24-bit uniform, exact in float)
// Kept values are multiplied by 1 / (1 - p), computed in float. A block whose four values are all zero (after bias
// and relu) is written unchanged without a draw: it is zero whatever the mask says, and input features are mostly
// such blocks (bag-of-words, ~1% non-zero), so this skips most of the Philox work.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/host_device.hpp"
#include "base/philox.hpp"

namespace gcnpart::kernels::detail {

inline constexpr int kDropoutColumnsPerDraw = 4;

/// The four uniform words that decide columns [4 * column_block, 4 * column_block + 4) of one node.
GCNPART_HD rng::Philox4 dropout_draw(std::uint64_t key, std::int64_t global_node, std::int64_t column_block) {
  return rng::philox4x32(key, static_cast<std::uint64_t>(global_node), static_cast<std::uint64_t>(column_block));
}

/// Whether one word of a draw keeps its element; keep_probability = 1 - p computed in float.
GCNPART_HD bool dropout_word_keeps(std::uint32_t word, float keep_probability) {
  return rng::to_unit_float(word) < keep_probability;
}

/// dropout_word_keeps as one integer comparison: (word >> 8) < dropout_keep_below(keep_probability) decides exactly
/// as to_unit_float(word) < keep_probability does. The 24-bit value v = word >> 8 is kept when v 2^-24 < k, i.e. v <
/// k 2^24, which for an integer v is v < ceil(k 2^24); k 2^24 is exact in float (a power-of-two scaling of k <= 1).
GCNPART_HD std::uint32_t dropout_keep_below(float keep_probability) {
  return static_cast<std::uint32_t>(ceilf(keep_probability * 16777216.0f));
}
GCNPART_HD bool dropout_word_keeps_below(std::uint32_t word, std::uint32_t keep_below) { return (word >> 8) < keep_below; }

GCNPART_HD float dropout_keep_probability(float p) { return 1.0f - p; }
GCNPART_HD float dropout_scale(float p) { return 1.0f / (1.0f - p); }

/// Whether (global_node, column) is kept with drop probability p under `key`.
GCNPART_HD bool dropout_element_keeps(std::uint64_t key, float p, std::int64_t global_node, std::int64_t column) {
  const rng::Philox4 r = dropout_draw(key, global_node, column / kDropoutColumnsPerDraw);
  return dropout_word_keeps(r.v[column % kDropoutColumnsPerDraw], dropout_keep_probability(p));
}

}  // namespace gcnpart::kernels::detail
