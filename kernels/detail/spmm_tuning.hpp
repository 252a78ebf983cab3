// Tuning constants of gcnpart's own CUDA SpMM, in one place. See spmm.cu for what they steer.
#pragma once

#include <cstdint>

namespace gcnpart::kernels::detail::spmm_tuning {

/// Threads per block of the row kernel.
inline constexpr int kBlockThreads = 256;
/// A row with more stored entries than this is not left to one lane group: it is cut into segments of
/// kSegmentEntries that warps all over the grid take in turn, adding their partial sums with atomics. Rows at or
/// below it cost one group at most this many iterations, so this bounds the tail of power-law graphs.
inline constexpr std::int64_t kLongRowEntries = 128;
inline constexpr std::int64_t kSegmentEntries = 256;
/// Blocks per multiprocessor of the segment kernel (a grid-stride loop over all segments).
inline constexpr int kSegmentBlocksPerSm = 8;
/// Accumulators per lane (float4 or float each): one pass covers 32 lanes x vector x this many columns.
inline constexpr int kMaxChunks = 4;
/// Unroll factor of the loop over the entries of one batch (independent loads in flight per lane).
inline constexpr int kEntryUnroll = 4;

}  // namespace gcnpart::kernels::detail::spmm_tuning
