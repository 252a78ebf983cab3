// gcnpart fit: does this graph and model fit one card, and which cards and strategies would; gcnpart cards: the
// card catalogue. Memory from partition/memory_model, epoch time from partition/cost_model (calibrated on the H200).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>

#include "kernels/core/error.hpp"
#include "partition/cost_model.hpp"
#include "partition/memory_model.hpp"
#include "tools/cards.hpp"
#include "tools/cli_common.hpp"

namespace gcnpart::cli {

namespace {

using partition::Card;
using partition::DeviceShape;
using partition::GraphStats;
using partition::MemoryEstimate;
using partition::ModelSpec;
using partition::PlanMetrics;
using partition::SplitEstimate;
using partition::Strategy;
using nlohmann::json;

/// fit prices K > 1 devices for the strategies the memory model covers that run on more than one device.
bool priced_for_many(Strategy s) {
  return partition::traits(s).memory_model && partition::traits(s).parts != partition::PartsRule::kOne;
}

constexpr double kMiB = 1048576.0;
/// Where the human-readable report goes: stdout, or stderr when the JSON goes to stdout (--json -).
FILE* g_out = stdout;

struct FitOptions {
  DataOptions data;
  // Statistics instead of DATA.
  std::int64_t nodes = 0, edges = 0, features = 0, classes = 0, train_nodes = -1, isolated = -1;
  double feature_density = 1.0, degree_m2 = 0;
  // Cards and GPUs: --card and --gpus pair up in order.
  std::vector<std::string> cards;
  std::vector<int> gpus;
  std::vector<std::pair<std::string, int>> configs;  ///< (card id, GPUs) in command-line order
  std::string rank_gpus = "1,2,4";
  std::string name = "the graph";
  std::string cards_file;
  // Model.
  int layers = 2;
  std::int64_t hidden = 16;
  float dropout = 0.5f;
  std::string precision = "fp32", spmm = "auto";
  bool tf32 = false;
  double sparse_below = 0.1;
  // Split.
  std::string partitioner = "metis", strategies = "drop,halo,gather";
  std::int64_t samples = 0;
  std::uint64_t seed = 1;
  std::string json;
};

std::vector<int> parse_int_list(const std::string& text, const std::string& parameter) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      std::size_t used = 0;
      const int v = std::stoi(item, &used);
      if (used != item.size() || v < 1 || v > 1024) throw std::invalid_argument(item);
      out.push_back(v);
    } catch (const std::exception&) {
      throw InvalidInput::parameter(parameter, text, "a comma-separated list of GPU counts in 1..1024");
    }
  }
  if (out.empty()) throw InvalidInput::parameter(parameter, text, "at least one GPU count");
  return out;
}

std::string ms(double seconds) {
  char b[32];
  std::snprintf(b, sizeof b, seconds < 0.01 ? "%.3f ms" : "%.1f ms", 1e3 * seconds);
  return b;
}
std::string pct(double x, int digits = 1) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f %%", digits, 100 * x);
  return b;
}
std::string gib(double bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.2f GiB", bytes / (kMiB * 1024));
  return bytes >= kMiB * 1024 ? std::string(b) : human_bytes(bytes);
}

json category_json(const partition::CategoryBytes& c) {
  json j = json::object();
  for (int i = 0; i < static_cast<int>(MemoryCategory::kCount); ++i)
    j[memory_category_name(static_cast<MemoryCategory>(i))] = c[static_cast<std::size_t>(i)];
  return j;
}

std::string breakdown_text(const MemoryEstimate& m) {
  std::vector<std::pair<std::int64_t, std::string>> parts;
  for (int i = 0; i < static_cast<int>(MemoryCategory::kCount); ++i)
    if (m.at_peak[static_cast<std::size_t>(i)] > 0)
      parts.emplace_back(m.at_peak[static_cast<std::size_t>(i)], memory_category_name(static_cast<MemoryCategory>(i)));
  std::sort(parts.rbegin(), parts.rend());
  std::string s;
  for (const auto& [b, name] : parts) s += (s.empty() ? "" : ", ") + name + " " + human_bytes(static_cast<double>(b));
  return s;
}

/// A split of the graph over K devices under one strategy, with its memory and communication.
struct StrategyFit {
  Strategy strategy = Strategy::kSingle;
  int parts = 1;
  std::string method;              ///< where the split figures come from
  PlanMetrics metrics;
  std::vector<DeviceShape> shapes;
  std::vector<MemoryEstimate> memory;
  int worst = 0;                   ///< device with the largest peak
  std::int64_t peak = 0;           ///< largest tracked peak over devices
  std::int64_t peak_error = 0;     ///< +- bytes from the split estimate's error
  std::int64_t comm_bytes = 0;     ///< largest bytes sent per epoch over devices
  double halo_factor = 1;          ///< replication factor: local nodes summed / N
  double halo_error = 0;           ///< relative
};

struct FitContext {
  FitOptions o;
  ModelSpec model;
  GraphStats stats;
  bool from_data = false;
  datasets::Dataset ds;
  CardCatalogue cat;
  partition::Calibration cal;
  std::vector<Strategy> strategies;
  std::map<int, std::vector<StrategyFit>> splits;  ///< per K > 1
  StrategyFit single;
};

StrategyFit fit_from_shapes(Strategy s, int parts, std::vector<DeviceShape> shapes, const ModelSpec& model) {
  StrategyFit f;
  f.strategy = s;
  f.parts = parts;
  f.shapes = std::move(shapes);
  for (std::size_t d = 0; d < f.shapes.size(); ++d) {
    f.memory.push_back(partition::estimate_device_memory(f.shapes[d], model, Backend::kCuda));
    if (f.memory.back().peak > f.peak) {
      f.peak = f.memory.back().peak;
      f.worst = static_cast<int>(d);
    }
    f.comm_bytes = std::max(f.comm_bytes, partition::comm_bytes_per_epoch(f.shapes[d], model));
  }
  return f;
}

/// Splits for K devices: exact plan metrics from DATA, a sampled estimate (--samples), or the count model.
std::vector<StrategyFit> split_fits(FitContext& c, int k) {
  std::vector<StrategyFit> out;
  std::optional<partition::Partition> part;
  if (c.from_data) {
    partition::PartitionOptions popt;
    popt.method = c.o.partitioner == "random" ? partition::Partitioner::kRandom
                  : c.o.partitioner == "range" ? partition::Partitioner::kRange
                                               : partition::Partitioner::kMetis;
    popt.seed = c.o.seed;
    part = partition::partition_graph(c.ds.graph, k, popt);
  }
  std::optional<SplitEstimate> est;
  if (!c.from_data) est = partition::estimate_split_from_counts(c.stats, k, c.model.layers);
  else if (c.o.samples > 0) est = partition::estimate_split_sampled(c.ds.graph, *part, c.model.layers, c.o.samples, c.o.seed);
  for (Strategy s : c.strategies) {
    StrategyFit f;
    PlanMetrics m;
    double halo_err = 0, entries_err = 0;
    std::string method;
    if (est) {
      m = est->metrics(s, c.stats);
      method = est->method;
      if (s == Strategy::kHalo) {
        for (double e : est->halo_per_hop_error) halo_err = std::max(halo_err, e);
        entries_err = est->local_entries_halo_error;
      }
    } else {
      m = partition::plan_metrics(c.ds.graph, s, *part, c.model.layers);
      method = "exact plan metrics (" + c.o.partitioner + " partition)";
    }
    f = fit_from_shapes(s, k, partition::device_shapes(m, s, k, c.stats), c.model);
    f.metrics = m;
    f.method = method;
    f.halo_factor = m.replication_factor;
    f.halo_error = halo_err;
    if (est && s == Strategy::kHalo && (halo_err > 0 || entries_err > 0)) {
      // Error of the peak: the same split with the halo and its entries larger by their relative errors.
      SplitEstimate hi = *est;
      for (auto& h : hi.halo_per_hop) h *= 1 + halo_err;
      hi.local_entries_halo *= 1 + entries_err;
      hi.halo_imbalance = est->halo_imbalance;
      const StrategyFit up = fit_from_shapes(s, k, partition::device_shapes(hi.metrics(s, c.stats), s, k, c.stats), c.model);
      f.peak_error = std::max<std::int64_t>(0, up.peak - f.peak);
    }
    out.push_back(std::move(f));
  }
  return out;
}

/// Predicted epoch of a fit on K cards: the slowest device; the SpMM as the engine would choose it.
partition::EpochTime epoch_of(const FitContext& c, const StrategyFit& f, const Card& card) {
  partition::EpochTime worst;
  const auto link = partition::link_for(card, f.parts);
  const Precision math = c.model.precision;
  for (const auto& shape : f.shapes) {
    const auto work = partition::epoch_work(shape, c.model);
    partition::EpochTime t;
    const bool gather = shape.gather;  // the gather aggregation runs gcnpart's SpMM only
    if (c.o.spmm == "own" || gather) t = partition::predict_epoch(work, card, c.cal, link, false, math);
    else if (c.o.spmm == "cusparse") t = partition::predict_epoch(work, card, c.cal, link, true, math);
    else {
      const auto a = partition::predict_epoch(work, card, c.cal, link, false, math);
      const auto b = partition::predict_epoch(work, card, c.cal, link, true, math);
      t = a.seconds <= b.seconds ? a : b;  // autotuning keeps the faster
    }
    if (t.seconds > worst.seconds) worst = t;
  }
  return worst;
}

bool fits(const StrategyFit& f, const Card& card) { return f.peak + card.fixed_overhead_bytes <= card.memory_bytes; }

/// Largest hidden width (with the given layers) and layer count (with the given hidden) that fit one card.
std::pair<std::int64_t, int> largest_single(const FitContext& c, const Card& card) {
  auto single_fits = [&](std::int64_t hidden, int layers) {
    ModelSpec m = c.model;
    m.hidden = hidden;
    m.layers = layers;
    const auto e = partition::estimate_device_memory(c.single.shapes.front(), m, Backend::kCuda);
    return e.peak + card.fixed_overhead_bytes <= card.memory_bytes;
  };
  std::int64_t lo = 0, hi = std::int64_t{1} << 24;
  while (lo < hi) {  // largest hidden in [0, 2^24] that fits (0: none)
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (single_fits(mid, c.model.layers)) lo = mid;
    else hi = mid - 1;
  }
  int layers = 0;
  while (layers < 64 && single_fits(c.model.hidden, layers + 1)) ++layers;
  return {lo, layers};
}

/// One option of the ranking: a card, a GPU count and the strategy that runs it best.
struct Option {
  const Card* card = nullptr;
  int gpus = 1;
  const StrategyFit* fit = nullptr;
  bool fits = false, exact = true;
  double seconds = 0;
  std::string link;
  [[nodiscard]] std::optional<double> price() const {
    if (!card->launch_price_usd) return std::nullopt;
    return *card->launch_price_usd * gpus;
  }
  /// Epochs per second per 1000 USD of launch price.
  [[nodiscard]] std::optional<double> per_kusd() const {
    const auto p = price();
    if (!p || seconds <= 0) return std::nullopt;
    return 1000.0 / (seconds * *p);
  }
  [[nodiscard]] std::string label() const {
    std::string s = std::to_string(gpus) + " x " + card->id;
    if (gpus > 1) s += " (" + std::string(to_string(fit->strategy)) + ")";
    return s;
  }
};

/// The best way to run on `gpus` of `card`: single for one GPU; for more, the fastest exact strategy that fits,
/// else drop if it fits (inexact), else the smallest-peak strategy (does not fit).
Option best_option(const FitContext& c, const Card& card, int gpus) {
  Option o;
  o.card = &card;
  o.gpus = gpus;
  if (gpus == 1) {
    o.fit = &c.single;
    o.fits = fits(c.single, card);
    o.seconds = epoch_of(c, c.single, card).seconds;
    o.link = "none";
    return o;
  }
  const auto& list = c.splits.at(gpus);
  const StrategyFit* best = nullptr;
  double best_t = 0;
  for (bool exact : {true, false}) {
    for (const auto& f : list) {
      if (partition::traits(f.strategy).exact != exact || !fits(f, card)) continue;
      const double t = epoch_of(c, f, card).seconds;
      if (best == nullptr || t < best_t) {
        best = &f;
        best_t = t;
      }
    }
    if (best != nullptr) break;
  }
  o.fits = best != nullptr;
  if (best == nullptr)
    for (const auto& f : list)
      if (best == nullptr || f.peak < best->peak) best = &f;
  o.fit = best;
  o.exact = partition::traits(best->strategy).exact;
  o.seconds = epoch_of(c, *best, card).seconds;
  o.link = partition::link_for(card, gpus).kind;
  return o;
}

json memory_json(const MemoryEstimate& m, const Card& card) {
  return {{"tracked_peak_bytes", m.peak},
          {"fixed_overhead_bytes", card.fixed_overhead_bytes},
          {"fixed_overhead_measured", card.fixed_overhead_measured},
          {"total_bytes", m.peak + card.fixed_overhead_bytes},
          {"card_bytes", card.memory_bytes},
          {"headroom_bytes", card.memory_bytes - m.peak - card.fixed_overhead_bytes},
          {"at_peak_by_category", category_json(m.at_peak)},
          {"largest_workspace", {{"bytes", m.transient}, {"what", m.transient_what}}},
          {"cached_transient_bytes", m.cached},
          {"driver_used_bytes_predicted", m.peak - m.transient + m.cached + card.fixed_overhead_bytes},
          {"sparse_input_features", m.sparse_input}};
}

json epoch_json(const partition::EpochTime& t, const partition::Calibration& cal) {
  return {{"seconds", t.seconds}, {"relative_error", cal.max_error()}, {"bound", t.bound},
          {"terms_seconds", {{"spmm", t.spmm}, {"elementwise", t.stream}, {"gemm", t.gemm}, {"launch", t.launch},
                             {"communication", t.comm}}}};
}

void run_fit(FitOptions& o, bool data_given) {
  g_out = o.json == "-" ? stderr : stdout;
  FitContext c;
  c.o = o;
  c.cat = load_cards(o.cards_file);
  c.cal = partition::calibrate(c.cat.find("h200", "the calibration card (h200)"), partition::h200_measurements());
  const std::vector<int> rank_gpus = parse_int_list(o.rank_gpus, "--rank-gpus");
  {
    std::stringstream ss(o.strategies);
    std::string item;
    while (std::getline(ss, item, ',')) {
      const Strategy s = from_string<partition::Strategy>(item, "--strategies");
      if (!priced_for_many(s)) {
        std::string names;
        for (const auto& n : partition::strategy_names_where([](const auto& t) { return priced_for_many(t.value); }))
          names += (names.empty() ? "" : ", ") + n;
        throw InvalidInput::parameter("--strategies", o.strategies, "a list of " + names);
      }
      c.strategies.push_back(s);
    }
    if (c.strategies.empty()) throw InvalidInput::parameter("--strategies", o.strategies, "at least one strategy");
  }
  // The graph: a dataset, or statistics alone.
  const bool stats_only = o.nodes > 0 || o.edges > 0 || o.features > 0 || o.classes > 0;
  if (stats_only && data_given)
    throw InvalidInput::parameter("DATA", o.data.path, "either DATA or --nodes/--edges/--features/--classes, not both");
  if (stats_only) {
    c.stats.name = o.name;
    c.stats.nodes = o.nodes;
    c.stats.edges = o.edges;
    c.stats.features = o.features;
    c.stats.classes = o.classes;
    c.stats.feature_density = o.feature_density;
    c.stats.degree_second_moment = o.degree_m2;
    c.stats.isolated = o.isolated;
    if (o.train_nodes >= 0) c.stats.split_sizes = {o.train_nodes, 0, 0};
    c.stats.validate();
    c.stats.degree_mean = 2.0 * static_cast<double>(o.edges) / static_cast<double>(o.nodes);
  } else {
    c.ds = load_data(o.data);
    if (!c.ds.has_features() || !c.ds.has_labels())
      throw InvalidInput(InputLocation{c.ds.name, 0, 0}, "dataset has no features or labels", "",
                         "both (for a structure-only graph pass --synthetic-features F --synthetic-classes C)");
    c.stats = partition::graph_stats(c.ds);
    c.from_data = true;
  }
  c.model.layers = o.layers;
  c.model.hidden = o.hidden;
  c.model.features = c.stats.features;
  c.model.classes = c.stats.classes;
  c.model.dropout = o.dropout > 0;
  c.model.sparse_features_below = o.sparse_below;
  // --tf32 turns fp32's GEMMs into TF32 ones (bf16 keeps its bf16 GEMMs); reports print --precision as given.
  c.model.precision = from_string<Precision>(o.precision, "--precision");
  if (o.tf32 && c.model.precision == Precision::kFp32) c.model.precision = Precision::kTf32;
  c.model.spmm = from_string<SpmmAlgo>(o.spmm, "--spmm");
  c.model.validate();

  // Configurations asked for: --card / --gpus pairs (default: the project's question).
  struct Config {
    const Card* card;
    int gpus;
  };
  std::vector<Config> configs;
  for (const auto& [id, g] : o.configs) {
    if (g < 1 || g > 1024) throw InvalidInput::parameter("--gpus", std::to_string(g), "1..1024");
    configs.push_back({&c.cat.find(id.empty() ? "rtx3080" : id), g});
  }
  if (configs.empty() || (configs.size() == 1 && o.configs.front().first.empty()))
    configs = {{&c.cat.find("rtx3090"), 1}, {&c.cat.find("rtx3080"), configs.empty() ? 2 : configs.front().gpus}};

  // Memory for one device and for every K.
  c.single = fit_from_shapes(Strategy::kSingle, 1,
                             {c.from_data ? partition::single_device_shape(c.ds) : partition::single_device_shape(c.stats)},
                             c.model);
  c.single.method = "whole graph";
  std::set<int> ks;
  for (const auto& cf : configs)
    if (cf.gpus > 1) ks.insert(cf.gpus);
  for (int k : rank_gpus)
    if (k > 1) ks.insert(k);
  for (int k : ks) {
    if (k > c.stats.nodes) throw InvalidInput::parameter("--gpus", std::to_string(k), "at most the number of nodes");
    c.splits[k] = split_fits(c, k);
  }

  // ---- report
  const auto dims = c.model.dims();
  std::string dims_text;
  for (auto d : dims) dims_text += (dims_text.empty() ? "" : " -> ") + std::to_string(d);
  std::fprintf(g_out, "graph        %s: %s nodes, %s undirected edges, %lld features (%.2f %% non-zero), %lld classes%s\n",
              c.stats.name.c_str(), with_commas(c.stats.nodes).c_str(), with_commas(c.stats.edges).c_str(),
              static_cast<long long>(c.stats.features), 100 * c.stats.feature_density,
              static_cast<long long>(c.stats.classes), c.from_data ? "" : " (statistics only)");
  std::fprintf(g_out, "model        GCN %s, %s parameters, dropout %s, %s, Adam; SpMM %s%s\n", dims_text.c_str(),
              with_commas(c.model.parameters()).c_str(), c.model.dropout ? "on" : "off",
              o.precision.c_str(), o.spmm.c_str(),
              c.model.precision == Precision::kBf16 ? " (bf16 is a projection: the engine trains in fp32)" : "");
  const double cal_err = c.cal.max_error();
  std::fprintf(g_out, "epoch time   roofline calibrated on %zu H200 epochs, largest residual %s (shown as +-); other cards use\n"
              "             the same efficiency factors (extrapolated, not measured)\n",
              c.cal.points.size(), pct(cal_err, 0).c_str());
  if (!ks.empty()) std::fprintf(g_out, "split        %s\n", c.splits.begin()->second.front().method.c_str());

  json j;
  j["command"] = "fit";
  j["graph"] = {{"name", c.stats.name},
                {"source", c.from_data ? "dataset" : "statistics"},
                {"nodes", c.stats.nodes},
                {"edges", c.stats.edges},
                {"features", c.stats.features},
                {"classes", c.stats.classes},
                {"feature_density", c.stats.feature_density},
                {"degree_mean", c.stats.degree_mean},
                {"degree_second_moment", c.stats.degree_second_moment}};
  j["model"] = {{"dims", dims},
                {"layers", c.model.layers},
                {"hidden", c.model.hidden},
                {"parameters", c.model.parameters()},
                {"dropout", c.model.dropout},
                {"precision", o.precision},
                {"spmm", o.spmm},
                {"tf32", o.tf32},
                {"optimizer", "adam"}};
  json points = json::array();
  for (const auto& p : c.cal.points)
    points.push_back({{"what", p.what}, {"measured_seconds", p.measured_seconds},
                      {"predicted_seconds", p.predicted_seconds}, {"relative_error", p.error()}});
  j["calibration"] = {{"source", c.cal.source},
                      {"max_relative_error", cal_err},
                      {"factors",
                       {{"spmm_own_efficiency", c.cal.spmm_own_efficiency},
                        {"spmm_cusparse_efficiency", c.cal.spmm_cusparse_efficiency},
                        {"spmm_bf16_efficiency", c.cal.spmm_bf16_efficiency},
                        {"stream_efficiency", c.cal.stream_efficiency},
                        {"gemm_efficiency", c.cal.gemm_efficiency},
                        {"launch_seconds", c.cal.launch_seconds},
                        {"step_seconds", c.cal.step_seconds},
                        {"link_efficiency", c.cal.link_efficiency},
                        {"collective_seconds", c.cal.collective_seconds}}},
                      {"points", points}};

  json configs_json = json::array();
  for (const auto& cf : configs) {
    const Card& card = *cf.card;
    json cj = {{"card", card.id}, {"name", card.name}, {"gpus", cf.gpus}, {"card_bytes", card.memory_bytes}};
    std::fprintf(g_out, "\n== %d x %s (%s each, %s overhead per GPU%s)\n", cf.gpus, card.name.c_str(),
                gib(static_cast<double>(card.memory_bytes)).c_str(),
                human_bytes(static_cast<double>(card.fixed_overhead_bytes)).c_str(),
                card.fixed_overhead_measured ? ", measured" : ", default");
    if (cf.gpus == 1) {
      const MemoryEstimate& m = c.single.memory.front();
      const bool ok = fits(c.single, card);
      const std::int64_t total = m.peak + card.fixed_overhead_bytes;
      const auto t = epoch_of(c, c.single, card);
      const auto [max_hidden, max_layers] = largest_single(c, card);
      std::fprintf(g_out, "memory       %s tracked + %s fixed = %s of %s: %s, headroom %s\n",
                  gib(static_cast<double>(m.peak)).c_str(), gib(static_cast<double>(card.fixed_overhead_bytes)).c_str(),
                  gib(static_cast<double>(total)).c_str(), gib(static_cast<double>(card.memory_bytes)).c_str(),
                  ok ? "FITS" : "DOES NOT FIT", gib(static_cast<double>(card.memory_bytes - total)).c_str());
      std::fprintf(g_out, "breakdown    %s; largest workspace %s (%s)\n", breakdown_text(m).c_str(),
                  human_bytes(static_cast<double>(m.transient)).c_str(), m.transient_what.c_str());
      std::fprintf(g_out, "largest      hidden %s with %d layers; %d layers with hidden %lld\n",
                  max_hidden > 0 ? with_commas(max_hidden).c_str() : "none", c.model.layers, max_layers,
                  static_cast<long long>(c.model.hidden));
      std::fprintf(g_out, "epoch        %s +- %s (bound by %s)\n", ms(t.seconds).c_str(), pct(cal_err, 0).c_str(),
                  t.bound.c_str());
      cj["single"] = {{"fits", ok}, {"memory", memory_json(m, card)}, {"epoch", epoch_json(t, c.cal)},
                      {"largest_hidden", max_hidden}, {"largest_layers", max_layers}};
    } else {
      std::fprintf(g_out, "%-8s %22s %12s %5s %22s %14s %12s %18s\n", "strategy", "peak/card", "+fixed", "fits",
                  "lost edges", "halo factor", "comm/epoch", "epoch");
      json opts = json::array();
      for (const auto& f : c.splits.at(cf.gpus)) {
        const bool ok = fits(f, card);
        const auto t = epoch_of(c, f, card);
        std::string peak = gib(static_cast<double>(f.peak));
        if (f.peak_error > 0) peak += " +" + gib(static_cast<double>(f.peak_error));
        std::string halo = std::to_string(f.halo_factor).substr(0, 5);
        if (f.halo_error > 0) halo += " +-" + pct(f.halo_error, 0);
        char lost[48];
        std::snprintf(lost, sizeof lost, "%s (%.1f%%)", with_commas(f.metrics.lost_edges).c_str(),
                      100 * f.metrics.lost_fraction);
        std::fprintf(g_out, "%-8s %22s %12s %5s %22s %14s %12s %18s\n", to_string(f.strategy), peak.c_str(),
                    gib(static_cast<double>(f.peak + card.fixed_overhead_bytes)).c_str(), ok ? "yes" : "NO", lost,
                    halo.c_str(), human_bytes(static_cast<double>(f.comm_bytes)).c_str(),
                    (ms(t.seconds) + " +-" + pct(cal_err, 0)).c_str());
        opts.push_back({{"strategy", to_string(f.strategy)},
                        {"exact", partition::traits(f.strategy).exact},
                        {"fits", ok},
                        {"split_source", f.method},
                        {"per_card_peak_bytes", f.peak},
                        {"per_card_peak_error_bytes", f.peak_error},
                        {"worst_device", f.worst},
                        {"memory", memory_json(f.memory[static_cast<std::size_t>(f.worst)], card)},
                        {"lost_edges", f.metrics.lost_edges},
                        {"lost_fraction", f.metrics.lost_fraction},
                        {"edge_cut", f.metrics.edge_cut},
                        {"halo_factor", f.halo_factor},
                        {"halo_per_hop_worst_device",
                         f.metrics.halo_per_hop.empty() ? json::array()
                                                        : json(f.metrics.halo_per_hop[static_cast<std::size_t>(f.worst)])},
                        {"halo_factor_relative_error", f.halo_error},
                        {"comm_bytes_per_epoch", f.comm_bytes},
                        {"link", partition::link_for(card, cf.gpus).kind},
                        {"epoch", epoch_json(t, c.cal)}});
      }
      std::fprintf(g_out, "link         %s between the cards\n", partition::link_for(card, cf.gpus).kind.c_str());
      cj["strategies"] = opts;
    }
    configs_json.push_back(cj);
  }
  j["configurations"] = configs_json;

  // Ranking over the catalogue.
  std::vector<Option> options;
  for (const auto& card : c.cat.cards)
    for (int k : rank_gpus) options.push_back(best_option(c, card, k));
  std::vector<const Option*> by_time, by_dollar;
  for (const auto& op : options)
    if (op.fits) {
      by_time.push_back(&op);
      if (op.per_kusd()) by_dollar.push_back(&op);
    }
  std::sort(by_time.begin(), by_time.end(), [](auto* a, auto* b) { return a->seconds < b->seconds; });
  std::sort(by_dollar.begin(), by_dollar.end(), [](auto* a, auto* b) { return *a->per_kusd() > *b->per_kusd(); });
  auto option_json = [&](const Option& op) {
    json oj = {{"option", op.label()}, {"card", op.card->id}, {"gpus", op.gpus},
               {"strategy", to_string(op.fit->strategy)}, {"exact", op.exact}, {"fits", op.fits},
               {"per_card_peak_bytes", op.fit->peak}, {"epoch_seconds", op.seconds},
               {"epoch_relative_error", cal_err}, {"link", op.link}};
    oj["launch_price_usd"] = op.price() ? json(*op.price()) : json(nullptr);
    oj["epochs_per_second_per_1000_usd"] = op.per_kusd() ? json(*op.per_kusd()) : json(nullptr);
    return oj;
  };
  const std::size_t shown = 10;
  std::fprintf(g_out, "\n== fastest options that fit (%zu of %zu; GPUs %s; exact strategies first, drop only if nothing exact fits)\n",
              std::min(shown, by_time.size()), options.size(), o.rank_gpus.c_str());
  for (std::size_t i = 0; i < std::min(shown, by_time.size()); ++i)
    std::fprintf(g_out, "%2zu. %-28s %12s +-%s  peak/card %s%s\n", i + 1, by_time[i]->label().c_str(),
                ms(by_time[i]->seconds).c_str(), pct(cal_err, 0).c_str(),
                gib(static_cast<double>(by_time[i]->fit->peak)).c_str(),
                by_time[i]->exact ? "" : "  (inexact: drop loses edges)");
  std::fprintf(g_out, "\n== most epochs per launch dollar (cards without a published price left out)\n");
  for (std::size_t i = 0; i < std::min(shown, by_dollar.size()); ++i)
    std::fprintf(g_out, "%2zu. %-28s %8.1f epochs/s per $1000  ($%s, %s per epoch)\n", i + 1, by_dollar[i]->label().c_str(),
                *by_dollar[i]->per_kusd(), with_commas(std::llround(*by_dollar[i]->price())).c_str(),
                ms(by_dollar[i]->seconds).c_str());
  json rank_time = json::array(), rank_dollar = json::array(), all = json::array();
  for (auto* op : by_time) rank_time.push_back(option_json(*op));
  for (auto* op : by_dollar) rank_dollar.push_back(option_json(*op));
  for (const auto& op : options) all.push_back(option_json(op));
  j["ranking"] = {{"by_epoch_time", rank_time}, {"by_epochs_per_dollar", rank_dollar}, {"all_options", all}};

  // Verdict: the first two configurations side by side.
  std::ostringstream v;
  const Option a = best_option(c, *configs[0].card, configs[0].gpus);
  auto describe = [&](const Option& op) {
    std::ostringstream s;
    const Card& card = *op.card;
    s << op.gpus << " x " << card.name;
    if (op.gpus > 1) s << " (" << to_string(op.fit->strategy) << ")";
    s << " needs " << gib(static_cast<double>(op.fit->peak + card.fixed_overhead_bytes)) << " per card of "
      << gib(static_cast<double>(card.memory_bytes));
    if (op.fits) {
      s << " and runs an epoch in about " << ms(op.seconds) << " (+-" << pct(cal_err, 0) << ")";
      if (op.gpus > 1)
        s << ", sending " << human_bytes(static_cast<double>(op.fit->comm_bytes)) << " per epoch over " << op.link;
      if (!op.exact) s << ", but drop loses " << pct(op.fit->metrics.lost_fraction) << " of the edges";
    } else {
      s << ": it does not fit";
    }
    return s.str();
  };
  v << "For " << c.stats.name << " (" << with_commas(c.stats.nodes) << " nodes, " << with_commas(c.stats.edges)
    << " edges, " << c.stats.features << " features) and a " << c.model.layers << "-layer GCN of width "
    << c.model.hidden << ": " << describe(a);
  if (configs.size() >= 2) {
    const Option b = best_option(c, *configs[1].card, configs[1].gpus);
    v << "; " << describe(b) << ". ";
    if (a.fits && b.fits) {
      const Option& fast = a.seconds <= b.seconds ? a : b;
      const Option& slow = a.seconds <= b.seconds ? b : a;
      const double ratio = slow.seconds / fast.seconds;
      v << std::fixed << std::setprecision(2) << fast.label() << " is faster by " << ratio << "x";
      if (a.price() && b.price())
        v << std::setprecision(1) << "; at launch prices ($" << with_commas(std::llround(*a.price())) << " vs $"
          << with_commas(std::llround(*b.price())) << ") that is " << *a.per_kusd() << " vs " << *b.per_kusd()
          << " epochs/s per $1000";
      // Within the calibration error the speeds are a tie: then the one at least 10 % cheaper, else fewer cards.
      const Option* pick = &fast;
      if (ratio < 1 + cal_err) {
        const Option* fewer = a.gpus <= b.gpus ? &a : &b;
        pick = fewer;
        if (a.price() && b.price() && std::fabs(*a.price() / *b.price() - 1) >= 0.1)
          pick = *a.price() < *b.price() ? &a : &b;
        v << ". Verdict: the speeds are within the model's error (+-" << pct(cal_err, 0) << "); take "
          << pick->label() << (pick == fewer ? " (fewer cards" : " (cheaper");
        v << (pick->exact ? ")" : "; drop is inexact: it trains without the cut edges)");
      } else {
        v << ". Verdict: take " << pick->label();
        if (!pick->exact) v << " (drop is inexact: it trains without the cut edges)";
      }
      if (pick->gpus == 1) v << "; one card also needs no partitioning and no communication";
      v << ".";
    } else if (a.fits || b.fits) {
      const Option& ok = a.fits ? a : b;
      v << "Verdict: only " << ok.label() << " fits this model.";
    } else {
      v << "Verdict: neither fits.";
      if (!by_time.empty()) {
        v << " The fastest option that fits is " << by_time.front()->label() << " (" << ms(by_time.front()->seconds)
          << ")";
        if (!by_dollar.empty()) v << "; the most epochs per dollar, " << by_dollar.front()->label();
        v << ".";
      } else {
        v << " Nothing in the catalogue fits with " << o.rank_gpus
          << " GPUs: reduce the hidden width or the layers, or try --rank-gpus with more GPUs.";
      }
    }
  }
  if (configs.size() == 1) {
    v << ". Verdict: " << (a.fits ? "it fits" : "it does not fit");
    if (!by_time.empty())
      v << "; the fastest option that fits is " << by_time.front()->label() << " (" << ms(by_time.front()->seconds)
        << ")";
    if (!by_dollar.empty()) v << ", the most epochs per launch dollar " << by_dollar.front()->label();
    v << ".";
  }
  std::fprintf(g_out, "\nverdict      %s\n", v.str().c_str());
  j["verdict"] = v.str();
  if (!o.json.empty()) write_json(o.json, j);
}

void run_cards(const std::string& file, const std::string& json_path) {
  g_out = json_path == "-" ? stderr : stdout;
  const CardCatalogue cat = load_cards(file);
  std::fprintf(g_out, "%-13s %-26s %9s %8s %7s %7s %7s %-22s %6s %7s %9s\n", "id", "name", "memory", "GB/s", "FP32", "TF32",
              "BF16", "link", "W", "USD", "overhead");
  json cards = json::array();
  for (const auto& c : cat.cards) {
    std::string link = "PCIe " + std::to_string(c.pcie_generation);
    if (c.nvlink_gbs > 0) {
      char b[32];
      std::snprintf(b, sizeof b, " + NVLink %g", c.nvlink_gbs);
      link += b;
    }
    char tf32[16], bf16[16];
    std::snprintf(tf32, sizeof tf32, c.tf32_tflops > 0 ? "%.1f" : "-", c.tf32_tflops);
    std::snprintf(bf16, sizeof bf16, c.bf16_tflops > 0 ? "%.1f" : "-", c.bf16_tflops);
    std::fprintf(g_out, "%-13s %-26s %6.1f GiB %8.0f %7.1f %7s %7s %-22s %6.0f %7s %6.0f MiB%s\n", c.id.c_str(),
                c.name.substr(0, 26).c_str(), static_cast<double>(c.memory_bytes) / (kMiB * 1024),
                c.memory_bandwidth_gbs, c.fp32_tflops, tf32, bf16, link.c_str(), c.board_power_w,
                c.launch_price_usd ? with_commas(std::llround(*c.launch_price_usd)).c_str() : "n/a",
                static_cast<double>(c.fixed_overhead_bytes) / kMiB, c.fixed_overhead_measured ? "*" : "");
    json cj = {{"id", c.id},
               {"name", c.name},
               {"family", c.family},
               {"memory_bytes", c.memory_bytes},
               {"memory_bandwidth_gbs", c.memory_bandwidth_gbs},
               {"fp32_tflops", c.fp32_tflops},
               {"tf32_tflops", c.tf32_tflops},
               {"bf16_tflops", c.bf16_tflops},
               {"interconnect",
                {{"pcie_generation", c.pcie_generation},
                 {"pcie_gbs", c.pcie_gbs},
                 {"nvlink_gbs", c.nvlink_gbs},
                 {"nvlink_max_gpus", c.nvlink_max_gpus}}},
               {"board_power_w", c.board_power_w},
               {"fixed_overhead_bytes", c.fixed_overhead_bytes},
               {"fixed_overhead_measured", c.fixed_overhead_measured},
               {"source", c.source},
               {"note", c.note}};
    cj["launch_price_usd"] = c.launch_price_usd ? json(*c.launch_price_usd) : json(nullptr);
    cards.push_back(cj);
  }
  std::fprintf(g_out, "\nmemory in GiB; GB/s and TFLOP/s (dense) from the vendor; link: PCIe generation, NVLink GB/s per GPU (both\n"
              "directions); USD: launch MSRP (n/a: none published); overhead: fixed per-GPU memory (CUDA context, library\n"
              "handles), one constant per card family (* measured on a card of the family: the H200; else a default)\n"
              "sources: %s; see each card's \"source\" and \"note\" with --json\n",
              [&] {
                std::string s;
                for (const auto& o : cat.origins) s += (s.empty() ? "" : ", ") + o;
                return s;
              }().c_str());
  if (!json_path.empty()) write_json(json_path, {{"command", "cards"}, {"origins", cat.origins}, {"cards", cards}});
}

}  // namespace

Command register_fit(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "fit",
      "Predict peak memory per card and epoch time for single / drop / halo / gather on a catalogue of GPUs: does "
      "this graph and model fit one card, and which cards and strategies would (from DATA, or from --nodes --edges "
      "--features --classes alone)");
  auto o = std::make_shared<FitOptions>();
  add_data_options(*cmd, o->data);
  cmd->add_option("--nodes", o->nodes, "Statistics instead of DATA: number of nodes")->check(CLI::NonNegativeNumber);
  cmd->add_option("--edges", o->edges, "Statistics: undirected edges (no self loops)")->check(CLI::NonNegativeNumber);
  cmd->add_option("--features", o->features, "Statistics: input features per node")->check(CLI::NonNegativeNumber);
  cmd->add_option("--classes", o->classes, "Statistics: classes")->check(CLI::NonNegativeNumber);
  cmd->add_option("--feature-density", o->feature_density,
                  "Statistics: fraction of non-zero features (bag-of-words inputs take the sparse path)")
      ->capture_default_str();
  cmd->add_option("--name", o->name, "Statistics: a name for the graph in the report")->capture_default_str();
  cmd->add_option("--train-nodes", o->train_nodes, "Statistics: training nodes (default: all)");
  cmd->add_option("--degree-m2", o->degree_m2,
                  "Statistics: mean squared degree E[d^2] (heavier-tailed halo growth; default: Poisson degrees)");
  cmd->add_option("--isolated-nodes", o->isolated,
                  "Statistics: nodes without edges (with --degree-m2 the halo estimate's error drops from 40 % to 15 %)");
  cmd->add_option("--card", o->cards,
                  "Card id from the catalogue, or ID:K for K of them (repeatable; default: rtx3090, then 2 x rtx3080)");
  cmd->add_option("--gpus", o->gpus, "Number of cards for the next --card (last on the line: the previous one)");
  cmd->add_option("--rank-gpus", o->rank_gpus, "GPU counts to rank every catalogue card at")->capture_default_str();
  cmd->add_option("--cards", o->cards_file, "Extra card file (JSON like tools/cards.json; merged by id)");
  cmd->add_option("--layers", o->layers, "GCN layers")->capture_default_str();
  cmd->add_option("--hidden", o->hidden, "Hidden width")->capture_default_str();
  cmd->add_option("--dropout", o->dropout, "Dropout probability (0 = off: no saved dropped-out inputs)")
      ->capture_default_str();
  cmd->add_option("--precision", o->precision, "fp32 (what the engine runs) or bf16 (a projection)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--spmm", o->spmm, "auto (memory: cuSPARSE plans kept, the upper bound), own or cusparse")
      ->check(CLI::IsMember(enum_names<SpmmAlgo>()))
      ->capture_default_str();
  cmd->add_flag("--tf32", o->tf32, "GEMMs on TF32 tensor cores");
  cmd->add_option("--sparse-features-below", o->sparse_below,
                  "Density at or below which input features are kept sparse (the engine's default)")
      ->capture_default_str();
  cmd->add_option("--partitioner", o->partitioner, "metis, random or range (with DATA)")
      ->check(CLI::IsMember({"metis", "random", "range"}))
      ->capture_default_str();
  cmd->add_option("--strategies", o->strategies, "Strategies to price for K > 1")->capture_default_str();
  cmd->add_option("--samples", o->samples,
                  "With DATA: estimate halos by BFS from this many sampled seeds instead of exact plan metrics")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", o->seed, "Partition and sampling seed")->capture_default_str();
  cmd->add_option("--json", o->json, "Write everything as JSON ('-' for stdout)");
  return {cmd, [o, cmd] {
    // Pair --gpus with --card in command-line order: --gpus K applies to the next --card (or, last on the line,
    // to the previous one); ID:K says it in one word.
    const CLI::Option* card_opt = cmd->get_option("--card");
    const CLI::Option* gpus_opt = cmd->get_option("--gpus");
    std::size_t ci = 0, gi = 0;
    int pending = 0;
    for (const CLI::Option* opt : cmd->parse_order()) {
      if (opt == gpus_opt && gi < o->gpus.size()) {
        pending = o->gpus[gi++];
      } else if (opt == card_opt && ci < o->cards.size()) {
        std::string id = o->cards[ci++];
        int g = pending > 0 ? pending : 1;
        if (const auto colon = id.find(':'); colon != std::string::npos) {
          g = parse_int_list(id.substr(colon + 1), "--card " + id).front();
          id = id.substr(0, colon);
        }
        o->configs.emplace_back(id, g);
        pending = 0;
      }
    }
    if (pending > 0) {
      if (o->configs.empty()) o->configs.emplace_back("", pending);  // --gpus K alone: K x rtx3080 vs one rtx3090
      else o->configs.back().second = pending;
    }
    run_fit(*o, cmd->get_option("DATA")->count() > 0);
  }};
}

Command register_cards(CLI::App& app) {
  auto* cmd = app.add_subcommand("cards", "List the GPU catalogue that gcnpart fit uses");
  auto file = std::make_shared<std::string>();
  auto json_path = std::make_shared<std::string>();
  cmd->add_option("--cards", *file, "Extra card file (JSON like tools/cards.json; merged by id)");
  cmd->add_option("--json", *json_path, "Write the catalogue as JSON ('-' for stdout)");
  return {cmd, [file, json_path] { run_cards(*file, *json_path); }};
}

}  // namespace gcnpart::cli
