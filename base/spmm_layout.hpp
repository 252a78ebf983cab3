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

/// Half the entries each lane group the GPU holds at once would get if the product were shared evenly: the scale
/// of the automatic long-row rules below.
constexpr std::int64_t spmm_share(std::int64_t entries, std::int64_t resident_groups) {
  return resident_groups > 0 ? entries / (2 * resident_groups) : 0;
}

/// The own SpMM's long-row threshold when SpmmTuning::long_row is 0: a row left to one lane group must finish well
/// within the kernel's time, which is about entries / resident_groups entries per group (every group the GPU holds at
/// once working in parallel), so rows above half of that (the share) are split. Small products (a share below 64
/// entries: the shared real graphs, arxiv-sized graphs at narrow widths) split rows above 8 x the share, clamped to
/// 32..128. Since the long rows run inside the row kernel's launch (spmm_fused_kernel), splitting rows of a few dozen
/// entries costs more than it saves: H200, own fp32 SpMM, same call, thresholds 32..192
/// (bench/results/h200-2026-12-03d/call4-long-row-sweep): soc-Slashdot0902 (share 16 at width 32) at 32 0.0411 ms with
/// the old 2 x share (32), 0.0365 with 128, 0.0442 with 192; at 16 0.0289 -> 0.0246 ms (64); an arxiv-sized RMAT at 16
/// 0.0407 -> 0.0376 (64); email-Enron (share 6 at 32) keeps 32..48 (128 there: 0.0220 -> 0.0299 ms). The cap of 128:
/// soc-Slashdot0902 at 64 (share 32) ran 0.0582 ms with 128 and 0.0639 with 256 (call3-options). Products that run the
/// long rows in a launch of their own (`fused` false: the four-lane layouts, bf16 X read 8 values per lane, a matrix
/// without its long-row list) keep twice the share, at least 32: with 8 x the share they were slower (call5-rule:
/// soc-Slashdot0902 at 41 / 47 0.0725 / 0.0743 -> 0.0776 / 0.0797 ms, email-Enron with bf16 X at 256 0.0704 -> 0.0847
/// ms). Large shares (above kLongShare: degree-ordered reddit- and products-sized RMAT graphs with a warp per row) also
/// split only rows above twice the share, in segments of 512 entries (spmm_auto_segment): at width 256 the reddit-sized
/// graph (share 4717) ran 8.69 ms with 4096 / 256 and 7.98 ms with 9434 / 512, the products-sized graph (share 6995)
/// 17.87 -> 17.02 ms; 1024 and 2048 were slower (9.1 ms), so was 16384 on the reddit-sized graph (8.87)
/// (bench/results/h200-2026-12-02b/call7-long-row-256). Between the two: the share itself, at least 128.
inline constexpr std::int64_t kLongShare = 4096;

constexpr std::int64_t spmm_auto_long_row(std::int64_t entries, std::int64_t resident_groups, bool fused = true) {
  const std::int64_t share = spmm_share(entries, resident_groups);
  if (share < 64 && !fused) return 2 * share < 32 ? 32 : 2 * share;
  if (share < 64) return 8 * share < 32 ? 32 : 8 * share > 128 ? 128 : 8 * share;
  if (share > kLongShare) return 2 * share;
  return share < 128 ? 128 : share;
}

/// The long rows a matrix lists once for the own CUDA SpMM (CsrView::long_rows): those above the smallest threshold
/// spmm_auto_long_row gives on a GPU of up to kSpmmListedResidentGroups lane groups at once (160 SMs x 2048
/// threads, one lane per group); a product with a lower threshold (a larger GPU, or a SpmmTuning::long_row below
/// it) lists its long rows itself. Independent of the GPU, so that the memory model prices the same list.
inline constexpr std::int64_t kSpmmListedResidentGroups = 160 * 2048;

constexpr std::int64_t spmm_long_rows_floor(std::int64_t entries) {
  return spmm_auto_long_row(entries, kSpmmListedResidentGroups);
}

/// Rows the list can hold (its buffers' size): every listed row has more than the floor's entries. Past the floor's
/// scale this is at most 2 x kSpmmListedResidentGroups rows, whatever the matrix's size.
constexpr std::int64_t spmm_long_rows_capacity(std::int64_t rows, std::int64_t entries) {
  const std::int64_t bound = entries / (spmm_long_rows_floor(entries) + 1);
  return rows < bound ? rows : bound;
}

/// Entries per segment of a long row when SpmmTuning::segment is 0: 256 (measured on the reddit- and products-sized
/// graphs), 64 where the share is below 128 entries (small products: a long row's segments are worked by one warp
/// each, so shorter segments spread it over more warps; H200: 1.0-1.4x faster on soc-Slashdot0902, email-Enron and
/// an arxiv-sized RMAT at widths 16-256), 512 where it is above kLongShare (with spmm_auto_long_row's twice-the-share
/// threshold; 128 and 256 were slower there).
constexpr std::int64_t spmm_auto_segment(std::int64_t entries, std::int64_t resident_groups) {
  const std::int64_t share = spmm_share(entries, resident_groups);
  return share < 128 ? 64 : share > kLongShare ? 512 : 256;
}

/// Lanes of the own SpMM's group that owns a row of `vectors` vectors (of the lane's load width): the smallest power
/// of two covering them, at most 32 (wider rows loop over column passes).
constexpr int spmm_group_lanes(std::int64_t vectors) {
  int lanes = 1;
  while (lanes < 32 && lanes < vectors) lanes *= 2;
  return lanes;
}

/// The lanes a row gets with SpmmTuning::lanes = `lanes` (vectors of 4 elements; other load widths pass 32): four
/// for rows of 9..12 vectors (0, automatic) or of 5..16 vectors (4), else spmm_group_lanes (32: sized to the row).
/// The automatic long-row rule counts the resident lane groups with it.
constexpr int spmm_row_lanes(std::int64_t vectors, int lanes) {
  if (lanes == 0 && vectors >= 9 && vectors <= 12) return 4;
  if (lanes == 4 && vectors >= 5 && vectors <= 16) return 4;
  return spmm_group_lanes(vectors);
}

}  // namespace gcnpart::kernels
