// Tuning constants of gcnpart's own CUDA SpMM, in one place. See spmm.cu for what they steer.
#pragma once

#include <cstdint>

namespace gcnpart::kernels::detail::spmm_tuning {

/// Threads per block of the row kernel.
inline constexpr int kBlockThreads = 256;
// The long-row threshold and segment size are run-time settings: kernels::SpmmTuning (kernels/ops.hpp).
/// Blocks per multiprocessor of the segment kernel (a grid-stride loop over all segments).
inline constexpr int kSegmentBlocksPerSm = 8;
/// Accumulators per lane (float4 or float each): one pass covers 32 lanes x vector x this many columns.
inline constexpr int kMaxChunks = 4;
/// bf16 X: 16-byte loads of 8 values only from this width on (32 lanes x 8 = 256 columns, one row per warp).
/// Narrower rows take 8-byte loads of 4 values, so that a row keeps the lanes the fp32 kernel gives it: halving
/// the lanes per row packs rows of unequal degree into one warp, which then waits for the longest (power-law
/// graphs). H200, reddit-sized RMAT, width 128: 16 lanes x 8 values 5.84 ms, 32 lanes x 4 values 4.25 ms (fp32
/// kernel 5.40 ms).
inline constexpr std::int64_t kBf16Vec8MinWidth = 256;
/// Unroll factor of the loop over the entries of one batch (independent loads in flight per lane).
inline constexpr int kEntryUnroll = 4;

}  // namespace gcnpart::kernels::detail::spmm_tuning
