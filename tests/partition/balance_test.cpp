// The work model (device_work, PlanMetrics::work) and the work-balanced partitions (Balance::kWork, the default).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "datasets/generators.hpp"
#include "datasets/loaders.hpp"
#include "base/error.hpp"
#include "partition/plan.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using namespace gcnpart::partition;
using datasets::Csr;

namespace {

// Path 0-1-2-3-4-5 plus the chord 1-4; parts {0,1,2} and {3,4,5}.
Csr path_with_chord() {
  return datasets::build_csr({6, {0, 1, 2, 3, 4, 1}, {1, 2, 3, 4, 5, 4}, {}});  // symmetrised by default
}

// Per K, the default partition (gather's work, also used by halo) and drop's (work_strategy = drop, as make_plan
// does): gather and drop reach 1.05; halo (2 layers, its rings not refined) is reported.
void check_work_balanced(const std::string& name, const Csr& g) {
  for (int k : {2, 4, 8}) {
    CAPTURE(name);
    CAPTURE(k);
    const Partition p = partition_graph(g, k);
    const Partition p_drop = partition_graph(g, k, {.work_strategy = Strategy::kDrop});
    const PlanMetrics gather = plan_metrics(g, Strategy::kGather, p, 2);
    const PlanMetrics drop = plan_metrics(g, Strategy::kDrop, p_drop, 2);
    const PlanMetrics halo = plan_metrics(g, Strategy::kHalo, p, 2);
    MESSAGE(name << " K=" << k << ": work imbalance gather " << gather.work_imbalance << " (edge cut " << p.edge_cut
                 << " of " << g.num_edges() / 2 << ", node imbalance " << gather.node_imbalance << ", " << p.seconds
                 << " s), drop " << drop.work_imbalance << " (edge cut " << p_drop.edge_cut << ", "
                 << p_drop.seconds << " s), halo " << halo.work_imbalance);
    CHECK(gather.work_imbalance <= 1.05);
    CHECK(drop.work_imbalance <= 1.05);
    CHECK(gather.edge_cut == p.edge_cut);
    CHECK(drop.edge_cut == p_drop.edge_cut);
    CHECK(halo.work_imbalance <= 1.10);  // what it reaches here (1.00-1.05); not a target
  }
}

}  // namespace

TEST_CASE("device work counts the aggregated entries plus kRowWork per row, per strategy") {
  const Csr g = path_with_chord();
  Partition p;
  p.parts = 2;
  p.part_of = {0, 0, 0, 1, 1, 1};
  // gather: own rows with every neighbour. Part 0: degrees 1 + 3 + 2 = 6; part 1: 2 + 3 + 1 = 6.
  const PlanMetrics gather = plan_metrics(g, Strategy::kGather, p, 2);
  CHECK(gather.work == std::vector<std::int64_t>{6 + 3 * (1 + kRowWork), 6 + 3 * (1 + kRowWork)});
  // boundary: the same own rows and entries; the received rows are read, not computed.
  const PlanMetrics boundary = plan_metrics(g, Strategy::kBoundary, p, 2);
  CHECK(boundary.local_nodes != boundary.inner_nodes);  // received rows exist (the cut)
  CHECK(boundary.work == gather.work);
  CHECK(make_plan(g, Strategy::kBoundary, p, 2).metrics.work == gather.work);
  // drop: in-part entries only (cut edges 2-3 and 1-4 lost): 4 per part.
  const PlanMetrics drop = plan_metrics(g, Strategy::kDrop, p, 2);
  CHECK(drop.work == std::vector<std::int64_t>{4 + 3 * (1 + kRowWork), 4 + 3 * (1 + kRowWork)});
  // halo with 1 layer: part 0 holds {0,1,2,3,4}: entries among them 2 x (0-1, 1-2, 2-3, 3-4, 1-4) = 10.
  const PlanMetrics halo = plan_metrics(g, Strategy::kHalo, p, 1);
  CHECK(halo.work[0] == 10 + 5 * (1 + kRowWork));
  CHECK(halo.work == make_plan(g, Strategy::kHalo, p, 1).metrics.work);
  CHECK(device_work(10, 5) == 10 + 5 * (1 + kRowWork));
  // Uneven: part 0 = {0}, part 1 the rest.
  p.part_of = {0, 1, 1, 1, 1, 1};
  const PlanMetrics uneven = plan_metrics(g, Strategy::kGather, p, 2);
  const double w0 = 1 + (1 + kRowWork), w1 = 11 + 5 * (1 + kRowWork);
  CHECK(uneven.work_imbalance == doctest::Approx(w1 * 2 / (w0 + w1)));
}

TEST_CASE("work balance is the default, selectable by name, and deterministic for a seed") {
  CHECK(PartitionOptions{}.balance == Balance::kWork);
  CHECK(parse_balance("work", "--balance") == Balance::kWork);
  CHECK(std::string(balance_name(Balance::kWork)) == "work");
  const Csr g = datasets::generate_rmat({.scale = 13, .edge_factor = 16, .seed = 3}).graph;
  const Partition a = partition_graph(g, 4, {.seed = 7});
  const Partition b = partition_graph(g, 4, {.seed = 7});
  CHECK(a.part_of == b.part_of);
  // Node balance leaves the work of a power-law graph uneven; work balance evens it.
  const Partition by_nodes = partition_graph(g, 4, {.seed = 7, .balance = Balance::kNodes});
  const double nodes = plan_metrics(g, Strategy::kGather, by_nodes, 2).work_imbalance;
  const double work = plan_metrics(g, Strategy::kGather, a, 2).work_imbalance;
  MESSAGE("RMAT 13 K=4 gather work imbalance: nodes " << nodes << ", work " << work);
  CHECK(nodes > 1.1);
  CHECK(work <= 1.05);
}

TEST_CASE("the tightest documented imbalance, 1.0, partitions (METIS is asked for its tightest, 1.001)") {
  const Csr g = datasets::generate_rmat({.scale = 11, .edge_factor = 8, .seed = 5}).graph;
  for (const Balance b : {Balance::kNodes, Balance::kWork}) {
    const Partition p = partition_graph(g, 4, {.imbalance = 1.0, .balance = b});
    CHECK(p.part_of.size() == static_cast<std::size_t>(g.num_nodes));
  }
}

// The large graphs run in the release suite (ci preset); under AddressSanitizer (dev preset) their debug-build
// refinement takes many minutes of CI's two cores, and the small cases above cover the same code.
#ifdef GCNPART_SANITIZED
constexpr bool kHeavy = true;
#else
constexpr bool kHeavy = false;
#endif

TEST_CASE("work-balanced plans of RMAT scale 16 and 17 reach work imbalance 1.05 for gather and drop at K = 2, 4, 8" *
          doctest::skip(kHeavy)) {
  for (int scale : {16, 17}) {
    const Csr g = datasets::generate_rmat({.scale = scale, .edge_factor = 16, .seed = 1}).graph;
    check_work_balanced("RMAT " + std::to_string(scale), g);
  }
}

TEST_CASE("work-balanced plans of RMAT scale 18 reach work imbalance 1.05 for gather and drop at K = 2, 4, 8" *
          doctest::skip(kHeavy)) {
  const Csr g = datasets::generate_rmat({.scale = 18, .edge_factor = 16, .seed = 1}).graph;
  check_work_balanced("RMAT 18", g);
}

TEST_CASE("work-balanced plans of email-Enron and soc-Slashdot0902 reach work imbalance 1.05 at K = 2, 4, 8") {
  for (const char* name : {"email-Enron", "soc-Slashdot0902"}) {
    const datasets::Dataset ds = datasets::load_dataset(testing::data_dir() + "/snap/" + name + ".txt.gz");
    check_work_balanced(name, ds.graph);
  }
}
