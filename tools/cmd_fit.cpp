// gcnpart fit: does this graph and model fit one card, and which cards and strategies would (partition::advise);
// gcnpart cards: the card catalogue. This file parses options, calls the library and prints its report.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <memory>
#include <sstream>

#include "base/error.hpp"
#include "partition/fit/advise.hpp"
#include "partition/fit/cards.hpp"
#include "tools/cli_common.hpp"

namespace gcnpart::cli {

namespace {

using partition::Card;
using partition::CardCatalogue;
using partition::FitConfiguration;
using partition::kHostLinkEfficiency;
using partition::OffloadFit;
using partition::FitOption;
using partition::FitReport;
using partition::MemoryEstimate;
using partition::Strategy;
using partition::load_cards;
using nlohmann::json;

constexpr double kMiB = 1048576.0;
/// Above this many directed entries fit samples its split figures unless --exact (train's --metis-sample threshold).
constexpr std::int64_t kExactFitEntries = frontend::kMetisSampleAboveEntries;
/// Seeds of the sampled halo estimate (partition::estimate_split_sampled) then.
constexpr std::int64_t kFitSamples = 2000;
/// Directed entries METIS sees then (about; --metis-sample auto): a products-sized graph answers in ~15 s on 2 cores.
constexpr std::int64_t kFitMetisEntries = 5'000'000;

/// A non-negative count ("2000"). @throws InvalidInput naming the parameter.
std::int64_t parse_count(const std::string& text, const char* parameter) {
  std::int64_t v = -1;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || v < 0)
    throw InvalidInput::parameter(parameter, text, "auto or a count >= 0 (0: exact)");
  return v;
}

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
  std::string partitioner = "metis", strategies = "drop,halo,gather,pipeline";
  std::string calibration;
  std::string calibration_without;
  bool check_calibration = false;
  std::string samples = "auto";
  std::string metis_sample = "auto";
  bool exact = false;
  std::uint64_t seed = 1;
  std::string json;
  std::string host_ram;  ///< --host-ram (parse_bytes; empty: this machine's)
  bool allow_lossy_drop = false;
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

std::vector<Strategy> parse_strategies(const std::string& text) {
  std::vector<Strategy> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    const Strategy s = from_string<partition::Strategy>(item, "--strategies");
    if (!partition::priced_for_many(s))
      throw InvalidInput::parameter("--strategies", text,
                                    "a list of " + or_list(partition::strategy_names_where([](const auto& t) {
                                      return partition::priced_for_many(t.value);
                                    })));
    out.push_back(s);
  }
  if (out.empty()) throw InvalidInput::parameter("--strategies", text, "at least one strategy");
  return out;
}

/// The model as the options give it (features and classes come from the graph).
partition::ModelSpec model_of(const FitOptions& o) {
  partition::ModelSpec m;
  m.layers = o.layers;
  m.hidden = o.hidden;
  m.dropout = o.dropout > 0;
  m.sparse_features_below = o.sparse_below;
  m.precision = from_string<Precision>(o.precision, "--precision");
  m.spmm = from_string<SpmmAlgo>(o.spmm, "--spmm");
  return m;
}

/// --nodes / --edges / ... as statistics.
partition::GraphStats stats_of(const FitOptions& o) {
  partition::GraphStats s;
  s.name = o.name;
  s.nodes = o.nodes;
  s.edges = o.edges;
  s.features = o.features;
  s.classes = o.classes;
  s.feature_density = o.feature_density;
  s.degree_second_moment = o.degree_m2;
  s.isolated = o.isolated;
  if (o.train_nodes >= 0) s.split_sizes = {o.train_nodes, 0, 0};
  return s;
}

// ---- the terminal report

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

std::string gib(double bytes) { return partition::format_gib(bytes); }
std::string ms(double seconds) { return partition::format_ms(seconds); }
std::string pct(double x, int digits = 1) { return partition::format_pct(x, digits); }

void print_header(const FitReport& r, const FitOptions& o) {
  const auto& s = r.graph;
  const auto arrows = [](const std::vector<std::int64_t>& dims) {
    std::string text;
    for (auto d : dims) text += (text.empty() ? "" : " -> ") + std::to_string(d);
    return text;
  };
  std::string dims_text = arrows(r.model.dims());
  if (r.model.stored_dims() != r.model.dims())  // the engine stores widths in whole 16-byte vectors
    dims_text += " (stored " + arrows(r.model.stored_dims()) + ")";
  std::fprintf(g_out, "graph        %s: %s nodes, %s undirected edges, %lld features (%.2f %% non-zero), %lld classes%s\n",
              s.name.c_str(), with_commas(s.nodes).c_str(), with_commas(s.edges).c_str(),
              static_cast<long long>(s.features), 100 * s.feature_density, static_cast<long long>(s.classes),
              r.from_data ? "" : " (statistics only)");
  std::fprintf(g_out, "model        GCN %s, %s parameters, dropout %s, %s, Adam; SpMM %s%s\n", dims_text.c_str(),
              with_commas(r.model.parameters()).c_str(), r.model.dropout ? "on" : "off",
              to_string(r.model.precision), o.spmm.c_str(),
              r.model.precision == Precision::kBf16 ? " (bf16 activations, float accumulation and master weights)"
                                                    : "");
  std::fprintf(g_out, "epoch time   per-kernel terms (SpMM by width and L2 locality, GEMM, element-wise, launches,\n"
              "             collectives), efficiencies measured on the %s; +-%s = worst residual on %s;\n"
              "             other cards: extrapolated from their bandwidth, L2, SMs and tensor rates\n",
              r.calibration.card.c_str(), pct(r.calibration.band(), 0).c_str(), r.calibration.held_out_source.c_str());
  std::fprintf(g_out, "L2 reuse     %s\n", r.reuse_source.c_str());
  for (const auto& note : r.outside_calibration)
    std::fprintf(g_out, "             outside calibration: %s (the band may not hold)\n", note.c_str());
  std::fprintf(g_out, "memory       per card = tracked peak + fixed per-GPU overhead (CUDA context, library handles): the one\n"
              "             figure printed everywhere below\n");
  if (!r.split_method.empty()) std::fprintf(g_out, "split        %s\n", r.split_method.c_str());
}

/// The changes that would make a configuration fit, one a line (nothing when it fits).
void print_would_fit(const FitConfiguration& cf) {
  if (cf.fits || cf.would_fit.empty()) {
    if (!cf.fits && cf.gpus == 1) std::fprintf(g_out, "would fit    nothing fit tries (narrower, fewer layers, bf16, 2-16 cards, another card)\n");
    return;
  }
  for (std::size_t i = 0; i < cf.would_fit.size(); ++i) {
    const auto& ch = cf.would_fit[i];
    std::fprintf(g_out, "%s %-40s %s per card, %s per epoch\n", i == 0 ? "would fit   " : "            ",
                ch.change.c_str(), gib(static_cast<double>(ch.per_card_bytes)).c_str(), ms(ch.seconds).c_str());
  }
}

void print_single(const FitConfiguration& cf, const FitReport& r) {
  const MemoryEstimate& m = cf.memory;
  const Card& card = cf.card;
  const std::int64_t total = m.peak + card.fixed_overhead_bytes;
  std::fprintf(g_out, "memory       %s per card (%s tracked + %s fixed) of %s: %s, headroom %s\n",
              gib(static_cast<double>(total)).c_str(), gib(static_cast<double>(m.peak)).c_str(),
              gib(static_cast<double>(card.fixed_overhead_bytes)).c_str(), gib(static_cast<double>(card.memory_bytes)).c_str(),
              cf.fits ? "FITS" : total <= card.memory_bytes ? "TIGHT (within the margin: not recommended)" : "DOES NOT FIT",
              gib(static_cast<double>(card.memory_bytes - total)).c_str());
  std::fprintf(g_out, "breakdown    %s; largest workspace %s (%s)\n", breakdown_text(m).c_str(),
              human_bytes(static_cast<double>(m.transient)).c_str(), m.transient_what.c_str());
  if (cf.fits)
    std::fprintf(g_out, "largest      hidden %s with %d layers; %d layers with hidden %lld\n",
                with_commas(cf.largest_hidden).c_str(), r.model.layers, cf.largest_layers,
                static_cast<long long>(r.model.hidden));
  print_would_fit(cf);
  std::fprintf(g_out, "epoch        %s +- %s (bound by %s; %s)%s\n", ms(cf.epoch.seconds).c_str(),
              pct(r.calibration.band(), 0).c_str(), cf.epoch.bound.c_str(),
              cf.epoch.measured ? "measured card" : "extrapolated", cf.fits ? "" : ", if it fitted resident");
  if (const OffloadFit& o = cf.offload; o.priced) {
    std::fprintf(g_out, "offload      --offload auto: %s on the card (%lld parts of %lld rows, %d SpMM operand%s), %s of "
                "host RAM (%s the host's %s): %s\n",
                gib(static_cast<double>(o.peak + card.fixed_overhead_bytes)).c_str(), static_cast<long long>(o.parts),
                static_cast<long long>(o.part_rows), o.operands, o.operands == 1 ? "" : "s",
                gib(static_cast<double>(o.host_ram_bytes)).c_str(), o.host_ram_bytes <= o.host_ram_limit ? "within" : "MORE THAN",
                gib(static_cast<double>(o.host_ram_limit)).c_str(),
                o.fits ? "FITS" : !o.fits_card ? "DOES NOT FIT the card even streamed" : "NOT ENOUGH HOST RAM (--host-ram)");
    if (o.fits_card)
      std::fprintf(g_out, "             epoch about %s (4 H200 runs: -22 %% worst, copy-heavy passes): kernels %s, copies %s + %s per epoch at %.0f GB/s\n",
                  ms(o.seconds).c_str(), ms(o.kernel_seconds).c_str(),
                  human_bytes(static_cast<double>(o.h2d_bytes)).c_str(),
                  human_bytes(static_cast<double>(o.d2h_bytes)).c_str(), card.pcie_gbs * kHostLinkEfficiency);
  }
}

void print_strategies(const FitConfiguration& cf, double cal_err) {
  std::fprintf(g_out, "%-8s %22s %5s %22s %14s %12s %18s\n", "strategy", "memory/card", "fits",
              "lost edges", "halo factor", "comm/epoch", "epoch");
  for (const auto& s : cf.strategies) {
    const auto& f = s.fit;
    std::string peak = gib(static_cast<double>(f.peak + cf.card.fixed_overhead_bytes));
    if (f.peak_error > 0) peak += " +" + gib(static_cast<double>(f.peak_error));
    std::string halo = std::to_string(f.halo_factor).substr(0, 5);
    if (f.halo_error > 0) halo += " +-" + pct(f.halo_error, 0);
    char lost[48];
    std::snprintf(lost, sizeof lost, "%s (%.1f%%)", with_commas(f.metrics.lost_edges).c_str(),
                  100 * f.metrics.lost_fraction);
    std::fprintf(g_out, "%-8s %22s %5s %22s %14s %12s %18s\n", to_string(f.strategy), peak.c_str(),
                s.fits ? "yes" : s.fit.tight(cf.card) ? "tight" : "NO", lost,
                halo.c_str(), human_bytes(static_cast<double>(f.comm_bytes)).c_str(),
                (ms(s.epoch.seconds) + " +-" + pct(cal_err, 0)).c_str());
  }
  std::fprintf(g_out, "link         %s between the cards; memory/card includes the fixed overhead\n", cf.link.c_str());
  print_would_fit(cf);
}

void print_configuration(const FitConfiguration& cf, const FitReport& r) {
  const Card& card = cf.card;
  std::fprintf(g_out, "\n== %d x %s (%s each, %s overhead per GPU%s)\n", cf.gpus, card.name.c_str(),
              gib(static_cast<double>(card.memory_bytes)).c_str(),
              human_bytes(static_cast<double>(card.fixed_overhead_bytes)).c_str(),
              card.fixed_overhead_measured ? ", measured" : ", default");
  if (!cf.refusal.empty()) {
    std::fprintf(g_out, "cannot run   %s\n", cf.refusal.c_str());
    return;
  }
  if (cf.gpus == 1) print_single(cf, r);
  else print_strategies(cf, r.calibration.band());
}

void print_ranking(const FitReport& r, const FitOptions& o) {
  const double cal_err = r.calibration.band();
  const std::size_t shown = 10;
  const std::size_t n_time = std::min(shown, r.by_epoch_time.size());
  std::fprintf(g_out, "\n== fastest options that fit (%zu of %zu; GPUs %s; exact strategies first, drop only if nothing exact fits and it loses at most 10 %% of the edges)\n",
              n_time, r.options.size(), o.rank_gpus.c_str());
  for (std::size_t i = 0; i < n_time; ++i) {
    const FitOption& op = r.options[r.by_epoch_time[i]];
    std::fprintf(g_out, "%2zu. %-28s %12s +-%s %-12s  memory/card %s%s\n", i + 1, op.label().c_str(),
                ms(op.seconds).c_str(), pct(cal_err, 0).c_str(), op.measured ? "(measured)" : "(extrapol.)",
                gib(static_cast<double>(op.per_card_bytes())).c_str(),
                op.exact ? "" : ("  (drop loses " + pct(op.lost_fraction, 1) + " of the edges)").c_str());
  }
  if (n_time == 0)
    std::fprintf(g_out, "    none at %s GPUs: see \"would fit\" above, or --rank-gpus with more GPUs\n", o.rank_gpus.c_str());
  std::fprintf(g_out, "\n== most epochs per launch dollar (cards without a published price left out)\n");
  for (std::size_t i = 0; i < std::min(shown, r.by_epochs_per_dollar.size()); ++i) {
    const FitOption& op = r.options[r.by_epochs_per_dollar[i]];
    std::fprintf(g_out, "%2zu. %-28s %8s epochs per hour per $1000  ($%s, %s per epoch)%s\n", i + 1,
                op.label().c_str(), with_commas(std::llround(*op.per_kusd())).c_str(),
                with_commas(std::llround(*op.price())).c_str(), ms(op.seconds).c_str(),
                op.exact ? "" : ("  (drop loses " + pct(op.lost_fraction, 1) + " of the edges)").c_str());
  }
  if (r.by_epochs_per_dollar.empty())
    std::fprintf(g_out, "    none: no option with a published price fits\n");
}

/// Statistics and options no graph or model can have, refused before anything is priced.
void check_fit_options(const FitOptions& o, const CLI::App& cmd) {
  for (int g : o.gpus)
    if (g < 1) throw InvalidInput::parameter("--gpus", std::to_string(g), ">= 1 cards");
  if (!(o.dropout >= 0.0f && o.dropout < 1.0f))
    throw InvalidInput::parameter("--dropout", std::to_string(o.dropout), "a probability in [0, 1)");
  if (!(o.feature_density > 0.0 && o.feature_density <= 1.0))
    throw InvalidInput::parameter("--feature-density", std::to_string(o.feature_density), "a fraction in (0, 1]");
  if (!(o.degree_m2 >= 0.0) || !std::isfinite(o.degree_m2))
    throw InvalidInput::parameter("--degree-m2", std::to_string(o.degree_m2), ">= 0 (the mean of degree squared)");
  if (o.nodes > 0) {
    const double n = static_cast<double>(o.nodes);
    if (static_cast<double>(o.edges) > n * (n - 1) / 2)
      throw InvalidInput::parameter("--edges", std::to_string(o.edges),
                                    "at most nodes x (nodes - 1) / 2 = " +
                                        std::to_string(static_cast<long long>(n * (n - 1) / 2)) + " undirected edges");
    const double mean = 2.0 * static_cast<double>(o.edges) / n;
    if (o.degree_m2 > 0 && o.degree_m2 < mean * mean * (1 - 1e-9))
      throw InvalidInput::parameter("--degree-m2", std::to_string(o.degree_m2),
                                    ">= mean degree squared = " + std::to_string(mean * mean) +
                                        " (a second moment is never below the squared mean)");
  }
  const bool isolated_given = cmd.get_option("--isolated-nodes")->count() > 0;
  if (isolated_given && (o.isolated < 0 || (o.nodes > 0 && o.isolated > o.nodes)))
    throw InvalidInput::parameter("--isolated-nodes", std::to_string(o.isolated),
                                  "0.." + std::to_string(o.nodes) + " (at most --nodes)");
  const bool train_given = cmd.get_option("--train-nodes")->count() > 0;
  if (train_given && (o.train_nodes < 1 || (o.nodes > 0 && o.train_nodes > o.nodes)))
    throw InvalidInput::parameter("--train-nodes", std::to_string(o.train_nodes),
                                  "1.." + std::to_string(o.nodes) + " (at most --nodes)");
  check_outputs({{"--json", &o.json}}, o.data);
}

void run_fit(const FitOptions& o, bool data_given) {
  g_out = json_to_stdout(o.json) ? stderr : stdout;
  partition::FitRequest req;
  req.catalogue = load_cards(o.cards_file);
  req.rank_gpus = parse_int_list(o.rank_gpus, "--rank-gpus");
  req.strategies = parse_strategies(o.strategies);
  if (!o.host_ram.empty()) req.host_ram_bytes = parse_bytes(o.host_ram, "--host-ram");
  req.allow_lossy_drop = o.allow_lossy_drop;
  // The graph: a dataset, or statistics alone.
  const bool stats_only = o.nodes > 0 || o.edges > 0 || o.features > 0 || o.classes > 0;
  if (stats_only && data_given)
    throw InvalidInput::parameter("DATA", o.data.path, "either DATA or --nodes/--edges/--features/--classes, not both");
  datasets::Dataset ds;
  if (stats_only) req.stats = stats_of(o);
  else ds = load_data(o.data);
  req.dataset = stats_only ? nullptr : &ds;
  req.model = model_of(o);
  req.tf32 = o.tf32;
  req.configs = o.configs;
  req.partitioner = from_string<partition::Partitioner>(o.partitioner, "--partitioner");
  // A large graph's split figures come from a sample unless --exact: METIS on a tenth of the edges (as train's
  // --metis-sample auto) and the halos by BFS from sampled seeds; a products-sized file then answers in seconds.
  const std::int64_t entries = req.dataset != nullptr ? req.dataset->graph.num_edges() : 0;
  if (o.exact) {
    req.metis_edge_sample = 1.0;
  } else if (o.metis_sample == "auto") {
    // About kFitMetisEntries of the edges (within 2..10 %) above train's threshold: METIS's time on a sample grows
    // with its entries, and fit partitions at up to four device counts (1 rtx3090 vs 2 rtx3080 and what would fit).
    req.metis_edge_sample =
        entries > kExactFitEntries
            ? std::clamp(static_cast<double>(kFitMetisEntries) / static_cast<double>(entries), 0.02, 0.1)
            : 1.0;
  } else {
    req.metis_edge_sample = frontend::metis_sample(o.metis_sample, entries, "--metis-sample");
  }
  if (o.exact || o.samples == "0") {
    req.samples = 0;
  } else if (o.samples == "auto") {
    req.samples = entries > kExactFitEntries ? kFitSamples : 0;
  } else {
    req.samples = parse_count(o.samples, "--samples");
  }
  req.seed = o.seed;
  if (!o.calibration.empty())
    req.calibration = partition::load_calibration(o.calibration);
  if (!o.calibration_without.empty()) {
    const partition::CalibrationData all = req.calibration ? *req.calibration : partition::builtin_calibration();
    const std::vector<std::string> families = all.families();
    if (std::find(families.begin(), families.end(), o.calibration_without) == families.end()) {
      std::string list;
      for (const auto& f : families) list += (list.empty() ? "" : ", ") + f;
      throw InvalidInput::parameter("--calibration-without", o.calibration_without,
                                    "a graph family of the calibration (" + (list.empty() ? "it names none" : list) + ")");
    }
    req.calibration = all.without_family(o.calibration_without);
  }
  const FitReport report = partition::advise(req);
  print_header(report, o);
  for (const auto& cf : report.configurations) print_configuration(cf, report);
  print_ranking(report, o);
  std::fprintf(g_out, "\nverdict      %s\n", report.verdict.c_str());
  if (!o.json.empty()) write_json(o.json, report.to_json());
}

void run_cards(const std::string& file, const std::string& json_path) {
  g_out = json_to_stdout(json_path) ? stderr : stdout;
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

/// Pairs --gpus with --card in command-line order into o.configs.
void pair_cards_with_gpus(const CLI::App& cmd, FitOptions& o) {
  // Pair --gpus with --card in command-line order: --gpus K applies to the next --card (or, last on the line,
  // to the previous one); ID:K says it in one word.
  const CLI::Option* card_opt = cmd.get_option("--card");
  const CLI::Option* gpus_opt = cmd.get_option("--gpus");
  std::size_t ci = 0, gi = 0;
  int pending = 0;
  for (const CLI::Option* opt : cmd.parse_order()) {
    if (opt == gpus_opt && gi < o.gpus.size()) {
      pending = o.gpus[gi++];
    } else if (opt == card_opt && ci < o.cards.size()) {
      std::string id = o.cards[ci++];
      int g = pending > 0 ? pending : 1;
      if (const auto colon = id.find(':'); colon != std::string::npos) {
        g = parse_int_list(id.substr(colon + 1), "--card " + id).front();
        id = id.substr(0, colon);
      }
      o.configs.emplace_back(id, g);
      pending = 0;
    }
  }
  if (pending > 0) {
    if (o.configs.empty()) o.configs.emplace_back("", pending);  // --gpus K alone: K x rtx3080 vs one rtx3090
    else o.configs.back().second = pending;
  }
}

}  // namespace

/// fit --check-calibration: the leave-one-family-out table of the calibration's held-out epochs.
void check_calibration(const FitOptions& o) {
  const partition::CalibrationData data =
      o.calibration.empty() ? partition::builtin_calibration() : partition::load_calibration(o.calibration);
  const partition::CardCatalogue cat = partition::load_cards(o.cards_file);
  const partition::Card& card = cat.find(data.card, "the calibration card (" + data.card + ")");
  const partition::Calibration whole = partition::calibrate(card, data);
  const auto rows = partition::check_held_out(card, data, whole);
  if (rows.empty())
    throw InvalidInput::parameter("--check-calibration", data.origin,
                                  "a calibration whose held-out epochs name their graph family");
  nlohmann::json j = nlohmann::json::array();
  double worst = 0, worst_whole = 0, sum = 0;
  std::size_t within = 0;
  std::printf("%-52s %-13s %10s %10s %8s %8s\n", "held-out epoch", "family", "measured", "left out", "error",
              "whole");
  for (const auto& r : rows) {
    std::printf("%-52s %-13s %8.2f ms %8.2f ms %+7.1f%% %+7.1f%%\n", r.what.substr(0, 52).c_str(), r.family.c_str(),
                r.measured_seconds * 1e3, r.without_family_seconds * 1e3, 100 * r.error(), 100 * r.whole_error());
    worst = std::max(worst, std::fabs(r.error()));
    worst_whole = std::max(worst_whole, std::fabs(r.whole_error()));
    sum += r.error();
    within += std::fabs(r.error()) <= 0.15 ? 1 : 0;
    j.push_back({{"what", r.what}, {"family", r.family}, {"measured_seconds", r.measured_seconds},
                 {"without_family_seconds", r.without_family_seconds}, {"whole_seconds", r.whole.seconds},
                 {"error", r.error()}, {"whole_error", r.whole_error()},
                 {"whole_terms_seconds", {{"spmm", r.whole.spmm}, {"elementwise", r.whole.stream}, {"gemm", r.whole.gemm},
                                          {"launch", r.whole.launch}}}});
  }
  const auto profiles = partition::check_profiles(card, data, whole);
  nlohmann::json jp = nlohmann::json::array();
  if (!profiles.empty())
    std::printf("\nprofiled epochs, measured / predicted ms by class (whole calibration):\n%-44s %-5s %15s %15s %15s %15s\n",
                "profiled epoch", "math", "epoch", "SpMM", "GEMM", "other");
  for (const auto& p : profiles) {
    const auto& t = p.predicted;
    std::printf("%-44s %-5s %7.2f /%6.2f %7.2f /%6.2f %7.2f /%6.2f %7.2f /%6.2f\n", p.what.substr(0, 44).c_str(),
                to_string(p.precision), p.measured_seconds * 1e3, t.seconds * 1e3, p.spmm_seconds * 1e3,
                t.spmm * 1e3, p.gemm_seconds * 1e3, t.gemm * 1e3, p.other_seconds * 1e3, (t.stream + t.launch) * 1e3);
    jp.push_back({{"what", p.what}, {"precision", to_string(p.precision)}, {"measured_seconds", p.measured_seconds},
                  {"measured_class_seconds", {{"spmm", p.spmm_seconds}, {"gemm", p.gemm_seconds}, {"other", p.other_seconds}}},
                  {"predicted_terms_seconds", {{"spmm", t.spmm}, {"gemm", t.gemm}, {"elementwise", t.stream},
                                               {"launch", t.launch}, {"total", t.seconds}}}});
  }
  const double n = static_cast<double>(rows.size());
  std::printf("family left out: %zu epochs, %.0f %% within 15 %%, worst %.1f %%, mean signed %+.1f %%; whole "
              "calibration: worst %.1f %%\n",
              rows.size(), 100.0 * static_cast<double>(within) / n, 100 * worst, 100 * sum / n, 100 * worst_whole);
  if (!o.json.empty())
    write_json(o.json, {{"rows", j},
                        {"within_15", static_cast<double>(within) / n},
                        {"worst", worst},
                        {"mean_signed", sum / n},
                        {"whole_worst", worst_whole},
                        {"profiles", jp}});
}

Command register_fit(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "fit",
      "Predict peak memory per card and epoch time for single / drop / halo / gather / pipeline (or --strategies boundary) on a catalogue of GPUs: does "
      "this graph and model fit one card, and which cards and strategies would (from DATA, or from --nodes --edges "
      "--features --classes alone)");
  auto o = std::make_shared<FitOptions>();
  add_data_options(*cmd, o->data, /*data_required=*/false);
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
  cmd->add_option("--cards", o->cards_file, "Extra card file (JSON like partition/fit/cards.json; merged by id)");
  cmd->add_option("--layers", o->layers, "GCN layers")->capture_default_str();
  cmd->add_option("--hidden", o->hidden, "Hidden width")->capture_default_str();
  cmd->add_option("--dropout", o->dropout, "Dropout probability (0 = off: no saved dropped-out inputs)")
      ->capture_default_str();
  cmd->add_option("--precision", o->precision, "fp32, or bf16 (bf16 features and activations, float accumulation, as gcnpart train --precision bf16)")
      ->check(CLI::IsMember({"fp32", "bf16"}))
      ->capture_default_str();
  cmd->add_option("--spmm", o->spmm, "auto (the engine times both per width: the whole graph on one device skips the cuSPARSE plan where the own "
                  "kernel is predicted 25 % faster, a split's devices keep the upper bound), own or cusparse")
      ->check(CLI::IsMember(enum_names<SpmmAlgo>()))
      ->capture_default_str();
  cmd->add_flag("--tf32", o->tf32, "GEMMs on TF32 tensor cores");
  cmd->add_option("--sparse-features-below", o->sparse_below,
                  "Density at or below which input features are kept sparse (the engine's default)")
      ->capture_default_str();
  cmd->add_option("--partitioner", o->partitioner, or_list(enum_names<partition::Partitioner>()) + " (with DATA)")
      ->check(CLI::IsMember(enum_names<partition::Partitioner>()))
      ->capture_default_str();
  cmd->add_option("--strategies", o->strategies, "Strategies to price for K > 1")->capture_default_str();
  cmd->add_option("--samples", o->samples,
                  "With DATA: estimate halos by BFS from this many sampled seeds instead of exact plan metrics (auto: "
                  "2,000 above 20 M directed entries, else exact; 0: exact)")
      ->capture_default_str();
  cmd->add_option("--metis-sample", o->metis_sample,
                  "With DATA: fraction of the edges METIS partitions (auto: all below 20 M directed entries, else about 5 M "
                  "entries' worth, 2..10 %)")
      ->capture_default_str();
  cmd->add_flag("--exact", o->exact, "With DATA: exact split figures (METIS on every edge, exact plan metrics; slow on "
                                     "large graphs)");
  cmd->add_option("--seed", o->seed, "Partition and sampling seed")->capture_default_str();
  cmd->add_flag("--allow-lossy-drop", o->allow_lossy_drop,
               "Rank and recommend drop even where it loses more than 10 % of the edges (it trains without them)");
  cmd->add_option("--host-ram", o->host_ram,
                  "Host RAM a card's offload plan may use (e.g. 128GB; default: this machine's, the tightest of RAM, "
                  "ulimit -v and the cgroup's limit)");
  cmd->add_option("--calibration", o->calibration,
                  "Calibration JSON (what `gcnpart bench calibrate` writes; default: the built-in H200 one)");
  cmd->add_option("--calibration-without", o->calibration_without,
                  "Leave one graph family's SpMM calls out of the calibration (leave-one-family-out validation: "
                  "bench/run/fit_families.sh)");
  cmd->add_flag("--check-calibration", o->check_calibration,
               "Only predict the calibration's held-out epochs, each with its graph family left out and with the whole "
               "calibration, and print the errors (no graph needed; what bench/run/fit_families.sh measured, "
               "re-priced after a model change)");
  cmd->add_option("--json", o->json, "Write everything as JSON ('-' for stdout)");
  return {cmd, [o, cmd] {
    if (o->check_calibration) {
      check_calibration(*o);
      return;
    }
    check_fit_options(*o, *cmd);
    pair_cards_with_gpus(*cmd, *o);
    run_fit(*o, cmd->get_option("DATA")->count() > 0);
  }};
}

Command register_cards(CLI::App& app) {
  auto* cmd = app.add_subcommand("cards", "List the GPU catalogue that gcnpart fit uses");
  auto file = std::make_shared<std::string>();
  auto json_path = std::make_shared<std::string>();
  cmd->add_option("--cards", *file, "Extra card file (JSON like partition/fit/cards.json; merged by id)");
  cmd->add_option("--json", *json_path, "Write the catalogue as JSON ('-' for stdout)");
  return {cmd, [file, json_path] { run_cards(*file, *json_path); }};
}

}  // namespace gcnpart::cli
