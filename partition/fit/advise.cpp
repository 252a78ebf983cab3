#include "partition/fit/advise.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "base/error.hpp"
#include "base/format.hpp"
#include "datasets/loaders.hpp"
#include "partition/streamed_plan.hpp"

namespace gcnpart::partition {

namespace {

using nlohmann::json;

constexpr double kMiB = 1048576.0;
/// METIS refinement passes per level when fit partitions a sample of the edges (METIS' default: 10).
constexpr int kSampledMetisIterations = 2;


std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

/// The request resolved: graph statistics, the full model, the calibration and every split.
struct Context {
  explicit Context(const FitRequest& r) : req(r) {}
  const FitRequest& req;
  const datasets::Dataset* ds = nullptr;
  GraphStats stats;
  ModelSpec model;
  Calibration cal;
  std::map<int, std::vector<StrategyFit>> splits;  ///< per K > 1
  StrategyFit single;
  double degree_ratio = 1;  ///< E[d^2] / E[d]^2 (the SpMM's L2 locality); Poisson 1 + 1 / mean when unknown
};

/// Sizes past any machine are refused with their size before the memory model multiplies them (its int64 products
/// stay exact below these bounds): a width above 2^24 (a 2^48-element weight matrix), more than 2^40 nodes or
/// undirected edges, or one activation matrix (nodes x widest width x 4 bytes) above 2^50 bytes (1 PiB).
void refuse_absurd(const GraphStats& g, const ModelSpec& m) {
  constexpr std::int64_t kMaxWidth = std::int64_t{1} << 24, kMaxCount = std::int64_t{1} << 40;
  constexpr double kMaxMatrixBytes = 1125899906842624.0;  // 2^50
  const std::pair<const char*, std::int64_t> widths[] = {
      {"--features", m.features}, {"--hidden", m.hidden}, {"--classes", m.classes}};
  for (const auto& [name, w] : widths)
    if (w > kMaxWidth)
      throw InvalidInput::parameter(name, with_commas(w), "at most 2^24 = 16,777,216 (one weight matrix of " +
                                                              format_gib(static_cast<double>(w) * static_cast<double>(w) * 4) +
                                                              " fits no machine)");
  if (g.nodes > kMaxCount) throw InvalidInput::parameter("--nodes", with_commas(g.nodes), "at most 2^40");
  if (g.edges > kMaxCount) throw InvalidInput::parameter("--edges", with_commas(g.edges), "at most 2^40");
  const double widest = static_cast<double>(std::max({m.features, m.hidden, m.classes}));
  const double matrix = static_cast<double>(g.nodes) * widest * 4;
  if (matrix > kMaxMatrixBytes)
    throw InvalidInput::parameter("--nodes", with_commas(g.nodes),
                                  "a graph whose activation matrix (nodes x widest width " + with_commas(std::llround(widest)) +
                                      " x 4 bytes = " + format_gib(matrix) + ") fits a machine: at most 1 PiB");
}

/// Why the model cannot run on `card` whatever its memory: bf16 storage needs bf16 GEMMs (Ampere or newer); empty
/// when it can.
std::string card_refusal(const ModelSpec& m, const Card& card) {
  if (m.precision == Precision::kBf16 && card.bf16_tflops <= 0)
    return card.name + " has no bf16 tensor cores: --precision bf16 needs an Ampere or newer GPU (use fp32)";
  return {};
}

/// Whether fit may rank and recommend a split: exact, or drop losing at most kDropMaxLostFraction of the edges (or
/// the user allowed more).
bool recommendable(const Context& c, const StrategyFit& f) {
  return traits(f.strategy).exact || c.req.allow_lossy_drop || f.metrics.lost_fraction <= kDropMaxLostFraction;
}

/// The pipeline over `stages` cards: every card holds the whole graph and its stage's layers.
StrategyFit pipeline_fit(const DeviceShape& whole, int stages, const ModelSpec& model) {
  StrategyFit f;
  f.strategy = Strategy::kPipeline;
  f.parts = stages;
  f.method = "layers split into stages over the whole graph";
  f.metrics.replication_factor = stages;
  for (int st = 0; st < stages; ++st) {
    ModelSpec m = model;
    m.stages = stages;
    m.stage = st;
    f.shapes.push_back(whole);
    f.memory.push_back(estimate_device_memory(whole, m, Backend::kCuda));
    if (f.memory.back().peak > f.peak) {
      f.peak = f.memory.back().peak;
      f.worst = st;
    }
    f.comm_bytes = std::max(f.comm_bytes, pipeline_send_bytes(whole, m));
  }
  f.halo_factor = stages;
  return f;
}

/// The model a device of a K-way split is priced with: ModelSpec::auto_own_widths is decided on the whole graph
/// (auto_own_widths below), and a device's smaller local graph can tip its tuner to cuSPARSE, so the upper bound.
ModelSpec for_parts(ModelSpec model, std::size_t devices) {
  if (devices > 1) model.auto_own_widths.clear();
  return model;
}

StrategyFit fit_from_shapes(Strategy s, int parts, std::vector<DeviceShape> shapes, const ModelSpec& whole_model) {
  const ModelSpec model = for_parts(whole_model, static_cast<std::size_t>(std::max(parts, 1)));
  StrategyFit f;
  f.strategy = s;
  f.parts = parts;
  f.shapes = std::move(shapes);
  for (std::size_t d = 0; d < f.shapes.size(); ++d) {
    f.memory.push_back(estimate_device_memory(f.shapes[d], model, Backend::kCuda));
    if (f.memory.back().peak > f.peak) {
      f.peak = f.memory.back().peak;
      f.worst = static_cast<int>(d);
    }
    f.comm_bytes = std::max(f.comm_bytes, comm_bytes_per_epoch(f.shapes[d], model));
  }
  return f;
}

/// The peak's error for a halo split estimated with errors: the same split with the halo and its entries larger
/// by their relative errors.
std::int64_t halo_peak_error(const Context& c, const SplitEstimate& est, const StrategyFit& f, double halo_err,
                             double entries_err) {
  SplitEstimate hi = est;
  for (auto& h : hi.halo_per_hop) h *= 1 + halo_err;
  hi.local_entries_halo *= 1 + entries_err;
  hi.halo_imbalance = est.halo_imbalance;
  const Strategy s = Strategy::kHalo;
  const StrategyFit up = fit_from_shapes(s, f.parts, device_shapes(hi.metrics(s, c.stats), s, f.parts, c.stats), c.model);
  return std::max<std::int64_t>(0, up.peak - f.peak);
}

/// Splits for K devices: exact plan metrics from the dataset, a sampled estimate (samples > 0), or the count model.
std::vector<StrategyFit> split_fits(const Context& c, int k) {
  const FitRequest& r = c.req;
  std::optional<Partition> part;
  if (c.ds != nullptr) {
    PartitionOptions popt;
    popt.method = r.partitioner;
    popt.seed = r.seed;
    popt.metis_edge_sample = r.metis_edge_sample;
    // A sampled split is an estimate already: METIS's refinement passes (most of its time on a products-sized
    // graph) are cut to kSampledMetisIterations.
    if (r.metis_edge_sample < 1.0) popt.metis_iterations = kSampledMetisIterations;
    popt.check_graph = false;  // resolve checked it
    popt.measure_cut = false;  // the split estimate and plan_metrics count the cut themselves
    part = partition_graph(c.ds->graph, k, popt);
  }
  std::string partition_note = part && !part->note.empty()
                                   ? " [" + part->note + "; " + partitioner_name(part->method) + " used]"
                                   : std::string();
  if (part && r.metis_edge_sample < 1.0 && part->method == Partitioner::kMetis)
    partition_note = "; METIS on " + format_pct(r.metis_edge_sample, 0) + " of the edges (--exact: all)" + partition_note;
  std::optional<SplitEstimate> est;
  if (c.ds == nullptr) est = estimate_split_from_counts(c.stats, k, c.model.layers);
  else if (r.samples > 0) est = estimate_split_sampled(c.ds->graph, *part, c.model.layers, r.samples, r.seed);
  std::vector<StrategyFit> out;
  for (Strategy s : r.strategies) {
    if (s == Strategy::kPipeline) {  // splits layers, not nodes: priced when the stages can take the model
      if (!strategy_refusal(s, k, c.model.layers, c.model.precision))
        out.push_back(pipeline_fit(c.single.shapes.front(), k, c.model));
      continue;
    }
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
      m = plan_metrics(c.ds->graph, s, *part, c.model.layers);
      method = std::string("exact plan metrics (") + partitioner_name(r.partitioner) + " partition)";
    }
    StrategyFit f = fit_from_shapes(s, k, device_shapes(m, s, k, c.stats), c.model);
    f.metrics = m;
    f.method = method + partition_note;
    f.halo_factor = m.replication_factor;
    f.halo_error = halo_err;
    if (est && s == Strategy::kHalo && (halo_err > 0 || entries_err > 0))
      f.peak_error = halo_peak_error(c, *est, f, halo_err, entries_err);
    out.push_back(std::move(f));
  }
  return out;
}

/// Predicted epoch of a fit on K cards: the slowest device; the SpMM as the engine would choose it.
EpochTime epoch_of(const Context& c, const StrategyFit& f, const Card& card, const ModelSpec* changed = nullptr) {
  const ModelSpec& base = changed != nullptr ? *changed : c.model;
  EpochTime worst;
  const auto link = link_for(card, f.parts);
  const Precision math = c.req.tf32 && base.precision == Precision::kFp32 ? Precision::kTf32 : base.precision;
  const bool pipeline = f.strategy == Strategy::kPipeline;
  EpochTime sum;  // pipeline: the stages run one after the other (full batch: forward down, backward up)
  for (std::size_t d = 0; d < f.shapes.size(); ++d) {
    const auto& shape = f.shapes[d];
    ModelSpec model = base;
    if (pipeline) {
      model.stages = f.parts;
      model.stage = static_cast<int>(d);
    }
    auto work = epoch_work(shape, model);
    work.degree_ratio = c.degree_ratio;
    work.reuse = c.stats.reuse;  // the whole graph's (a part's stream is a subset: its reuse is at least this)
    EpochTime t;
    const bool own_only = shape.gather || shape.boundary;  // their aggregations run gcnpart's SpMM only
    if (base.spmm == SpmmAlgo::kOwn || own_only) t = predict_epoch(work, card, c.cal, link, false, math);
    else if (base.spmm == SpmmAlgo::kCusparse) t = predict_epoch(work, card, c.cal, link, true, math);
    else
      t = predict_epoch_autotuned(work, card, c.cal, link, math);  // the faster kernel at each width
    if (t.seconds > worst.seconds) worst = t;
    sum.seconds += t.seconds, sum.spmm += t.spmm, sum.stream += t.stream, sum.gemm += t.gemm;
    sum.launch += t.launch, sum.comm += t.comm, sum.measured = t.measured;
  }
  if (pipeline) {
    sum.bound = worst.bound;
    return sum;
  }
  return worst;
}

/// Largest hidden width (with the given layers) and layer count (with the given hidden) that fit one card.
std::pair<std::int64_t, int> largest_single(const Context& c, const Card& card) {
  auto single_fits = [&](std::int64_t hidden, int layers) {
    ModelSpec m = c.model;
    m.hidden = hidden;
    m.layers = layers;
    const auto e = estimate_device_memory(c.single.shapes.front(), m, Backend::kCuda);
    return e.peak + card.fixed_overhead_bytes + fit_margin(card) <= card.memory_bytes;
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

/// Bytes of the dataset in host memory: features (float), CSR columns with self loops, offsets, labels.
std::int64_t dataset_bytes(const GraphStats& g) {
  return g.nodes * g.features * 4 + (2 * g.edges + g.nodes) * 4 + (g.nodes + 1) * 8 + g.nodes * 4;
}

/// Streaming through host memory on one `card`, priced where the model does not fit it resident.
OffloadFit offload_fit(const Context& c, const Card& card) {
  OffloadFit o;
  const DeviceShape& shape = c.single.shapes.front();
  if (c.single.fits(card) || !streams(shape, c.model)) return o;
  const std::int64_t budget = card.memory_bytes - card.fixed_overhead_bytes - fit_margin(card);
  if (budget <= 0) return o;
  const StreamedPlan plan = streamed_plan(shape, c.model, Backend::kCuda, budget);
  o.priced = true;
  o.peak = estimate_plan_memory(plan.device, Backend::kCuda).peak;
  o.fits_card = o.peak <= budget;
  o.part_rows = plan.part_rows;
  o.parts = plan.parts;
  o.operands = plan.flow.two_operands ? 2 : 1;
  o.host_bytes = plan.host_bytes;
  o.host_ram_bytes = plan.host_bytes + 2 * dataset_bytes(c.stats) + kHostProcessBytes;
  o.host_ram_limit = c.req.host_ram_bytes > 0 ? c.req.host_ram_bytes : datasets::host_memory_limit();
  o.fits = o.fits_card && o.host_ram_bytes <= o.host_ram_limit;
  o.h2d_bytes = plan.step_h2d_bytes;
  o.d2h_bytes = plan.step_d2h_bytes;
  ModelSpec own = c.model;  // streamed SpMMs are the own kernel's row ranges
  own.spmm = SpmmAlgo::kOwn;
  o.kernel_seconds = epoch_of(c, c.single, card, &own).seconds * kStreamedKernelFactor +
                     static_cast<double>(plan.parts * c.model.layers) * kStreamedPartSeconds;
  const double gbs = card.pcie_gbs * kHostLinkEfficiency;
  const StreamedPlan::CopySeconds copies = plan.copy_seconds(gbs, gbs);
  o.copy_seconds = copies.serial + copies.passes;
  o.seconds = copies.serial + std::max(o.kernel_seconds, copies.passes);
  return o;
}

FitOption option_of(const Context& c, const Card& card, int gpus, const StrategyFit& f, bool fits) {
  FitOption o;
  o.card = card;
  o.gpus = gpus;
  o.strategy = f.strategy;
  o.fits = fits;
  o.exact = traits(f.strategy).exact;
  o.seconds = epoch_of(c, f, card).seconds;
  o.link = gpus == 1 ? "none" : link_for(card, gpus).kind;
  o.peak = f.peak;
  o.comm_bytes = f.comm_bytes;
  o.lost_fraction = f.metrics.lost_fraction;
  o.measured = card.id == c.cal.card;
  return o;
}

/// The best way to run on `gpus` of `card`: single for one GPU; for more, the fastest exact strategy that fits,
/// else drop if it fits (inexact), else the smallest-peak strategy (does not fit).
FitOption best_option(const Context& c, const Card& card, int gpus) {
  if (std::string why = card_refusal(c.model, card); !why.empty()) {  // not ranked: it cannot run there
    FitOption o;
    o.card = card;
    o.gpus = gpus;
    o.strategy = gpus == 1 ? Strategy::kSingle : c.req.strategies.front();
    o.priced = false;
    o.refusal = std::move(why);
    return o;
  }
  if (gpus == 1) {
    FitOption o = option_of(c, card, 1, c.single, c.single.fits(card));
    o.tight = c.single.tight(card);
    if (o.fits) return o;
    if (const OffloadFit off = offload_fit(c, card); off.fits) {  // streamed through host memory
      o.fits = true;
      o.offload = true;
      o.seconds = off.seconds;
      o.resident_peak = o.peak;
      o.peak = off.peak;
    }
    return o;
  }
  const auto& list = c.splits.at(gpus);
  if (list.empty()) {  // no strategy asked for takes this many cards (pipeline beyond the layers, or bf16)
    FitOption o;
    o.card = card;
    o.gpus = gpus;
    o.strategy = c.req.strategies.front();
    o.priced = false;
    o.link = link_for(card, gpus).kind;
    return o;
  }
  const StrategyFit* best = nullptr;
  double best_t = 0;
  for (bool exact : {true, false}) {
    for (const auto& f : list) {
      if ((traits(f.strategy).exact) != exact || !f.fits(card) || !recommendable(c, f)) continue;
      const double t = epoch_of(c, f, card).seconds;
      if (best == nullptr || t < best_t) {
        best = &f;
        best_t = t;
      }
    }
    if (best != nullptr) break;
  }
  const bool fits = best != nullptr;
  bool tight = false;
  if (best == nullptr) {
    // Nothing to recommend: a lossy drop that fits (shown with its loss), else a split within the margin (tight),
    // else the smallest peak.
    for (const auto& f : list)
      if (f.fits(card) && (best == nullptr || f.peak < best->peak)) best = &f;
    if (best == nullptr)
      for (const auto& f : list)
        if (f.tight(card) && (best == nullptr || f.peak < best->peak)) best = &f, tight = true;
    if (best == nullptr)
      for (const auto& f : list)
        if (best == nullptr || f.peak < best->peak) best = &f;
  }
  FitOption o = option_of(c, card, gpus, *best, fits);
  o.tight = tight;
  return o;
}

}  // namespace

// Pipeline's row says the plan-based memory model does not cover it (it splits no nodes); fit prices it per stage
// from the whole-graph shape (pipeline_fit).
bool priced_for_many(Strategy s) {
  return s == Strategy::kPipeline || (traits(s).memory_model && traits(s).parts != PartsRule::kOne);
}

std::int64_t largest_hidden_within(const std::vector<DeviceShape>& shapes, ModelSpec model, std::int64_t budget,
                                   std::int64_t fixed, Backend backend) {
  model = for_parts(std::move(model), shapes.size());
  auto fits = [&](std::int64_t hidden) {
    model.hidden = hidden;
    for (std::size_t d = 0; d < shapes.size(); ++d) {
      ModelSpec m = model;
      if (model.stages > 1) m.stage = static_cast<int>(d);
      if (estimate_device_memory(shapes[d], m, backend).peak + fixed > budget) return false;
    }
    return true;
  };
  std::int64_t lo = 0, hi = std::int64_t{1} << 24;
  while (lo < hi) {
    const std::int64_t mid = (lo + hi + 1) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

namespace {

/// The widths at which the engine's autotuner (SpmmAlgo::kAuto) is predicted to keep its own SpMM: the calibrated
/// SpMM terms on the calibration card, for the whole graph, give the own kernel a lead of kAutoOwnMargin or more
/// over cuSPARSE. Closer calls keep the upper bound (a cuSPARSE plan priced as kept). Used for the one-device
/// whole-graph shape only (for_parts): validated on the H200 (22 configurations within 5 % of the driver, no false
/// fits under 24 and 10 GB caps); a card whose tuner picks cuSPARSE where the H200 terms give the own kernel a 25 %
/// lead would keep a plan this leaves out.
constexpr double kAutoOwnMargin = 0.25;
std::vector<std::int64_t> auto_own_widths(const Context& c, const Card& card) {
  std::vector<std::int64_t> widths;
  const double rows = static_cast<double>(c.stats.nodes);
  const double entries = 2.0 * static_cast<double>(c.stats.edges) + rows;  // Â with self loops
  const L2Reuse reuse{c.degree_ratio > 0 ? c.degree_ratio : 1.0, &c.stats.reuse, c.cal.l2_share, c.cal.frequency_blend};
  for (const auto& call : spmm_calls_per_epoch(c.model)) {
    const double w = static_cast<double>(call.width);
    const SpmmTerm term{w, rows, rows, entries};
    const double own = spmm_call_seconds(term, 4.0, reuse, card, c.cal.spmm(false, false));
    const double cusparse = spmm_call_seconds(term, 4.0, reuse, card, c.cal.spmm(true, false));
    if (own * (1 + kAutoOwnMargin) <= cusparse &&
        std::find(widths.begin(), widths.end(), call.width) == widths.end())
      widths.push_back(call.width);
  }
  return widths;
}

Context resolve(const FitRequest& r) {
  Context c(r);
  const CalibrationData data = r.calibration ? *r.calibration : builtin_calibration();
  const Card& calibration_card = r.catalogue.find(data.card, "the calibration card (" + data.card + ")");
  c.cal = calibrate(calibration_card, data);
  if (r.strategies.empty()) throw InvalidInput::parameter("strategies", "", "at least one strategy");
  const auto priced = [](const StrategyTraits& t) { return priced_for_many(t.value); };
  for (Strategy s : r.strategies)
    if (!priced(traits(s))) {
      std::string names;
      for (const auto& n : strategy_names_where(priced)) names += (names.empty() ? "" : ", ") + n;
      throw InvalidInput::parameter("strategies", to_string(s), "a list of " + names);
    }
  if (r.rank_gpus.empty()) throw InvalidInput::parameter("rank_gpus", "", "at least one GPU count");
  for (int k : r.rank_gpus)
    if (k < 1 || k > 1024) throw InvalidInput::parameter("rank_gpus", std::to_string(k), "GPU counts in 1..1024");
  c.ds = r.dataset;
  if (c.ds != nullptr) {
    if (!c.ds->has_features() || !c.ds->has_labels())
      throw InvalidInput(InputLocation{c.ds->name, 0, 0}, "dataset has no features or labels", "",
                         "both (for a structure-only graph pass --synthetic-features F --synthetic-classes C)");
    validate_graph(c.ds->graph, "fit");  // once: partition_graph skips its own check for every K (plan_metrics, on
                                          // the exact path, still checks its inputs)
    c.stats = graph_stats(*c.ds);
    // The aggregation's L2 reuse, measured on the graph in the engine's default (degree) order.
    c.stats.reuse = reuse_profile(c.ds->graph, Reorder::kDegree);
  } else {
    c.stats = r.stats;
    c.stats.validate();
    c.stats.degree_mean = 2.0 * static_cast<double>(c.stats.edges) / static_cast<double>(c.stats.nodes);
  }
  c.model = r.model;
  c.model.features = c.stats.features;
  c.model.classes = c.stats.classes;
  c.model.validate();
  refuse_absurd(c.stats, c.model);
  const double mean = c.stats.degree_mean;
  c.degree_ratio = c.stats.degree_second_moment > 0 && mean > 0 ? c.stats.degree_second_moment / (mean * mean)
                   : mean > 0                                   ? 1 + 1 / mean
                                                                : 1;
  if (c.model.spmm == SpmmAlgo::kAuto) c.model.auto_own_widths = auto_own_widths(c, calibration_card);
  return c;
}

/// The configurations asked for (default: the project's question, one rtx3090 against K rtx3080).
std::vector<std::pair<const Card*, int>> configurations(const FitRequest& r) {
  std::vector<std::pair<const Card*, int>> configs;
  for (const auto& [id, g] : r.configs) {
    if (g < 1 || g > 1024) throw InvalidInput::parameter("--gpus", std::to_string(g), "1..1024");
    configs.emplace_back(&r.catalogue.find(id.empty() ? "rtx3080" : id), g);
  }
  if (configs.empty() || (configs.size() == 1 && r.configs.front().first.empty()))
    configs = {{&r.catalogue.find("rtx3090"), 1},
               {&r.catalogue.find("rtx3080"), configs.empty() ? 2 : configs.front().second}};
  return configs;
}

/// The same split priced for a changed model (the shapes stay: hidden width and precision do not move them).
StrategyFit refit(const StrategyFit& f, const ModelSpec& m) {
  if (f.strategy == Strategy::kPipeline) return pipeline_fit(f.shapes.front(), f.parts, m);
  StrategyFit g = fit_from_shapes(f.strategy, f.parts, f.shapes, m);
  g.metrics = f.metrics;
  g.method = f.method;
  g.halo_factor = f.halo_factor;
  return g;
}

/// The fastest fitting exact strategy of `fits` (else drop), as (fit, seconds); nullptr when none fits.
std::pair<const StrategyFit*, double> fastest_fitting(const Context& c, const std::vector<StrategyFit>& fits,
                                                      const Card& card, const ModelSpec& m) {
  const StrategyFit* best = nullptr;
  double best_t = 0;
  for (bool exact : {true, false}) {
    for (const auto& f : fits) {
      if (traits(f.strategy).exact != exact || !f.fits(card) || !recommendable(c, f)) continue;
      const double t = epoch_of(c, f, card, &m).seconds;
      if (best == nullptr || t < best_t) best = &f, best_t = t;
    }
    if (best != nullptr) break;
  }
  return {best, best_t};
}

std::string gpus_label(int gpus, const Card& card, const StrategyFit& f) {
  std::string s = std::to_string(gpus) + " x " + card.id;
  if (gpus > 1) s += " (" + std::string(to_string(f.strategy)) + ")";
  return s;
}

/// What would make `gpus` x `card` fit: the widest hidden, the most layers, bf16, the fewest more cards (with the
/// strategy), the smallest larger card; each with its memory and epoch.
std::vector<FitChange> would_fit(const Context& c, const Card& card, int gpus) {
  std::vector<FitChange> out;
  const std::vector<StrategyFit> one{c.single};
  const std::vector<StrategyFit>& here = gpus == 1 ? one : c.splits.at(gpus);
  auto add_best = [&](const char* kind, std::string change, const std::vector<StrategyFit>& fits, const ModelSpec& m) {
    const auto [best, t] = fastest_fitting(c, fits, card, m);
    if (best == nullptr) return false;
    out.push_back({kind, std::move(change), best->peak + card.fixed_overhead_bytes, t});
    return true;
  };
  // Narrower: the widest hidden any strategy of this configuration fits.
  {
    std::int64_t widest = 0;
    for (const auto& f : here) {
      ModelSpec m = c.model;
      if (f.strategy == Strategy::kPipeline) m.stages = f.parts;
      widest = std::max(widest, largest_hidden_within(f.shapes, m, card.memory_bytes - fit_margin(card),
                                                      card.fixed_overhead_bytes, Backend::kCuda));
    }
    widest = std::min(widest, c.model.hidden - 1);
    if (widest >= 1) {
      ModelSpec m = c.model;
      m.hidden = widest;
      std::vector<StrategyFit> fits;
      for (const auto& f : here) fits.push_back(refit(f, m));
      add_best("hidden", "hidden " + std::to_string(widest) + " (from " + std::to_string(c.model.hidden) + ")" +
                             (gpus > 1 ? " on " + std::to_string(gpus) + " x " + card.id : ""),
               fits, m);
    }
  }
  // Fewer layers (halo's rings depend on the layers: it is left out here).
  for (int layers = c.model.layers - 1; layers >= 1; --layers) {
    ModelSpec m = c.model;
    m.layers = layers;
    std::vector<StrategyFit> fits;
    for (const auto& f : here)
      if (f.strategy != Strategy::kHalo && (f.strategy != Strategy::kPipeline || f.parts <= layers)) fits.push_back(refit(f, m));
    if (add_best("layers",
                 std::to_string(layers) + (layers == 1 ? " layer" : " layers") + " (from " +
                     std::to_string(c.model.layers) + ")" + (gpus > 1 ? " on " + std::to_string(gpus) + " x " + card.id : ""),
                 fits, m))
      break;
  }
  // bf16 storage (pipeline trains fp32 only).
  ModelSpec m = c.model;
  m.precision = Precision::kBf16;
  if (c.model.precision == Precision::kFp32 && card_refusal(m, card).empty()) {
    std::vector<StrategyFit> fits;
    for (const auto& f : here)
      if (traits(f.strategy).bf16) fits.push_back(refit(f, m));
    add_best("precision", "--precision bf16" + (gpus > 1 ? " on " + std::to_string(gpus) + " x " + card.id
                                                            : std::string(" on one ") + card.id),
             fits, m);
  }
  // More cards of this kind: the fewest (2, 4, 8, 16) with the fastest strategy that fits.
  for (int k : {2, 4, 8, 16}) {
    if (k <= gpus || k > c.stats.nodes) continue;
    const std::vector<StrategyFit> fits = c.splits.count(k) != 0 ? c.splits.at(k) : split_fits(c, k);
    const auto [best, t] = fastest_fitting(c, fits, card, c.model);
    if (best == nullptr) continue;
    out.push_back({"gpus", gpus_label(k, card, *best), best->peak + card.fixed_overhead_bytes, t});
    break;
  }
  // Streaming through host memory on this card (one card, the single strategy).
  if (gpus == 1)
    if (const OffloadFit off = offload_fit(c, card); off.fits)
      out.push_back({"offload",
                     "--offload auto (streams through " + format_gib(static_cast<double>(off.host_ram_bytes)) +
                         " of host RAM)",
                     off.peak + card.fixed_overhead_bytes, off.seconds});
  // A larger card: the smallest one in the catalogue the whole graph fits on.
  const Card* larger = nullptr;
  for (const auto& other : c.req.catalogue.cards)
    if (c.single.fits(other) && (larger == nullptr || other.memory_bytes < larger->memory_bytes)) larger = &other;
  if (larger != nullptr)
    out.push_back({"card", "1 x " + larger->id + " (" + format_gib(static_cast<double>(larger->memory_bytes)) + ")",
                   c.single.peak + larger->fixed_overhead_bytes, epoch_of(c, c.single, *larger).seconds});
  return out;
}

FitConfiguration configuration(const Context& c, const Card& card, int gpus) {
  FitConfiguration cf;
  cf.card = card;
  cf.gpus = gpus;
  cf.refusal = card_refusal(c.model, card);
  if (!cf.refusal.empty()) {  // memory figures still printed; it cannot run
    cf.memory = c.single.memory.front();
    cf.epoch = epoch_of(c, c.single, card);
    if (gpus > 1) cf.link = link_for(card, gpus).kind;
    return cf;
  }
  if (gpus == 1) {
    cf.fits = c.single.fits(card);
    cf.memory = c.single.memory.front();
    cf.epoch = epoch_of(c, c.single, card);
    std::tie(cf.largest_hidden, cf.largest_layers) = largest_single(c, card);
    if (!cf.fits) cf.offload = offload_fit(c, card);
    if (!cf.fits) cf.would_fit = would_fit(c, card, 1);
    return cf;
  }
  bool any = false;
  for (const auto& f : c.splits.at(gpus)) {
    cf.strategies.push_back({f, f.fits(card), epoch_of(c, f, card)});
    any = any || cf.strategies.back().fits;
  }
  cf.link = link_for(card, gpus).kind;
  if (!any) cf.would_fit = would_fit(c, card, gpus);
  return cf;
}

std::string describe(const FitOption& op, double cal_err) {
  std::ostringstream s;
  const Card& card = op.card;
  s << op.gpus << " x " << card.name;
  if (!op.refusal.empty()) {
    s << " cannot run this model: " << op.refusal;
    return s.str();
  }
  if (!op.priced) {
    s << ": no strategy asked for runs on " << op.gpus << " cards";
    return s.str();
  }
  if (op.gpus > 1) s << " (" << to_string(op.strategy) << ")";
  if (op.offload) {
    s << " needs " << format_gib(static_cast<double>(op.resident_peak + card.fixed_overhead_bytes))
      << " per card (CUDA context included) of " << format_gib(static_cast<double>(card.memory_bytes))
      << " resident; streamed through host memory (--offload) it needs "
      << format_gib(static_cast<double>(op.per_card_bytes())) << " and runs an epoch in about "
      << format_ms(op.seconds) << " (offload model: 4 measured runs, -22 % worst)";
    return s.str();
  }
  s << " needs " << format_gib(static_cast<double>(op.per_card_bytes())) << " per card (CUDA context included) of "
    << format_gib(static_cast<double>(card.memory_bytes));
  if (!op.fits && op.tight) {
    s << ": tight, within the " << format_gib(static_cast<double>(fit_margin(card)))
      << " margin a configuration must leave (2 % of the card or 256 MiB): not recommended";
    return s.str();
  }
  if (!op.fits && !op.exact && op.peak + card.fixed_overhead_bytes <= card.memory_bytes) {
    s << ": only drop fits, and it loses " << format_pct(op.lost_fraction)
      << " of the edges: not recommended (--allow-lossy-drop ranks it)";
    return s.str();
  }
  if (op.fits) {
    s << " and runs an epoch in about " << format_ms(op.seconds) << " (+-" << format_pct(cal_err, 0) << ", "
      << (op.measured ? "measured card" : "extrapolated") << ")";
    if (op.gpus > 1)
      s << ", sending " << human_bytes(static_cast<double>(op.comm_bytes)) << " per epoch over " << op.link;
    if (!op.exact) s << ", but drop loses " << format_pct(op.lost_fraction) << " of the edges";
  } else {
    s << ": it does not fit";
  }
  return s.str();
}

/// Both configurations fit: the faster one, or within the model's error the cheaper (>= 10 %), else fewer cards.
void verdict_both_fit(std::ostream& v, const FitOption& a, const FitOption& b, double cal_err) {
  const FitOption& fast = a.seconds <= b.seconds ? a : b;
  const FitOption& slow = a.seconds <= b.seconds ? b : a;
  const double ratio = slow.seconds / fast.seconds;
  v << std::fixed << std::setprecision(2) << fast.label() << " is faster by " << ratio << "x";
  if (a.price() && b.price())
    v << std::setprecision(1) << "; at launch prices ($" << with_commas(std::llround(*a.price())) << " vs $"
      << with_commas(std::llround(*b.price())) << ") that is " << with_commas(std::llround(*a.per_kusd())) << " vs "
      << with_commas(std::llround(*b.per_kusd())) << " epochs per hour per $1000";
  const FitOption* pick = &fast;
  if (ratio < 1 + cal_err) {
    const FitOption* fewer = a.gpus <= b.gpus ? &a : &b;
    pick = fewer;
    if (a.price() && b.price() && std::fabs(*a.price() / *b.price() - 1) >= 0.1)
      pick = *a.price() < *b.price() ? &a : &b;
    v << ". Verdict: the speeds are within the model's error (+-" << format_pct(cal_err, 0) << "); take "
      << pick->label() << (pick == fewer ? " (fewer cards" : " (cheaper");
    v << (pick->exact ? ")" : "; drop is inexact: it trains without the cut edges)");
  } else {
    v << ". Verdict: take " << pick->label();
    if (!pick->exact) v << " (drop is inexact: it trains without the cut edges)";
  }
  if (pick->gpus == 1) v << "; one card also needs no partitioning and no communication";
  v << ".";
}

std::string verdict(const Context& c, const FitReport& rep, const std::vector<std::pair<const Card*, int>>& configs) {
  const double cal_err = c.cal.band();
  const FitOption* fastest = rep.by_epoch_time.empty() ? nullptr : &rep.options[rep.by_epoch_time.front()];
  const FitOption* cheapest =
      rep.by_epochs_per_dollar.empty() ? nullptr : &rep.options[rep.by_epochs_per_dollar.front()];
  std::ostringstream v;
  const FitOption a = best_option(c, *configs[0].first, configs[0].second);
  v << "For " << c.stats.name << " (" << with_commas(c.stats.nodes) << " nodes, " << with_commas(c.stats.edges)
    << " edges, " << c.stats.features << " features) and a " << c.model.layers << "-layer GCN of width "
    << c.model.hidden << ": " << describe(a, cal_err);
  if (configs.size() == 1) v << ".";
  if (configs.size() >= 2) {
    const FitOption b = best_option(c, *configs[1].first, configs[1].second);
    v << "; " << describe(b, cal_err) << ". ";
    if (a.fits && b.fits) {
      verdict_both_fit(v, a, b, cal_err);
    } else if (a.fits || b.fits) {
      v << "Verdict: only " << (a.fits ? a : b).label() << " fits this model.";
    } else {
      v << "Verdict: neither fits.";
      if (fastest != nullptr) {
        v << " The fastest option that fits is " << fastest->label() << " (" << format_ms(fastest->seconds) << ")";
        if (cheapest != nullptr) v << "; the most epochs per dollar, " << cheapest->label();
        v << ".";
      } else {
        v << " Nothing in the catalogue fits with " << join(rep.rank_gpus) << " GPUs.";
      }
    }
  }
  // Whatever does not fit: the smallest changes that would.
  for (const auto& cf : rep.configurations) {
    if (cf.would_fit.empty()) continue;
    v << " " << cf.gpus << " x " << cf.card.id << " would fit with ";
    for (std::size_t i = 0; i < cf.would_fit.size(); ++i)
      v << (i == 0 ? "" : i + 1 == cf.would_fit.size() ? " or " : ", ") << cf.would_fit[i].change;
    v << ".";
  }
  if (configs.size() == 1) {
    v << " Verdict: "
      << (!a.refusal.empty() ? "it cannot run there" : a.fits ? (a.offload ? "it fits streamed through host memory "
                                                                              "(--offload auto)"
                                                                            : "it fits")
                                                            : "it does not fit");
    if (!a.fits && rep.configurations.front().would_fit.empty()) v << " and no change fit tried helps";
    if (fastest != nullptr)
      v << "; the fastest option that fits is " << fastest->label() << " (" << format_ms(fastest->seconds) << ")";
    if (cheapest != nullptr) v << ", the most epochs per launch dollar " << cheapest->label();
    v << ".";
  }
  return v.str();
}

void rank(const Context& c, FitReport& rep) {
  for (const auto& card : c.req.catalogue.cards)
    for (int k : rep.rank_gpus)
      if (FitOption op = best_option(c, card, k); op.priced) rep.options.push_back(std::move(op));
  const auto& ops = rep.options;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (ops[i].fits) {
      rep.by_epoch_time.push_back(i);
      if (ops[i].per_kusd()) rep.by_epochs_per_dollar.push_back(i);
    }
  std::sort(rep.by_epoch_time.begin(), rep.by_epoch_time.end(),
            [&](std::size_t a, std::size_t b) { return ops[a].seconds < ops[b].seconds; });
  std::sort(rep.by_epochs_per_dollar.begin(), rep.by_epochs_per_dollar.end(),
            [&](std::size_t a, std::size_t b) { return *ops[a].per_kusd() > *ops[b].per_kusd(); });
}

// ---- JSON

json category_json(const CategoryBytes& c) {
  json j = json::object();
  for (int i = 0; i < static_cast<int>(MemoryCategory::kCount); ++i)
    j[memory_category_name(static_cast<MemoryCategory>(i))] = c[static_cast<std::size_t>(i)];
  return j;
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
          {"per_card_bytes", m.peak + card.fixed_overhead_bytes},
          {"per_card_bytes_includes_fixed_overhead", true},
          {"sparse_input_features", m.sparse_input}};
}

json epoch_json(const EpochTime& t, const Calibration& cal) {
  return {{"seconds", t.seconds}, {"relative_error", cal.band()}, {"bound", t.bound},
          {"source", t.measured ? "measured" : "extrapolated"},
          {"terms_seconds", {{"spmm", t.spmm}, {"elementwise", t.stream}, {"gemm", t.gemm}, {"launch", t.launch},
                             {"communication", t.comm}}}};
}

json calibration_json(const Calibration& cal) {
  json points = json::array();
  for (const auto& p : cal.points)
    points.push_back({{"what", p.what}, {"measured_seconds", p.measured_seconds},
                      {"predicted_seconds", p.predicted_seconds}, {"relative_error", p.error()}});
  auto table = [](const SpmmEfficiency& t) {
    json a = json::array();
    for (const auto& [w, e] : t.gathered.points)
      a.push_back({{"width", w},
                   {"gathered_dram_efficiency", e},
                   {"stream_dram_efficiency", t.stream.at(w)},
                   {"l2_bytes_per_second_per_sm", t.l2_per_sm.at(w)}});
    return json{{"by_width", a}, {"fixed_seconds", t.fixed_seconds}};
  };
  json prov = json::object();
  for (const auto& [k, v] : cal.provenance) prov[k] = v;
  return {{"source", cal.source},
          {"card", cal.card},
          {"max_relative_error", cal.band()},
          {"held_out_residual", cal.band()},
          {"held_out_source", cal.held_out_source},
          {"held_out_worst_recomputed", cal.max_error()},
          {"provenance", prov},
          {"factors",
           {{"spmm_own_efficiency", cal.spmm_own.gathered.at(256)},  // of the gathered rows, at width 256
            {"spmm_cusparse_efficiency", cal.spmm_cusparse.gathered.at(256)},
            {"spmm_bf16_efficiency", cal.spmm_bf16.gathered.at(256)},
            {"spmm_own_stream_efficiency", cal.spmm_own.stream.at(256)},
            {"spmm_bf16_stream_efficiency", cal.spmm_bf16.stream.at(256)},
            {"spmm_own_by_width", table(cal.spmm_own)},
            {"spmm_cusparse_by_width", table(cal.spmm_cusparse)},
            {"spmm_bf16_by_width", table(cal.spmm_bf16)},
            {"stream_efficiency", cal.stream_efficiency},
            {"elementwise_efficiency", cal.epoch_fp32.elementwise_efficiency},
            {"gemm_epoch_factor", cal.epoch_fp32.gemm},
            {"elementwise_bf16_efficiency", cal.epoch_bf16.elementwise_efficiency},
            {"gemm_epoch_factor_bf16", cal.epoch_bf16.gemm},
            {"spmm_epoch_factor", cal.epoch_fp32.spmm},
            {"spmm_epoch_factor_bf16", cal.epoch_bf16.spmm},
            {"l2_share", cal.l2_share},
            {"frequency_blend", cal.frequency_blend},
            {"gemm_efficiency", cal.gemm_fp32_efficiency},
            {"gemm_fp32_efficiency", cal.gemm_fp32_efficiency},
            {"gemm_tf32_efficiency", cal.gemm_tf32_efficiency},
            {"gemm_bf16_efficiency", cal.gemm_bf16_efficiency},
            {"launch_seconds", cal.launch_seconds},
            {"step_seconds", cal.step_seconds},
            {"link_efficiency", cal.link_efficiency},
            {"collective_seconds", cal.collective_seconds}}},
          {"points", points}};
}

json strategy_json(const StrategyOnCard& s, const FitConfiguration& cf, const Calibration& cal) {
  const StrategyFit& f = s.fit;
  const auto worst = static_cast<std::size_t>(f.worst);
  return {{"strategy", to_string(f.strategy)},
          {"exact", traits(f.strategy).exact},
          {"fits", s.fits},
          {"split_source", f.method},
          {"per_card_peak_bytes", f.peak},
          {"per_card_bytes", f.peak + cf.card.fixed_overhead_bytes},
          {"per_card_peak_error_bytes", f.peak_error},
          {"worst_device", f.worst},
          {"memory", memory_json(f.memory[worst], cf.card)},
          {"lost_edges", f.metrics.lost_edges},
          {"lost_fraction", f.metrics.lost_fraction},
          {"edge_cut", f.metrics.edge_cut},
          {"halo_factor", f.halo_factor},
          {"halo_per_hop_worst_device",
           f.metrics.halo_per_hop.empty() ? json::array() : json(f.metrics.halo_per_hop[worst])},
          {"halo_factor_relative_error", f.halo_error},
          {"comm_bytes_per_epoch", f.comm_bytes},
          {"link", cf.link},
          {"epoch", epoch_json(s.epoch, cal)}};
}

json configuration_json(const FitConfiguration& cf, const Calibration& cal) {
  json cj = {{"card", cf.card.id}, {"name", cf.card.name}, {"gpus", cf.gpus}, {"card_bytes", cf.card.memory_bytes}};
  if (!cf.refusal.empty()) cj["refusal"] = cf.refusal;
  if (cf.gpus == 1) {
    cj["single"] = {{"fits", cf.fits}, {"memory", memory_json(cf.memory, cf.card)}, {"epoch", epoch_json(cf.epoch, cal)},
                    {"largest_hidden", cf.largest_hidden}, {"largest_layers", cf.largest_layers}};
    if (const OffloadFit& o = cf.offload; o.priced)
      cj["offload"] = {{"fits", o.fits},
                       {"fits_card", o.fits_card},
                       {"device_peak_bytes", o.peak},
                       {"per_card_bytes", o.peak + cf.card.fixed_overhead_bytes},
                       {"part_rows", o.part_rows},
                       {"parts", o.parts},
                       {"operands", o.operands},
                       {"host_bytes", o.host_bytes},
                       {"host_ram_bytes", o.host_ram_bytes},
                       {"host_ram_limit_bytes", o.host_ram_limit},
                       {"h2d_bytes_per_epoch", o.h2d_bytes},
                       {"d2h_bytes_per_epoch", o.d2h_bytes},
                       {"kernel_seconds", o.kernel_seconds},
                       {"copy_seconds", o.copy_seconds},
                       {"epoch_seconds", o.seconds},
                       {"model", "whole uploads + max(kernels, passes at " + format_shortest(kHostLinkEfficiency) +
                                     " x the card's PCIe rate); kernels = resident x " +
                                     format_shortest(kStreamedKernelFactor) + " + parts x layers x " +
                                     format_shortest(kStreamedPartSeconds * 1e3) + " ms; fitted on 4 H200 runs"}};
  } else {
    json opts = json::array();
    for (const auto& s : cf.strategies) opts.push_back(strategy_json(s, cf, cal));
    cj["strategies"] = opts;
  }
  json wf = json::array();
  for (const auto& ch : cf.would_fit)
    wf.push_back({{"kind", ch.kind}, {"change", ch.change}, {"per_card_bytes", ch.per_card_bytes},
                  {"epoch_seconds", ch.seconds}});
  cj["would_fit"] = wf;
  return cj;
}

json option_json(const FitOption& op, double cal_err) {
  json oj = {{"option", op.label()}, {"card", op.card.id}, {"gpus", op.gpus}, {"offload", op.offload},
             {"strategy", to_string(op.strategy)}, {"exact", op.exact}, {"fits", op.fits},
             {"per_card_peak_bytes", op.peak}, {"per_card_bytes", op.per_card_bytes()},
             {"per_card_bytes_includes_fixed_overhead", true}, {"epoch_seconds", op.seconds},
             {"epoch_source", op.measured ? "measured" : "extrapolated"},
             {"epoch_relative_error", cal_err}, {"link", op.link}};
  oj["launch_price_usd"] = op.price() ? json(*op.price()) : json(nullptr);
  oj["epochs_per_hour_per_1000_usd"] = op.per_kusd() ? json(*op.per_kusd()) : json(nullptr);
  oj["tight"] = op.tight;
  oj["lost_fraction"] = op.lost_fraction;
  return oj;
}

}  // namespace

std::int64_t fit_margin(const Card& card) {
  return std::max<std::int64_t>(card.memory_bytes / 50, std::int64_t{256} << 20);
}

bool StrategyFit::fits(const Card& card) const {
  return peak + card.fixed_overhead_bytes + fit_margin(card) <= card.memory_bytes;
}

bool StrategyFit::tight(const Card& card) const {
  return !fits(card) && peak + card.fixed_overhead_bytes <= card.memory_bytes;
}

std::optional<double> FitOption::price() const {
  if (!card.launch_price_usd) return std::nullopt;
  return *card.launch_price_usd * gpus;
}

std::optional<double> FitOption::per_kusd() const {
  const auto p = price();
  if (!p || seconds <= 0) return std::nullopt;
  return 3600.0 / seconds / (*p / 1000.0);
}

std::string FitOption::label() const {
  std::string s = std::to_string(gpus) + " x " + card.id;
  if (gpus > 1) s += " (" + std::string(to_string(strategy)) + ")";
  if (offload) s += " (offload)";
  return s;
}

// '.' whatever the locale (base/format.hpp).
std::string format_ms(double seconds) { return format_fixed(1e3 * seconds, seconds < 0.01 ? 3 : 1) + " ms"; }
std::string format_pct(double fraction, int digits) { return format_fixed(100 * fraction, digits) + " %"; }
std::string format_gib(double bytes) {
  return bytes >= kMiB * 1024 ? format_fixed(bytes / (kMiB * 1024), 2) + " GiB" : human_bytes(bytes);
}

/// How the graph's L2 reuse is known, and where the graph lies outside what the SpMM terms were calibrated on: a
/// node count below half the smallest or above twice the largest calibrated graph, or a hit fraction of 128-wide
/// fp32 rows in the calibration card's L2 more than 5 points outside the calibrated graphs' range.
void coverage(const Context& c, FitReport& rep) {
  const Calibration& cal = c.cal;
  const ReuseProfile& reuse = c.stats.reuse;
  if (!reuse.empty()) {
    rep.reuse_source = "measured on the graph in degree order" +
                       (reuse.sampled_rows < 1 ? " (" + format_pct(reuse.sampled_rows, 0) + " of the rows followed)"
                                               : std::string());
  } else {
    rep.reuse_source = "inferred from the degree distribution (statistics only; pass the graph file to measure it)";
    if (cal.profiled)
      rep.outside_calibration.push_back("the calibration's band was measured with reuse measured on each graph; "
                                        "from statistics alone the SpMM term is less certain");
  }
  if (!cal.profiled || cal.calibrated_rows_max <= 0) return;
  const auto nodes = static_cast<double>(c.stats.nodes);
  if (nodes < cal.calibrated_rows_min / 2 || nodes > cal.calibrated_rows_max * 2)
    rep.outside_calibration.push_back(with_commas(c.stats.nodes) + " nodes: the SpMM terms were measured on graphs of " +
                                      with_commas(static_cast<std::int64_t>(cal.calibrated_rows_min)) + " to " +
                                      with_commas(static_cast<std::int64_t>(cal.calibrated_rows_max)) + " nodes");
  if (reuse.empty()) return;
  const Card& card = c.req.catalogue.find(cal.card, "the calibration card (" + cal.card + ")");  // resolve() found it
  const double hit =
      L2Reuse{c.degree_ratio, &reuse, cal.l2_share, cal.frequency_blend}.hit_fraction(card.l2_bytes, kCoverageRowBytes, nodes);
  constexpr double kSlack = 0.05;
  if (hit < cal.calibrated_hit_min - kSlack || hit > cal.calibrated_hit_max + kSlack)
    rep.outside_calibration.push_back("its L2 reuse (" + format_pct(hit, 0) + " of the gathered reads of 128-wide rows hit the " +
                                      card.name + "'s L2) lies outside the calibrated graphs' " +
                                      format_pct(cal.calibrated_hit_min, 0) + " to " + format_pct(cal.calibrated_hit_max, 0));
}

FitReport advise(const FitRequest& request) {
  Context c = resolve(request);
  const auto configs = configurations(request);
  c.single = fit_from_shapes(Strategy::kSingle, 1,
                             {c.ds != nullptr ? single_device_shape(*c.ds) : single_device_shape(c.stats)}, c.model);
  c.single.method = "whole graph";
  std::set<int> ks;
  for (const auto& cf : configs)
    if (cf.second > 1) ks.insert(cf.second);
  for (int k : request.rank_gpus)
    if (k > 1) ks.insert(k);
  for (int k : ks) {
    if (k > c.stats.nodes) throw InvalidInput::parameter("--gpus", std::to_string(k), "at most the number of nodes");
    c.splits[k] = split_fits(c, k);
  }
  FitReport rep;
  rep.graph = c.stats;
  rep.from_data = c.ds != nullptr;
  rep.model = c.model;
  rep.tf32 = request.tf32;
  rep.calibration = c.cal;
  coverage(c, rep);
  for (const auto& [k, fits] : c.splits)
    for (const auto& f : fits)
      if (rep.split_method.empty() && f.strategy != Strategy::kPipeline) rep.split_method = f.method;
  rep.rank_gpus = request.rank_gpus;
  for (const auto& [card, gpus] : configs) rep.configurations.push_back(configuration(c, *card, gpus));
  rank(c, rep);
  rep.verdict = verdict(c, rep, configs);
  return rep;
}

nlohmann::json FitReport::to_json() const {
  json j;
  j["command"] = "fit";
  j["graph"] = {{"name", graph.name},
                {"source", from_data ? "dataset" : "statistics"},
                {"nodes", graph.nodes},
                {"edges", graph.edges},
                {"features", graph.features},
                {"classes", graph.classes},
                {"feature_density", graph.feature_density},
                {"degree_mean", graph.degree_mean},
                {"degree_second_moment", graph.degree_second_moment}};
  j["graph"]["splits"] = graph.splits();
  j["graph"]["reuse_source"] = reuse_source;
  j["calibration_coverage"] = {{"inside", outside_calibration.empty()},
                               {"outside", outside_calibration},
                               {"families", calibration.families}};
  if (!graph.reuse.empty())
    j["graph"]["reuse"] = {{"order", "degree"},
                           {"reads", graph.reuse.reads},
                           {"sampled_rows", graph.reuse.sampled_rows},
                           {"hits_by_log2_rows", graph.reuse.hits},
                           {"optimal_hits_by_log2_rows", graph.reuse.static_hits}};
  j["model"] = {{"dims", model.dims()},
                {"stored_dims", model.stored_dims()},
                {"layers", model.layers},
                {"hidden", model.hidden},
                {"parameters", model.parameters()},
                {"dropout", model.dropout},
                {"precision", to_string(model.precision)},
                {"spmm", to_string(model.spmm)},
                {"tf32", tf32},
                {"optimizer", "adam"}};
  // kAuto on one device: the widths at which the tuner is predicted to keep its own SpMM (no cuSPARSE plan priced
  // as kept there); the other widths keep a plan in the memory figures.
  if (model.spmm == SpmmAlgo::kAuto) j["model"]["spmm_own_widths_predicted"] = model.auto_own_widths;
  j["calibration"] = calibration_json(calibration);
  json configs_json = json::array();
  for (const auto& cf : configurations) configs_json.push_back(configuration_json(cf, calibration));
  j["configurations"] = configs_json;
  const double cal_err = calibration.band();
  json rank_time = json::array(), rank_dollar = json::array(), all = json::array();
  for (std::size_t i : by_epoch_time) rank_time.push_back(option_json(options[i], cal_err));
  for (std::size_t i : by_epochs_per_dollar) rank_dollar.push_back(option_json(options[i], cal_err));
  for (const auto& op : options) all.push_back(option_json(op, cal_err));
  j["ranking"] = {{"by_epoch_time", rank_time}, {"by_epochs_per_dollar", rank_dollar}, {"all_options", all}};
  j["verdict"] = verdict;
  return j;
}

}  // namespace gcnpart::partition
