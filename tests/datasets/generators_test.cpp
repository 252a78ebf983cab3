#include "datasets/generators.hpp"

#include <doctest/doctest.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "base/error.hpp"
#include "base/philox.hpp"

using namespace gcnpart;
using namespace gcnpart::datasets;

namespace {

// Runs `make` with 1 and then 2 OpenMP threads, restoring the default afterwards.
template <class Make>
std::pair<Dataset, Dataset> with_1_and_2_threads(Make make) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  Dataset one = make();
  omp_set_num_threads(2);
  Dataset two = make();
  omp_set_num_threads(saved);
  return {std::move(one), std::move(two)};
}

void check_identical(const Dataset& a, const Dataset& b) {
  CHECK(a.name == b.name);
  CHECK(a.provenance == b.provenance);
  CHECK(a.graph.row_offsets == b.graph.row_offsets);
  CHECK(a.graph.col_ids == b.graph.col_ids);
  CHECK(a.graph.values == b.graph.values);
  CHECK(a.num_features == b.num_features);
  CHECK(a.features == b.features);
  CHECK(a.labels == b.labels);
  CHECK(a.num_classes == b.num_classes);
  CHECK(a.splits == b.splits);
}

// A graph as every generator promises it: valid CSR, symmetric, no self loops.
void check_clean_graph(const Csr& g) {
  CHECK_NOTHROW(g.validate("generated graph"));  // offsets, id range, strictly ascending rows (no duplicates)
  CHECK(g.is_symmetric());
  std::int64_t loops = 0;
  for (std::int64_t u = 0; u < g.num_nodes; ++u)
    for (RowOffset k = g.row_offsets[u]; k < g.row_offsets[u + 1]; ++k) loops += g.col_ids[k] == u;
  CHECK(loops == 0);
}

// The splits are disjoint, within range and labelled.
void check_splits(const Dataset& ds) {
  std::set<NodeId> seen;
  std::size_t total = 0;
  for (const auto& [name, ids] : ds.splits) {
    CHECK(std::is_sorted(ids.begin(), ids.end()));
    for (const NodeId u : ids) {
      REQUIRE(u >= 0);
      REQUIRE(u < ds.num_nodes());
      CHECK(ds.labels[u] >= 0);
      seen.insert(u);
    }
    total += ids.size();
  }
  CHECK(seen.size() == total);
}

}  // namespace

TEST_CASE("rmat scale 10 edge factor 16 gives a symmetric, loop-free, deduplicated, skewed graph") {
  RmatParams p;
  p.scale = 10;
  p.edge_factor = 16;
  const Dataset ds = generate_rmat(p);
  CHECK(ds.name == "rmat-s10-e16");
  CHECK(ds.provenance.find("a=0.57 b=0.19 c=0.19 d=0.05") != std::string::npos);
  CHECK(ds.num_nodes() == 1024);
  CHECK(ds.build_stats.input_edges == 16384);
  check_clean_graph(ds.graph);
  // Both directions of at most 16384 edges; RMAT repeats many edges at this size, but most survive.
  CHECK(ds.graph.num_edges() <= 2 * 16384);
  CHECK(ds.graph.num_edges() > 16384);
  const auto deg = degree_stats(ds.graph);
  CHECK(deg.max > 8 * deg.mean);  // heavy tail: hubs far above the mean
  CHECK_FALSE(ds.has_features());
  CHECK_FALSE(ds.has_labels());
}

TEST_CASE("rmat is identical with 1 and 2 threads, and different seeds give different graphs") {
  RmatParams p;
  p.scale = 12;
  p.edge_factor = 8;
  p.features = 16;
  p.classes = 4;
  const auto [one, two] = with_1_and_2_threads([&] { return generate_rmat(p); });
  check_identical(one, two);
  CHECK(one.has_features());
  check_splits(one);

  RmatParams q = p;
  q.seed = 2;
  const Dataset other = generate_rmat(q);
  CHECK(other.graph.col_ids != one.graph.col_ids);
  CHECK(other.features != one.features);
}

TEST_CASE("rmat node ids are permuted: node 0 is not the hub") {
  RmatParams p;
  p.scale = 12;
  const Dataset ds = generate_rmat(p);
  const auto deg = degree_stats(ds.graph);
  CHECK(ds.graph.degree(0) < deg.max);
}

TEST_CASE("rmat rejects parameters outside their domain") {
  RmatParams p;
  p.scale = 0;
  CHECK_THROWS_AS((void)generate_rmat(p), InvalidInput);
  p.scale = 31;
  CHECK_THROWS_AS((void)generate_rmat(p), InvalidInput);
  p = RmatParams{};
  p.a = 0.9;
  CHECK_THROWS_AS((void)generate_rmat(p), InvalidInput);
  p = RmatParams{};
  p.edge_factor = 0;
  CHECK_THROWS_AS((void)generate_rmat(p), InvalidInput);
  p = RmatParams{};
  p.features = 8;  // classes missing
  CHECK_THROWS_AS((void)generate_rmat(p), InvalidInput);
}

TEST_CASE("sbm has the requested split sizes, balanced classes and mostly-intra edges") {
  SbmParams p;
  p.nodes = 5000;
  p.classes = 5;
  p.avg_degree = 12;
  p.p_intra = 0.7;
  p.features = 16;
  p.train_per_class = 30;
  p.valid = 400;
  p.test = 900;
  const Dataset ds = generate_sbm(p);
  check_clean_graph(ds.graph);
  CHECK(ds.num_nodes() == 5000);
  CHECK(ds.num_classes == 5);
  CHECK(ds.num_features == 16);
  CHECK(ds.features.size() == 5000u * 16u);
  REQUIRE(ds.labels.size() == 5000u);

  std::vector<std::int64_t> class_size(5, 0);
  for (const auto c : ds.labels) {
    REQUIRE(c >= 0);
    REQUIRE(c < 5);
    ++class_size[c];
  }
  CHECK(*std::max_element(class_size.begin(), class_size.end()) -
            *std::min_element(class_size.begin(), class_size.end()) <=
        1);

  CHECK(ds.splits.at("train").size() == 150u);
  CHECK(ds.splits.at("valid").size() == 400u);
  CHECK(ds.splits.at("test").size() == 900u);
  std::vector<int> train_per_class(5, 0);
  for (const NodeId u : ds.splits.at("train")) ++train_per_class[ds.labels[u]];
  CHECK(train_per_class == std::vector<int>(5, 30));
  check_splits(ds);

  std::int64_t intra = 0;
  for (std::int64_t u = 0; u < ds.num_nodes(); ++u)
    for (RowOffset k = ds.graph.row_offsets[u]; k < ds.graph.row_offsets[u + 1]; ++k)
      intra += ds.labels[u] == ds.labels[ds.graph.col_ids[k]];
  const double intra_fraction = static_cast<double>(intra) / static_cast<double>(ds.graph.num_edges());
  CHECK(std::abs(intra_fraction - 0.7) < 0.05);
  const double mean_degree = static_cast<double>(ds.graph.num_edges()) / 5000.0;
  CHECK(std::abs(mean_degree - 12.0) < 1.0);
}

TEST_CASE("sbm features separate the classes: class means differ by about feature_signal times the mean gap") {
  SbmParams p;
  p.nodes = 4000;
  p.classes = 4;
  p.features = 32;
  p.feature_signal = 1.0;
  const Dataset ds = generate_sbm(p);
  // Per-class mean of column 0..F-1 and the pooled within-class variance.
  const std::int64_t f = ds.num_features;
  std::vector<double> mean(4 * f, 0.0);
  std::vector<std::int64_t> count(4, 0);
  for (std::int64_t u = 0; u < ds.num_nodes(); ++u) {
    ++count[ds.labels[u]];
    for (std::int64_t j = 0; j < f; ++j) mean[ds.labels[u] * f + j] += ds.features[u * f + j];
  }
  for (int c = 0; c < 4; ++c)
    for (std::int64_t j = 0; j < f; ++j) mean[c * f + j] /= static_cast<double>(count[c]);
  double within = 0;
  for (std::int64_t u = 0; u < ds.num_nodes(); ++u)
    for (std::int64_t j = 0; j < f; ++j) {
      const double d = ds.features[u * f + j] - mean[ds.labels[u] * f + j];
      within += d * d;
    }
  within /= static_cast<double>(ds.num_nodes() * f);
  CHECK(within == doctest::Approx(1.0).epsilon(0.05));  // unit Gaussian noise
  double gap = 0;
  for (std::int64_t j = 0; j < f; ++j) gap += (mean[j] - mean[f + j]) * (mean[j] - mean[f + j]);
  // Two N(0, 1) mean vectors differ by sqrt(2F) on average; allow a wide band for one pair of classes.
  CHECK(std::sqrt(gap) > 0.5 * std::sqrt(2.0 * static_cast<double>(f)));
  CHECK(std::sqrt(gap) < 1.6 * std::sqrt(2.0 * static_cast<double>(f)));
}

TEST_CASE("sbm is identical with 1 and 2 threads, and different seeds differ") {
  SbmParams p;
  p.nodes = 3000;
  const auto [one, two] = with_1_and_2_threads([&] { return generate_sbm(p); });
  check_identical(one, two);
  SbmParams q = p;
  q.seed = 7;
  const Dataset other = generate_sbm(q);
  CHECK(other.graph.col_ids != one.graph.col_ids);
  CHECK(other.labels != one.labels);
  CHECK(other.splits != one.splits);
}

TEST_CASE("sbm rejects splits that do not fit and bad probabilities") {
  SbmParams p;
  p.nodes = 100;
  p.classes = 5;
  p.train_per_class = 10;
  p.valid = 30;
  p.test = 30;  // 50 + 30 + 30 > 100
  CHECK_THROWS_AS((void)generate_sbm(p), InvalidInput);
  p.test = 10;
  CHECK_NOTHROW((void)generate_sbm(p));
  p.p_intra = 1.5;
  CHECK_THROWS_AS((void)generate_sbm(p), InvalidInput);
  p.p_intra = 0.8;
  p.classes = 1;
  CHECK_THROWS_AS((void)generate_sbm(p), InvalidInput);
}

TEST_CASE("demo_dataset is a deterministic 10,000-node SBM named demo") {
  const Dataset a = demo_dataset();
  const Dataset b = demo_dataset();
  check_identical(a, b);
  CHECK(a.name == "demo");
  CHECK(a.num_nodes() == 10000);
  CHECK(a.has_features());
  CHECK(a.num_classes >= 2);
  CHECK(!a.splits.at("train").empty());
  check_clean_graph(a.graph);
  check_splits(a);
  std::int64_t intra = 0;
  for (std::int64_t u = 0; u < a.num_nodes(); ++u)
    for (RowOffset k = a.graph.row_offsets[u]; k < a.graph.row_offsets[u + 1]; ++k)
      intra += a.labels[u] == a.labels[a.graph.col_ids[k]];
  CHECK(std::abs(static_cast<double>(intra) / static_cast<double>(a.graph.num_edges()) - SbmParams{}.p_intra) < 0.05);
}

TEST_CASE("add_synthetic_features gives hashed labels, Gaussian features and a 60/20/20 split") {
  RmatParams p;
  p.scale = 11;
  const Dataset base = generate_rmat(p);
  auto make = [&] {
    Dataset ds = base;
    add_synthetic_features(ds, 10, 3, 42);
    return ds;
  };
  const auto [one, two] = with_1_and_2_threads(make);
  check_identical(one, two);
  const Dataset& ds = one;
  CHECK(ds.num_features == 10);
  CHECK(ds.features.size() == 2048u * 10u);
  CHECK(ds.num_classes == 3);
  REQUIRE(ds.labels.size() == 2048u);
  std::vector<int> per_class(3, 0);
  for (const auto c : ds.labels) {
    REQUIRE(c >= 0);
    REQUIRE(c < 3);
    ++per_class[c];
  }
  for (const int c : per_class) CHECK(c > 2048 / 3 - 150);  // a hash, not exact balance
  CHECK(ds.splits.at("train").size() == 2048u * 6 / 10);
  CHECK(ds.splits.at("valid").size() == 2048u * 8 / 10 - 2048u * 6 / 10);
  CHECK(ds.splits.at("test").size() == 2048u - 2048u * 8 / 10);
  check_splits(ds);
  for (const float x : ds.features) REQUIRE(std::isfinite(x));

  Dataset other = base;
  add_synthetic_features(other, 10, 3, 43);
  CHECK(other.labels != ds.labels);
  CHECK(ds.graph.col_ids == base.graph.col_ids);  // the graph is untouched
}

TEST_CASE("add_synthetic_features rejects features <= 0 and classes < 2") {
  RmatParams p;
  p.scale = 8;
  Dataset ds = generate_rmat(p);
  CHECK_THROWS_AS(add_synthetic_features(ds, 0, 3, 1), InvalidInput);
  CHECK_THROWS_AS(add_synthetic_features(ds, -4, 3, 1), InvalidInput);
  CHECK_THROWS_AS(add_synthetic_features(ds, 8, 1, 1), InvalidInput);
  CHECK_FALSE(ds.has_features());
}

TEST_CASE("rmat edge i is the documented Philox recipe: level l uses word l%4 of philox(key, i, l/4), ids permuted") {
  RmatParams p;
  p.scale = 10;
  p.edge_factor = 4;
  p.seed = 99;
  const Dataset ds = generate_rmat(p);
  const std::uint64_t key = rng::stream_key(p.seed, rng::kRmatEdges);
  const std::uint64_t perm = rng::stream_key(p.seed, rng::kRmatPermutation);
  const double two32 = 4294967296.0;
  auto has_edge = [&](std::uint64_t u, std::uint64_t v) {
    const auto* b = ds.graph.col_ids.data() + ds.graph.row_offsets[u];
    const auto* e = ds.graph.col_ids.data() + ds.graph.row_offsets[u + 1];
    return std::binary_search(b, e, static_cast<NodeId>(v));
  };
  for (std::uint64_t i = 0; i < 4096; i += 37) {
    std::uint64_t u = 0, v = 0;
    for (int level = 0; level < p.scale; ++level) {
      const double x = rng::philox4x32(key, i, static_cast<std::uint64_t>(level / 4)).v[level % 4];
      const int quadrant = x < p.a * two32 ? 0 : x < (p.a + p.b) * two32 ? 1 : x < (p.a + p.b + p.c) * two32 ? 2 : 3;
      u = 2 * u + (quadrant >= 2 ? 1 : 0);
      v = 2 * v + (quadrant % 2);
    }
    u = rng::permute_index(u, 1024, perm);
    v = rng::permute_index(v, 1024, perm);
    CAPTURE(i);
    if (u != v) CHECK(has_edge(u, v));
  }
}

TEST_CASE("grid meshes: side^dims nodes, 8 / 6 neighbours inside, shuffled ids a relabelling of the natural order") {
  using gcnpart::datasets::GridParams;
  GridParams p;
  p.side = 10;
  p.shuffle = false;
  const auto natural = gcnpart::datasets::generate_grid(p);
  CHECK(natural.num_nodes() == 100);
  // 2-D with diagonals: 9 x 10 x 2 axis edges + 9 x 9 x 2 diagonals, both directions stored.
  CHECK(natural.graph.num_edges() == 2 * (2 * 9 * 10 + 2 * 9 * 9));
  CHECK(natural.graph.degree(55) == 8);
  CHECK(natural.graph.degree(0) == 3);
  p.shuffle = true;
  const auto shuffled = gcnpart::datasets::generate_grid(p);
  CHECK(shuffled.graph.num_edges() == natural.graph.num_edges());
  std::vector<std::int64_t> a, b;
  for (std::int64_t u = 0; u < 100; ++u) a.push_back(natural.graph.degree(u)), b.push_back(shuffled.graph.degree(u));
  CHECK(a != b);  // relabelled...
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  CHECK(a == b);  // ...with the same degrees
  p.dims = 3;
  p.side = 5;
  const auto cube = gcnpart::datasets::generate_grid(p);
  CHECK(cube.num_nodes() == 125);
  CHECK(cube.graph.num_edges() == 2 * 3 * 4 * 25);
  p.dims = 4;
  CHECK_THROWS_AS(gcnpart::datasets::generate_grid(p), gcnpart::InvalidInput);
  p.dims = 3;
  p.side = 1291;
  CHECK_THROWS_AS(gcnpart::datasets::generate_grid(p), gcnpart::InvalidInput);
}
