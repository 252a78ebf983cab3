// The fit advisor's epoch-time model (partition/fit/cost_model.hpp): the calibration against the held-out H200
// epochs it stores, the SpMM term, and the calibration files.
#include "partition/fit/cost_model.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/error.hpp"
#include "partition/fit/cards.hpp"

using namespace gcnpart;
using namespace gcnpart::partition;

namespace {

/// A graph shape of synthetic SpMM calls: entries per row and the degree ratio E[d^2] / E[d]^2 the L2 estimate takes.
struct SyntheticGraph {
  double degree, degree_ratio;
};

/// Own fp32 SpMM calls at widths 16, 64 and 256 on graphs of 2^scale rows of each shape, timed from the terms
/// `truth` on `card`, each time multiplied by scaled(scale) (1: exact).
CalibrationData timed_calls(const Card& card, const SpmmEfficiency& truth, const std::vector<SyntheticGraph>& graphs,
                            double (*scaled)(double scale)) {
  CalibrationData data;
  data.card = card.id;
  for (const SyntheticGraph& g : graphs)
    for (const double scale : {14.0, 16.0, 18.0, 20.0, 21.0})
      for (const double width : {16.0, 64.0, 256.0}) {
        SpmmSample x;
        x.graph = "g" + std::to_string(static_cast<int>(scale)) + "d" + std::to_string(static_cast<int>(g.degree));
        const double rows = std::pow(2.0, scale);
        x.call = SpmmTerm{width, rows, rows, rows * g.degree};
        x.degree_ratio = g.degree_ratio;
        x.seconds = spmm_call_seconds(x.call, 4, L2Reuse{x.degree_ratio}, card, truth) * scaled(scale);
        data.spmm.push_back(x);
      }
  return data;
}

}  // namespace

TEST_CASE("per-kernel calibration predicts the held-out H200 epochs within the band it stores") {
  const CardCatalogue catalogue = builtin_cards();
  const Card& h200 = catalogue.find("h200");
  const CalibrationData data = builtin_calibration();
  const Calibration cal = calibrate(h200, data);
  std::size_t held_out = 0;
  for (const auto& m : data.epochs) held_out += m.fixes_launch ? 0 : 1;
  REQUIRE(held_out >= 10);
  REQUIRE(cal.points.size() == held_out);
  double worst = 0;
  for (const auto& p : cal.points) {
    worst = std::max(worst, std::fabs(p.error()));
    MESSAGE(p.what << ": measured " << p.measured_seconds * 1e3 << " ms, predicted " << p.predicted_seconds * 1e3
                   << " ms (" << p.error() * 100 << " %)");
  }
  CHECK(cal.max_error() == doctest::Approx(worst));
  // The band gcnpart fit prints (and the README quotes) is the stored figure: it covers every held-out epoch of the
  // file, to the percent (bench/run/fit_validate.sh may raise it from its own held-out runs, never below these), so
  // a recalibration that moves the residual past it fails here until calibration.json says so.
  CHECK(cal.band() == doctest::Approx(data.held_out_residual));
  CHECK(std::round(100 * cal.band()) >= std::round(100 * worst));
  // The SpMM terms are measured per width, for each kind, and the DRAM efficiency grows with the width (wider rows,
  // fuller sectors). Over eight graph families (power-law, uniform, community, meshes in random and natural order,
  // real graphs) the per-width terms with each graph's measured reuse reproduce 90 % of the timed calls within 25 %
  // and every one within 70 % (the worst: narrow rows of meshes in natural order, whose reads nearly all hit L2).
  for (const SpmmEfficiency* t : {&cal.spmm_own, &cal.spmm_cusparse, &cal.spmm_bf16}) {
    REQUIRE(t->gathered.points.size() >= 3);
    CHECK(t->gathered.at(256) > t->gathered.at(64));
    CHECK(t->fixed_seconds >= 0);
  }
  CHECK(cal.profiled);
  CHECK(cal.families.size() >= 6);
  CHECK(cal.l2_share > 0);
  CHECK(cal.l2_share <= 1);
  std::size_t within = 0;
  for (const auto& x : data.spmm) {
    const double t = spmm_call_seconds(x.call, x.bf16 ? 2 : 4, L2Reuse{x.degree_ratio, &x.reuse, cal.l2_share, cal.frequency_blend}, h200,
                                       cal.spmm(x.cusparse, x.bf16));
    const std::string kind = x.cusparse ? "cusparse" : x.bf16 ? "own-bf16" : "own";
    INFO(x.graph << " width " << x.call.width << " " << kind);
    CHECK(std::fabs(t / x.seconds - 1) <= 0.70);
    within += std::fabs(t / x.seconds - 1) <= 0.25 ? 1 : 0;
  }
  CHECK(static_cast<double>(within) >= 0.9 * static_cast<double>(data.spmm.size()));
  CHECK(cal.launch_seconds > 0);
  CHECK(cal.stream_efficiency > 0.8);
  CHECK(cal.fitted);
}

TEST_CASE("the stored band is the leave-one-family-out validation recomputed: fit --check-calibration") {
  const CardCatalogue catalogue = builtin_cards();
  const Card& h200 = catalogue.find("h200");
  const CalibrationData data = builtin_calibration();
  const Calibration cal = calibrate(h200, data);
  const auto rows = check_held_out(h200, data, cal);
  REQUIRE(rows.size() >= 30);  // issue 36: >= 30 held-out configurations...
  std::vector<std::string> families;
  double worst = 0, sum = 0;
  std::size_t within = 0;
  for (const auto& r : rows) {
    if (std::find(families.begin(), families.end(), r.family) == families.end()) families.push_back(r.family);
    worst = std::max({worst, std::fabs(r.error()), std::fabs(r.whole_error())});
    sum += r.error();
    within += std::fabs(r.error()) <= 0.15 ? 1 : 0;
    // The whole calibration's prediction is the sum of its terms (what --check-calibration's JSON lists).
    CHECK(r.whole.seconds ==
          doctest::Approx(r.whole.spmm + r.whole.stream + r.whole.gemm + r.whole.launch + r.whole.comm));
  }
  CHECK(families.size() >= 6);  // ...from >= 6 families
  // The band printed is their worst, rounded up to a whole percent, to the percent.
  CHECK(data.held_out_residual >= worst);
  CHECK(data.held_out_residual < worst + 0.01);
  // What the four validation sets show re-priced with this model (bench/results/h200-2026-12-04-fresh3: the latest
  // set, measured once, 97 % within 15 %; all 138 rows 96 %): no systematic optimism, >= 90 % within 15 %.
  CHECK(std::fabs(sum / static_cast<double>(rows.size())) <= 0.05);
  CHECK(static_cast<double>(within) >= 0.90 * static_cast<double>(rows.size()));
  // The SpMM terms price gathered and streamed DRAM bytes apart: both efficiencies are fitted at every width.
  for (const SpmmEfficiency* t : {&cal.spmm_own, &cal.spmm_bf16}) {
    REQUIRE(t->stream.points.size() == t->gathered.points.size());
    for (const auto& [w, e] : t->stream.points) CHECK(e > 0);
  }
  // The profiled epochs fitted, per storage type, the element-wise efficiency and the in-epoch GEMM and SpMM factors.
  for (const double e : {cal.epoch_fp32.elementwise_efficiency, cal.epoch_bf16.elementwise_efficiency}) {
    CHECK(e > 0.3);
    CHECK(e <= 1.0);
  }
  // bf16's element-wise passes convert (float in, bf16 out): fewer bytes, but not proportionally less time.
  CHECK(cal.epoch_bf16.elementwise_efficiency < cal.epoch_fp32.elementwise_efficiency);
  for (const double f : {cal.epoch_fp32.gemm, cal.epoch_bf16.gemm, cal.epoch_fp32.spmm, cal.epoch_bf16.spmm}) {
    CHECK(f > 0.5);
    CHECK(f < 2.0);
  }
  CHECK(cal.frequency_blend >= 0);
}

TEST_CASE("the profile check sets each profiled epoch's classes beside the terms that price them") {
  const CardCatalogue catalogue = builtin_cards();
  const Card& h200 = catalogue.find("h200");
  const CalibrationData data = builtin_calibration();
  const auto rows = check_profiles(h200, data, calibrate(h200, data));
  REQUIRE(rows.size() == data.profiles.size());
  REQUIRE(rows.size() >= 10);
  int bf16 = 0;
  for (const auto& r : rows) {
    bf16 += r.precision == Precision::kBf16 ? 1 : 0;
    CHECK(r.predicted.seconds > 0);
    // The fitted classes price what the profile measured: "other" (element-wise kernels and launches) within 10 %
    // (bench/README.md), the GEMMs within 25 % (a small mesh's narrow GEMMs are the worst, 18 %).
    INFO(r.what);
    CHECK(std::fabs((r.predicted.stream + r.predicted.launch) / r.other_seconds - 1) < 0.10);
    CHECK(std::fabs(r.predicted.gemm / r.gemm_seconds - 1) < 0.25);
  }
  CHECK(bf16 > 0);
  CHECK(bf16 < static_cast<int>(rows.size()));
  // A fit without profiles keeps the defaults: the copy's efficiency for element-wise kernels, factors of 1.
  CalibrationData bare = data;
  bare.profiles.clear();
  const Calibration plain = calibrate(h200, bare);
  CHECK(plain.epoch_fp32.elementwise_efficiency < 0);
  CHECK(plain.epoch_bf16.elementwise_efficiency < 0);
  CHECK(plain.epoch_fp32.spmm == 1.0);
  CHECK(plain.epoch_bf16.gemm == 1.0);
  // A profile whose classes are absurdly small does not turn the fit into NaN: it is left out (below 0.1 us), and
  // the factors stay finite.
  CalibrationData tiny = data;
  for (auto& p : tiny.profiles) p.gemm_seconds = p.other_seconds = p.spmm_seconds = 1e-320;
  const Calibration t = calibrate(h200, tiny);
  CHECK(std::isfinite(t.epoch_fp32.gemm));
  CHECK(t.epoch_fp32.elementwise_efficiency < 0);  // nothing to fit: the copy's efficiency stands
  CHECK(t.epoch_fp32.gemm == 1.0);
}

TEST_CASE("leaving a family out removes its SpMM calls and epochs, and the calibration then knows fewer families") {
  const CardCatalogue catalogue = builtin_cards();
  const Card& h200 = catalogue.find("h200");
  const CalibrationData data = builtin_calibration();
  const Calibration all = calibrate(h200, data);
  const CalibrationData without = data.without_family("uniform");
  CHECK(without.spmm.size() < data.spmm.size());
  CHECK(without.epochs.size() < data.epochs.size());
  for (const auto& x : without.spmm) CHECK(x.family != "uniform");
  for (const auto& m : without.epochs) CHECK(m.family != "uniform");
  const Calibration lofo = calibrate(h200, without);
  CHECK(lofo.families.size() + 1 == all.families.size());
  CHECK(std::find(lofo.families.begin(), lofo.families.end(), "uniform") == lofo.families.end());
  // Every held-out epoch of the left-out family, predicted without it, stays within the stored band (the band is
  // the worst of these predictions over all families: bench/run/fit_families.sh).
  for (const auto& m : data.epochs) {
    if (m.family != "uniform") continue;
    EpochWork w = epoch_work(single_device_shape(m.graph), m.model);
    w.degree_ratio = m.graph.degree_second_moment / (m.graph.degree_mean * m.graph.degree_mean);
    w.reuse = m.graph.reuse;
    const EpochTime t = predict_epoch_autotuned(w, h200, lofo, Link{"none", 0}, m.model.precision);
    INFO(m.what << ": measured " << m.seconds * 1e3 << " ms, predicted without its family " << t.seconds * 1e3);
    CHECK(std::fabs(t.seconds / m.seconds - 1) <= data.held_out_residual);
  }
}

TEST_CASE("the SpMM fit is non-negative: timings whose plain least squares wants a negative fixed cost") {
  // Calls timed from known terms with no fixed cost, 3 % fast on the small graphs and 3 % slow on the large
  // ones: the unconstrained fit then takes a negative fixed cost. The fit must keep every term >= 0, still follow
  // every call within 5 %, and not fall back to the defaults.
  const CardCatalogue catalogue = builtin_cards();
  const Card& h200 = catalogue.find("h200");
  SpmmEfficiency truth;
  truth.gathered.points = {{16, 0.4}, {64, 0.8}, {256, 1.0}};
  truth.l2_per_sm.points = {{16, 30e9}, {64, 50e9}, {256, 80e9}};
  truth.fixed_seconds = 0;
  const CalibrationData data =
      timed_calls(h200, truth, {{24, 20}}, [](double scale) { return scale < 17 ? 0.97 : 1.03; });
  const Calibration cal = calibrate(h200, data);
  CHECK(cal.spmm_own.fixed_seconds >= 0);
  REQUIRE(cal.spmm_own.gathered.points.size() == 3);  // fitted, not the one-point default
  for (const auto& [w, e] : cal.spmm_own.gathered.points) CHECK(e > 0);
  for (const auto& x : data.spmm) {
    CAPTURE(x.graph);
    CAPTURE(x.call.width);
    const double t = spmm_call_seconds(x.call, 4, L2Reuse{x.degree_ratio}, h200, cal.spmm_own);
    CHECK(std::fabs(t / x.seconds - 1) <= 0.05);
  }
}

TEST_CASE("the SpMM fit prices gathered and streamed DRAM bytes apart") {
  // Calls timed from known terms whose streamed bytes (CSR, scale vectors, output rows) run at a third of the
  // bandwidth and gathered rows at 0.8 of it, on graphs of 4 and 40 entries per row (a mesh's calls are mostly
  // streamed bytes, a dense graph's mostly gathered ones): the fit recovers both efficiencies, and one efficiency for
  // both kinds of bytes (the earlier model) could not follow both graphs.
  const CardCatalogue catalogue = builtin_cards();
  const Card& h200 = catalogue.find("h200");
  SpmmEfficiency truth;
  truth.gathered.points = {{16, 0.5}, {64, 0.8}, {256, 0.9}};
  truth.stream.points = {{16, 0.25}, {64, 0.33}, {256, 0.6}};
  truth.l2_per_sm.points = {{16, 30e9}, {64, 50e9}, {256, 80e9}};
  truth.fixed_seconds = 5e-6;
  const CalibrationData data = timed_calls(h200, truth, {{4, 1.2}, {40, 20}}, [](double) { return 1.0; });
  const Calibration cal = calibrate(h200, data);
  REQUIRE(cal.spmm_own.stream.points.size() == 3);
  for (const double w : {16.0, 64.0, 256.0}) {
    CAPTURE(w);
    CHECK(cal.spmm_own.gathered.at(w) == doctest::Approx(truth.gathered.at(w)).epsilon(0.02));
    CHECK(cal.spmm_own.stream.at(w) == doctest::Approx(truth.stream.at(w)).epsilon(0.02));
  }
  for (const auto& x : data.spmm) {
    CAPTURE(x.graph);
    CAPTURE(x.call.width);
    const double t = spmm_call_seconds(x.call, 4, L2Reuse{x.degree_ratio}, h200, cal.spmm_own);
    CHECK(t / x.seconds == doctest::Approx(1).epsilon(0.01));
  }
  // The bytes split: streamed + gathered = DRAM, the gathered part the input rows L2 does not serve.
  const SpmmBytes b = spmm_call_bytes(SpmmTerm{64, 1e6, 1e6, 4e6}, 4, 0, L2Reuse{1});
  CHECK(b.stream + b.gathered() == doctest::Approx(b.dram));
  CHECK(b.gathered() == doctest::Approx(4e6 * 64 * 4));
}

TEST_CASE("the SpMM term sees the card's L2 and the degree distribution") {
  SpmmTerm call{256, 1e6, 1e6, 3e7};
  const double no_cache = spmm_call_bytes(call, 4, 0, L2Reuse{1}).dram;
  const double small_l2 = spmm_call_bytes(call, 4, 6ll << 20, L2Reuse{1}).dram;
  const double big_l2 = spmm_call_bytes(call, 4, 60ll << 20, L2Reuse{1}).dram;
  const double skewed = spmm_call_bytes(call, 4, 60ll << 20, L2Reuse{40}).dram;
  // What DRAM does not serve, L2 does: the gathered bytes are the same.
  const SpmmBytes a = spmm_call_bytes(call, 4, 0, L2Reuse{1}), b = spmm_call_bytes(call, 4, 60ll << 20, L2Reuse{40});
  CHECK(a.dram + a.l2 == doctest::Approx(b.dram + b.l2));
  CHECK(no_cache > small_l2);
  CHECK(small_l2 > big_l2);
  CHECK(big_l2 > skewed);  // the hot rows of a skewed graph stay cached
  // Uniform access: the hit fraction is the cached share of the rows; a Pareto tail raises it (p^(1/2) at alpha 2).
  CHECK(l2_hit_fraction(1e4, 1e6, 1) == doctest::Approx(0.01));
  CHECK(l2_hit_fraction(1e4, 1e6, 1e6) == doctest::Approx(0.1).epsilon(0.01));
  CHECK(l2_hit_fraction(2e6, 1e6, 40) == doctest::Approx(1));
  // A measured profile replaces the degree estimate: a cache of every row serves everything but the first reads.
  ReuseProfile all;
  all.hits.assign(21, 0.0);
  all.hits[20] = 0.9;
  const L2Reuse measured{40, &all};
  CHECK(measured.hit_fraction(60ll << 20, 256 * 4, 1e6) == doctest::Approx(all.hit_fraction(60.0 * 1024)));
  CHECK(measured.hit_fraction(60ll << 40, 256 * 4, 1e6) == doctest::Approx(0.9));
  CHECK(spmm_call_bytes(call, 4, 60ll << 20, measured).dram > big_l2);  // this profile reuses less than Pareto says
  // At least every input row is read once, however good the cache.
  CHECK(spmm_call_bytes(call, 4, std::int64_t{1} << 40, L2Reuse{40}).dram >= call.cols_in * 256 * 4);
}

TEST_CASE("calibration epochs come from partition/fit/calibration.json and a broken file is refused by field") {
  const auto ms = h200_measurements();
  REQUIRE(ms.size() == 141);  // 3 launch epochs, 36 + 102 held-out (fresh3, then dev / fresh / fresh2)
  CHECK(ms[0].what == "rmat-s12-e4-f64 h16 L2");
  CHECK(ms[0].fixes_launch);   // small RMAT epochs fix the launch cost
  CHECK(!ms[3].fixes_launch);  // bench/run/fit_families.sh's configurations are held out
  CHECK(builtin_calibration().spmm.size() >= 30);
  CHECK(ms[0].graph.nodes == 4096);
  CHECK(ms[0].graph.feature_density == 1.0);
  CHECK(ms[0].seconds > 0);  // a measured launch-bound epoch (about 0.3 ms on the H200)
  CHECK(ms[0].seconds < 2e-3);
  CHECK(!ms[0].cusparse);
  CHECK(ms[3].autotuned);  // "spmm": "auto", as gcnpart train ran them
  CHECK(ms[11].model.precision == Precision::kBf16);  // r16s13 L3 h256 bf16
  CHECK(ms[3].graph.split_sizes[0] == 65536 * 6 / 10);
  CHECK(ms[3].family == "rmat");               // each held-out graph's family and measured reuse are stored
  CHECK_FALSE(ms[3].graph.reuse.empty());
  CHECK_FALSE(ms[3].graph.reuse.static_hits.empty());
  const std::string good = R"({"graphs": {"g": {"nodes": 10, "edges": 9, "features": 4, "classes": 2,
    "feature_density": 1.0, "splits": [5, 2, 3]}}, "measurements": [{"what": "w", "graph": "g", "hidden": 8,
    "layers": 2, "spmm": "own", "precision": "fp32", "seconds": 0.001}]})";
  CHECK(parse_calibration(good, "f.json").size() == 1);
  auto refused = [](const std::string& text, const std::string& needle) {
    try {
      (void)parse_calibration(text, "f.json");
      return false;
    } catch (const InvalidInput& e) {
      const std::string msg = e.what();
      return msg.find("f.json") != std::string::npos && msg.find(needle) != std::string::npos;
    }
  };
  CHECK(refused("{", "JSON"));
  CHECK(refused(R"({"graphs": {}, "measurements": [{"what": "w", "graph": "g"}]})", "graphs.g"));
  std::string no_seconds = good;
  no_seconds.replace(no_seconds.find("\"seconds\""), 9, "\"second\"");
  CHECK(refused(no_seconds, "seconds"));
  std::string bad_precision = good;
  bad_precision.replace(bad_precision.find("fp32"), 4, "fp64");
  CHECK(refused(bad_precision, "precision"));
  std::string bad_kind = good;
  bad_kind.insert(bad_kind.size() - 1, R"(, "spmm": [{"graph": "g", "rows": 10, "entries": 28, "degree_ratio": 1,
    "width": 16, "kind": "mine", "seconds": 1e-5}])");
  try {
    (void)parse_calibration_data(bad_kind, "f.json");
    FAIL("a SpMM sample of unknown kind was accepted");
  } catch (const InvalidInput& e) {
    CHECK(std::string(e.what()).find("spmm[0].kind") != std::string::npos);
  }
}
