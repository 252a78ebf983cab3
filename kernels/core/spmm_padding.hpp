// How much the own CUDA SpMM pads X (kernels::SpmmTuning::pad): header-only, so that the memory model
// (partition::allocation_plan) prices the same workspace the kernel takes.
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

}  // namespace gcnpart::kernels
