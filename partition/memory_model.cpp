#include "partition/memory_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "base/error.hpp"
#include "base/philox.hpp"
#include "partition/allocation_plan.hpp"
#include "partition/detail/plan_detail.hpp"

namespace gcnpart::partition {

namespace {

constexpr std::int64_t kFloatBytes = 4;

std::size_t idx(MemoryCategory c) { return static_cast<std::size_t>(c); }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

/// @throws InvalidInput for a strategy whose row says the model does not cover it.
void expect_modelled(Strategy s) {
  if (traits(s).memory_model) return;
  const auto modelled = strategy_names_where([](const StrategyTraits& t) { return t.memory_model; });
  throw InvalidInput::parameter("--strategy", to_string(s),
                                or_list(modelled) + " (" + to_string(s) + " is not modelled)");
}

std::int64_t element_bytes(Precision p) { return traits(p).storage_bytes; }

}  // namespace

std::vector<SpmmCall> spmm_calls_per_epoch(const ModelSpec& m) {
  const auto d = m.stored_dims();
  std::vector<SpmmCall> calls;
  for (int l = 0; l < m.layers; ++l) {
    const bool aggregate_first = aggregates_first(d, l);
    calls.push_back({aggregate_first ? d[l] : d[l + 1], false});
  }
  for (int l = m.layers - 1; l >= 0; --l) {
    const bool aggregate_first = aggregates_first(d, l);
    if (aggregate_first && l > 0) calls.push_back({d[l], true});
    if (!aggregate_first) calls.push_back({d[l + 1], true});
  }
  return calls;
}

MemoryEstimate estimate_device_memory(const DeviceShape& s, const ModelSpec& m, Backend backend) {
  MemoryEstimate e = estimate_plan_memory(allocation_plan(s, m, backend), backend);
  e.sparse_input = uses_sparse_input(s, m);
  return e;
}

MemoryEstimate estimate_plan_memory(const std::vector<Allocation>& plan, Backend backend) {
  MemoryEstimate e;
  std::set<std::int64_t> distinct_sizes;
  for (const Allocation& a : plan) {
    const std::int64_t bytes = a.bytes();
    if (a.lifetime == Lifetime::kPersistent) {
      if (bytes <= 0) continue;
      e.items.push_back({a.what, a.category, bytes});
      e.persistent[idx(a.category)] += bytes;
      continue;
    }
    e.items.push_back({a.what, a.category, bytes});
    distinct_sizes.insert(bytes);
    if (bytes > e.transient) {
      e.transient = bytes;
      e.transient_what = a.what;
    }
  }
  if (backend == Backend::kCuda)
    for (auto b : distinct_sizes) e.cached += b;
  e.at_peak = e.persistent;
  e.at_peak[idx(MemoryCategory::kWorkspace)] += e.transient;
  for (auto b : e.at_peak) e.peak += b;
  return e;
}

std::int64_t comm_bytes_per_epoch(const DeviceShape& s, const ModelSpec& m) {
  const int k = s.parts;
  if (k <= 1) return 0;
  auto share = [k](std::int64_t bytes) { return bytes * (k - 1) / k; };
  std::int64_t sent = 2 * share(kFloatBytes);                         // the loss
  sent += 2 * share(m.stored_parameters() * kFloatBytes);             // the gradient all-reduce
  if (s.gather) {
    // Forward's all-gather moves the precision's elements in whole float words (an odd bf16 count is padded);
    // backward's reduce-scatter sums in float32.
    const std::int64_t act = element_bytes(m.precision);
    for (const auto& call : spmm_calls_per_epoch(m)) {
      const std::int64_t block_bytes =
          call.backward ? s.table_block * call.width * kFloatBytes : ceil_div(s.table_block * call.width * act, 4) * 4;
      sent += share(static_cast<std::int64_t>(k) * block_bytes);  // all-gather / reduce-scatter
    }
  }
  if (s.boundary) {
    // Forward sends the own rows others need, in the precision's elements; backward returns the received rows'
    // float32 gradients.
    const std::int64_t act = element_bytes(m.precision);
    for (const auto& call : spmm_calls_per_epoch(m))
      sent += call.backward ? s.recv_rows * call.width * kFloatBytes : s.send_rows * call.width * act;
  }
  return sent;
}

// ---------------------------------------------------------------------------------------------------------
// Counts

std::array<std::int64_t, 3> GraphStats::splits() const {
  if (split_sizes[0] < 0) return {nodes, 0, 0};
  return {split_sizes[0], std::max<std::int64_t>(split_sizes[1], 0), std::max<std::int64_t>(split_sizes[2], 0)};
}

void GraphStats::validate() const {
  if (nodes < 1) throw InvalidInput::parameter("--nodes", std::to_string(nodes), ">= 1");
  if (edges < 0) throw InvalidInput::parameter("--edges", std::to_string(edges), ">= 0");
  if (features < 1) throw InvalidInput::parameter("--features", std::to_string(features), ">= 1");
  if (classes < 1) throw InvalidInput::parameter("--classes", std::to_string(classes), ">= 1");
  if (!(feature_density > 0 && feature_density <= 1))
    throw InvalidInput::parameter("--feature-density", std::to_string(feature_density), "in (0, 1]");
  const double n = static_cast<double>(nodes);
  if (static_cast<double>(edges) > n * (n - 1) / 2)
    throw InvalidInput::parameter("--edges", std::to_string(edges),
                                  "at most nodes (nodes - 1) / 2 undirected edges without self loops");
}

namespace {

std::vector<std::int32_t> row_nonzeros(const datasets::Dataset& ds) {
  std::vector<std::int32_t> nz(static_cast<std::size_t>(ds.num_nodes()), 0);
  const std::int64_t f = ds.num_features;
  if (f == 0 || ds.features.empty()) return nz;
#pragma omp parallel for schedule(static)
  for (std::int64_t v = 0; v < ds.num_nodes(); ++v) {
    const float* row = ds.features.data() + v * f;
    std::int32_t c = 0;
    for (std::int64_t j = 0; j < f; ++j) c += row[j] != 0.0f ? 1 : 0;
    nz[v] = c;
  }
  return nz;
}

std::array<std::int64_t, 3> split_sizes_of(const datasets::Dataset& ds) {
  std::array<std::int64_t, 3> out{-1, -1, -1};
  const char* names[3] = {"train", "valid", "test"};
  for (int i = 0; i < 3; ++i)
    if (auto it = ds.splits.find(names[i]); it != ds.splits.end()) out[i] = static_cast<std::int64_t>(it->second.size());
  if (out[0] >= 0)
    for (int i = 1; i < 3; ++i) out[i] = std::max<std::int64_t>(out[i], 0);
  return out;
}

std::int64_t self_loops_of(const datasets::Csr& g) {
  std::int64_t loops = 0;
#pragma omp parallel for reduction(+ : loops) schedule(static)
  for (std::int64_t u = 0; u < g.num_nodes; ++u) {
    const auto* b = g.col_ids.data() + g.row_offsets[u];
    const auto* e = g.col_ids.data() + g.row_offsets[u + 1];
    loops += std::binary_search(b, e, static_cast<NodeId>(u)) ? 1 : 0;
  }
  return loops;
}

}  // namespace

GraphStats graph_stats(const datasets::Dataset& ds) {
  GraphStats s;
  s.name = ds.name;
  s.nodes = ds.num_nodes();
  s.self_loops = self_loops_of(ds.graph);
  s.edges = (ds.graph.num_edges() - s.self_loops) / 2;
  s.features = ds.num_features;
  s.classes = ds.num_classes;
  std::int64_t nz = 0;
  for (auto c : row_nonzeros(ds)) nz += c;
  const double cells = static_cast<double>(s.nodes) * static_cast<double>(s.features);
  s.feature_density = cells > 0 ? static_cast<double>(nz) / cells : 1.0;
  s.split_sizes = split_sizes_of(ds);
  double sum = 0, sum2 = 0;
  for (std::int64_t u = 0; u < s.nodes; ++u) {
    const auto deg = static_cast<double>(ds.graph.degree(u));
    sum += deg;
    sum2 += deg * deg;
    s.degree_max = std::max<std::int64_t>(s.degree_max, ds.graph.degree(u));
  }
  s.isolated = 0;
  for (std::int64_t u = 0; u < s.nodes; ++u) s.isolated += ds.graph.degree(u) == 0 ? 1 : 0;
  s.degree_mean = s.nodes > 0 ? sum / static_cast<double>(s.nodes) : 0;
  s.degree_second_moment = s.nodes > 0 ? sum2 / static_cast<double>(s.nodes) : 0;
  return s;
}

DeviceShape single_device_shape(const datasets::Dataset& ds) {
  DeviceShape s;
  s.rows = ds.num_nodes();
  s.graph_entries = ds.graph.num_edges() + s.rows - self_loops_of(ds.graph);  // with_self_loops adds the missing
  std::int64_t nz = 0;
  for (auto c : row_nonzeros(ds)) nz += c;
  s.feature_nonzeros = nz;
  const auto splits = split_sizes_of(ds);
  for (int i = 0; i < 3; ++i) s.split_rows[i] = std::max<std::int64_t>(splits[i], 0);
  return s;
}

DeviceShape single_device_shape(const GraphStats& g) {
  g.validate();
  DeviceShape s;
  s.rows = g.nodes;
  s.graph_entries = 2 * g.edges + g.nodes;
  s.feature_density = g.feature_density;
  s.split_rows = g.splits();
  return s;
}

std::vector<DeviceShape> device_shapes(const Plan& plan, const datasets::Dataset& ds) {
  expect_modelled(plan.strategy);
  GCNPART_EXPECTS(static_cast<int>(plan.devices.size()) == plan.parts, "plan has one DevicePlan per part");
  const auto nz = row_nonzeros(ds);
  const bool boundary = plan.strategy == Strategy::kBoundary;
  const bool gather = plan.strategy == Strategy::kGather;  // own rows and a source matrix: gather and boundary
  // Split membership, as engine::device_problem counts it: a device counts the split nodes of its own part.
  std::vector<std::uint8_t> split_of(static_cast<std::size_t>(ds.num_nodes()), 0);
  const char* names[3] = {"train", "valid", "test"};
  for (int i = 0; i < 3; ++i)
    if (auto it = ds.splits.find(names[i]); it != ds.splits.end())
      for (NodeId v : it->second) split_of[v] |= static_cast<std::uint8_t>(1u << i);
  std::vector<DeviceShape> out;
  for (const DevicePlan& dp : plan.devices) {
    DeviceShape s;
    s.rows = gather || boundary ? dp.num_inner : static_cast<std::int64_t>(dp.local_nodes.size());
    s.graph_entries = gather || boundary ? dp.gather_forward.num_edges() : dp.local_graph.num_edges();
    std::int64_t f = 0;
    for (std::int64_t i = 0; i < s.rows; ++i) f += nz[dp.local_nodes[i]];
    s.feature_nonzeros = f;
    for (std::int64_t i = 0; i < dp.num_inner; ++i)
      for (int b = 0; b < 3; ++b) s.split_rows[b] += (split_of[dp.local_nodes[i]] >> b) & 1u;
    s.gather = gather;
    s.parts = plan.parts;
    s.table_block = gather ? plan.table_block : 0;
    s.boundary = boundary;
    if (boundary) {
      s.send_rows = dp.send_rows.num_edges();
      s.recv_rows = static_cast<std::int64_t>(dp.local_nodes.size()) - dp.num_inner;
    }
    out.push_back(s);
  }
  return out;
}

std::vector<DeviceShape> device_shapes(const PlanMetrics& m, Strategy strategy, int parts, const GraphStats& g) {
  expect_modelled(strategy);
  if (traits(strategy).parts == PartsRule::kOne) return {single_device_shape(g)};
  GCNPART_EXPECTS(static_cast<int>(m.inner_nodes.size()) == parts && static_cast<int>(m.local_nodes.size()) == parts &&
                      static_cast<int>(m.local_edges.size()) == parts,
                  "plan metrics carry one entry per device");
  const bool gather = strategy == Strategy::kGather;
  const bool boundary = strategy == Strategy::kBoundary;
  if (boundary && static_cast<int>(m.boundary_rows.size()) != parts)
    throw InvalidInput::parameter("boundary_rows", std::to_string(m.boundary_rows.size()) + " entries",
                                  std::to_string(parts) + " (one per device: metrics of a boundary plan)");
  const auto splits = g.splits();
  std::vector<DeviceShape> out;
  for (int p = 0; p < parts; ++p) {
    DeviceShape s;
    s.rows = gather || boundary ? m.inner_nodes[p] : m.local_nodes[p];
    s.graph_entries = m.local_edges[p] + s.rows;
    s.feature_density = g.feature_density;
    const double own = g.nodes > 0 ? static_cast<double>(m.inner_nodes[p]) / static_cast<double>(g.nodes) : 0;
    for (int i = 0; i < 3; ++i) s.split_rows[i] = std::llround(static_cast<double>(splits[i]) * own);
    s.gather = gather;
    s.parts = parts;
    s.table_block = gather ? m.table_rows / parts : 0;
    s.boundary = boundary;
    if (boundary) {
      s.send_rows = m.boundary_rows[p];
      s.recv_rows = m.local_nodes[p] - m.inner_nodes[p];
    }
    out.push_back(s);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Split estimates

double SplitEstimate::halo_nodes() const {
  double h = 0;
  for (double x : halo_per_hop) h += x;
  return h;
}

PlanMetrics SplitEstimate::metrics(Strategy strategy, const GraphStats& g) const {
  PlanMetrics m;
  m.nodes = g.nodes;
  m.edges = g.edges;
  m.edge_cut = std::llround(edge_cut);
  m.lost_edges = traits(strategy).exact ? 0 : m.edge_cut;
  m.lost_fraction = g.edges > 0 ? static_cast<double>(m.lost_edges) / static_cast<double>(g.edges) : 0;
  const bool halo = strategy == Strategy::kHalo;
  double local_sum = 0;
  for (int p = 0; p < parts; ++p) {
    // Device 0 is the worst case (largest part, most halo); the others carry the mean.
    const double inner = p == 0 ? max_inner_nodes : inner_nodes;
    const double scale = (p == 0 && halo) ? halo_imbalance : 1.0;
    m.inner_nodes.push_back(std::llround(inner));
    const double local = halo ? std::min(inner + halo_nodes() * scale, static_cast<double>(g.nodes)) : inner;
    m.local_nodes.push_back(std::llround(local));
    local_sum += local;
    const double entries = halo ? std::min(local_entries_halo * scale, 2.0 * static_cast<double>(g.edges))
                           : strategy == Strategy::kDrop ? local_entries_drop
                                                         : own_degree_sum * inner / std::max(inner_nodes, 1.0);
    m.local_edges.push_back(std::llround(entries));
    std::vector<std::int64_t> hops;
    if (halo)
      for (double h : halo_per_hop) hops.push_back(std::llround(h * scale));
    m.halo_per_hop.push_back(hops);
  }
  m.replication_factor = g.nodes > 0 ? local_sum / static_cast<double>(g.nodes) : 1;
  if (strategy == Strategy::kGather) m.table_rows = std::llround(max_inner_nodes) * parts;
  if (strategy == Strategy::kBoundary) {
    // A device receives its hop-1 ring (the other parts' nodes next to its own) and, on average, sends as many
    // rows: every sent row is received once. Device 0 carries the halo imbalance, as for halo.
    m.local_nodes.clear();
    local_sum = 0;
    for (int p = 0; p < parts; ++p) {
      const double ring = halo_per_hop.empty() ? 0 : halo_per_hop[0] * (p == 0 ? halo_imbalance : 1.0);
      m.boundary_rows.push_back(std::llround(ring));
      m.local_nodes.push_back(m.inner_nodes[p] + m.boundary_rows.back());
      local_sum += static_cast<double>(m.local_nodes.back());
    }
    m.replication_factor = g.nodes > 0 ? local_sum / static_cast<double>(g.nodes) : 1;
  }
  return m;
}

namespace {

/// Hop distance (<= max_hops) from a source to every part, by BFS with early exit once every part is seen.
class PartDistances {
 public:
  PartDistances(const datasets::Csr& g, const std::int32_t* part_of, int parts)
      : g_(g), part_of_(part_of), parts_(parts), seen_(static_cast<std::size_t>(g.num_nodes), 0) {}

  /// dist[p] = hops from `source` to the nearest node of part p, or max_hops + 1 when farther (or when the visit
  /// budget ran out first, counted in truncated()).
  void run(NodeId source, int max_hops, std::vector<int>& dist) {
    dist.assign(static_cast<std::size_t>(parts_), max_hops + 1);
    ++stamp_;
    if (stamp_ == 0) {
      std::fill(seen_.begin(), seen_.end(), 0);
      stamp_ = 1;
    }
    frontier_.assign(1, source);
    seen_[source] = stamp_;
    int found = 1;
    dist[part_of_[source]] = 0;
    std::int64_t visits = 0;
    for (int h = 1; h <= max_hops && found < parts_ && !frontier_.empty(); ++h) {
      next_.clear();
      for (NodeId u : frontier_) {
        for (RowOffset e = g_.row_offsets[u]; e < g_.row_offsets[u + 1]; ++e) {
          const NodeId w = g_.col_ids[e];
          if (seen_[w] == stamp_) continue;
          seen_[w] = stamp_;
          next_.push_back(w);
          const int p = part_of_[w];
          if (dist[p] > h) {
            dist[p] = h;
            ++found;
          }
        }
        if (++visits > kVisitBudget) {
          ++truncated_;
          return;
        }
      }
      frontier_.swap(next_);
    }
  }
  [[nodiscard]] std::int64_t truncated() const { return truncated_; }

 private:
  static constexpr std::int64_t kVisitBudget = 1 << 20;  // expanded nodes per BFS
  const datasets::Csr& g_;
  const std::int32_t* part_of_;
  int parts_;
  std::vector<std::uint32_t> seen_;
  std::uint32_t stamp_ = 0;
  std::vector<NodeId> frontier_, next_;
  std::int64_t truncated_ = 0;
};

struct Moments {
  double sum = 0, sum2 = 0;
  void add(double x) {
    sum += x;
    sum2 += x * x;
  }
  /// Estimate of the population total from `s` uniform samples of `n`, and its standard error.
  [[nodiscard]] std::pair<double, double> total(std::int64_t s, std::int64_t n) const {
    const double ds = static_cast<double>(s), dn = static_cast<double>(n);
    const double mean = sum / ds;
    const double var = s > 1 ? std::max(0.0, (sum2 - ds * mean * mean) / (ds - 1)) : 0;
    return {dn * mean, dn * std::sqrt(var / ds)};
  }
};

}  // namespace

SplitEstimate estimate_split_sampled(const datasets::Csr& g, const Partition& partition, int layers,
                                     std::int64_t samples, std::uint64_t seed) {
  if (samples < 1) throw InvalidInput::parameter("--samples", std::to_string(samples), ">= 1");
  if (layers < 1) throw InvalidInput::parameter("--layers", std::to_string(layers), ">= 1");
  const int k = partition.parts;
  if (k < 1) throw InvalidInput::parameter("--parts", std::to_string(k), ">= 1");
  if (static_cast<std::int64_t>(partition.part_of.size()) != g.num_nodes)
    throw InvalidInput::parameter("partition", std::to_string(partition.part_of.size()) + " entries",
                                  std::to_string(g.num_nodes) + " (one part per node)");
  const std::int64_t n = g.num_nodes;
  SplitEstimate est;
  est.parts = k;
  est.layers = layers;
  // Exact O(N + E) figures: part sizes, cut and the entries inside each part.
  for (std::int64_t u = 0; u < n; ++u) {
    const int p = partition.part_of[u];
    if (p < 0 || p >= k)
      throw InvalidInput::parameter("partition", "node " + std::to_string(u) + " in part " + std::to_string(p),
                                    "a part in [0, " + std::to_string(k) + ")");
  }
  std::vector<std::int64_t> size(static_cast<std::size_t>(k), 0), inside(static_cast<std::size_t>(k), 0),
      volume(static_cast<std::size_t>(k), 0);
  std::int64_t crossing = 0;
  const auto* part_of = partition.part_of.data();
  const auto* off = g.row_offsets.data();
  const auto* col = g.col_ids.data();
  // Per-thread counts, added up once (integer sums: the same whatever the thread count).
#pragma omp parallel reduction(+ : crossing) if (g.num_edges() > detail::kParallelMin)
  {
    std::vector<std::int64_t> my_size(static_cast<std::size_t>(k), 0), my_inside(static_cast<std::size_t>(k), 0),
        my_volume(static_cast<std::size_t>(k), 0);
#pragma omp for schedule(dynamic, 4096) nowait
    for (std::int64_t u = 0; u < n; ++u) {
      const int p = part_of[u];
      ++my_size[p];
      my_volume[p] += off[u + 1] - off[u];
      for (RowOffset e = off[u]; e < off[u + 1]; ++e) {
        const NodeId w = col[e];
        if (w == u) continue;
        if (part_of[w] == p) ++my_inside[p];
        else ++crossing;
      }
    }
#pragma omp critical(estimate_split_counts)
    for (int p = 0; p < k; ++p) {
      size[p] += my_size[p];
      inside[p] += my_inside[p];
      volume[p] += my_volume[p];
    }
  }
  est.edge_cut = static_cast<double>(crossing) / 2;
  est.edge_cut_error = 0;
  double inside_sum = 0, volume_sum = 0;
  for (int p = 0; p < k; ++p) {
    inside_sum += static_cast<double>(inside[p]);
    volume_sum += static_cast<double>(volume[p]);
  }
  est.inner_nodes = static_cast<double>(n) / k;
  est.max_inner_nodes = static_cast<double>(*std::max_element(size.begin(), size.end()));
  est.local_entries_drop = inside_sum / k;
  est.own_degree_sum = volume_sum / k;

  // Sampled halo: per seed, its hop distance to every part; per device, the rings it falls in and its local degree.
  const std::int64_t s = std::min(samples, n);
  std::vector<std::vector<Moments>> ring(static_cast<std::size_t>(k), std::vector<Moments>(static_cast<std::size_t>(layers)));
  std::vector<Moments> entries(static_cast<std::size_t>(k)), local(static_cast<std::size_t>(k));
  PartDistances bfs(g, partition.part_of.data(), k);
  std::vector<int> dist, dist_u;
  constexpr int kNeighbourSamples = 4;  // neighbours probed for a seed on a device's outermost ring
  const std::uint64_t key = rng::stream_key(seed, rng::kSampling, 0xa10);
  for (std::int64_t i = 0; i < s; ++i) {
    const auto r = rng::philox4x32(key, static_cast<std::uint64_t>(i), 0);
    const auto v = static_cast<NodeId>(s == n ? i : static_cast<std::int64_t>(rng::to_unit_double(r.v[0], r.v[1]) *
                                                                              static_cast<double>(n)));
    bfs.run(v, layers, dist);
    const std::int64_t deg = g.degree(v);
    // Outermost-ring devices need the fraction of v's neighbours that are themselves within `layers` hops.
    std::vector<double> outer_local(static_cast<std::size_t>(k), 0);
    bool any_outer = false;
    for (int p = 0; p < k; ++p) any_outer |= dist[p] == layers && p != partition.part_of[v];
    if (any_outer && deg > 0) {
      const int probes = static_cast<int>(std::min<std::int64_t>(deg, kNeighbourSamples));
      for (int j = 0; j < probes; ++j) {
        const auto rj = rng::philox4x32(key, static_cast<std::uint64_t>(i), static_cast<std::uint64_t>(j + 1));
        const std::int64_t pick =
            deg <= kNeighbourSamples ? j
                                     : static_cast<std::int64_t>(rng::to_unit_double(rj.v[0], rj.v[1]) *
                                                                 static_cast<double>(deg));
        const NodeId u = g.col_ids[g.row_offsets[v] + std::min(pick, deg - 1)];
        bfs.run(u, layers, dist_u);
        for (int p = 0; p < k; ++p)
          if (dist[p] == layers && dist_u[p] <= layers) outer_local[p] += 1.0 / probes;
      }
    }
    for (int p = 0; p < k; ++p) {
      const bool own = partition.part_of[v] == p;
      const int h = own ? 0 : dist[p];
      for (int hop = 1; hop <= layers; ++hop) ring[p][hop - 1].add(h == hop ? 1.0 : 0.0);
      double e = 0;
      if (h < layers) e = static_cast<double>(deg);
      else if (h == layers) e = static_cast<double>(deg) * outer_local[p];
      entries[p].add(e);
      local[p].add(h <= layers ? 1.0 : 0.0);
    }
  }
  est.method = "sampled BFS (" + std::to_string(s) + " seeds)";
  est.halo_per_hop.assign(static_cast<std::size_t>(layers), 0);
  est.halo_per_hop_error.assign(static_cast<std::size_t>(layers), 0);
  std::vector<double> hop_var(static_cast<std::size_t>(layers), 0);
  double entries_sum = 0, entries_var = 0, local_max = 0, local_sum = 0;
  for (int p = 0; p < k; ++p) {
    for (int h = 0; h < layers; ++h) {
      const auto [t, se] = ring[p][h].total(s, n);
      est.halo_per_hop[h] += t / k;
      hop_var[h] += se * se / (static_cast<double>(k) * k);
    }
    const auto [te, see] = entries[p].total(s, n);
    entries_sum += te / k;
    entries_var += see * see / (static_cast<double>(k) * k);
    const auto [tl, sel] = local[p].total(s, n);
    (void)sel;
    local_max = std::max(local_max, tl);
    local_sum += tl;
  }
  for (int h = 0; h < layers; ++h)
    est.halo_per_hop_error[h] = est.halo_per_hop[h] > 0 ? std::sqrt(hop_var[h]) / est.halo_per_hop[h] : 0;
  est.local_entries_halo = entries_sum;
  // The neighbour probes add their own noise: count it as one more sampling error of the same size.
  est.local_entries_halo_error = entries_sum > 0 ? std::sqrt(2 * entries_var) / entries_sum : 0;
  est.halo_imbalance = local_sum > 0 ? local_max / (local_sum / k) : 1;
  if (bfs.truncated() > 0) {
    // A truncated BFS misses far parts: widen the error by the share of truncated searches.
    const double share = static_cast<double>(bfs.truncated()) / static_cast<double>(s);
    for (auto& x : est.halo_per_hop_error) x += share;
    est.local_entries_halo_error += share;
    est.method += ", " + std::to_string(bfs.truncated()) + " searches truncated";
  }
  return est;
}

namespace {

/// Degree distribution for the count model: Poisson(mean), or negative binomial with the given second moment
/// when it exceeds the Poisson one (heavier tail). pmf over d = 0..max.
std::vector<double> degree_pmf(double mean, double second_moment) {
  std::vector<double> pmf;
  const double var = second_moment > 0 ? second_moment - mean * mean : mean;
  const std::int64_t cap = 1 << 22;
  if (mean <= 0) return {1.0};
  double total = 0;
  if (var <= mean * 1.0001) {  // Poisson
    double logp = -mean;
    for (std::int64_t d = 0; d < cap; ++d) {
      if (d > 0) logp += std::log(mean) - std::log(static_cast<double>(d));
      const double p = std::exp(logp);
      pmf.push_back(p);
      total += p;
      if (d > mean && total > 1 - 1e-12) break;
    }
  } else {  // negative binomial: r = mean^2 / (var - mean), success prob q = mean / var
    const double r = mean * mean / (var - mean), q = mean / var;
    double logp = r * std::log(q);
    for (std::int64_t d = 0; d < cap; ++d) {
      if (d > 0)
        logp += std::log(static_cast<double>(d - 1) + r) - std::log(static_cast<double>(d)) + std::log(1 - q);
      const double p = std::exp(logp);
      pmf.push_back(p);
      total += p;
      if (d > mean && total > 1 - 1e-10) break;
    }
  }
  for (auto& p : pmf) p /= total;
  return pmf;
}

/// The count model's degree law: with a known share of isolated nodes, those at 0 and 1 + (Poisson or negative
/// binomial) for the rest, matching the mean and (if known) the second moment of the whole graph.
std::vector<double> degree_law(const GraphStats& g, double mean, double second_moment) {
  const double n = static_cast<double>(g.nodes);
  if (g.isolated < 0 || g.isolated >= g.nodes || mean <= 0) return degree_pmf(mean, second_moment);
  const double f = static_cast<double>(g.isolated) / n;
  const double mean1 = mean / (1 - f);                                    // E[d | d >= 1]
  const double m2_1 = second_moment > 0 ? second_moment / (1 - f) : 0;   // E[d^2 | d >= 1]
  const double shifted_mean = std::max(mean1 - 1, 0.0);
  const double shifted_m2 = m2_1 > 0 ? std::max(m2_1 - 2 * mean1 + 1, shifted_mean * shifted_mean) : 0;
  const auto rest = degree_pmf(shifted_mean, shifted_m2);
  std::vector<double> pmf(rest.size() + 1, 0.0);
  pmf[0] = f;
  for (std::size_t d = 0; d < rest.size(); ++d) pmf[d + 1] = (1 - f) * rest[d];
  return pmf;
}

}  // namespace

SplitEstimate estimate_split_from_counts(const GraphStats& g, int parts, int layers) {
  g.validate();
  if (parts < 1) throw InvalidInput::parameter("--parts", std::to_string(parts), ">= 1");
  if (layers < 1) throw InvalidInput::parameter("--layers", std::to_string(layers), ">= 1");
  const double n = static_cast<double>(g.nodes), e = static_cast<double>(g.edges), k = parts;
  const double mean = 2 * e / n;
  const double m2 = g.degree_second_moment > 0 ? g.degree_second_moment : mean * mean + mean;
  const auto pmf = degree_law(g, mean, m2);
  // Mean excess degree (branching factor of a BFS beyond the first hop).
  const double excess = mean > 0 ? std::max(0.0, (m2 - mean) / mean) : 0;
  const double q = 1.0 / k;
  SplitEstimate est;
  est.parts = parts;
  est.layers = layers;
  est.method = std::string("degree expansion (random split, ") +
               (g.degree_second_moment > 0 ? "negative-binomial" : "Poisson") + " degrees" +
               (g.isolated >= 0 ? ", isolated nodes apart)" : ")");
  est.inner_nodes = n / k;
  est.max_inner_nodes = std::ceil(n / k);
  est.edge_cut = e * (k - 1) / k;
  est.edge_cut_error = 0;  // exact in expectation for a random split
  est.local_entries_drop = 2 * e / (k * k);
  est.own_degree_sum = 2 * e / k;
  // reach[h][d]: probability that a node of degree d outside a part lies within h hops of it.
  auto reach = [&](int h, double d) {
    if (h == 0 || parts == 1) return 0.0;
    double subtree = 0, pw = 1;  // nodes within h-1 further hops of one neighbour: 1 + x + ... + x^(h-1)
    for (int i = 0; i < h; ++i) {
      subtree += pw;
      pw *= excess;
    }
    const double ball = n * (1 - std::exp(-d * subtree / n));  // distinct nodes, collisions corrected
    return 1 - std::pow(1 - q, ball);
  };
  const double outside = n - n / k;
  est.halo_per_hop.assign(static_cast<std::size_t>(layers), 0);
  const double model_error = g.degree_second_moment > 0 && g.isolated >= 0 ? kCountModelErrorWithMoments
                                                                           : kCountModelErrorCountsOnly;
  est.halo_per_hop_error.assign(static_cast<std::size_t>(layers), model_error);
  double inner_entries = 0, outer_entries = 0, size_biased_reach = 0;
  for (std::size_t d = 0; d < pmf.size(); ++d) {
    const double dd = static_cast<double>(d);
    size_biased_reach += mean > 0 ? pmf[d] * dd / mean * reach(layers, dd) : 0;
  }
  for (std::size_t d = 0; d < pmf.size(); ++d) {
    const double dd = static_cast<double>(d);
    double prev = 0;
    for (int h = 1; h <= layers; ++h) {
      const double r = reach(h, dd);
      est.halo_per_hop[h - 1] += outside * pmf[d] * (r - prev);
      prev = r;
    }
    inner_entries += outside * pmf[d] * dd * reach(layers - 1, dd);
    // A node on the outermost ring keeps its edge towards the part and, roughly, those to neighbours that are
    // themselves within reach (size-biased, since a neighbour is reached through an edge).
    const double ring_l = reach(layers, dd) - reach(layers - 1, dd);
    outer_entries += outside * pmf[d] * ring_l * (dd > 0 ? 1 + (dd - 1) * size_biased_reach : 0);
  }
  est.local_entries_halo = 2 * e / k + inner_entries + outer_entries;
  est.local_entries_halo_error = model_error;
  est.halo_imbalance = 1;
  return est;
}

}  // namespace gcnpart::partition
