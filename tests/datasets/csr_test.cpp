#include "datasets/csr.hpp"

#include <doctest/doctest.h>
#include <omp.h>

#include "base/error.hpp"

using namespace gcnpart;
using namespace gcnpart::datasets;

namespace {
EdgeList edges_of(std::int64_t n, std::vector<std::pair<int, int>> pairs) {
  EdgeList e;
  e.num_nodes = n;
  for (auto [u, v] : pairs) {
    e.src.push_back(u);
    e.dst.push_back(v);
  }
  return e;
}
}  // namespace

TEST_CASE("build_csr symmetrises, drops self loops and duplicates, and counts each step") {
  // 0-1 twice (once reversed), a self loop on 2, 2-3.
  const auto e = edges_of(5, {{0, 1}, {1, 0}, {2, 2}, {2, 3}});
  BuildStats st;
  const Csr g = build_csr(e, {}, &st);
  CHECK(g.num_nodes == 5);
  CHECK(g.num_edges() == 4);
  CHECK(g.row_offsets == std::vector<RowOffset>{0, 1, 2, 3, 4, 4});
  CHECK(g.col_ids == HostVector<NodeId>{1, 0, 3, 2});
  CHECK(st.input_edges == 4);
  CHECK(st.self_loops_removed == 1);
  CHECK(st.after_symmetrize == 6);
  CHECK(st.duplicates_removed == 2);
  CHECK(st.output_edges == 4);
  CHECK(g.is_symmetric());
  CHECK_NOTHROW(g.validate("test graph"));
}

TEST_CASE("build_csr keeps direction, loops and duplicates when told to") {
  const auto e = edges_of(3, {{0, 1}, {0, 1}, {2, 2}});
  BuildOptions o;
  o.symmetrize = false;
  o.drop_self_loops = false;
  o.deduplicate = false;
  const Csr g = build_csr(e, o);
  CHECK(g.row_offsets == std::vector<RowOffset>{0, 2, 2, 3});
  CHECK(g.col_ids == HostVector<NodeId>{1, 1, 2});
  CHECK_FALSE(g.is_symmetric());
}

TEST_CASE("build_csr keeps the largest weight of duplicate entries") {
  auto e = edges_of(2, {{0, 1}, {1, 0}});
  e.weights = {0.5f, 2.0f};
  const Csr g = build_csr(e);
  REQUIRE(g.weighted());
  CHECK(g.values == HostVector<float>{2.0f, 2.0f});
}

TEST_CASE("build_csr names the first edge whose id is out of range") {
  const auto e = edges_of(3, {{0, 1}, {1, 7}, {9, 0}});
  try {
    (void)build_csr(e);
    FAIL("expected InvalidInput");
  } catch (const InvalidInput& err) {
    CHECK(err.where().file == "edge 1");
    CHECK(err.value() == "7");
    CHECK(std::string(err.what()).find("0..2") != std::string::npos);
  }
}

TEST_CASE("build_csr gives identical arrays with 1 and 2 threads") {
  EdgeList e;
  e.num_nodes = 1000;
  std::uint64_t x = 12345;
  for (int i = 0; i < 20000; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    e.src.push_back(static_cast<NodeId>((x >> 33) % 1000));
    e.dst.push_back(static_cast<NodeId>((x >> 13) % 1000));
  }
  omp_set_num_threads(1);
  const Csr a = build_csr(e);
  omp_set_num_threads(2);
  const Csr b = build_csr(e);
  CHECK(a.row_offsets == b.row_offsets);
  CHECK(a.col_ids == b.col_ids);
  CHECK(a.is_symmetric());
}

TEST_CASE("build_csr accepts an empty graph") {
  EdgeList e;
  e.num_nodes = 0;
  const Csr g = build_csr(e);
  CHECK(g.num_nodes == 0);
  CHECK(g.num_edges() == 0);
  CHECK(g.row_offsets.size() == 1);
}

TEST_CASE("degree_stats reports min, max, isolated nodes and quantiles") {
  const Csr g = build_csr(edges_of(4, {{0, 1}, {0, 2}}));
  const auto s = degree_stats(g);
  CHECK(s.min == 0);
  CHECK(s.max == 2);
  CHECK(s.isolated == 1);
  CHECK(s.mean == doctest::Approx(1.0));
}
