// The reuse profile (partition/reuse.hpp): StatStack's estimate against an exact LRU stack-distance count on graphs
// of three kinds of locality, the row sample's estimate against the whole stream's, and the order it is taken in.
#include <doctest/doctest.h>

#include <cmath>

#include "datasets/generators.hpp"
#include "partition/reuse.hpp"

namespace gcnpart::partition {

namespace {

datasets::Dataset rmat(int scale, double ef) {
  datasets::RmatParams p;
  p.scale = scale;
  p.edge_factor = ef;
  return datasets::generate_rmat(p);
}

datasets::Dataset grid(std::int64_t side, bool shuffle) {
  datasets::GridParams p;
  p.side = side;
  p.shuffle = shuffle;
  return datasets::generate_grid(p);
}

datasets::Dataset uniform(std::int64_t nodes, double degree) {
  datasets::SbmParams p;
  p.nodes = nodes;
  p.classes = 2;
  p.p_intra = 0.5;  // two blocks, half the edges across: a uniform random graph
  p.avg_degree = degree;
  p.features = 1;
  return datasets::generate_sbm(p);
}

void check_against_lru(const datasets::Csr& g, Reorder order, double tolerance) {
  const ReuseProfile p = reuse_profile(g, order);
  REQUIRE_FALSE(p.empty());
  CHECK(p.sampled_rows == 1.0);
  for (int k = 2; k <= 12; k += 2) {
    const auto rows = std::int64_t{1} << k;
    const double exact = lru_hit_fraction_exact(g, order, rows);
    INFO("cache of ", rows, " rows: StatStack ", p.hit_fraction(static_cast<double>(rows)), ", exact ", exact);
    CHECK(std::fabs(p.hit_fraction(static_cast<double>(rows)) - exact) <= tolerance);
  }
}

}  // namespace

TEST_CASE("reuse profile: StatStack within 0.04 of exact LRU on power-law, mesh and uniform graphs") {
  SUBCASE("rmat, degree order") { check_against_lru(rmat(12, 8).graph, Reorder::kDegree, 0.04); }
  SUBCASE("rmat, stored order") { check_against_lru(rmat(12, 8).graph, Reorder::kNone, 0.04); }
  SUBCASE("mesh, row-major") { check_against_lru(grid(128, false).graph, Reorder::kNone, 0.04); }
  SUBCASE("mesh, shuffled") { check_against_lru(grid(128, true).graph, Reorder::kDegree, 0.04); }
  SUBCASE("uniform random") { check_against_lru(uniform(16000, 10).graph, Reorder::kDegree, 0.04); }
}

TEST_CASE("reuse profile: locality shows, a row sample agrees with the whole stream") {
  const auto natural = grid(128, false), shuffled = grid(128, true);
  const ReuseProfile a = reuse_profile(natural.graph, Reorder::kNone), b = reuse_profile(shuffled.graph, Reorder::kNone);
  // A row-major mesh reuses within two grid rows (3 x 128 rows); shuffled, a cache of 512 rows holds ~3 % of them.
  CHECK(a.hit_fraction(512) > 0.8);
  CHECK(b.hit_fraction(512) < 0.2);
  // Sampled: a quarter of the reads followed (the hubs' all, the others' by a hash); every cache size within 0.03 of
  // the whole stream.
  const auto g = rmat(16, 8);
  const ReuseProfile full = reuse_profile(g.graph, Reorder::kDegree);
  const ReuseProfile part = reuse_profile(g.graph, Reorder::kDegree, full.reads / 4);
  CHECK(part.sampled_rows < 0.25);
  CHECK(part.sampled_rows > 0.05);
  CHECK(part.reads == full.reads);
  for (int k = 0; k < 20; ++k) {
    INFO("2^", k, " rows");
    CHECK(std::fabs(part.hits[static_cast<std::size_t>(k)] - full.hits[static_cast<std::size_t>(k)]) <= 0.03);
  }
  // Nondecreasing, and everything but the first reads hits a cache of every row.
  for (std::size_t k = 1; k < full.hits.size(); ++k) CHECK(full.hits[k] >= full.hits[k - 1]);
  const double first_reads = static_cast<double>(g.graph.num_nodes) / static_cast<double>(full.reads);
  CHECK(full.hits.back() == doctest::Approx(1 - first_reads).epsilon(0.01));
}

}  // namespace gcnpart::partition

namespace gcnpart::partition {

TEST_CASE("reuse profile: the frequency-optimal cache serves at least what LRU does on a skewed graph") {
  datasets::RmatParams p;
  p.scale = 14;
  p.edge_factor = 16;
  const auto g = datasets::generate_rmat(p).graph;
  const ReuseProfile r = reuse_profile(g, Reorder::kDegree);
  REQUIRE(r.static_hits.size() == r.hits.size());
  for (std::size_t k = 1; k < r.static_hits.size(); ++k) CHECK(r.static_hits[k] >= r.static_hits[k - 1]);
  // Keeping the 2^k most-read rows beats LRU at every size short of the whole graph on RMAT's hubs.
  for (int k = 4; k < 13; ++k) {
    INFO("2^", k, " rows");
    CHECK(r.static_hits[static_cast<std::size_t>(k)] >= r.hits[static_cast<std::size_t>(k)]);
  }
  // A cache of every row: each row's reads but the first, for both.
  CHECK(r.static_hits.back() == doctest::Approx(r.hits.back()).epsilon(1e-9));
  // Exact on a star: the hub (degree n - 1) alone serves n - 1 - 1 of its reads... and each leaf's self read misses.
  datasets::EdgeList star;
  star.num_nodes = 101;
  for (NodeId v = 1; v <= 100; ++v) star.src.push_back(0), star.dst.push_back(v);
  const auto s = reuse_profile(datasets::build_csr(star), Reorder::kDegree);
  const double reads = 200 + 101;  // 100 edges both ways, 101 self loops
  CHECK(s.static_hits[0] == doctest::Approx(100 / reads));  // the hub: 101 reads, the first a miss
  CHECK(s.static_hit_fraction(1) == doctest::Approx(100 / reads));
}

}  // namespace gcnpart::partition
