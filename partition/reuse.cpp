#include "partition/reuse.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>

#include "base/error.hpp"
#include "partition/reorder.hpp"

namespace gcnpart::partition {

namespace {

/// Cache sizes of the table: 2^0 .. 2^kMaxLogRows rows.
constexpr int kMaxLogRows = 34;

/// Reuse-time buckets: exact below 16, then eight per octave (3 mantissa bits).
constexpr int kExact = 16;
constexpr int kBuckets = kExact + (63 - 4 + 1) * 8;

int bucket_of(std::uint64_t t) {
  if (t < kExact) return static_cast<int>(t);
  const int oct = 63 - std::countl_zero(t);
  const int sub = static_cast<int>((t >> (oct - 3)) & 7u);
  return kExact + (oct - 4) * 8 + sub;
}

double lower_edge(int b) {
  if (b < kExact) return b;
  const int oct = 4 + (b - kExact) / 8, sub = (b - kExact) % 8;
  return std::ldexp(8.0 + sub, oct - 3);
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Calls read(row) for every read of the aggregation's stream: rows in the new order, each row's own id first (Â's
/// self loop), then its columns (an explicit self loop of the graph skipped: Â has one). Rows are named by their
/// stored ids: a reuse time depends on where reads fall in the stream, not on what the rows are called, so the
/// renumbering is never applied to the columns.
template <class Read>
void for_each_read(const datasets::Csr& g, const Reordering& r, Read&& read) {
  const bool identity = r.identity();
  for (std::int64_t p = 0; p < g.num_nodes; ++p) {
    const std::int64_t u = identity ? p : r.order[static_cast<std::size_t>(p)];
    read(u);
    for (RowOffset e = g.row_offsets[u]; e < g.row_offsets[u + 1]; ++e) {
      const std::int64_t v = g.col_ids[e];
      if (v != u) read(v);
    }
  }
}

std::int64_t reads_of(const datasets::Csr& g) {
  std::int64_t loops = 0;
  for (std::int64_t u = 0; u < g.num_nodes; ++u)
    for (RowOffset e = g.row_offsets[u]; e < g.row_offsets[u + 1]; ++e) loops += g.col_ids[e] == u ? 1 : 0;
  return g.num_edges() - loops + g.num_nodes;
}

double interpolate_log2(const std::vector<double>& hits, double rows) {
  if (hits.empty() || !(rows >= 1)) return 0;
  const double k = std::log2(rows);
  const auto last = static_cast<double>(hits.size() - 1);
  if (k >= last) return hits.back();
  const auto i = static_cast<std::size_t>(k);
  const double t = k - static_cast<double>(i);
  return hits[i] + t * (hits[i + 1] - hits[i]);
}

/// rows_at[d]: the rows of degree d.
std::vector<std::int64_t> degree_histogram(const datasets::Csr& g) {
  std::int64_t max_degree = 0;
  for (std::int64_t u = 0; u < g.num_nodes; ++u) max_degree = std::max(max_degree, g.degree(u));
  std::vector<std::int64_t> rows_at(static_cast<std::size_t>(max_degree) + 1, 0);
  for (std::int64_t u = 0; u < g.num_nodes; ++u) ++rows_at[static_cast<std::size_t>(g.degree(u))];
  return rows_at;
}

}  // namespace

double ReuseProfile::hit_fraction(double rows) const { return interpolate_log2(hits, rows); }

double ReuseProfile::static_hit_fraction(double rows) const {
  return static_hits.empty() ? hit_fraction(rows) : interpolate_log2(static_hits, rows);
}

ReuseProfile reuse_profile(const datasets::Csr& g, Reorder order, std::int64_t max_reads) {
  GCNPART_EXPECTS(max_reads > 0, "a positive read budget");
  ReuseProfile p;
  if (g.num_nodes == 0) return p;
  const Reordering r = locality_order(g, order);
  p.reads = g.num_edges() + g.num_nodes;  // an upper bound until counted below (explicit self loops are rare)
  // Above the budget, follow a sample of the rows, every read of a followed row (its reuse times stay exact): the
  // rows of the largest degrees all (half the budget at most: hubs carry many reads, a hash would take or miss them
  // whole), the others by a hash of their id at the share that fills the other half, their reads weighted by its
  // inverse. The weighted distribution is the whole stream's (unbiased).
  std::int64_t hub_degree = std::numeric_limits<std::int64_t>::max();
  double share = 1;
  const std::vector<std::int64_t> rows_at = degree_histogram(g);
  const auto max_degree = static_cast<std::int64_t>(rows_at.size()) - 1;
  if (p.reads > max_reads) {
    std::int64_t hub_reads = 0;  // a row of degree d is read d + 1 times
    for (std::int64_t d = max_degree;
         d >= 0 && hub_reads + rows_at[static_cast<std::size_t>(d)] * (d + 1) <= max_reads / 2; --d)
      hub_reads += rows_at[static_cast<std::size_t>(d)] * (d + 1), hub_degree = d;
    share = std::min(1.0, static_cast<double>(max_reads - hub_reads) / static_cast<double>(p.reads - hub_reads));
  }
  const std::uint64_t threshold = share < 1 ? static_cast<std::uint64_t>(std::ldexp(share, 64)) : ~0ull;
  const double weight = 1 / share;
  // Per row, once: 0 = not followed, 1 = a hub (weight 1), 2 = hashed in (weight 1 / share). A byte per row stays in
  // cache where the rows' counters would not.
  std::vector<std::uint8_t> follow(static_cast<std::size_t>(g.num_nodes), 1);
  if (share < 1)
    for (std::int64_t u = 0; u < g.num_nodes; ++u)
      follow[static_cast<std::size_t>(u)] = g.degree(u) >= hub_degree                          ? 1
                                            : mix(static_cast<std::uint64_t>(u)) < threshold ? 2
                                                                                             : 0;
  std::vector<std::int64_t> last(static_cast<std::size_t>(g.num_nodes), -1);
  std::vector<double> count(kBuckets, 0.0);
  std::int64_t position = 0;
  double followed = 0, cold = 0;
  for_each_read(g, r, [&](std::int64_t row) {
    const std::int64_t at = position++;
    const std::uint8_t f = follow[static_cast<std::size_t>(row)];
    if (f == 0) return;
    const double w = f == 2 ? weight : 1.0;
    followed += w;
    std::int64_t& prev = last[static_cast<std::size_t>(row)];
    if (prev < 0) {
      cold += w;
    } else {
      count[static_cast<std::size_t>(bucket_of(static_cast<std::uint64_t>(at - prev)))] += w;
    }
    prev = at;
  });
  p.reads = position;
  p.sampled_rows = share;
  if (followed == 0) return p;
  // Survival S_j = P(reuse time >= lower edge of bucket j) over every followed read (first reads: infinite).
  const double a = followed;
  std::vector<double> survival(kBuckets + 1, 0.0);
  survival[kBuckets] = cold / a;
  for (int j = kBuckets - 1; j >= 0; --j) survival[j] = survival[j + 1] + count[j] / a;
  // Expected stack distance at each bucket edge: SD(t) = sum_{k < t} P(RT > k), trapezoids over the buckets.
  std::vector<double> sd(kBuckets + 1, 0.0);
  for (int j = 1; j < kBuckets; ++j) {
    const double lo = lower_edge(j), hi = lower_edge(j + 1);
    sd[j + 1] = sd[j] + (hi - lo) * 0.5 * (survival[j] + survival[j + 1]);
  }
  // A read's stack distance is below the number of distinct rows; StatStack's estimate can pass it near
  // saturation, so a cache of every row hits every read but the first.
  const double distinct = static_cast<double>(g.num_nodes);
  p.hits.assign(kMaxLogRows + 1, 0.0);
  for (int k = 0; k <= kMaxLogRows; ++k) {
    const double cache = std::ldexp(1.0, k);
    double hit = 0;
    if (cache >= distinct) {
      p.hits[static_cast<std::size_t>(k)] = 1 - cold / a;
      continue;
    }
    for (int j = 1; j < kBuckets; ++j) {
      if (count[j] == 0) continue;
      if (sd[j + 1] <= cache) {
        hit += count[j];
      } else if (sd[j] < cache) {
        hit += count[j] * (cache - sd[j]) / (sd[j + 1] - sd[j]);
      }
    }
    p.hits[static_cast<std::size_t>(k)] = hit / a;
  }
  for (std::size_t k = 1; k < p.hits.size(); ++k) p.hits[k] = std::max(p.hits[k], p.hits[k - 1]);
  // Frequency-optimal: a row is read degree + 1 times (its neighbours and its own self loop); the 2^k most-read rows
  // cached serve all their reads but the first. From a degree histogram, O(nodes + largest degree).
  const double total = static_cast<double>(g.num_edges() + g.num_nodes);
  p.static_hits.assign(kMaxLogRows + 1, 0.0);
  double cached = 0, served = 0;
  std::int64_t d = max_degree, left = rows_at[static_cast<std::size_t>(d)];  // rows of degree d not yet cached
  for (int k = 0; k <= kMaxLogRows; ++k) {
    const double cache = std::ldexp(1.0, k);
    while (d >= 0 && cached < cache) {  // take rows of degree d until the cache is full
      const double take = std::min(static_cast<double>(left), cache - cached);
      cached += take;
      served += take * static_cast<double>(d);  // degree + 1 reads, the first a miss
      left -= static_cast<std::int64_t>(take);
      if (left == 0 && --d >= 0) left = rows_at[static_cast<std::size_t>(d)];
    }
    p.static_hits[static_cast<std::size_t>(k)] = served / total;
  }
  return p;
}

double lru_hit_fraction_exact(const datasets::Csr& g, Reorder order, std::int64_t rows) {
  const Reordering r = locality_order(g, order);
  const std::int64_t n = reads_of(g);
  // Fenwick tree over stream positions: a 1 at each row's latest read; a read's stack distance is the count of 1s
  // strictly between its row's previous read and itself.
  std::vector<std::int64_t> tree(static_cast<std::size_t>(n) + 1, 0);
  const auto add = [&](std::int64_t i, std::int64_t v) {
    for (++i; i <= n; i += i & -i) tree[static_cast<std::size_t>(i)] += v;
  };
  const auto prefix = [&](std::int64_t i) {  // sum over [0, i)
    std::int64_t s = 0;
    for (; i > 0; i -= i & -i) s += tree[static_cast<std::size_t>(i)];
    return s;
  };
  std::vector<std::int64_t> last(static_cast<std::size_t>(g.num_nodes), -1);
  std::int64_t position = 0, hits = 0;
  for_each_read(g, r, [&](std::int64_t row) {
    const std::int64_t at = position++;
    std::int64_t& prev = last[static_cast<std::size_t>(row)];
    if (prev >= 0) {
      if (prefix(at) - prefix(prev + 1) < rows) ++hits;
      add(prev, -1);
    }
    add(at, 1);
    prev = at;
  });
  return n > 0 ? static_cast<double>(hits) / static_cast<double>(n) : 0;
}

}  // namespace gcnpart::partition
