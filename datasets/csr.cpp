#include "datasets/csr.hpp"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <numeric>

#include "base/error.hpp"

namespace gcnpart::datasets {

std::string BuildStats::to_string() const {
  return std::to_string(input_edges) + " input entries, " + std::to_string(self_loops_removed) +
         " self loops removed, " + std::to_string(after_symmetrize) + " after symmetrising, " +
         std::to_string(duplicates_removed) + " duplicates removed, " + std::to_string(output_edges) + " in the CSR";
}

CsrView Csr::view() const noexcept {
  CsrView v;
  v.num_rows = num_nodes;
  v.num_cols = num_nodes;
  v.row_offsets = row_offsets.data();
  v.col_ids = col_ids.data();
  v.values = values.empty() ? nullptr : values.data();
  v.entries_bound = num_edges();
  return v;
}

std::int64_t Csr::bytes() const noexcept {
  return static_cast<std::int64_t>(row_offsets.size() * sizeof(RowOffset) + col_ids.size() * sizeof(NodeId) +
                                   values.size() * sizeof(float));
}

bool Csr::is_symmetric() const {
  std::atomic<bool> ok{true};
#pragma omp parallel for schedule(dynamic, 1024)
  for (std::int64_t u = 0; u < num_nodes; ++u) {
    if (!ok.load(std::memory_order_relaxed)) continue;
    for (RowOffset e = row_offsets[u]; e < row_offsets[u + 1]; ++e) {
      const NodeId v = col_ids[e];
      const auto* b = col_ids.data() + row_offsets[v];
      const auto* en = col_ids.data() + row_offsets[v + 1];
      if (!std::binary_search(b, en, static_cast<NodeId>(u))) {
        ok = false;
        break;
      }
    }
  }
  return ok;
}

void Csr::validate(const std::string& what) const {
  auto fail = [&](std::int64_t row, const std::string& problem, const std::string& value, const std::string& exp) {
    throw InvalidInput(InputLocation{what + " row " + std::to_string(row), 0, 0}, problem, value, exp);
  };
  if (static_cast<std::int64_t>(row_offsets.size()) != num_nodes + 1)
    fail(0, "row offset count", std::to_string(row_offsets.size()), std::to_string(num_nodes + 1));
  if (row_offsets[0] != 0) fail(0, "first row offset", std::to_string(row_offsets[0]), "0");
  if (row_offsets[num_nodes] != num_edges())
    fail(num_nodes, "last row offset", std::to_string(row_offsets[num_nodes]), std::to_string(num_edges()));
  if (!values.empty() && static_cast<std::int64_t>(values.size()) != num_edges())
    fail(0, "value count", std::to_string(values.size()), std::to_string(num_edges()));
  for (std::int64_t u = 0; u < num_nodes; ++u) {
    if (row_offsets[u + 1] < row_offsets[u])
      fail(u, "row offsets decrease", std::to_string(row_offsets[u + 1]), ">= " + std::to_string(row_offsets[u]));
    for (RowOffset e = row_offsets[u]; e < row_offsets[u + 1]; ++e) {
      const NodeId v = col_ids[e];
      if (v < 0 || v >= num_nodes)
        fail(u, "column id out of range", std::to_string(v), "0.." + std::to_string(num_nodes - 1));
      if (e > row_offsets[u] && col_ids[e - 1] >= v)
        fail(u, "columns not strictly ascending", std::to_string(v), "> " + std::to_string(col_ids[e - 1]));
    }
  }
}

Csr build_csr(const EdgeList& edges, const BuildOptions& options, BuildStats* stats) {
  const std::int64_t n = edges.num_nodes;
  const std::int64_t m = edges.size();
  if (n < 0 || n > std::int64_t{0x7fffffff})
    throw InvalidInput::parameter("num_nodes", std::to_string(n), "0..2147483647 (int32 node ids)");
  if (static_cast<std::int64_t>(edges.dst.size()) != m)
    throw LogicError("build_csr: src and dst differ in length");
  const bool weighted = !edges.weights.empty();
  if (weighted && static_cast<std::int64_t>(edges.weights.size()) != m)
    throw LogicError("build_csr: weights and src differ in length");

  // Range check first, in parallel; report the lowest offending edge index so the message is deterministic.
  std::int64_t bad = m;
#pragma omp parallel for reduction(min : bad)
  for (std::int64_t i = 0; i < m; ++i) {
    if (edges.src[i] < 0 || edges.src[i] >= n || edges.dst[i] < 0 || edges.dst[i] >= n) bad = std::min(bad, i);
  }
  if (bad < m) {
    const NodeId id = (edges.src[bad] < 0 || edges.src[bad] >= n) ? edges.src[bad] : edges.dst[bad];
    throw InvalidInput(InputLocation{"edge " + std::to_string(bad), 0, 0}, "node id out of range", std::to_string(id),
                       "0.." + std::to_string(n - 1));
  }

  // Pass 1: degrees.
  std::vector<std::atomic<RowOffset>> degree(static_cast<std::size_t>(n) + 1);
  std::int64_t loops = 0;
#pragma omp parallel for reduction(+ : loops)
  for (std::int64_t i = 0; i < m; ++i) {
    const NodeId u = edges.src[i], v = edges.dst[i];
    if (u == v) {
      ++loops;
      if (options.drop_self_loops) continue;
      degree[u].fetch_add(1, std::memory_order_relaxed);
      continue;
    }
    degree[u].fetch_add(1, std::memory_order_relaxed);
    if (options.symmetrize) degree[v].fetch_add(1, std::memory_order_relaxed);
  }
  Csr csr;
  csr.num_nodes = n;
  csr.row_offsets.assign(static_cast<std::size_t>(n) + 1, 0);
  for (std::int64_t u = 0; u < n; ++u) csr.row_offsets[u + 1] = csr.row_offsets[u] + degree[u].load();
  const std::int64_t entries = csr.row_offsets[n];

  // Pass 2: scatter through per-row cursors (order within a row is fixed by the sort below).
  HostVector<NodeId> cols(static_cast<std::size_t>(entries));  // every entry is scattered below
  HostVector<float> vals(weighted ? static_cast<std::size_t>(entries) : 0);
#pragma omp parallel for
  for (std::int64_t u = 0; u < n; ++u) degree[u].store(csr.row_offsets[u], std::memory_order_relaxed);
#pragma omp parallel for
  for (std::int64_t i = 0; i < m; ++i) {
    const NodeId u = edges.src[i], v = edges.dst[i];
    if (u == v && options.drop_self_loops) continue;
    const RowOffset p = degree[u].fetch_add(1, std::memory_order_relaxed);
    cols[p] = v;
    if (weighted) vals[p] = edges.weights[i];
    if (options.symmetrize && u != v) {
      const RowOffset q = degree[v].fetch_add(1, std::memory_order_relaxed);
      cols[q] = u;
      if (weighted) vals[q] = edges.weights[i];
    }
  }
  degree.clear();
  degree.shrink_to_fit();

  // Pass 3: sort each row, deduplicate in place, then compact.
  std::vector<RowOffset> kept(static_cast<std::size_t>(n) + 1, 0);
#pragma omp parallel
  {
    std::vector<std::pair<NodeId, float>> scratch;
#pragma omp for schedule(dynamic, 256)
    for (std::int64_t u = 0; u < n; ++u) {
      const RowOffset b = csr.row_offsets[u], e = csr.row_offsets[u + 1];
      RowOffset out = b;
      if (!weighted) {
        std::sort(cols.begin() + b, cols.begin() + e);
        for (RowOffset k = b; k < e; ++k)
          if (!options.deduplicate || k == b || cols[k] != cols[out - 1]) cols[out++] = cols[k];
      } else {
        scratch.clear();
        for (RowOffset k = b; k < e; ++k) scratch.emplace_back(cols[k], vals[k]);
        // Ascending column, descending weight: the first of a run of duplicates carries the largest weight.
        std::sort(scratch.begin(), scratch.end(), [](const auto& x, const auto& y) {
          return x.first != y.first ? x.first < y.first : x.second > y.second;
        });
        for (std::size_t k = 0; k < scratch.size(); ++k) {
          if (options.deduplicate && k > 0 && scratch[k].first == scratch[k - 1].first) continue;
          cols[out] = scratch[k].first;
          vals[out] = scratch[k].second;
          ++out;
        }
      }
      kept[u + 1] = out - b;
    }
  }
  std::vector<RowOffset> offsets(static_cast<std::size_t>(n) + 1, 0);
  for (std::int64_t u = 0; u < n; ++u) offsets[u + 1] = offsets[u] + kept[u + 1];
  const std::int64_t out_entries = offsets[n];
  if (out_entries == entries) {
    csr.col_ids = std::move(cols);
    csr.values = std::move(vals);
  } else {
    csr.col_ids.resize(static_cast<std::size_t>(out_entries));
    if (weighted) csr.values.resize(static_cast<std::size_t>(out_entries));
#pragma omp parallel for schedule(dynamic, 1024)
    for (std::int64_t u = 0; u < n; ++u) {
      std::copy_n(cols.begin() + csr.row_offsets[u], kept[u + 1], csr.col_ids.begin() + offsets[u]);
      if (weighted) std::copy_n(vals.begin() + csr.row_offsets[u], kept[u + 1], csr.values.begin() + offsets[u]);
    }
  }
  csr.row_offsets = std::move(offsets);

  if (stats != nullptr) {
    stats->input_edges = m;
    stats->self_loops_removed = options.drop_self_loops ? loops : 0;
    stats->after_symmetrize = entries;
    stats->duplicates_removed = entries - out_entries;
    stats->output_edges = out_entries;
  }
  return csr;
}

DegreeStats degree_stats(const Csr& graph) {
  DegreeStats s;
  const std::int64_t n = graph.num_nodes;
  if (n == 0) return s;
  std::vector<std::int64_t> deg(static_cast<std::size_t>(n));
  for (std::int64_t u = 0; u < n; ++u) deg[u] = graph.degree(u);
  s.min = *std::min_element(deg.begin(), deg.end());
  s.max = *std::max_element(deg.begin(), deg.end());
  s.isolated = std::count(deg.begin(), deg.end(), 0);
  s.mean = static_cast<double>(graph.num_edges()) / static_cast<double>(n);
  auto quantile = [&](double q) {
    const auto k = static_cast<std::size_t>(q * static_cast<double>(n - 1));
    std::nth_element(deg.begin(), deg.begin() + static_cast<std::ptrdiff_t>(k), deg.end());
    return static_cast<double>(deg[k]);
  };
  s.median = quantile(0.5);
  s.p99 = quantile(0.99);
  return s;
}

}  // namespace gcnpart::datasets
