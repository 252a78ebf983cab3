#include "engine/problem.hpp"

#include <algorithm>
#include <cmath>

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

namespace {
/// single_device_problem with node i's feature rows taken from row feature_rows_of[i] of features_from (ds's
/// own rows in order when features_from is null).
LocalProblem single_problem(const datasets::Dataset& ds, bool normalize_features,
                            const datasets::Dataset* features_from, const NodeId* feature_rows_of) {
  GCNPART_EXPECTS(features_from == nullptr || (features_from->num_nodes() == ds.num_nodes() &&
                                               features_from->num_features == ds.num_features),
                  "single_device_problem: the user's dataset has the reordered one's nodes and features");
  if (!ds.has_features())
    throw InvalidInput(InputLocation{ds.name, 0, 0}, "dataset has no node features", "0 features",
                       "features (for a structure-only graph pass --synthetic-features F --synthetic-classes C)");
  if (!ds.has_labels() || ds.num_classes < 2)
    throw InvalidInput(InputLocation{ds.name, 0, 0}, "dataset has no labels", std::to_string(ds.num_classes),
                       "at least 2 classes");
  LocalProblem p;
  p.name = ds.name;
  p.graph = with_self_loops(ds.graph);
  p.num_rows = p.num_cols = ds.num_nodes();
  p.dinv_row.resize(static_cast<std::size_t>(p.num_rows));
  for (std::int64_t u = 0; u < p.num_rows; ++u) {
    const auto d = static_cast<double>(p.graph.degree(u));
    p.dinv_row[u] = d > 0 ? static_cast<float>(1.0 / std::sqrt(d)) : 0.0f;
  }
  p.dinv_col = p.dinv_row;
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

}  // namespace gcnpart::engine
