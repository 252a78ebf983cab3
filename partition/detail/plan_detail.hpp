// Helpers shared by the partitioners, the plan builders and plan_metrics (not part of the public API).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "datasets/csr.hpp"
#include "partition/plan.hpp"

namespace gcnpart::partition::detail {

/// Loops over fewer rows or entries than this run serially: an OpenMP region costs more than such work, and far
/// more when the machine is oversubscribed (spinning threads wait out scheduler slices).
constexpr std::int64_t kParallelMin = std::int64_t{1} << 16;

/// Checks what every entry point relies on: offsets of the right length, monotone, ending at the edge count,
/// column ids in range and no self loops (the input is the adjacency without Â's loops). O(E), parallel.
/// @throws InvalidInput naming `entry` and the lowest offending node.
void check_graph(const datasets::Csr& graph, const char* entry);

/// Checks that `partition` fits `graph`: one part per node, each in [0, parts). @throws InvalidInput.
void check_partition(const datasets::Csr& graph, const Partition& partition, const char* entry);

struct CutStats {
  std::int64_t edge_cut = 0;     ///< undirected edges between parts (directed crossing entries / 2)
  std::int64_t comm_volume = 0;  ///< sum over nodes of the number of other parts among its neighbours
};
CutStats cut_stats(const datasets::Csr& graph, const std::int32_t* part_of, int parts);

/// The nodes of every part in ascending id order, and every node's rank inside its part.
struct PartIndex {
  std::vector<std::int64_t> offsets;  ///< parts + 1
  std::vector<NodeId> nodes;          ///< grouped by part, ascending inside a part
  std::vector<NodeId> rank;           ///< rank[v] = position of v among the nodes of its part
  std::int64_t max_size = 0;

  [[nodiscard]] std::int64_t size(int p) const { return offsets[p + 1] - offsets[p]; }
  [[nodiscard]] const NodeId* begin(int p) const { return nodes.data() + offsets[p]; }
};
PartIndex index_parts(const Partition& partition);

/// The halo BFS of one device, with scratch reused from device to device (one per thread): local_of has one
/// entry per graph node and is reset by walking the nodes of the last run, so a run costs O(local volume),
/// not O(N).
class HaloBfs {
 public:
  explicit HaloBfs(std::int64_t num_nodes) : local_of_(static_cast<std::size_t>(num_nodes), -1) {}

  /// BFS from `own` (ascending) through the whole graph, hop by hop up to `layers` hops. Afterwards local_nodes()
  /// is the own part then ring 1, ring 2, ... (each ascending) and local_id(v) is v's position there (-1 if absent).
  void run(const datasets::Csr& graph, const NodeId* own, std::int64_t count, int layers);

  [[nodiscard]] const std::vector<NodeId>& local_nodes() const { return local_; }
  /// ring_sizes()[h - 1] = nodes first reached at hop h; always `layers` entries.
  [[nodiscard]] const std::vector<std::int64_t>& ring_sizes() const { return ring_sizes_; }
  /// Local id of a node, -1 when the node is not local.
  [[nodiscard]] NodeId local_id(NodeId v) const { return local_of_[static_cast<std::size_t>(v)]; }
  /// Ring of a local id: 0 for the own part, h for ring h.
  [[nodiscard]] int ring_of_local(NodeId local) const {
    int r = 0;
    while (local >= ring_end_[r]) ++r;
    return r;
  }
  /// First local id after ring r (ring 0 = own part).
  [[nodiscard]] std::int64_t ring_end(int r) const { return ring_end_[r]; }
  /// Directed entries of the subgraph induced by the local nodes (self loops excluded). Rows of inner rings keep
  /// all their neighbours (they are local by construction), so only the outermost ring is scanned.
  [[nodiscard]] std::int64_t local_entries(const datasets::Csr& graph) const;

 private:
  std::vector<NodeId> local_of_;
  std::vector<NodeId> local_;
  std::vector<std::int64_t> ring_sizes_;
  std::vector<std::int64_t> ring_end_;  // layers + 1 entries
  int layers_ = 0;
};

/// Sets m.work (device_work of local_edges and the rows each device computes: local_nodes, or inner_nodes for
/// boundary, whose received rows are only read) and m.work_imbalance (max / mean).
void fill_work(PlanMetrics& m, Strategy strategy);

/// What refine_work_balance did.
struct RefineStats {
  std::int64_t moves = 0;
  double gather_imbalance = 1, drop_imbalance = 1;  ///< of device_work, after refinement
};

/// Greedy work refinement of a k-way partition (Balance::kWork). The measure is the gather work (own rows with all
/// their neighbours; also halo's own rows) or, with drop_work, the drop work (own rows with in-part neighbours).
/// While a part exceeds `target` x mean, take the heaviest part and move its nodes, best cut gain first, to the
/// part with most neighbours of the node among those that stay under the cap (else among all); a move is kept
/// only if it strictly lowers the total excess over the cap and leaves its destination below the cap or lighter
/// than the part it left, so the loop ends and hubs do not bounce. Serial and deterministic.
RefineStats refine_work_balance(const datasets::Csr& graph, int parts, double target, bool drop_work,
                                std::int32_t* part_of);

/// D^-1/2 with the self loop counted: 1 / sqrt(degree + 1).
inline float inverse_sqrt_degree(std::int64_t degree_without_loop) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(degree_without_loop + 1)));
}

}  // namespace gcnpart::partition::detail
