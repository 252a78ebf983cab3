// The one definition of the dropout keep mask, shared by the CPU kernels, the CUDA kernels and
// kernels::dropout_keep, so that masks are bit-identical across backends, devices and thread counts.
//
// Mapping: one Philox4x32-10 draw per (global node, block of 8 columns), 16 random bits per column:
//   r = philox4x32(key, counter_lo = global_node, counter_hi = column / 8)
//   u = column % 8;  word = (r.v[u / 2] >> (16 * (u % 2))) & 0xFFFF
//   keep(node, column) = word / 65536 < 1 - p        (exact in float)
// so the keep probability is 1 - p rounded up to a multiple of 2^-16 (exact for p = 0.5, 0.25, ...; off by less
// than 1.6e-5 otherwise). Eight columns per draw rather than four: Philox's ten rounds of 32-bit multiplies, not
// memory, bounded the dropout passes on the H200 (about 465 G elements/s whatever the element's bytes).
// Kept values are multiplied by 1 / (1 - p), computed in float. A block whose eight values are all zero (after
// bias and relu) is written unchanged without a draw: it is zero whatever the mask says, and input features are
// mostly such blocks (bag-of-words, ~1% non-zero), so this skips most of the Philox work.
#pragma once

#include <cstdint>

#include "kernels/core/host_device.hpp"
#include "kernels/core/philox.hpp"

namespace gcnpart::kernels::detail {

inline constexpr int kDropoutColumnsPerDraw = 8;

/// The draw whose eight 16-bit words decide columns [8 * column_block, 8 * column_block + 8) of one node.
GCNPART_HD rng::Philox4 dropout_draw(std::uint64_t key, std::int64_t global_node, std::int64_t column_block) {
  return rng::philox4x32(key, static_cast<std::uint64_t>(global_node), static_cast<std::uint64_t>(column_block));
}

/// The 16-bit word of column u (0..7) of a block.
GCNPART_HD std::uint32_t dropout_word(const rng::Philox4& r, int u) {
  return (r.v[u >> 1] >> ((u & 1) * 16)) & 0xFFFFu;
}

/// Whether a 16-bit word keeps its element; keep_probability = 1 - p computed in float.
GCNPART_HD bool dropout_word_keeps(std::uint32_t word, float keep_probability) {
  return static_cast<float>(word) * (1.0f / 65536.0f) < keep_probability;
}

GCNPART_HD float dropout_keep_probability(float p) { return 1.0f - p; }
GCNPART_HD float dropout_scale(float p) { return 1.0f / (1.0f - p); }

/// Whether (global_node, column) is kept with drop probability p under `key`.
GCNPART_HD bool dropout_element_keeps(std::uint64_t key, float p, std::int64_t global_node, std::int64_t column) {
  const rng::Philox4 r = dropout_draw(key, global_node, column / kDropoutColumnsPerDraw);
  return dropout_word_keeps(dropout_word(r, static_cast<int>(column % kDropoutColumnsPerDraw)),
                            dropout_keep_probability(p));
}

}  // namespace gcnpart::kernels::detail
