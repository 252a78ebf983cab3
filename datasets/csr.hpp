// The owning CSR graph and its construction from edge lists.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/csr_view.hpp"
#include "base/host_vector.hpp"

namespace gcnpart::datasets {

/// A directed edge list over nodes 0..num_nodes-1 (an undirected edge may be stored once or twice).
struct EdgeList {
  std::int64_t num_nodes = 0;
  std::vector<NodeId> src;
  std::vector<NodeId> dst;
  std::vector<float> weights;  ///< empty = unweighted; else one per edge

  [[nodiscard]] std::int64_t size() const noexcept { return static_cast<std::int64_t>(src.size()); }
};

/// What build_csr does to an edge list.
struct BuildOptions {
  bool symmetrize = true;       ///< add (v, u) for every (u, v)
  bool drop_self_loops = true;  ///< remove (u, u)
  bool deduplicate = true;      ///< keep one entry per (u, v); for weighted graphs the largest weight
};

/// How many entries each step of build_csr removed or added (counts of directed entries).
struct BuildStats {
  std::int64_t input_edges = 0;         ///< entries in the edge list
  std::int64_t self_loops_removed = 0;  ///< (u, u) entries dropped
  std::int64_t after_symmetrize = 0;    ///< entries after the reverse of every edge was added (= input - loops if not)
  std::int64_t duplicates_removed = 0;  ///< repeated (u, v) entries dropped
  std::int64_t output_edges = 0;        ///< entries in the CSR

  [[nodiscard]] std::string to_string() const;
};

/// An owning CSR graph (adjacency: row u lists the targets of u's edges, sorted ascending).
struct Csr {
  std::int64_t num_nodes = 0;
  std::vector<RowOffset> row_offsets;  ///< num_nodes + 1 entries (empty when num_nodes == 0 and never built)
  HostVector<NodeId> col_ids;          ///< num_edges entries (resize leaves them unwritten: see host_vector.hpp)
  HostVector<float> values;            ///< empty = unweighted, else num_edges entries

  [[nodiscard]] std::int64_t num_edges() const noexcept { return static_cast<std::int64_t>(col_ids.size()); }
  [[nodiscard]] bool weighted() const noexcept { return !values.empty(); }
  [[nodiscard]] std::int64_t degree(std::int64_t u) const { return row_offsets[u + 1] - row_offsets[u]; }
  /// View for kernels; the Csr must outlive it.
  [[nodiscard]] CsrView view() const noexcept;
  /// Bytes held by the arrays.
  [[nodiscard]] std::int64_t bytes() const noexcept;
  /// True when every (u, v) has its (v, u). O(E log d).
  [[nodiscard]] bool is_symmetric() const;
  /// Checks the invariants (offsets monotone from 0 to E, ids in range, rows sorted); throws InvalidInput naming
  /// `what` and the first offending row.
  void validate(const std::string& what) const;
};

/// Builds a CSR from an edge list in O(E) plus per-row sorts, in parallel (OpenMP); deterministic whatever the
/// thread count. Ids must lie in [0, num_nodes) (checked; InvalidInput names the edge index).
Csr build_csr(const EdgeList& edges, const BuildOptions& options = {}, BuildStats* stats = nullptr);

/// Degree statistics of a graph (out-degrees).
struct DegreeStats {
  std::int64_t min = 0, max = 0, isolated = 0;
  double mean = 0, median = 0, p99 = 0;
};
DegreeStats degree_stats(const Csr& graph);

}  // namespace gcnpart::datasets
