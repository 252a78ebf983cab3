// Strategy plans (drop, halo, gather, pipeline, single) and their metrics, with or without the per-device arrays.
#include "partition/plan.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <string>

#include "base/error.hpp"
#include "partition/detail/plan_detail.hpp"

namespace gcnpart::partition {

namespace {

using Clock = std::chrono::steady_clock;
using datasets::Csr;

// Halo rows are bucketed by ring on the stack; a GCN deeper than this is not a use case.
constexpr int kMaxLayers = 64;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

void check_layers(int layers) {
  if (layers < 1 || layers > kMaxLayers)
    throw InvalidInput::parameter("layers", std::to_string(layers), "1.." + std::to_string(kMaxLayers));
}

// single and pipeline split no nodes: every node sits in part 0 of a `parts`-part partition.
Partition whole_graph_partition(std::int64_t nodes, int parts, Partitioner method) {
  Partition p;
  p.parts = parts;
  p.method = method;
  p.part_of.assign(static_cast<std::size_t>(nodes), 0);
  return p;
}

bool splits_nodes(Strategy s) { return traits(s).splits_nodes; }

// Runs body(p, scratch) for every device. With at least as many devices as threads, devices run in parallel and
// their own loops serially (nested regions are inactive); otherwise devices run one after another and the
// per-row loops inside use every thread.
template <class MakeScratch, class Body>
void for_each_device(int parts, std::int64_t work, MakeScratch make_scratch, Body body) {
  const bool devices_in_parallel = parts > 1 && parts >= omp_get_max_threads() && work > detail::kParallelMin;
#pragma omp parallel if (devices_in_parallel)
  {
    auto scratch = make_scratch();
#pragma omp for schedule(dynamic, 1)
    for (int p = 0; p < parts; ++p) body(p, scratch);
  }
}

// A CSR of `rows` rows whose row r has count(r) entries written by fill(r, out): counts, prefix sum, fill.
template <class Count, class Fill>
Csr build_rows(std::int64_t rows, Count count, Fill fill) {
  Csr m;
  m.num_nodes = rows;
  m.row_offsets.assign(static_cast<std::size_t>(rows) + 1, 0);
#pragma omp parallel for schedule(dynamic, 1024) if (rows > detail::kParallelMin)
  for (std::int64_t r = 0; r < rows; ++r) m.row_offsets[r + 1] = count(r);
  for (std::int64_t r = 0; r < rows; ++r) m.row_offsets[r + 1] += m.row_offsets[r];
  m.col_ids.resize(static_cast<std::size_t>(m.row_offsets[rows]));
#pragma omp parallel for schedule(dynamic, 1024) if (rows > detail::kParallelMin)
  for (std::int64_t r = 0; r < rows; ++r) fill(r, m.col_ids.data() + m.row_offsets[r]);
  return m;
}

// Writes the ascending ids `ids` of a row and the row's own id `self` in order (the self loop of Â).
template <class Ids>
NodeId* put_with_self(NodeId* out, NodeId self, const Ids& ids, std::int64_t count) {
  bool placed = false;
  for (std::int64_t i = 0; i < count; ++i) {
    const NodeId id = ids(i);
    if (id < 0) continue;
    if (!placed && id > self) {
      *out++ = self;
      placed = true;
    }
    *out++ = id;
  }
  if (!placed) *out++ = self;
  return out;
}

// The transpose of m (cols columns) by counting: rows visited in ascending order leave every column list sorted.
Csr transpose(const Csr& m, std::int64_t cols) {
  Csr t;
  t.num_nodes = cols;
  t.row_offsets.assign(static_cast<std::size_t>(cols) + 1, 0);
  for (const NodeId s : m.col_ids) ++t.row_offsets[s + 1];
  for (std::int64_t s = 0; s < cols; ++s) t.row_offsets[s + 1] += t.row_offsets[s];
  t.col_ids.resize(m.col_ids.size());
  for (std::int64_t r = 0; r < m.num_nodes; ++r)
    for (RowOffset k = m.row_offsets[r]; k < m.row_offsets[r + 1]; ++k)
      t.col_ids[t.row_offsets[m.col_ids[k]]++] = static_cast<NodeId>(r);
  // Each cursor now sits at the start of the next row: shift back by one.
  for (std::int64_t s = cols; s > 0; --s) t.row_offsets[s] = t.row_offsets[s - 1];
  t.row_offsets[0] = 0;
  return t;
}

// ---------------------------------------------------------------------------------------------------------------
// Plans

void build_drop(const Csr& g, const Partition& partition, const detail::PartIndex& index, Plan& plan) {
  const auto* off = g.row_offsets.data();
  const auto* col = g.col_ids.data();
  const auto* part = partition.part_of.data();
  for_each_device(partition.parts, g.num_edges(), [] { return 0; }, [&](int p, int) {
    DevicePlan& d = plan.devices[p];
    const NodeId* own = index.begin(p);
    const std::int64_t count = index.size(p);
    d.local_nodes.assign(own, own + count);
    d.num_inner = count;
    // Inside a part, rank is monotone in the global id: the filtered row is already in local order.
    d.local_graph = build_rows(
        count,
        [&](std::int64_t r) {
          const NodeId u = own[r];
          RowOffset c = 1;
          for (RowOffset k = off[u]; k < off[u + 1]; ++k) c += part[col[k]] == p;
          return c;
        },
        [&](std::int64_t r, NodeId* out) {
          const NodeId u = own[r];
          put_with_self(out, static_cast<NodeId>(r), [&](std::int64_t i) {
            const NodeId v = col[off[u] + i];
            return part[v] == p ? index.rank[v] : NodeId{-1};
          }, off[u + 1] - off[u]);
        });
    d.dinv.resize(static_cast<std::size_t>(count));
    for (std::int64_t r = 0; r < count; ++r) d.dinv[r] = detail::inverse_sqrt_degree(d.local_graph.degree(r) - 1);
  });
}

void build_halo(const Csr& g, const Partition& partition, const detail::PartIndex& index, int layers, Plan& plan) {
  const auto* off = g.row_offsets.data();
  const auto* col = g.col_ids.data();
  for_each_device(partition.parts, g.num_edges(), [&] { return detail::HaloBfs(g.num_nodes); }, [&](int p, detail::HaloBfs& bfs) {
    DevicePlan& d = plan.devices[p];
    bfs.run(g, index.begin(p), index.size(p), layers);
    const std::vector<NodeId>& local = bfs.local_nodes();
    const auto rows = static_cast<std::int64_t>(local.size());
    const std::int64_t outer_begin = bfs.ring_end(layers - 1);
    d.local_nodes = local;
    d.num_inner = index.size(p);
    d.ring_sizes = bfs.ring_sizes();
    d.local_graph = build_rows(
        rows,
        [&](std::int64_t r) {
          const NodeId u = local[r];
          if (r < outer_begin) return off[u + 1] - off[u] + 1;  // every neighbour of an inner ring is local
          RowOffset c = 1;
          for (RowOffset k = off[u]; k < off[u + 1]; ++k) c += bfs.local_id(col[k]) >= 0;
          return c;
        },
        [&](std::int64_t r, NodeId* out) {
          // Local order is (ring, global id) and the row is ascending in global id: a counting pass by ring
          // sorts it, and the self loop goes before the first larger id of its own ring.
          const NodeId u = local[r];
          const int own_ring = bfs.ring_of_local(static_cast<NodeId>(r));
          std::int64_t cursor[kMaxLayers + 2] = {};
          for (RowOffset k = off[u]; k < off[u + 1]; ++k) {
            const NodeId lv = bfs.local_id(col[k]);
            if (lv >= 0) ++cursor[bfs.ring_of_local(lv) + 1];
          }
          ++cursor[own_ring + 1];
          for (int ring = 1; ring <= layers; ++ring) cursor[ring] += cursor[ring - 1];
          bool placed = false;
          for (RowOffset k = off[u]; k < off[u + 1]; ++k) {
            const NodeId lv = bfs.local_id(col[k]);
            if (lv < 0) continue;
            const int ring = bfs.ring_of_local(lv);
            if (!placed && ring == own_ring && lv > r) {
              out[cursor[own_ring]++] = static_cast<NodeId>(r);
              placed = true;
            }
            out[cursor[ring]++] = lv;
          }
          if (!placed) out[cursor[own_ring]++] = static_cast<NodeId>(r);
        });
    d.dinv.resize(local.size());
    for (std::int64_t r = 0; r < rows; ++r)
      d.dinv[r] = detail::inverse_sqrt_degree(off[local[r] + 1] - off[local[r]]);
  });
}

void build_gather(const Csr& g, const Partition& partition, const detail::PartIndex& index, Plan& plan) {
  const auto* off = g.row_offsets.data();
  const auto* col = g.col_ids.data();
  const auto* part = partition.part_of.data();
  const int parts = partition.parts;
  const std::int64_t block = index.max_size;
  const std::int64_t table_rows = block * parts;
  if (table_rows > std::int64_t{0x7fffffff})
    throw InvalidInput::parameter("parts", std::to_string(parts),
                                  "parts x largest part (" + std::to_string(block) +
                                      ") within 2147483647 table slots (int32 column ids)");
  plan.table_block = block;
  auto slot = [&](NodeId v) { return static_cast<NodeId>(part[v] * block + index.rank[v]); };

  plan.table_dinv.assign(static_cast<std::size_t>(table_rows), 0.0f);
  plan.table_nodes.assign(static_cast<std::size_t>(table_rows), -1);
#pragma omp parallel for schedule(static) if (g.num_nodes > detail::kParallelMin)
  for (std::int64_t v = 0; v < g.num_nodes; ++v) {
    const NodeId s = slot(static_cast<NodeId>(v));
    plan.table_nodes[s] = static_cast<NodeId>(v);
    plan.table_dinv[s] = detail::inverse_sqrt_degree(off[v + 1] - off[v]);
  }

  for_each_device(parts, g.num_edges(), [] { return 0; }, [&](int p, int) {
    DevicePlan& d = plan.devices[p];
    const NodeId* own = index.begin(p);
    const std::int64_t count = index.size(p);
    d.local_nodes.assign(own, own + count);
    d.num_inner = count;
    d.dinv_own.resize(static_cast<std::size_t>(count));
    for (std::int64_t r = 0; r < count; ++r) d.dinv_own[r] = detail::inverse_sqrt_degree(off[own[r] + 1] - off[own[r]]);
    d.gather_forward = build_rows(
        count, [&](std::int64_t r) { return off[own[r] + 1] - off[own[r]] + 1; },
        [&](std::int64_t r, NodeId* out) {
          const NodeId u = own[r];
          NodeId* end = out;
          for (RowOffset k = off[u]; k < off[u + 1]; ++k) *end++ = slot(col[k]);
          *end++ = slot(u);
          std::sort(out, end);
        });
    d.gather_backward = transpose(d.gather_forward, table_rows);
  });
}

// Boundary: per device, own rows = [interior | boundary] nodes, columns = [own | rows received from each part].
// The send list to q is the own boundary nodes with a neighbour in q; what p receives from q is q's list to p, so
// the receive side needs no message to agree on the order.
void build_boundary(const Csr& g, const Partition& partition, const detail::PartIndex& index, Plan& plan) {
  const auto* off = g.row_offsets.data();
  const auto* col = g.col_ids.data();
  const auto* part = partition.part_of.data();
  const int parts = partition.parts;
  // Phase 1 (per device): own order, local index of every own node, send lists.
  std::vector<NodeId> local_index(static_cast<std::size_t>(g.num_nodes), -1);
  std::vector<std::vector<NodeId>> own_order(static_cast<std::size_t>(parts));
  for_each_device(parts, g.num_edges(), [&] { return std::vector<std::int64_t>(static_cast<std::size_t>(parts)); },
                  [&](int p, std::vector<std::int64_t>& seen) {
    DevicePlan& d = plan.devices[p];
    const NodeId* own = index.begin(p);
    const std::int64_t count = index.size(p);
    std::vector<std::uint8_t> boundary(static_cast<std::size_t>(count), 0);
    for (std::int64_t r = 0; r < count; ++r)
      for (RowOffset k = off[own[r]]; k < off[own[r] + 1]; ++k)
        if (part[col[k]] != p) {
          boundary[r] = 1;
          break;
        }
    std::vector<NodeId>& order = own_order[p];
    order.reserve(static_cast<std::size_t>(count));
    for (int pass = 0; pass < 2; ++pass)
      for (std::int64_t r = 0; r < count; ++r)
        if (boundary[r] == pass) order.push_back(own[r]);
    d.num_inner = count;
    for (std::int64_t r = 0; r < count; ++r) local_index[order[r]] = static_cast<NodeId>(r);
    // Send lists: walking own rows in local order leaves every list ascending.
    std::fill(seen.begin(), seen.end(), -1);
    std::vector<std::vector<NodeId>> lists(static_cast<std::size_t>(parts));
    for (std::int64_t r = 0; r < count; ++r) {
      const NodeId u = order[r];
      for (RowOffset k = off[u]; k < off[u + 1]; ++k) {
        const int q = part[col[k]];
        if (q == p || seen[q] == r) continue;
        seen[q] = r;
        lists[q].push_back(static_cast<NodeId>(r));
      }
    }
    Csr& send = d.send_rows;
    send.num_nodes = parts;
    send.row_offsets.assign(static_cast<std::size_t>(parts) + 1, 0);
    for (int q = 0; q < parts; ++q) send.row_offsets[q + 1] = send.row_offsets[q] + static_cast<RowOffset>(lists[q].size());
    send.col_ids.clear();
    for (const auto& l : lists) send.col_ids.insert(send.col_ids.end(), l.begin(), l.end());
  });
  // Phase 2 (per device): received nodes, the local matrix and its transpose, D^-1/2.
  for_each_device(parts, g.num_edges(), [] { return 0; }, [&](int p, int) {
    DevicePlan& d = plan.devices[p];
    const std::int64_t count = d.num_inner;
    std::vector<std::int64_t> recv_begin(static_cast<std::size_t>(parts) + 1, count);
    d.recv_counts.assign(static_cast<std::size_t>(parts), 0);
    d.local_nodes = own_order[p];
    for (int q = 0; q < parts; ++q) {
      const Csr& from = plan.devices[q].send_rows;
      recv_begin[q] = static_cast<std::int64_t>(d.local_nodes.size());
      if (q != p) {
        for (RowOffset k = from.row_offsets[p]; k < from.row_offsets[p + 1]; ++k)
          d.local_nodes.push_back(own_order[q][from.col_ids[k]]);
        d.recv_counts[q] = static_cast<std::int64_t>(d.local_nodes.size()) - recv_begin[q];
      }
    }
    // A received block holds boundary nodes of q in q's local order, which is ascending in the global id.
    auto column = [&](NodeId v) {
      const int q = part[v];
      if (q == p) return local_index[v];
      const NodeId* b = d.local_nodes.data() + recv_begin[q];
      return static_cast<NodeId>(std::lower_bound(b, b + d.recv_counts[q], v) - d.local_nodes.data());
    };
    d.gather_forward = build_rows(
        count, [&](std::int64_t r) { return off[d.local_nodes[r] + 1] - off[d.local_nodes[r]] + 1; },
        [&](std::int64_t r, NodeId* out) {
          const NodeId u = d.local_nodes[r];
          NodeId* end = out;
          for (RowOffset k = off[u]; k < off[u + 1]; ++k) *end++ = column(col[k]);
          *end++ = static_cast<NodeId>(r);
          std::sort(out, end);
        });
    d.gather_backward = transpose(d.gather_forward, static_cast<std::int64_t>(d.local_nodes.size()));
    d.dinv.resize(d.local_nodes.size());
    for (std::size_t i = 0; i < d.local_nodes.size(); ++i)
      d.dinv[i] = detail::inverse_sqrt_degree(off[d.local_nodes[i] + 1] - off[d.local_nodes[i]]);
    d.dinv_own.assign(d.dinv.begin(), d.dinv.begin() + count);
  });
}

void build_whole(const Csr& g, Plan& plan) {
  const auto* off = g.row_offsets.data();
  const auto* col = g.col_ids.data();
  const std::int64_t n = g.num_nodes;
  DevicePlan& d = plan.devices[0];
  d.local_nodes.resize(static_cast<std::size_t>(n));
  std::iota(d.local_nodes.begin(), d.local_nodes.end(), NodeId{0});
  d.num_inner = n;
  d.local_graph = build_rows(
      n, [&](std::int64_t u) { return off[u + 1] - off[u] + 1; },
      [&](std::int64_t u, NodeId* out) {
        put_with_self(out, static_cast<NodeId>(u), [&](std::int64_t i) { return col[off[u] + i]; }, off[u + 1] - off[u]);
      });
  d.dinv.resize(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static) if (n > detail::kParallelMin)
  for (std::int64_t u = 0; u < n; ++u) d.dinv[u] = detail::inverse_sqrt_degree(off[u + 1] - off[u]);
  for (std::size_t p = 1; p < plan.devices.size(); ++p) plan.devices[p] = d;
}

// ---------------------------------------------------------------------------------------------------------------
// Metrics

PlanMetrics base_metrics(const Csr& g, Strategy strategy, const Partition& partition) {
  PlanMetrics m;
  m.nodes = g.num_nodes;
  m.edges = g.num_edges() / 2;
  m.edge_cut = partition.edge_cut;
  m.comm_volume = partition.comm_volume;
  m.lost_edges = traits(strategy).exact ? 0 : partition.edge_cut;
  m.lost_fraction = m.edges > 0 ? static_cast<double>(m.lost_edges) / static_cast<double>(m.edges) : 0.0;
  const auto parts = static_cast<std::size_t>(partition.parts);
  m.inner_nodes.assign(parts, 0);
  m.local_nodes.assign(parts, 0);
  m.local_edges.assign(parts, 0);
  m.halo_per_hop.assign(parts, {});
  m.partition_seconds = partition.seconds;
  return m;
}

double max_over_mean(const std::vector<std::int64_t>& x) {
  if (x.empty()) return 1.0;
  const std::int64_t sum = std::accumulate(x.begin(), x.end(), std::int64_t{0});
  if (sum == 0) return 1.0;
  const std::int64_t max = *std::max_element(x.begin(), x.end());
  return static_cast<double>(max) * static_cast<double>(x.size()) / static_cast<double>(sum);
}

void finish_metrics(const Csr& g, Strategy strategy, PlanMetrics& m) {
  const std::int64_t local_nodes = std::accumulate(m.local_nodes.begin(), m.local_nodes.end(), std::int64_t{0});
  const std::int64_t local_edges = std::accumulate(m.local_edges.begin(), m.local_edges.end(), std::int64_t{0});
  m.replication_factor = m.nodes > 0 ? static_cast<double>(local_nodes) / static_cast<double>(m.nodes) : 1.0;
  // Entries no device holds are drop's lost edges (both directions); every other entry is held at least once, so
  // the copies beyond the first are the held entries minus the covered ones (never negative, 0 for drop).
  m.replicated_edges = local_edges - (g.num_edges() - 2 * m.lost_edges);
  m.node_imbalance = max_over_mean(m.local_nodes);
  m.edge_imbalance = max_over_mean(m.local_edges);
  detail::fill_work(m, strategy);
}

// Recomputes the cut of a caller's partition (its stored numbers are not trusted).
Partition normalised_partition(const Csr& g, Strategy strategy, const Partition& partition) {
  if (!splits_nodes(strategy)) {
    Partition whole = whole_graph_partition(g.num_nodes, partition.parts, partition.method);
    whole.seconds = 0;
    return whole;
  }
  Partition p = partition;
  const detail::CutStats cut = detail::cut_stats(g, p.part_of.data(), p.parts);
  p.edge_cut = cut.edge_cut;
  p.comm_volume = cut.comm_volume;
  return p;
}

void check_plan_inputs(const Csr& graph, Strategy strategy, const Partition& partition, int layers, const char* entry) {
  detail::check_graph(graph, entry);
  check_layers(layers);
  if (traits(strategy).parts == PartsRule::kOne && partition.parts != 1)
    throw InvalidInput::parameter("parts", std::to_string(partition.parts),
                                  std::string("1 for strategy ") + to_string(strategy));
  if (splits_nodes(strategy)) {
    detail::check_partition(graph, partition, entry);
  } else if (partition.parts < 1) {
    throw InvalidInput::parameter("parts", std::to_string(partition.parts), "at least 1 (pipeline stages)");
  }
}

Plan build_plan(const Csr& graph, Strategy strategy, Partition partition, int layers) {
  const auto start = Clock::now();
  Plan plan;
  plan.strategy = strategy;
  plan.parts = partition.parts;
  plan.layers = layers;
  plan.partitioner = partition.method;
  plan.devices.resize(static_cast<std::size_t>(partition.parts));
  plan.partition = normalised_partition(graph, strategy, partition);
  if (splits_nodes(strategy)) {
    const detail::PartIndex index = detail::index_parts(plan.partition);
    if (strategy == Strategy::kDrop) build_drop(graph, plan.partition, index, plan);
    if (strategy == Strategy::kHalo) build_halo(graph, plan.partition, index, layers, plan);
    if (strategy == Strategy::kGather) build_gather(graph, plan.partition, index, plan);
    if (strategy == Strategy::kBoundary) build_boundary(graph, plan.partition, index, plan);
  } else {
    build_whole(graph, plan);
  }

  PlanMetrics& m = plan.metrics;
  m = base_metrics(graph, strategy, plan.partition);
  for (std::size_t p = 0; p < plan.devices.size(); ++p) {
    const DevicePlan& d = plan.devices[p];
    m.inner_nodes[p] = d.num_inner;
    m.local_nodes[p] = static_cast<std::int64_t>(d.local_nodes.size());
    const bool source_matrix = strategy == Strategy::kGather || strategy == Strategy::kBoundary;
    m.local_edges[p] = source_matrix ? d.gather_forward.num_edges() - d.gather_forward.num_nodes
                                     : d.local_graph.num_edges() - d.local_graph.num_nodes;
    if (strategy == Strategy::kHalo) m.halo_per_hop[p] = d.ring_sizes;
    if (source_matrix)
      m.index_bytes = std::max(m.index_bytes,
                               d.gather_forward.bytes() + d.gather_backward.bytes() + d.send_rows.bytes());
    if (strategy == Strategy::kBoundary) m.boundary_rows.push_back(d.send_rows.num_edges());
  }
  if (strategy == Strategy::kGather) m.table_rows = plan.table_block * plan.parts;
  finish_metrics(graph, strategy, m);
  m.plan_seconds = seconds_since(start);
  return plan;
}

}  // namespace

Plan make_plan(const Csr& graph, Strategy strategy, int parts, int layers, const PartitionOptions& options) {
  check_layers(layers);
  if (splits_nodes(strategy)) {
    PartitionOptions own = options;
    own.work_strategy = strategy;
    Partition partition = partition_graph(graph, parts, own);  // checks the graph
    return build_plan(graph, strategy, std::move(partition), layers);
  }
  Partition whole = whole_graph_partition(graph.num_nodes, parts, options.method);
  check_plan_inputs(graph, strategy, whole, layers, "make_plan");
  return build_plan(graph, strategy, std::move(whole), layers);
}

Plan make_plan(const Csr& graph, Strategy strategy, const Partition& partition, int layers) {
  check_plan_inputs(graph, strategy, partition, layers, "make_plan");
  return build_plan(graph, strategy, partition, layers);
}

PlanMetrics plan_metrics(const Csr& graph, Strategy strategy, const Partition& input, int layers) {
  check_plan_inputs(graph, strategy, input, layers, "plan_metrics");
  const auto start = Clock::now();
  const Partition partition = normalised_partition(graph, strategy, input);
  PlanMetrics m = base_metrics(graph, strategy, partition);
  const int parts = partition.parts;
  const auto* off = graph.row_offsets.data();
  const auto* col = graph.col_ids.data();
  const auto* part = partition.part_of.data();
  const std::int64_t n = graph.num_nodes;

  if (!splits_nodes(strategy)) {
    std::fill(m.inner_nodes.begin(), m.inner_nodes.end(), n);
    std::fill(m.local_nodes.begin(), m.local_nodes.end(), n);
    std::fill(m.local_edges.begin(), m.local_edges.end(), graph.num_edges());
  } else if (strategy == Strategy::kHalo) {
    const detail::PartIndex index = detail::index_parts(partition);
    for_each_device(parts, graph.num_edges(), [&] { return detail::HaloBfs(n); }, [&](int p, detail::HaloBfs& bfs) {
      bfs.run(graph, index.begin(p), index.size(p), layers);
      m.inner_nodes[p] = index.size(p);
      m.local_nodes[p] = static_cast<std::int64_t>(bfs.local_nodes().size());
      m.local_edges[p] = bfs.local_entries(graph);
      m.halo_per_hop[p] = bfs.ring_sizes();
    });
  } else {
    // drop, gather and boundary: one pass over the rows, per-thread sums per part. sent / received: (node, other
    // part among its neighbours) pairs, by the node's part and by the other part (boundary's messages).
    std::vector<std::int64_t> inner(static_cast<std::size_t>(parts), 0), same(inner), degree(inner), sent(inner),
        received(inner);
#pragma omp parallel if (graph.num_edges() > detail::kParallelMin)
    {
      std::vector<std::int64_t> my_inner(inner.size(), 0), my_same(inner.size(), 0), my_degree(inner.size(), 0),
          my_sent(inner.size(), 0), my_received(inner.size(), 0), seen(inner.size(), -1);
#pragma omp for schedule(dynamic, 4096) nowait
      for (std::int64_t u = 0; u < n; ++u) {
        const std::int32_t pu = part[u];
        ++my_inner[pu];
        my_degree[pu] += off[u + 1] - off[u];
        for (RowOffset k = off[u]; k < off[u + 1]; ++k) {
          const std::int32_t pv = part[col[k]];
          my_same[pu] += pv == pu;
          if (pv != pu && seen[pv] != u) {
            seen[pv] = u;
            ++my_sent[pu];
            ++my_received[pv];
          }
        }
      }
#pragma omp critical
      for (std::size_t p = 0; p < inner.size(); ++p) {
        inner[p] += my_inner[p];
        same[p] += my_same[p];
        degree[p] += my_degree[p];
        sent[p] += my_sent[p];
        received[p] += my_received[p];
      }
    }
    m.inner_nodes = inner;
    m.local_nodes = inner;
    if (strategy == Strategy::kBoundary) {
      m.boundary_rows = sent;
      // Exactly the bytes of build_boundary's three Csr: int64 offsets, int32 columns, self loops included.
      for (int p = 0; p < parts; ++p) {
        m.local_nodes[p] = inner[p] + received[p];
        const std::int64_t entries = degree[p] + inner[p];
        const std::int64_t forward = 8 * (inner[p] + 1) + 4 * entries;
        const std::int64_t backward = 8 * (m.local_nodes[p] + 1) + 4 * entries;
        const std::int64_t send_lists = 8 * (parts + 1) + 4 * sent[p];
        m.index_bytes = std::max(m.index_bytes, forward + backward + send_lists);
      }
    }
    m.local_edges = strategy == Strategy::kDrop ? same : degree;  // gather, boundary: every entry of the own rows
    if (strategy == Strategy::kGather) {
      const std::int64_t block = *std::max_element(inner.begin(), inner.end());
      m.table_rows = block * parts;
      // Exactly the bytes of the two Csr of build_gather: int64 offsets, int32 columns, self loops included.
      for (int p = 0; p < parts; ++p) {
        const std::int64_t entries = degree[p] + inner[p];
        const std::int64_t forward = 8 * (inner[p] + 1) + 4 * entries;
        const std::int64_t backward = 8 * (m.table_rows + 1) + 4 * entries;
        m.index_bytes = std::max(m.index_bytes, forward + backward);
      }
    }
  }
  finish_metrics(graph, strategy, m);
  m.plan_seconds = seconds_since(start);
  return m;
}

}  // namespace gcnpart::partition
