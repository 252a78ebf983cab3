// The own CUDA SpMM's layout choices the host must know: how much it pads X (kernels::SpmmTuning::pad) and its
// automatic long-row threshold. Header-only, so that the memory model (partition::allocation_plan) prices the same
// workspace the kernel takes.
#pragma once

#include <cstdint>

namespace gcnpart::kernels {

/// Elements per vector load the padded copy aligns X's rows to (4 floats or 4 bf16).
inline constexpr std::int64_t kSpmmPadVector = 4;
/// Narrower X is read element by element: a copy would cost more than it saves.
inline constexpr std::int64_t kSpmmPadMinWidth = 8;

/// Bytes of the padded copy of X the own CUDA SpMM takes as a workspace for an X of `rows` rows, `width` columns and
/// leading dimension `ld` of `element_bytes` (4 or 2) each, when padding is on: 0 when X is used in place (its
/// rows already start on a vector, or it is too narrow). The copy has the width rounded up to kSpmmPadVector.
constexpr std::int64_t spmm_padding_bytes(std::int64_t rows, std::int64_t width, std::int64_t ld, int element_bytes,
                                          bool pad) {
  if (!pad || rows <= 0 || width < kSpmmPadMinWidth || ld % kSpmmPadVector == 0) return 0;
  return rows * ((width + kSpmmPadVector - 1) / kSpmmPadVector * kSpmmPadVector) * element_bytes;
}

/// The own SpMM's long-row threshold when SpmmTuning::long_row is 0: a row left to one lane group must finish well
/// within the kernel's time, which is about entries / resident_groups entries per group (every group the GPU holds
/// at once working in parallel), so rows above half of that are split; kept within 128..4096 (the range measured
/// on H200: small graphs want 128, degree-ordered reddit- and products-sized RMAT graphs 4096 at wide widths).
constexpr std::int64_t spmm_auto_long_row(std::int64_t entries, std::int64_t resident_groups) {
  const std::int64_t share = resident_groups > 0 ? entries / (2 * resident_groups) : 0;
  return share < 128 ? 128 : share > 4096 ? 4096 : share;
}

}  // namespace gcnpart::kernels
