#include "partition/detail/plan_detail.hpp"

#include <omp.h>

#include <algorithm>
#include <string>

#include "base/error.hpp"
#include "base/philox.hpp"

namespace gcnpart::partition::detail {

namespace {

// Lowest index in [0, count) for which bad(i) holds (count if none), in parallel; deterministic.
template <class Bad>
std::int64_t first_bad(std::int64_t count, Bad bad) {
  std::int64_t first = count;
#pragma omp parallel for reduction(min : first) schedule(dynamic, 4096) if (count > kParallelMin)
  for (std::int64_t i = 0; i < count; ++i)
    if (i < first && bad(i)) first = std::min(first, i);
  return first;
}

[[noreturn]] void bad_graph(const char* entry, std::int64_t node, const std::string& problem, const std::string& value,
                            const std::string& expected) {
  throw InvalidInput(InputLocation{std::string(entry) + ": graph node " + std::to_string(node), 0, 0}, problem, value,
                     expected);
}

// An order-independent fingerprint of a directed entry, so that the sums over (u, v) and over (v, u) agree exactly
// when the graph is symmetric (and differ with probability 1 - 2^-64 when it is not).
std::uint64_t entry_hash(std::uint32_t u, std::uint32_t v) {
  return rng::mix64((static_cast<std::uint64_t>(u) << 32 | v) ^ 0x5DEECE66Dull);
}

}  // namespace

void check_graph(const datasets::Csr& g, const char* entry) {
  const std::int64_t n = g.num_nodes;
  const std::int64_t e = g.num_edges();
  if (n < 0 || n > std::int64_t{0x7fffffff}) bad_graph(entry, 0, "node count", std::to_string(n), "0..2147483647");
  if (static_cast<std::int64_t>(g.row_offsets.size()) != n + 1)
    bad_graph(entry, 0, "row offset count", std::to_string(g.row_offsets.size()), std::to_string(n + 1));
  if (g.row_offsets[0] != 0) bad_graph(entry, 0, "first row offset", std::to_string(g.row_offsets[0]), "0");
  if (g.row_offsets[n] != e)
    bad_graph(entry, n, "last row offset", std::to_string(g.row_offsets[n]), std::to_string(e) + " (the entry count)");
  const auto* off = g.row_offsets.data();
  const auto* col = g.col_ids.data();
  const std::int64_t bad = first_bad(n, [&](std::int64_t u) {
    if (off[u] < 0 || off[u + 1] < off[u] || off[u + 1] > e) return true;
    for (RowOffset k = off[u]; k < off[u + 1]; ++k) {
      const NodeId v = col[k];
      if (v < 0 || v >= n || v == u || (k > off[u] && col[k - 1] >= v)) return true;
    }
    return false;
  });
  if (bad < n) {
    if (off[bad + 1] < off[bad] || off[bad + 1] > e)
      bad_graph(entry, bad, "row end", std::to_string(off[bad + 1]),
                "non-decreasing in " + std::to_string(off[bad]) + ".." + std::to_string(e));
    for (RowOffset k = off[bad]; k < off[bad + 1]; ++k) {
      const NodeId v = col[k];
      if (v < 0 || v >= n) bad_graph(entry, bad, "neighbour id out of range", std::to_string(v), "0.." + std::to_string(n - 1));
      if (v == bad)
        bad_graph(entry, bad, "self loop", std::to_string(v),
                  "an adjacency without self loops (the plans add Â's loops themselves)");
      if (k > off[bad] && col[k - 1] >= v)
        bad_graph(entry, bad, "neighbours not strictly ascending", std::to_string(v), "> " + std::to_string(col[k - 1]));
    }
  }
  // Symmetry, in one streaming pass (no binary searches): sum of h(u, v) over entries equals sum of h(v, u).
  std::uint64_t forward = 0, backward = 0;
#pragma omp parallel for reduction(+ : forward, backward) schedule(dynamic, 4096) if (e > kParallelMin)
  for (std::int64_t u = 0; u < n; ++u) {
    for (RowOffset k = off[u]; k < off[u + 1]; ++k) {
      forward += entry_hash(static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(col[k]));
      backward += entry_hash(static_cast<std::uint32_t>(col[k]), static_cast<std::uint32_t>(u));
    }
  }
  if (forward != backward) {
    // Find the lowest node with a one-way edge, for the message.
    const std::int64_t u = first_bad(n, [&](std::int64_t x) {
      for (RowOffset k = off[x]; k < off[x + 1]; ++k)
        if (!std::binary_search(col + off[col[k]], col + off[col[k] + 1], static_cast<NodeId>(x))) return true;
      return false;
    });
    NodeId v = -1;
    for (RowOffset k = off[u]; k < off[u + 1] && v < 0; ++k)
      if (!std::binary_search(col + off[col[k]], col + off[col[k] + 1], static_cast<NodeId>(u))) v = col[k];
    bad_graph(entry, u, "one-way edge (graph not symmetric)", std::to_string(u) + " -> " + std::to_string(v),
              "the reverse edge " + std::to_string(v) + " -> " + std::to_string(u));
  }
}

void check_partition(const datasets::Csr& g, const Partition& partition, const char* entry) {
  const std::string where = std::string(entry) + ": partition";
  if (partition.parts < 1)
    throw InvalidInput(InputLocation{where, 0, 0}, "part count", std::to_string(partition.parts), "at least 1");
  if (static_cast<std::int64_t>(partition.part_of.size()) != g.num_nodes)
    throw InvalidInput(InputLocation{where, 0, 0}, "part_of length", std::to_string(partition.part_of.size()),
                       std::to_string(g.num_nodes) + " (one part per node)");
  const auto* part = partition.part_of.data();
  const int parts = partition.parts;
  const std::int64_t bad = first_bad(g.num_nodes, [&](std::int64_t v) { return part[v] < 0 || part[v] >= parts; });
  if (bad < g.num_nodes)
    throw InvalidInput(InputLocation{where + " node " + std::to_string(bad), 0, 0}, "part id", std::to_string(part[bad]),
                       "0.." + std::to_string(parts - 1));
}

CutStats cut_stats(const datasets::Csr& g, const std::int32_t* part, int parts) {
  std::int64_t crossing = 0, volume = 0;
  const auto* off = g.row_offsets.data();
  const auto* col = g.col_ids.data();
#pragma omp parallel reduction(+ : crossing, volume) if (g.num_edges() > kParallelMin)
  {
    // seen[p] = last node that counted part p, so a part is counted once per node.
    std::vector<std::int64_t> seen(static_cast<std::size_t>(parts), -1);
#pragma omp for schedule(dynamic, 4096)
    for (std::int64_t u = 0; u < g.num_nodes; ++u) {
      const std::int32_t pu = part[u];
      for (RowOffset k = off[u]; k < off[u + 1]; ++k) {
        const std::int32_t pv = part[col[k]];
        if (pv == pu) continue;
        ++crossing;
        if (seen[pv] != u) {
          seen[pv] = u;
          ++volume;
        }
      }
    }
  }
  return CutStats{crossing / 2, volume};
}

PartIndex index_parts(const Partition& partition) {
  PartIndex index;
  const int parts = partition.parts;
  const auto n = static_cast<std::int64_t>(partition.part_of.size());
  const auto* part = partition.part_of.data();
  index.offsets.assign(static_cast<std::size_t>(parts) + 1, 0);
  index.nodes.resize(static_cast<std::size_t>(n));
  index.rank.resize(static_cast<std::size_t>(n));
  // Counting sort in blocks: per-block counts, then each block scatters from its own cursors, so nodes stay in
  // ascending order inside every part whatever the thread count.
  const int threads = omp_get_max_threads();
  const std::int64_t blocks = n <= kParallelMin ? 1 : std::min<std::int64_t>(threads * 4, n / kParallelMin + 1);
  std::vector<std::int64_t> counts(static_cast<std::size_t>(blocks * parts), 0);
  auto block_begin = [&](std::int64_t b) { return n * b / blocks; };
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (std::int64_t b = 0; b < blocks; ++b)
    for (std::int64_t v = block_begin(b); v < block_begin(b + 1); ++v) ++counts[b * parts + part[v]];
  // cursor[b][p] = first position of block b's nodes of part p.
  std::int64_t total = 0;
  for (int p = 0; p < parts; ++p) {
    index.offsets[p] = total;
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::int64_t c = counts[b * parts + p];
      counts[b * parts + p] = total;
      total += c;
    }
  }
  index.offsets[parts] = total;
#pragma omp parallel for schedule(static) if (blocks > 1)
  for (std::int64_t b = 0; b < blocks; ++b) {
    for (std::int64_t v = block_begin(b); v < block_begin(b + 1); ++v) {
      const std::int64_t at = counts[b * parts + part[v]]++;
      index.nodes[at] = static_cast<NodeId>(v);
      index.rank[v] = static_cast<NodeId>(at - index.offsets[part[v]]);
    }
  }
  for (int p = 0; p < parts; ++p) index.max_size = std::max(index.max_size, index.size(p));
  return index;
}

void HaloBfs::run(const datasets::Csr& g, const NodeId* own, std::int64_t count, int layers) {
  for (const NodeId v : local_) local_of_[v] = -1;
  local_.clear();
  if (local_.capacity() < local_of_.size()) local_.reserve(local_of_.size());
  layers_ = layers;
  local_.assign(own, own + count);
  for (std::int64_t i = 0; i < count; ++i) local_of_[own[i]] = static_cast<NodeId>(i);
  ring_sizes_.clear();
  ring_end_.assign(1, count);
  const auto* off = g.row_offsets.data();
  const auto* col = g.col_ids.data();
  std::size_t begin = 0, end = local_.size();
  for (int hop = 1; hop <= layers; ++hop) {
    const std::size_t start = local_.size();
    for (std::size_t i = begin; i < end; ++i) {
      const NodeId u = local_[i];
      for (RowOffset k = off[u]; k < off[u + 1]; ++k) {
        const NodeId v = col[k];
        if (local_of_[v] == -1) {
          local_of_[v] = -2;  // reached at this hop; numbered after the ring is sorted
          local_.push_back(v);
        }
      }
    }
    std::sort(local_.begin() + static_cast<std::ptrdiff_t>(start), local_.end());
    for (std::size_t i = start; i < local_.size(); ++i) local_of_[local_[i]] = static_cast<NodeId>(i);
    ring_sizes_.push_back(static_cast<std::int64_t>(local_.size() - start));
    ring_end_.push_back(static_cast<std::int64_t>(local_.size()));
    begin = start;
    end = local_.size();
  }
}

std::int64_t HaloBfs::local_entries(const datasets::Csr& g) const {
  const auto* off = g.row_offsets.data();
  const auto* col = g.col_ids.data();
  const std::int64_t inner_rings_end = ring_end_[static_cast<std::size_t>(layers_) - 1];
  std::int64_t entries = 0;
  for (std::int64_t i = 0; i < inner_rings_end; ++i) entries += off[local_[i] + 1] - off[local_[i]];
  for (std::int64_t i = inner_rings_end; i < static_cast<std::int64_t>(local_.size()); ++i) {
    const NodeId u = local_[i];
    for (RowOffset k = off[u]; k < off[u + 1]; ++k) entries += local_of_[col[k]] >= 0;
  }
  return entries;
}

}  // namespace gcnpart::partition::detail
