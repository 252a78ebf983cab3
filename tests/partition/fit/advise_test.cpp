#include "partition/fit/advise.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>

#include "base/error.hpp"
#include "dataset_fixtures.hpp"

using namespace gcnpart;
using namespace gcnpart::partition;

namespace {

/// A small graph by statistics, one rtx3090 against two rtx3080, ranked at 1 and 2 GPUs.
FitRequest small_request() {
  FitRequest r;
  r.stats.name = "small";
  r.stats.nodes = 1000;
  r.stats.edges = 5000;
  r.stats.features = 50;
  r.stats.classes = 5;
  r.model.layers = 2;
  r.model.hidden = 16;
  r.catalogue = builtin_cards();
  r.configs = {{"rtx3090", 1}, {"rtx3080", 2}};
  r.rank_gpus = {1, 2};
  return r;
}

/// small_request() with ogbn-products' statistics (2,449,029 nodes, 61,859,140 edges, 100 features, 47 classes).
FitRequest products_sized_request() {
  FitRequest r = small_request();
  r.stats.nodes = 2449029;
  r.stats.edges = 61859140;
  r.stats.features = 100;
  r.stats.classes = 47;
  return r;
}

}  // namespace

TEST_CASE("advise predicts the memory model's peak for one card and the same split for every strategy") {
  const FitRequest req = small_request();
  const FitReport rep = advise(req);
  CHECK(rep.graph.degree_mean == doctest::Approx(10.0));
  CHECK(rep.model.features == 50);
  CHECK(rep.model.classes == 5);
  REQUIRE(rep.configurations.size() == 2);

  const FitConfiguration& one = rep.configurations[0];
  const MemoryEstimate expected = estimate_device_memory(single_device_shape(rep.graph), rep.model, Backend::kCuda);
  CHECK(one.card.id == "rtx3090");
  CHECK(one.memory.peak == expected.peak);
  CHECK(one.memory.at_peak == expected.at_peak);
  CHECK(one.fits == (expected.peak + one.card.fixed_overhead_bytes <= one.card.memory_bytes));
  CHECK(one.fits);
  CHECK(one.epoch.seconds > 0);
  CHECK(one.largest_hidden > req.model.hidden);
  CHECK(one.largest_layers >= req.model.layers);

  const FitConfiguration& two = rep.configurations[1];
  CHECK(two.gpus == 2);
  REQUIRE(two.strategies.size() == 4);  // drop, halo, gather, pipeline
  CHECK(two.strategies[3].fit.strategy == Strategy::kPipeline);
  // A split's devices are priced with the upper bound of --spmm auto's cuSPARSE plans (their smaller local graphs
  // can tip the tuner), whatever the whole graph's decision in rep.model.
  ModelSpec split_model = rep.model;
  split_model.auto_own_widths.clear();
  for (const auto& s : two.strategies) {
    if (s.fit.strategy == Strategy::kPipeline) continue;  // its own test below
    const auto split = estimate_split_from_counts(rep.graph, 2, rep.model.layers);
    const auto shapes = device_shapes(split.metrics(s.fit.strategy, rep.graph), s.fit.strategy, 2, rep.graph);
    std::int64_t peak = 0;
    for (const auto& shape : shapes)
      peak = std::max(peak, estimate_device_memory(shape, split_model, Backend::kCuda).peak);
    CHECK(s.fit.peak == peak);
    CHECK(s.fits == s.fit.fits(two.card));
  }
  CHECK(two.link == link_for(two.card, 2).kind);

  // Every catalogue card at every GPU count, and the ranking sorted by epoch time.
  CHECK(rep.options.size() == req.catalogue.cards.size() * 2);
  REQUIRE(!rep.by_epoch_time.empty());
  for (std::size_t i = 1; i < rep.by_epoch_time.size(); ++i)
    CHECK(rep.options[rep.by_epoch_time[i - 1]].seconds <= rep.options[rep.by_epoch_time[i]].seconds);
  CHECK(rep.verdict.rfind("For small (1,000 nodes, 5,000 edges, 50 features)", 0) == 0);
  CHECK(rep.verdict.find("Verdict:") != std::string::npos);
}

TEST_CASE("--spmm auto: the whole graph skips the cuSPARSE plans its own kernel wins, a split's devices keep them") {
  // products-sized statistics: the calibrated terms give the own SpMM a clear lead at the narrow widths.
  FitRequest req = products_sized_request();
  req.model.hidden = 256;
  req.configs = {{"h200", 1}, {"h200", 2}};
  req.rank_gpus = {1};
  const FitReport rep = advise(req);
  REQUIRE(!rep.model.auto_own_widths.empty());  // decided on the whole graph
  const auto has_plan = [](const MemoryEstimate& e) {
    for (const auto& item : e.items)
      if (item.what.rfind("cuSPARSE values", 0) == 0) return true;
    return false;
  };
  const FitConfiguration& one = rep.configurations[0];
  ModelSpec upper = rep.model;
  upper.auto_own_widths.clear();
  const MemoryEstimate bound = estimate_device_memory(single_device_shape(rep.graph), upper, Backend::kCuda);
  CHECK(one.memory.peak < bound.peak);  // plans left out where the own kernel wins
  const FitConfiguration& two = rep.configurations[1];
  for (const auto& s : two.strategies) {
    if (s.fit.strategy == Strategy::kPipeline || s.fit.strategy == Strategy::kGather) continue;  // whole graph / own only
    CAPTURE(to_string(s.fit.strategy));
    for (std::size_t d = 0; d < s.fit.shapes.size(); ++d) {
      CHECK(s.fit.memory[d].peak == estimate_device_memory(s.fit.shapes[d], upper, Backend::kCuda).peak);
      CHECK(has_plan(s.fit.memory[d]));  // a device's smaller graph may tip its tuner: the upper bound
    }
  }
}

TEST_CASE("advise's report serialises to the keys gcnpart fit writes") {
  const FitReport rep = advise(small_request());
  const nlohmann::json j = rep.to_json();
  CHECK(j.at("command") == "fit");
  for (const char* key : {"graph", "model", "calibration", "configurations", "ranking", "verdict"})
    CHECK_MESSAGE(j.contains(key), key);
  CHECK(j.at("graph").at("source") == "statistics");
  CHECK(j.at("model").at("precision") == "fp32");
  CHECK(j.at("model").at("spmm") == "auto");
  const auto& single = j.at("configurations").at(0).at("single");
  CHECK(single.at("memory").at("tracked_peak_bytes") == rep.configurations[0].memory.peak);
  for (const char* key : {"fits", "memory", "epoch", "largest_hidden", "largest_layers"})
    CHECK_MESSAGE(single.contains(key), key);
  const auto& strategies = j.at("configurations").at(1).at("strategies");
  REQUIRE(strategies.size() == 4);
  for (const char* key : {"strategy", "exact", "fits", "split_source", "per_card_peak_bytes", "memory", "lost_edges",
                          "halo_factor", "comm_bytes_per_epoch", "link", "epoch"})
    CHECK_MESSAGE(strategies.at(0).contains(key), key);
  const auto& ranking = j.at("ranking");
  CHECK(ranking.at("all_options").size() == rep.options.size());
  CHECK(ranking.at("by_epoch_time").size() == rep.by_epoch_time.size());
  CHECK(ranking.at("by_epochs_per_dollar").size() == rep.by_epochs_per_dollar.size());
  CHECK(j.at("verdict") == rep.verdict);
  // One memory figure per card everywhere: the tracked peak plus the fixed overhead, said so.
  for (const auto& op : ranking.at("all_options")) {
    CHECK(op.at("per_card_bytes").get<std::int64_t>() ==
          op.at("per_card_peak_bytes").get<std::int64_t>() + builtin_cards().find(op.at("card")).fixed_overhead_bytes);
    CHECK(op.at("per_card_bytes_includes_fixed_overhead") == true);
    CHECK((op.at("epoch_source") == (op.at("card") == "h200" ? "measured" : "extrapolated")));
  }
  CHECK(j.at("calibration").at("held_out_residual") == rep.calibration.band());
}

TEST_CASE("advise says a model too large for every card does not fit, and bf16 halves the activations") {
  FitRequest req = small_request();
  req.stats.nodes = 100'000'000;
  req.stats.edges = 3'000'000'000;
  req.stats.features = 1000;
  req.model.hidden = 4096;
  req.model.layers = 8;
  const FitReport big = advise(req);
  CHECK_FALSE(big.configurations[0].fits);
  CHECK(big.configurations[0].largest_hidden == 0);
  CHECK(big.by_epoch_time.empty());
  CHECK(big.verdict.find("Verdict: neither fits.") != std::string::npos);

  FitRequest half = small_request();
  half.model.precision = Precision::kBf16;
  const FitReport bf16 = advise(half);
  const FitReport fp32 = advise(small_request());
  CHECK(bf16.configurations[0].memory.peak < fp32.configurations[0].memory.peak);
  CHECK(bf16.to_json().at("model").at("precision") == "bf16");
}

TEST_CASE("advise prices a dataset with exact plan metrics") {
  FitRequest req = small_request();
  const auto& ds = testing::cora();
  req.dataset = &ds;
  const FitReport rep = advise(req);
  CHECK(rep.from_data);
  CHECK(rep.graph.nodes == ds.num_nodes());
  CHECK(rep.split_method == "exact plan metrics (metis partition)");
  CHECK(rep.configurations[0].memory.peak ==
        estimate_device_memory(single_device_shape(ds), rep.model, Backend::kCuda).peak);
}

TEST_CASE("advise refuses unknown cards, GPU counts above the nodes and strategies it cannot price") {
  FitRequest req = small_request();
  req.configs = {{"rtx9999", 1}};
  CHECK_THROWS_AS((void)advise(req), InvalidInput);
  req = small_request();
  req.configs = {{"rtx3080", 2000}};
  CHECK_THROWS_AS((void)advise(req), InvalidInput);
  req = small_request();
  req.stats.nodes = 10;
  req.stats.edges = 5;
  req.configs = {{"rtx3080", 20}};
  CHECK_THROWS_AS((void)advise(req), InvalidInput);
  req = small_request();
  req.strategies = {Strategy::kSingle};
  CHECK_THROWS_AS((void)advise(req), InvalidInput);
}

TEST_CASE("advise prices pipeline per stage: each card holds its layers over the whole graph and the stages add up") {
  FitRequest req = small_request();
  req.model.layers = 4;
  req.model.hidden = 64;
  req.strategies = {Strategy::kPipeline};
  const FitReport rep = advise(req);
  const FitConfiguration& two = rep.configurations[1];
  REQUIRE(two.strategies.size() == 1);
  const StrategyFit& f = two.strategies[0].fit;
  CHECK(f.strategy == Strategy::kPipeline);
  REQUIRE(f.memory.size() == 2);
  for (int st = 0; st < 2; ++st) {
    ModelSpec m = rep.model;
    m.stages = 2;
    m.stage = st;
    CHECK(f.memory[static_cast<std::size_t>(st)].peak ==
          estimate_device_memory(single_device_shape(rep.graph), m, Backend::kCuda).peak);
  }
  CHECK(f.peak < rep.configurations[0].memory.peak);  // half the layers per card
  // Stage 0 sends its output rows forward; stage 1 returns the float32 gradient of its input rows.
  CHECK(f.comm_bytes == 1000 * 64 * 4);
  // Sequential stages: the epoch is at least the single card's compute (plus the hand-over).
  CHECK(two.strategies[0].epoch.seconds > 0.9 * rep.configurations[0].epoch.seconds);
  // More stages than layers, or bf16, are not priced.
  req.configs = {{"rtx3080", 8}};
  req.rank_gpus = {1};
  CHECK(advise(req).configurations[0].strategies.empty());
}

TEST_CASE("when a configuration does not fit, advise names the smallest change of each kind that would") {
  FitRequest req = small_request();
  req.stats.nodes = 2'000'000;
  req.stats.edges = 60'000'000;
  req.stats.features = 100;
  req.stats.classes = 47;
  req.model.layers = 3;
  req.model.hidden = 160;
  req.configs = {{"rtx3080", 1}, {"rtx3080", 2}};
  const FitReport rep = advise(req);
  const FitConfiguration& one = rep.configurations[0];
  REQUIRE_FALSE(one.fits);
  std::map<std::string, FitChange> by_kind;
  for (const auto& ch : one.would_fit) by_kind[ch.kind] = ch;
  for (const char* kind : {"hidden", "layers", "precision", "gpus", "card"}) CHECK_MESSAGE(by_kind.count(kind), kind);
  // Each change really fits the card, and the narrower width is the widest that does.
  const CardCatalogue catalogue = builtin_cards();
  const Card& card = catalogue.find("rtx3080");
  for (const auto& ch : one.would_fit) {
    INFO(ch.change);
    if (ch.kind != "card") CHECK(ch.per_card_bytes <= card.memory_bytes);
    CHECK(ch.seconds > 0);
  }
  ModelSpec m = rep.model;
  const DeviceShape whole = single_device_shape(rep.graph);
  // Widest with the margin a configuration must leave (fit_margin: 2 % of the card or 256 MiB).
  const std::int64_t widest = largest_hidden_within({whole}, m, card.memory_bytes - fit_margin(card),
                                                    card.fixed_overhead_bytes, Backend::kCuda);
  CHECK(by_kind["hidden"].change.rfind("hidden " + std::to_string(widest) + " (from 160)", 0) == 0);
  m.hidden = widest + 1;
  CHECK(estimate_device_memory(whole, m, Backend::kCuda).peak + card.fixed_overhead_bytes + fit_margin(card) >
        card.memory_bytes);
  CHECK(by_kind["card"].per_card_bytes <= builtin_cards().find(by_kind["card"].change.substr(4, by_kind["card"].change.find(' ', 4) - 4)).memory_bytes);
  // The verdict and the JSON carry them; nothing says "none" or "0 layers".
  CHECK(rep.verdict.find("would fit with hidden " + std::to_string(widest)) != std::string::npos);
  CHECK(rep.to_json().at("configurations").at(0).at("would_fit").size() == one.would_fit.size());
  // A configuration that fits has none.
  CHECK(advise(small_request()).configurations[0].would_fit.empty());
}

TEST_CASE("advise prices boundary from statistics: it receives the hop-1 ring and sends less than gather's table") {
  FitRequest req = small_request();
  req.strategies = {Strategy::kGather, Strategy::kBoundary};
  const FitReport rep = advise(req);
  const FitConfiguration& two = rep.configurations[1];
  REQUIRE(two.strategies.size() == 2);
  const auto& gather = two.strategies[0].fit;
  const auto& boundary = two.strategies[1].fit;
  REQUIRE(boundary.strategy == Strategy::kBoundary);
  const auto split = estimate_split_from_counts(rep.graph, 2, rep.model.layers);
  REQUIRE(boundary.shapes.size() == 2);
  for (const auto& shape : boundary.shapes) {
    CHECK(shape.boundary);
    CHECK(shape.recv_rows > 0);
    CHECK(shape.recv_rows <= std::llround(split.halo_per_hop[0] * split.halo_imbalance));
    CHECK(shape.send_rows == shape.recv_rows);
  }
  CHECK(boundary.comm_bytes > 0);
  CHECK(boundary.comm_bytes < gather.comm_bytes);
  CHECK(two.strategies[1].epoch.seconds > 0);
}

TEST_CASE("a model too large for one card is priced streamed through host memory, and a host without the RAM is a no") {
  FitRequest req = products_sized_request();
  req.model.layers = 3;
  req.model.hidden = 1024;
  req.configs = {{"rtx3090", 1}, {"rtx3080", 2}};
  req.rank_gpus = {1};
  req.host_ram_bytes = std::int64_t{128} << 30;
  const FitReport rep = advise(req);
  const FitConfiguration& one = rep.configurations[0];
  REQUIRE_FALSE(one.fits);
  REQUIRE(one.offload.priced);
  CHECK(one.offload.fits);
  CHECK(one.offload.peak + one.card.fixed_overhead_bytes <= one.card.memory_bytes);
  // The host keeps the saved matrices and the dataset twice (as loaded and as the engine's problem).
  CHECK(one.offload.host_ram_bytes > one.offload.host_bytes);
  CHECK(one.offload.seconds >= one.offload.kernel_seconds);
  CHECK(one.offload.seconds > one.epoch.seconds);  // never faster than resident would be
  bool offered = false;
  for (const auto& ch : one.would_fit) offered = offered || ch.kind == "offload";
  CHECK(offered);
  bool ranked = false;
  for (const auto& op : rep.options)
    if (op.card.id == "rtx3090" && op.gpus == 1) {
      ranked = true;
      CHECK(op.fits);
      CHECK(op.offload);
      CHECK(op.label() == "1 x rtx3090 (offload)");
      CHECK(op.seconds == doctest::Approx(one.offload.seconds));
    }
  CHECK(ranked);
  CHECK(rep.verdict.find("streamed through host memory") != std::string::npos);
  CHECK(rep.to_json()["configurations"][0]["offload"]["fits"] == true);

  req.host_ram_bytes = std::int64_t{4} << 30;  // a host without the RAM: no
  const FitReport small_host = advise(req);
  const FitConfiguration& poor = small_host.configurations[0];
  REQUIRE(poor.offload.priced);
  CHECK(poor.offload.fits_card);
  CHECK_FALSE(poor.offload.fits);
  for (const auto& op : small_host.options)
    if (op.card.id == "rtx3090" && op.gpus == 1) CHECK_FALSE(op.fits);
  for (const auto& ch : poor.would_fit) CHECK(ch.kind != "offload");
}

TEST_CASE("fits needs a margin (2 % of the card or 256 MiB), tight below it; lossy drop is not recommended") {
  const CardCatalogue catalogue = builtin_cards();
  const Card& card = catalogue.find("rtx3090");
  CHECK(fit_margin(card) == card.memory_bytes / 50);
  Card small = card;
  small.memory_bytes = std::int64_t{4} << 30;
  CHECK(fit_margin(small) == std::int64_t{256} << 20);
  StrategyFit f;
  f.peak = card.memory_bytes - card.fixed_overhead_bytes - fit_margin(card);  // exactly at the margin: fits
  CHECK(f.fits(card));
  CHECK_FALSE(f.tight(card));
  f.peak += 1;
  CHECK_FALSE(f.fits(card));
  CHECK(f.tight(card));
  f.peak = card.memory_bytes;
  CHECK_FALSE(f.tight(card));

  // Products-sized 3 x 256 on 2 x rtx3080: only drop fits and it loses half the edges under the count model.
  FitRequest req = products_sized_request();
  req.model.layers = 3;
  req.model.hidden = 256;
  req.configs = {{"rtx3090", 1}, {"rtx3080", 2}};
  req.rank_gpus = {1, 2};
  const FitReport rep = advise(req);
  for (const auto& op : rep.options)
    if (op.fits && !op.exact) CHECK(op.lost_fraction <= kDropMaxLostFraction);
  CHECK(rep.verdict.find("take 2 x rtx3080 (drop)") == std::string::npos);
  req.allow_lossy_drop = true;
  const FitReport allowed = advise(req);
  bool lossy_ranked = false;
  for (std::size_t i : allowed.by_epoch_time)
    lossy_ranked = lossy_ranked || (!allowed.options[i].exact && allowed.options[i].lost_fraction > kDropMaxLostFraction);
  CHECK(lossy_ranked);
  // The price column is epochs per hour per $1000.
  for (const auto& op : rep.options)
    if (op.per_kusd()) CHECK(*op.per_kusd() == doctest::Approx(3600.0 / op.seconds / (*op.price() / 1000.0)));
}

TEST_CASE("absurd statistics are refused with their size instead of overflowing into a 'fits'") {
  FitRequest req = small_request();
  req.stats.nodes = 2'000'000'000;
  req.stats.edges = 4'000'000'000;
  req.stats.features = 2'000'000'000;
  req.model.hidden = 2'000'000'000;
  CHECK_THROWS_WITH_AS(advise(req), doctest::Contains("--features"), InvalidInput);
  req.stats.features = 100;
  CHECK_THROWS_WITH_AS(advise(req), doctest::Contains("--hidden"), InvalidInput);
  req.model.hidden = 256;
  req.stats.nodes = std::int64_t{1} << 42;
  CHECK_THROWS_WITH_AS(advise(req), doctest::Contains("--nodes"), InvalidInput);
  req.stats.nodes = 1'000'000'000'000;  // below 2^40 nodes, but 1e12 x 512 x 4 bytes is 2 PB per matrix
  req.model.hidden = 512;
  CHECK_THROWS_WITH_AS(advise(req), doctest::Contains("1 PiB"), InvalidInput);
  req.model.hidden = 256;
  req.stats.nodes = 100'000'000;  // large but real: priced, and nothing fits one card
  const FitReport rep = advise(req);
  CHECK_FALSE(rep.configurations[0].fits);
  for (const auto& op : rep.options) CHECK(op.peak > 0);
}

TEST_CASE("the SpMM term sees the graph: reuse measured from a dataset, inferred from statistics, and said so") {
  FitRequest req = small_request();
  req.configs = {{"h200", 1}};
  req.rank_gpus = {1};
  const auto& ds = testing::cora();
  req.dataset = &ds;
  const FitReport measured = advise(req);
  REQUIRE_FALSE(measured.graph.reuse.empty());
  CHECK(measured.reuse_source.rfind("measured on the graph", 0) == 0);
  // Cora (2,708 nodes) is smaller than half the smallest calibrated graph: outside calibration, and said so.
  REQUIRE_FALSE(measured.outside_calibration.empty());
  CHECK(measured.outside_calibration[0].find("2,708 nodes") != std::string::npos);
  const auto j = measured.to_json();
  CHECK(j["graph"]["reuse"]["hits_by_log2_rows"].size() == measured.graph.reuse.hits.size());
  CHECK(j["calibration_coverage"]["inside"] == false);
  CHECK(j["calibration_coverage"]["families"].size() >= 6);
  // Statistics alone: the reuse comes from the degree distribution, and fit says the band was measured otherwise.
  req.dataset = nullptr;
  req.stats = graph_stats(ds);
  req.stats.reuse = {};
  const FitReport inferred = advise(req);
  CHECK(inferred.reuse_source.rfind("inferred from the degree distribution", 0) == 0);
  bool noted = false;
  for (const auto& n : inferred.outside_calibration) noted = noted || n.find("from statistics alone") != std::string::npos;
  CHECK(noted);
  // A products-sized graph by statistics lies inside the calibrated sizes.
  FitRequest big = products_sized_request();
  big.configs = {{"h200", 1}};
  big.rank_gpus = {1};
  const FitReport inside = advise(big);
  for (const auto& n : inside.outside_calibration) CHECK(n.find("nodes:") == std::string::npos);
}
