#include "partition/reorder.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <set>
#include <utility>

#include "datasets/generators.hpp"
#include "engine/problem.hpp"
#include "engine/train.hpp"
#include "base/error.hpp"
#include "partition/plan.hpp"
#include "dataset_fixtures.hpp"

using namespace gcnpart;
using namespace gcnpart::partition;

namespace {

constexpr Reorder kMethods[] = {Reorder::kDegree, Reorder::kRcm, Reorder::kMetis};

std::set<std::pair<NodeId, NodeId>> edge_set(const datasets::Csr& g) {
  std::set<std::pair<NodeId, NodeId>> s;
  for (std::int64_t u = 0; u < g.num_nodes; ++u)
    for (RowOffset e = g.row_offsets[u]; e < g.row_offsets[u + 1]; ++e) s.emplace(static_cast<NodeId>(u), g.col_ids[e]);
  return s;
}

/// The largest |new(u) - new(v)| over the edges: what RCM keeps small.
std::int64_t bandwidth(const datasets::Csr& g) {
  std::int64_t b = 0;
  for (std::int64_t u = 0; u < g.num_nodes; ++u)
    for (RowOffset e = g.row_offsets[u]; e < g.row_offsets[u + 1]; ++e) b = std::max<std::int64_t>(b, std::abs(u - g.col_ids[e]));
  return b;
}

/// A path 0 - 1 - ... - (n-1) with its ids scrambled (node i at position (i * 7919) mod n).
datasets::Csr scrambled_path(std::int64_t n) {
  datasets::EdgeList el;
  el.num_nodes = n;
  auto id = [&](std::int64_t i) { return static_cast<NodeId>((i * 7919) % n); };
  for (std::int64_t i = 0; i + 1 < n; ++i) {
    el.src.push_back(id(i));
    el.dst.push_back(id(i + 1));
  }
  return datasets::build_csr(el, {});
}

/// The largest |a - b| / |a| over two loss curves of one length.
double worst_relative(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t e = 0; e < a.size(); ++e) worst = std::max(worst, std::abs(a[e] - b[e]) / std::abs(a[e]));
  return worst;
}

}  // namespace

TEST_CASE("every locality order is a permutation with its inverse, deterministic, and none is the identity") {
  const datasets::Dataset& ds = testing::sbm_3000();
  CHECK(locality_order(ds.graph, Reorder::kNone).identity());
  for (const Reorder m : kMethods) {
    CAPTURE(to_string(m));
    const Reordering r = locality_order(ds.graph, m);
    REQUIRE(static_cast<std::int64_t>(r.order.size()) == ds.num_nodes());
    std::vector<NodeId> sorted = r.order;
    std::sort(sorted.begin(), sorted.end());
    std::vector<NodeId> ids(sorted.size());
    std::iota(ids.begin(), ids.end(), 0);
    CHECK(sorted == ids);
    for (std::size_t i = 0; i < r.order.size(); ++i) REQUIRE(r.rank[r.order[i]] == static_cast<NodeId>(i));
    CHECK(locality_order(ds.graph, m).order == r.order);
  }
}

TEST_CASE("degree order puts the largest degrees first and RCM recovers a scrambled path's bandwidth of 1") {
  const datasets::Dataset& ds = testing::sbm_3000();
  const Reordering by_degree = locality_order(ds.graph, Reorder::kDegree);
  for (std::size_t i = 1; i < by_degree.order.size(); ++i)
    REQUIRE(ds.graph.degree(by_degree.order[i - 1]) >= ds.graph.degree(by_degree.order[i]));

  const datasets::Csr path = scrambled_path(1000);
  CHECK(bandwidth(path) > 100);
  const Reordering rcm = locality_order(path, Reorder::kRcm);
  CHECK(bandwidth(permute_graph(path, rcm)) == 1);
  // METIS nested dissection cannot do as well as a path's order, but far better than the scramble.
  CHECK(bandwidth(permute_graph(path, locality_order(path, Reorder::kMetis))) < bandwidth(path));
}

TEST_CASE("a permuted dataset is the same graph, features, labels and splits under the new ids") {
  const datasets::Dataset& ds = testing::sbm_3000();
  for (const Reorder m : kMethods) {
    CAPTURE(to_string(m));
    Reordering r = locality_order(ds.graph, m);
    const datasets::Dataset p = permute(ds, r);
    p.validate();
    CHECK(p.graph.is_symmetric());
    // Edges: (u, v) in the input iff (rank u, rank v) in the output.
    std::set<std::pair<NodeId, NodeId>> mapped;
    for (const auto& [u, v] : edge_set(ds.graph)) mapped.emplace(r.rank[u], r.rank[v]);
    CHECK(mapped == edge_set(p.graph));
    const std::int64_t f = ds.num_features;
    bool rows_match = true;
    for (std::int64_t i = 0; i < p.num_nodes(); ++i) {
      const NodeId old = r.order[i];
      rows_match = rows_match && p.labels[i] == ds.labels[old] && p.user_ids[i] == old &&
                   std::equal(p.features.begin() + i * f, p.features.begin() + (i + 1) * f,
                              ds.features.begin() + static_cast<std::int64_t>(old) * f);
    }
    CHECK(rows_match);
    for (const auto& [name, ids] : ds.splits) {
      const auto& got = p.splits.at(name);
      REQUIRE(got.size() == ids.size());
      for (std::size_t k = 0; k < ids.size(); ++k) REQUIRE(r.order[got[k]] == ids[k]);
    }
    // A second reordering composes the user ids.
    Reordering again = locality_order(p.graph, Reorder::kDegree);
    const datasets::Dataset pp = permute(p, again);
    bool composed = true;
    for (std::int64_t i = 0; i < pp.num_nodes(); ++i) composed = composed && pp.user_ids[i] == p.user_ids[again.order[i]];
    CHECK(composed);
  }
}

TEST_CASE("a dataset permuted without its feature rows gives the single-device problem of the full permutation") {
  const datasets::Dataset& ds = testing::sbm_3000();
  for (const bool normalize : {false, true}) {
    Reordering r = locality_order(ds.graph, Reorder::kDegree);
    const datasets::Dataset full = permute(ds, r);
    const datasets::Dataset lean = permute(ds, r, PermuteFeatures::kLeave);
    CHECK(lean.features.empty());
    CHECK(lean.num_features == ds.num_features);
    CHECK(lean.labels == full.labels);
    CHECK(lean.user_ids == full.user_ids);
    const engine::LocalProblem a = engine::single_device_problem(full, normalize);
    const engine::LocalProblem b = engine::single_device_problem(lean, normalize, ds, r);
    CHECK(a.features == b.features);
    CHECK(a.labels == b.labels);
    CHECK(a.global_ids == b.global_ids);
    CHECK(a.own_graph().graph.col_ids == b.own_graph().graph.col_ids);
    // Without the source, the lean dataset's missing rows are refused, never read, and it is not permuted again.
    CHECK_THROWS_AS((void)engine::single_device_problem(lean, normalize), LogicError);
    Reordering again = locality_order(lean.graph, Reorder::kRcm);
    CHECK_THROWS_AS((void)permute(lean, again), LogicError);
    // Reordering an already reordered dataset without its rows: features follow the second order over the first.
    const datasets::Dataset twice = permute(full, again, PermuteFeatures::kLeave);
    const engine::LocalProblem c = engine::single_device_problem(permute(full, again), normalize);
    const engine::LocalProblem d = engine::single_device_problem(twice, normalize, full, again);
    CHECK(c.features == d.features);
    CHECK(c.global_ids == d.global_ids);
  }
}

TEST_CASE("permute_graph sorts long rows (radix path) and short rows alike, values following their columns") {
  // Hubs joined to thousands of nodes (rows far past the short-row cut) plus random edges; weighted and not.
  datasets::EdgeList edges;
  const std::int64_t n = 5000;
  edges.num_nodes = n;
  std::uint64_t state = 12345;
  const auto next = [&] { return state = state * 6364136223846793005ULL + 1442695040888963407ULL; };
  for (NodeId hub = 0; hub < 3; ++hub)
    for (NodeId v = 3; v < n; v += 1 + hub) {
      edges.src.push_back(hub);
      edges.dst.push_back(v);
    }
  for (int k = 0; k < 20000; ++k) {
    edges.src.push_back(static_cast<NodeId>(next() >> 33) % n);
    edges.dst.push_back(static_cast<NodeId>(next() >> 33) % n);
  }
  for (const bool weighted : {false, true}) {
    CAPTURE(weighted);
    datasets::EdgeList e = edges;
    if (weighted)
      for (std::size_t k = 0; k < e.src.size(); ++k) e.weights.push_back(static_cast<float>(k % 97) + 0.5f);
    const datasets::Csr g = datasets::build_csr(e);
    REQUIRE(g.degree(0) > 1000);
    for (const Reorder m : {Reorder::kDegree, Reorder::kRcm}) {
      const Reordering r = locality_order(g, m);
      const datasets::Csr h = permute_graph(g, r);
      REQUIRE(h.col_ids.size() == g.col_ids.size());
      bool same = true;
      for (std::int64_t i = 0; i < n && same; ++i) {
        const NodeId old = r.order[i];
        std::vector<std::pair<NodeId, float>> want;
        for (RowOffset k = g.row_offsets[old]; k < g.row_offsets[old + 1]; ++k)
          want.emplace_back(r.rank[g.col_ids[k]], weighted ? g.values[k] : 0.0f);
        std::sort(want.begin(), want.end());
        same = h.degree(i) == static_cast<std::int64_t>(want.size());
        for (std::size_t k = 0; k < want.size() && same; ++k) {
          const RowOffset at = h.row_offsets[i] + static_cast<RowOffset>(k);
          same = h.col_ids[at] == want[k].first && (!weighted || h.values[at] == want[k].second);
        }
      }
      CHECK(same);
    }
  }
}

TEST_CASE("training a reordered graph gives the same losses and accuracy as the user's order (same dropout masks)") {
  const datasets::Dataset& ds = testing::sbm_3000();
  engine::TrainRequest q;
  q.config.epochs = 15;
  q.config.model.seed = 4;
  q.config.model.dropout = 0.5f;
  const engine::TrainSummary plain = engine::train(ds, q);
  for (const Reorder m : kMethods) {
    CAPTURE(to_string(m));
    q.reorder = m;
    const engine::TrainSummary re = engine::train(ds, q);
    CHECK(re.reorder_seconds[0] > 0);
      const double worst = worst_relative(plain.runs.front().train_loss, re.runs.front().train_loss);
    CHECK(worst < 1e-4);  // summation order only
    CHECK(re.accuracy[2].mean == doctest::Approx(plain.accuracy[2].mean).epsilon(0.01));
    CHECK(re.to_json()["reorder"]["method"] == to_string(m));
  }
  // Different masks would show: another seed's losses differ by far more.
  q.reorder = Reorder::kNone;
  q.config.model.seed = 5;
  const engine::TrainSummary other = engine::train(ds, q);
  CHECK(worst_relative(plain.runs.front().train_loss, other.runs.front().train_loss) > 1e-3);
}

TEST_CASE("--save-parts of a reordered run lists parts in the user's node order; --save-plan asks for --reorder none") {
  const datasets::Dataset& ds = testing::sbm_3000();
  const std::string parts_file = "reorder_test_parts.txt";
  engine::TrainRequest q;
  q.config.epochs = 1;
  q.strategy = Strategy::kHalo;
  q.parts = 2;
  q.save_parts = parts_file;
  (void)engine::train(ds, q);
  // The run partitioned the degree-ordered graph: node u's part is that of its new id there.
  Reordering r = locality_order(ds.graph, Reorder::kDegree);
  const datasets::Dataset p = permute(ds, r);
  const Partition expected = make_plan(p.graph, Strategy::kHalo, 2, q.config.model.layers, q.partition).partition;
  std::ifstream in(parts_file);
  std::vector<int> got;
  for (int v; in >> v;) got.push_back(v);
  REQUIRE(static_cast<std::int64_t>(got.size()) == ds.num_nodes());
  bool same = true;
  for (std::int64_t u = 0; u < ds.num_nodes(); ++u) same = same && got[u] == expected.part_of[r.rank[u]];
  CHECK(same);
  std::remove(parts_file.c_str());
  q.save_plan = "reorder_test.gplan";
  CHECK_THROWS_WITH_AS(engine::train(ds, q), doctest::Contains("--reorder none"), InvalidInput);
}
