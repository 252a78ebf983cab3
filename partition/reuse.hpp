// How often an aggregation's gathered rows come back while an L2 of a given size still holds them: measured on the
// graph itself (its access stream in the order the engine runs it), not inferred from the degree distribution.
//
// The SpMM of a row walks the row's columns and reads one input row per entry. Taken in row order, the columns form
// a stream; a read hits a fully associative LRU cache of C rows exactly when fewer than C distinct rows were read
// since the same row's previous read (its stack distance). Stack distances are costly to count; reuse times (reads
// since the previous read of the same row) are one pass over the stream with one integer per row. StatStack (Eklov
// and Hagersten, ISPASS 2010) turns the reuse-time distribution into expected stack distances: the distinct rows
// among t consecutive reads are about sum_{k<t} P(reuse time > k) (each read counts when the next read of its row
// lies beyond the window). A graph in natural mesh order reuses within a few rows; a power-law graph reuses its hubs;
// a uniform random graph in random order almost never: the profile sees each as it is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/enums.hpp"
#include "datasets/csr.hpp"

namespace gcnpart::partition {

/// The fraction of an SpMM's gathered-row reads an LRU cache of 2^k rows serves, for k = 0, 1, ... (first reads of a
/// row always miss).
struct ReuseProfile {
  std::vector<double> hits;      ///< hits[k]: at a cache of 2^k rows; nondecreasing; empty = not measured
  /// The same for a cache that keeps the 2^k most-read rows (frequency-optimal, each still missed once): what a
  /// replacement policy better than LRU approaches on a skewed graph. Empty = not measured.
  std::vector<double> static_hits;
  double sampled_rows = 1;       ///< share of the rows whose reads were followed (a hash of the row id; 1 = all)
  std::int64_t reads = 0;        ///< reads in the stream (entries of the graph with self loops)
  [[nodiscard]] bool empty() const noexcept { return hits.empty(); }
  /// At a cache of `rows` rows (interpolated in log2; 0 below one row, the last value beyond the table).
  [[nodiscard]] double hit_fraction(double rows) const;
  /// The frequency-optimal cache's (static_hits; hit_fraction when not measured).
  [[nodiscard]] double static_hit_fraction(double rows) const;
};

/// The profile of the aggregation over `graph` (a symmetric CSR as datasets build it; Â's self loops are added as one
/// read of the row itself before its columns) with its rows renumbered as `order` renumbers them (the engine's
/// default kDegree; kNone: the stored order). Above `max_reads` reads, the reads of a hashed sample of the rows are
/// followed (the share recorded), which keeps every reuse time exact. O(reads + nodes); `seconds` of CPU time.
ReuseProfile reuse_profile(const datasets::Csr& graph, Reorder order, std::int64_t max_reads = std::int64_t{1} << 24);

/// The exact LRU hit fraction of the same stream at a cache of `rows` rows (a stack-distance count, O(reads log
/// reads)): the reference the StatStack estimate is tested against; small graphs only.
double lru_hit_fraction_exact(const datasets::Csr& graph, Reorder order, std::int64_t rows);

}  // namespace gcnpart::partition
