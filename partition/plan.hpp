// Partitioners and strategy plans. A plan says, for every device, which nodes it holds, its local graph (or the
// gather matrices), its normalisation, and what the split costs (lost edges, halo growth, table bytes). It is
// computed once, can be saved and loaded, and is independent of the executor.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "datasets/csr.hpp"
#include "partition/strategy.hpp"

namespace gcnpart::partition {

enum class Partitioner { kMetis, kRandom, kRange };
enum class Objective { kCut, kVolume };
/// What METIS keeps balanced across parts: node counts (its default), the parts' adjacency entries (each node
/// weighted by 1 + its degree: SpMM work), both at once (two constraints), or the work model's device work
/// (device_work; the default): METIS with node weights degree + 1 + kRowWork, then a greedy refinement that moves
/// boundary nodes out of the heaviest part until the work of PartitionOptions::work_strategy (gather: own rows
/// with all neighbours; drop: own rows with in-part neighbours) is within `imbalance` or no move helps. halo's
/// work (rings included) is not refined: it follows the gather work (see the balance test for what it reaches).
enum class Balance { kNodes, kEdges, kBoth, kWork };

// The names of these enums (CLI values, report fields), in the order the CLI lists them: to_string,
// from_string<E> and enum_names<E> (base/enum_names.hpp) read these rows and nothing else spells them.
struct PartitionerName {
  Partitioner value;
  const char* name;
};
inline constexpr std::array<PartitionerName, 3> kPartitioners{
    {{Partitioner::kMetis, "metis"}, {Partitioner::kRandom, "random"}, {Partitioner::kRange, "range"}}};
struct ObjectiveName {
  Objective value;
  const char* name;
};
inline constexpr std::array<ObjectiveName, 2> kObjectives{{{Objective::kCut, "cut"}, {Objective::kVolume, "vol"}}};
struct BalanceName {
  Balance value;
  const char* name;
};
/// The default (work) first, as `--help` lists them.
inline constexpr std::array<BalanceName, 4> kBalances{
    {{Balance::kWork, "work"}, {Balance::kNodes, "nodes"}, {Balance::kEdges, "edges"}, {Balance::kBoth, "both"}}};

}  // namespace gcnpart::partition

namespace gcnpart {
template <>
struct EnumNames<partition::Partitioner> {
  static constexpr const auto& table = partition::kPartitioners;
};
template <>
struct EnumNames<partition::Objective> {
  static constexpr const auto& table = partition::kObjectives;
};
template <>
struct EnumNames<partition::Balance> {
  static constexpr const auto& table = partition::kBalances;
};
}  // namespace gcnpart

namespace gcnpart::partition {

/// The same as from_string<Balance> / to_string (kept for their callers). @throws InvalidInput naming `parameter`.
[[nodiscard]] inline Balance parse_balance(const std::string& text, const std::string& parameter) {
  return from_string<Balance>(text, parameter);
}
[[nodiscard]] inline const char* balance_name(Balance b) noexcept { return to_string(b); }
/// The same as to_string / from_string<Partitioner> (kept for their callers).
[[nodiscard]] inline const char* partitioner_name(Partitioner p) noexcept { return to_string(p); }
/// @throws InvalidInput naming `parameter` for another name.
[[nodiscard]] inline Partitioner parse_partitioner(const std::string& text, const std::string& parameter) {
  return from_string<Partitioner>(text, parameter);
}

struct PartitionOptions {
  Partitioner method = Partitioner::kMetis;
  std::uint64_t seed = 1;
  double imbalance = 1.03;  ///< max part weight / mean (METIS ufactor = 1000 * (imbalance - 1))
  Objective objective = Objective::kCut;
  /// METIS refinement passes per level (METIS_OPTION_NITER; METIS' default 10). Fewer: faster, a slightly worse cut.
  int metis_iterations = 10;
  /// Fraction of the undirected edges METIS sees: a symmetric sample keyed by (seed, edge); 1 = every edge.
  /// METIS 5.1 keeps every level of its hierarchy (~8 bytes per entry per level) and coarsening hardly shrinks
  /// power-law graphs, so on RMAT its memory is ~18x the CSR; a sample cuts memory and time in proportion.
  /// The cut and volume reported are always those of the full graph.
  double metis_edge_sample = 1.0;
  /// METIS only: which per-part totals stay within `imbalance` (node weights from the full graph's degrees).
  Balance balance = Balance::kWork;
  /// Balance::kWork: whose device work is balanced. drop: its own rows with their in-part neighbours; any other:
  /// the own rows with all their neighbours (gather's and boundary's work, and the own part of halo's). make_plan
  /// sets it to the plan's strategy; partition_graph alone balances gather's.
  Strategy work_strategy = Strategy::kGather;
  /// Tests: the first this many METIS calls fail as METIS_ERROR would (the fallback's path).
  int inject_metis_failures = 0;
  /// Check the graph first (an O(E) pass: ids, order, self loops, symmetry). false: the caller has checked this
  /// graph with validate_graph already (fit partitions one graph for several K).
  bool check_graph = true;
  /// Measure Partition::edge_cut and comm_volume (an O(E) pass); false leaves both at -1 (fit's split estimate
  /// counts the cut in its own pass).
  bool measure_cut = true;
};

/// The imbalance targets partition_graph takes (max part weight / mean; 1.03 allows 3 %).
inline constexpr double kMinImbalance = 1.0, kMaxImbalance = 3.0;
/// What a front-end checks before any work: partition_graph would refuse `imbalance` only once it partitions.
/// @throws InvalidInput naming `parameter` when `imbalance` is not a number in [kMinImbalance, kMaxImbalance].
void check_imbalance(double imbalance, const std::string& parameter);

/// part_of[v] in [0, parts) for every node.
struct Partition {
  int parts = 1;
  Partitioner method = Partitioner::kMetis;  ///< how part_of was computed
  std::vector<std::int32_t> part_of;
  std::int64_t edge_cut = 0;     ///< undirected edges whose endpoints lie in different parts (-1: not measured)
  std::int64_t comm_volume = 0;  ///< sum over nodes of the number of other parts among its neighbours (METIS' volume)
  double seconds = 0;            ///< time to partition
  /// What went wrong on the way, when something did: METIS failed and was retried (next seed, a tenth of the
  /// edges), or the random partitioner stood in (method then says kRandom). Empty when the partitioner asked for
  /// worked first time.
  std::string note;
};

/// Checks that `graph` is what the partitioners and plans take: row offsets consistent, neighbour ids in range and
/// strictly ascending, no self loops, every edge present both ways.
/// @throws InvalidInput naming `entry` and the first bad node.
void validate_graph(const datasets::Csr& graph, const char* entry);

/// Partitions a symmetric graph without self loops. METIS_PartGraphKway for kMetis (deterministic for a seed),
/// a keyed hash for kRandom, contiguous id ranges of equal size for kRange. parts == 1 gives one part.
/// A METIS failure never ends the call: METIS is retried once with the next seed on a tenth of the edges (its
/// failures come from host memory running short, and its memory shrinks with the edges), then the random
/// partitioner stands in; Partition::note says what happened (and method what was used).
/// @throws InvalidInput for parts < 1 or > nodes, a graph with a self loop or a one-way edge (the node named), or
/// more than 2^31 - 1 entries for METIS.
Partition partition_graph(const datasets::Csr& graph, int parts, const PartitionOptions& options = {});

/// What one device holds.
struct DevicePlan {
  /// Global ids of the local nodes: the device's own part first (ascending), then halo ring 1, ring 2, ...
  /// (each ring ascending). drop / gather / pipeline: own part only (pipeline: every node). boundary: the own part
  /// (its interior nodes, all of whose neighbours are own, ascending, then its boundary nodes, ascending), then
  /// the rows received from each other part, by part (each part's as that part sends them: ascending).
  std::vector<NodeId> local_nodes;
  std::int64_t num_inner = 0;              ///< nodes of the own part
  std::vector<std::int64_t> ring_sizes;    ///< halo: nodes first reached at hop 1..layers (empty otherwise)
  /// drop / halo / pipeline: square local graph over local_nodes in local numbering, WITH a self loop on every node
  /// (the structure of Â; rows sorted). drop: the subgraph induced by the own part. halo: the subgraph induced by
  /// all local nodes (rows of the outermost ring are truncated; that is exact for `layers` layers).
  datasets::Csr local_graph;
  /// D^-1/2 of every local node, self loop counted: subgraph degrees (drop), full-graph degrees (halo, pipeline,
  /// boundary: own and received nodes). Empty for gather (dinv_own).
  std::vector<float> dinv;
  /// gather: rows = own nodes, columns = table slots (slot of node v = part(v) * table_block + local index of v
  /// in its part), self loops included; and its transpose (rows = all table slots, columns = own rows).
  /// boundary: rows = own nodes, columns = local nodes ([own | received], see local_nodes), self loops included;
  /// and its transpose (rows = local nodes, columns = own rows).
  datasets::Csr gather_forward, gather_backward;
  /// gather, boundary: D^-1/2 (full graph, self loop counted) of the own nodes; the table's is Plan::table_dinv.
  std::vector<float> dinv_own;
  /// boundary: row q lists the own rows (local indices, ascending) whose nodes have a neighbour in part q: what
  /// this device sends q before every aggregation (and receives gradients for after it). Row of itself: empty.
  datasets::Csr send_rows;
  /// boundary: rows received from each part (one entry per part, 0 for itself), in local_nodes after the own part.
  std::vector<std::int64_t> recv_counts;
};

/// The split's price, per device and in total. Edges are undirected unless said.
struct PlanMetrics {
  std::int64_t nodes = 0, edges = 0;        ///< of the whole graph
  std::int64_t edge_cut = 0;                ///< undirected edges between parts
  std::int64_t comm_volume = 0;
  std::int64_t lost_edges = 0;              ///< drop: = edge_cut; exact strategies: 0
  double lost_fraction = 0;
  std::vector<std::int64_t> inner_nodes;    ///< per device
  std::vector<std::int64_t> local_nodes;    ///< per device (inner + halo)
  std::vector<std::int64_t> local_edges;    ///< per device: directed entries of its local matrix, self loops excluded
  std::vector<std::vector<std::int64_t>> halo_per_hop;  ///< [device][hop-1]: nodes first reached at that hop
  double replication_factor = 1;            ///< sum of local nodes / nodes
  std::int64_t replicated_edges = 0;        ///< directed entries held by more than one device, once per extra
                                            ///< copy: sum of local entries - entries some device holds
                                            ///< (= all but drop's lost ones); >= 0, 0 for drop, gather, boundary
  std::int64_t table_rows = 0;              ///< gather: rows of the table on every device (parts * table_block)
  std::int64_t index_bytes = 0;             ///< gather, boundary: bytes of the source matrices (and boundary's send
                                            ///< lists), max over devices
  /// boundary: per device, the rows it sends per aggregation (summed over peers; what it receives back as
  /// gradients). Bytes per epoch: partition::comm_bytes_per_epoch. Empty for other strategies.
  std::vector<std::int64_t> boundary_rows;
  double node_imbalance = 1, edge_imbalance = 1;  ///< max / mean over devices
  std::vector<std::int64_t> work;           ///< per device: device_work(local_edges, rows computed: local_nodes,
                                            ///< boundary inner_nodes)
  double work_imbalance = 1;                ///< max / mean of `work`: the predicted compute imbalance
  double plan_seconds = 0, partition_seconds = 0;
};

/// Dense work of one computed row, in units of one Â entry's SpMM work (the model's alpha). Per layer a device
/// reads one width-long row per Â entry (SpMM, memory-bound at ~half of peak bandwidth) and per row does a
/// width x width GEMM row plus ~6 width-long element-wise streams (bias, activation, dropout, their backward).
/// At width 256 in fp32 on an H200 the GEMM row costs ~6.5 entries and the streams ~1.5-3.5: about 8. With bf16
/// tensor-core GEMMs it is nearer 4, at width 64 nearer 3; the balance hardly moves between 3 and 10 because
/// entries per row (mean degree + 1) dominate on the graphs that need balancing.
inline constexpr std::int64_t kRowWork = 8;

/// The work model: what one device computes per layer (forward; backward mirrors it), in Â entries.
///   work(d) = (Â entries of the rows d aggregates) + kRowWork x (rows d computes)
///           = local_edges + (1 + kRowWork) x rows   (local_edges excludes the self loops; each row adds one)
/// The rows and entries per strategy (PlanMetrics::local_nodes and local_edges):
///   gather, boundary: own rows, each with all its neighbours (gather_forward; the backward SpMM has the same
///                    entries; boundary's received rows are columns only, not counted as rows)
///   drop:            own rows, each with its in-part neighbours (the induced subgraph)
///   halo:            every row of the local graph (own + rings 1..layers, outermost ring truncated): the engine
///                    aggregates all of them at every layer
///   single/pipeline: the whole graph on every device
/// Work imbalance = max / mean of work over devices (PlanMetrics::work_imbalance).
[[nodiscard]] constexpr std::int64_t device_work(std::int64_t local_edges, std::int64_t rows) noexcept {
  return local_edges + (1 + kRowWork) * rows;
}

struct Plan {
  Strategy strategy = Strategy::kSingle;
  int parts = 1;
  int layers = 2;
  Partitioner partitioner = Partitioner::kMetis;
  Partition partition;
  std::vector<DevicePlan> devices;
  std::int64_t table_block = 0;     ///< gather: slots per device = max own-part size
  std::vector<float> table_dinv;    ///< gather: D^-1/2 per table slot (0 for padding slots)
  std::vector<NodeId> table_nodes;  ///< gather: global node of each slot (-1 for padding)
  PlanMetrics metrics;
};

/// Builds the plan of `strategy` for `parts` devices and `layers` GCN layers from a symmetric graph without self
/// loops. Deterministic for a seed. pipeline: every device holds the whole graph (parts = stages).
Plan make_plan(const datasets::Csr& graph, Strategy strategy, int parts, int layers,
               const PartitionOptions& options = {});

/// The same from a partition computed once (one METIS run for every strategy and layer count). single needs
/// partition.parts == 1; pipeline uses partition.parts as its stage count and ignores part_of (its plan's
/// partition puts every node in part 0: layers are split, not nodes).
/// @throws InvalidInput when the partition does not fit the graph or layers < 1.
Plan make_plan(const datasets::Csr& graph, Strategy strategy, const Partition& partition, int layers);

/// Metrics only (no per-device arrays kept): what `compare` needs for large graphs.
PlanMetrics plan_metrics(const datasets::Csr& graph, Strategy strategy, const Partition& partition, int layers);

/// Saves / loads a plan (versioned binary, atomic write, checked on load). @throws IoError / InvalidInput.
void save_plan(const Plan& plan, const std::string& path);
Plan load_plan(const std::string& path);

/// Writes the node -> part mapping as text, atomically: line i holds the part of node i (0-based, one integer per
/// line, no header), so `numpy.loadtxt(path, dtype=int)` or `torch.tensor(...)` reads it as a vector of N parts.
/// pipeline plans put every node in part 0. @throws IoError.
void save_parts(const Partition& partition, const std::string& path);

}  // namespace gcnpart::partition
