#include "engine/problem.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <variant>

#include "base/error.hpp"

namespace gcnpart::engine {

datasets::Csr with_self_loops(const datasets::Csr& g) {
  const std::int64_t n = g.num_nodes;
  datasets::Csr out;
  out.num_nodes = n;
  out.row_offsets.assign(static_cast<std::size_t>(n) + 1, 0);
  std::vector<std::uint8_t> has_loop(static_cast<std::size_t>(n), 0);
#pragma omp parallel for schedule(static)
  for (std::int64_t u = 0; u < n; ++u) {
    const auto* b = g.col_ids.data() + g.row_offsets[u];
    const auto* e = g.col_ids.data() + g.row_offsets[u + 1];
    has_loop[u] = std::binary_search(b, e, static_cast<NodeId>(u)) ? 1 : 0;
  }
  for (std::int64_t u = 0; u < n; ++u)
    out.row_offsets[u + 1] = out.row_offsets[u] + g.degree(u) + (has_loop[u] ? 0 : 1);
  out.col_ids.resize(static_cast<std::size_t>(out.row_offsets[n]));
  const bool weighted = g.weighted();
  if (weighted) out.values.resize(out.col_ids.size());
#pragma omp parallel for schedule(dynamic, 1024)
  for (std::int64_t u = 0; u < n; ++u) {
    RowOffset o = out.row_offsets[u];
    bool placed = has_loop[u] != 0;
    for (RowOffset e = g.row_offsets[u]; e < g.row_offsets[u + 1]; ++e) {
      if (!placed && g.col_ids[e] > u) {
        out.col_ids[o] = static_cast<NodeId>(u);
        if (weighted) out.values[o] = 1.0f;
        ++o;
        placed = true;
      }
      out.col_ids[o] = g.col_ids[e];
      if (weighted) out.values[o] = g.values[e];
      ++o;
    }
    if (!placed) {
      out.col_ids[o] = static_cast<NodeId>(u);
      if (weighted) out.values[o] = 1.0f;
    }
  }
  return out;
}

HostVector<float> feature_rows(const datasets::Dataset& ds, const NodeId* nodes, std::int64_t count, bool normalize) {
  const std::int64_t f = ds.num_features;
  GCNPART_EXPECTS(static_cast<std::int64_t>(ds.features.size()) == ds.num_nodes() * f,
                  "feature_rows reads a dataset that holds its feature rows");
  HostVector<float> out(static_cast<std::size_t>(count * f));  // not zero-filled: every row is written below
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) {
    float* row = out.data() + i * f;
    std::copy_n(ds.features.data() + (nodes != nullptr ? static_cast<std::int64_t>(nodes[i]) : i) * f, f, row);
    if (!normalize) continue;
    double s = 0;
    for (std::int64_t j = 0; j < f; ++j) s += std::fabs(row[j]);
    if (s == 0) continue;
    const float inv = static_cast<float>(1.0 / s);
    for (std::int64_t j = 0; j < f; ++j) row[j] *= inv;
  }
  return out;
}

void check_trainable(const datasets::Dataset& ds) {
  if (!ds.has_features())
    throw InvalidInput(InputLocation{ds.name, 0, 0}, "dataset has no node features", "0 features",
                       "features (for a structure-only graph pass --synthetic-features F --synthetic-classes C)");
  if (!ds.has_labels() || ds.num_classes < 2)
    throw InvalidInput(InputLocation{ds.name, 0, 0}, "dataset has no labels", std::to_string(ds.num_classes),
                       "at least 2 classes");
}

const OwnGraph& LocalProblem::own_graph() const {
  const auto* g = std::get_if<OwnGraph>(&structure);
  GCNPART_EXPECTS(g != nullptr, "the problem aggregates over its own local graph (single, drop, halo)");
  return *g;
}

std::int64_t LocalProblem::aggregation_entries() const {
  return std::visit(
      [](const auto& s) -> std::int64_t {
        if constexpr (std::is_same_v<std::decay_t<decltype(s)>, OwnGraph>) {
          return s.graph.num_edges();
        } else {
          return s.forward.num_edges();
        }
      },
      structure);
}

namespace {
/// single_device_problem with node i's feature rows taken from row feature_rows_of[i] of features_from (ds's
/// own rows in order when features_from is null).
LocalProblem single_problem(const datasets::Dataset& ds, bool normalize_features,
                            const datasets::Dataset* features_from, const NodeId* feature_rows_of) {
  GCNPART_EXPECTS(features_from == nullptr || (features_from->num_nodes() == ds.num_nodes() &&
                                               features_from->num_features == ds.num_features),
                  "single_device_problem: the user's dataset has the reordered one's nodes and features");
  check_trainable(ds);
  LocalProblem p;
  p.name = ds.name;
  OwnGraph g;
  g.graph = with_self_loops(ds.graph);
  p.num_rows = p.num_cols = ds.num_nodes();
  g.dinv_row.resize(static_cast<std::size_t>(p.num_rows));
  for (std::int64_t u = 0; u < p.num_rows; ++u) {
    const auto d = static_cast<double>(g.graph.degree(u));
    g.dinv_row[u] = d > 0 ? static_cast<float>(1.0 / std::sqrt(d)) : 0.0f;
  }
  g.dinv_col = g.dinv_row;
  p.structure = std::move(g);
  p.num_features = ds.num_features;
  p.features = features_from != nullptr ? feature_rows(*features_from, feature_rows_of, p.num_cols, normalize_features)
                                        : feature_rows(ds, nullptr, p.num_cols, normalize_features);
  p.labels = ds.labels;
  p.num_classes = ds.num_classes;
  p.global_ids.resize(static_cast<std::size_t>(p.num_cols));
  for (std::int64_t u = 0; u < p.num_cols; ++u)
    p.global_ids[u] = ds.user_ids.empty() ? static_cast<NodeId>(u) : ds.user_ids[u];
  p.train_rows = ds.split("train");
  if (p.train_rows.empty())
    throw InvalidInput(InputLocation{"dataset " + ds.name + " split train", 0, 0}, "empty training split", "0 nodes",
                       "at least one labelled training node (nothing to train on, no accuracy to report)");
  auto optional = [&](const char* name) {
    const auto it = ds.splits.find(name);
    return it == ds.splits.end() ? std::vector<NodeId>{} : it->second;
  };
  p.valid_rows = optional("valid");
  p.test_rows = optional("test");
  p.global_train = static_cast<std::int64_t>(p.train_rows.size());
  p.global_valid = static_cast<std::int64_t>(p.valid_rows.size());
  p.global_test = static_cast<std::int64_t>(p.test_rows.size());
  return p;
}

}  // namespace

LocalProblem single_device_problem(const datasets::Dataset& ds, bool normalize_features) {
  return single_problem(ds, normalize_features, nullptr, nullptr);
}

LocalProblem single_device_problem(const datasets::Dataset& ds, bool normalize_features, const datasets::Dataset& user,
                                   const partition::Reordering& r) {
  if (r.identity()) return single_problem(ds, normalize_features, nullptr, nullptr);
  return single_problem(ds, normalize_features, &user, r.order.data());
}

LocalProblem device_problem(const datasets::Dataset& ds, const partition::Plan& plan, int device,
                            bool normalize_features) {
  GCNPART_EXPECTS(device >= 0 && device < static_cast<int>(plan.devices.size()), "device out of the plan's range");
  if (!ds.has_features() || !ds.has_labels())
    throw InvalidInput(InputLocation{ds.name, 0, 0}, "dataset has no features or labels",
                       std::to_string(ds.num_features) + " features", "features and labels");
  const partition::DevicePlan& dp = plan.devices[static_cast<std::size_t>(device)];
  LocalProblem p;
  p.name = ds.name + "@" + std::to_string(device);
  const std::int64_t f = ds.num_features;
  // The strategy's communication kind (its row of partition::kStrategies) says what the device aggregates over.
  const partition::Communication kind = partition::traits(plan.strategy).communication;
  const bool gather = kind == partition::Communication::kAllGatherTable;
  const bool boundary = kind == partition::Communication::kAllToAll;
  // Rows (and, except for gather and boundary, columns) are the local nodes: own part first.
  const std::int64_t n_local =
      gather || boundary ? dp.num_inner : static_cast<std::int64_t>(dp.local_nodes.size());
  p.num_rows = p.num_cols = n_local;
  p.global_ids.assign(dp.local_nodes.begin(), dp.local_nodes.begin() + n_local);
  p.num_features = f;
  p.features = feature_rows(ds, p.global_ids.data(), n_local, normalize_features);
  p.labels.resize(static_cast<std::size_t>(n_local));
  for (std::int64_t i = 0; i < n_local; ++i) p.labels[i] = ds.labels[p.global_ids[i]];
  p.num_classes = ds.num_classes;
  // From here on a row's global id is the user's (dropout masks are keyed by it; see partition/reorder.hpp).
  if (!ds.user_ids.empty())
    for (auto& id : p.global_ids) id = ds.user_ids[id];

  // Split rows: own nodes only, so that every node's loss is counted exactly once over the devices.
  std::vector<std::int32_t> local_of(static_cast<std::size_t>(ds.num_nodes()), -1);
  for (std::int64_t i = 0; i < dp.num_inner; ++i) local_of[dp.local_nodes[i]] = static_cast<std::int32_t>(i);
  auto rows_of = [&](const char* name, std::vector<NodeId>& rows, std::int64_t& global) {
    const auto it = ds.splits.find(name);
    if (it == ds.splits.end()) return;
    global = static_cast<std::int64_t>(it->second.size());
    for (NodeId v : it->second)
      if (local_of[v] >= 0) rows.push_back(local_of[v]);
    std::sort(rows.begin(), rows.end());
  };
  if (ds.split("train").empty())  // ds.split throws for a missing one, naming the splits there are
    throw InvalidInput(InputLocation{"dataset " + ds.name + " split train", 0, 0}, "empty training split", "0 nodes",
                       "at least one labelled training node (nothing to train on, no accuracy to report)");
  rows_of("train", p.train_rows, p.global_train);
  rows_of("valid", p.valid_rows, p.global_valid);
  rows_of("test", p.test_rows, p.global_test);

  if (gather) {
    GatherTable t;
    t.parts = plan.parts;
    t.table_block = plan.table_block;
    t.forward = dp.gather_forward;
    t.backward = dp.gather_backward;
    t.table_dinv = plan.table_dinv;
    t.dinv_own = dp.dinv_own;
    p.structure = std::move(t);
  } else if (boundary) {
    BoundaryExchange b;
    b.parts = plan.parts;
    b.forward = dp.gather_forward;
    b.backward = dp.gather_backward;
    b.dinv_local = dp.dinv;
    b.dinv_own = dp.dinv_own;
    b.recv_counts = dp.recv_counts;
    b.send_rows.resize(static_cast<std::size_t>(plan.parts));
    b.interior_rows = dp.num_inner;
    for (int q = 0; q < plan.parts; ++q) {
      const auto first = dp.send_rows.row_offsets[q], end = dp.send_rows.row_offsets[q + 1];
      b.send_rows[q].assign(dp.send_rows.col_ids.begin() + first, dp.send_rows.col_ids.begin() + end);
      if (first < end) b.interior_rows = std::min<std::int64_t>(b.interior_rows, b.send_rows[q].front());
    }
    p.structure = std::move(b);
  } else {
    p.structure = OwnGraph{dp.local_graph, dp.dinv, dp.dinv};
  }
  return p;
}

}  // namespace gcnpart::engine
