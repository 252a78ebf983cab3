#include "partition/fit/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "partition/allocation_plan.hpp"

namespace gcnpart::partition {

extern const char* const kBuiltinCalibrationJson;  // partition/fit/calibration.json, compiled in (calibration_data.cpp.in)

double WidthTable::at(double width) const {
  if (points.empty()) return 0.5;
  if (width <= points.front().first) return points.front().second;
  if (width >= points.back().first) return points.back().second;
  for (std::size_t i = 1; i < points.size(); ++i)
    if (width <= points[i].first) {
      const auto [w0, e0] = points[i - 1];
      const auto [w1, e1] = points[i];
      const double t = std::log2(width / w0) / std::log2(w1 / w0);
      return e0 + t * (e1 - e0);
    }
  return points.back().second;
}

double l2_hit_fraction(double cached_rows, double rows, double degree_ratio) {
  if (rows <= 0) return 0;
  const double p = std::clamp(cached_rows / rows, 0.0, 1.0);
  if (!(degree_ratio > 1.0 + 1e-9)) return p;
  const double alpha = 1 + std::sqrt(1 + 1 / (degree_ratio - 1));
  return std::pow(p, (alpha - 1) / alpha);
}

double L2Reuse::hit_fraction(std::int64_t l2_bytes, double row_bytes, double rows) const {
  if (l2_bytes <= 0 || !(row_bytes > 0)) return 0;
  const double cached_rows = l2_share * static_cast<double>(l2_bytes) / row_bytes;
  if (profile != nullptr && !profile->empty()) {
    const double lru = profile->hit_fraction(cached_rows);
    return std::max(lru, lru + frequency_blend * (profile->static_hit_fraction(cached_rows) - lru));
  }
  return l2_hit_fraction(cached_rows, rows, degree_ratio);
}

SpmmBytes spmm_call_bytes(const SpmmTerm& c, double act, std::int64_t l2_bytes, const L2Reuse& reuse) {
  const double row = c.width * act;
  const double hit = reuse.hit_fraction(l2_bytes, row, c.cols_in);
  const double gathered = std::max(c.cols_in * row, c.entries * row * (1 - hit));
  const double streamed = c.rows_out * 8 + c.entries * 4 + (c.rows_out + c.cols_in) * 4 + c.rows_out * row;
  return {streamed + gathered, c.entries * row * hit, streamed};
}

namespace {
constexpr int kDefaultSms = 100;  // a card without an SM count in the catalogue
}  // namespace

double spmm_call_seconds(const SpmmTerm& call, double act, const L2Reuse& reuse, const Card& card,
                         const SpmmEfficiency& eff) {
  const SpmmBytes b = spmm_call_bytes(call, act, card.l2_bytes, reuse);
  const double sms = card.sms > 0 ? card.sms : kDefaultSms;
  const double bw = card.memory_bandwidth_gbs * 1e9;
  return eff.fixed_seconds + b.gathered() / (bw * eff.gathered.at(call.width)) +
         b.stream / (bw * eff.stream.at(call.width)) + b.l2 / (sms * eff.l2_per_sm.at(call.width));
}

double Calibration::gemm_efficiency(Precision math, double m, double n, double k) const {
  const double median = math == Precision::kBf16   ? gemm_bf16_efficiency
                        : math == Precision::kTf32 ? gemm_tf32_efficiency
                                                   : gemm_fp32_efficiency;
  // The two narrow dimensions, in order, and whether k (a weight gradient) or m is the long one.
  const auto narrow = [](double a, double b, double c) {
    const bool k_long = c >= a;
    return std::tuple{k_long, k_long ? a : b, k_long ? b : c};
  };
  const auto [k_long, x, y] = narrow(m, n, k);
  double best = -1, best_distance = 0;
  for (const GemmPoint& p : gemm_points) {
    if (p.math != math || p.efficiency <= 0) continue;
    const auto [pk_long, px, py] = narrow(p.m, p.n, p.k);
    if (pk_long != k_long) continue;
    const double distance = std::fabs(std::log2(std::max(x, 1.0) / std::max(px, 1.0))) +
                            std::fabs(std::log2(std::max(y, 1.0) / std::max(py, 1.0)));
    if (best < 0 || distance < best_distance) best = p.efficiency, best_distance = distance;
  }
  return best > 0 ? best : median;
}

double Calibration::max_error() const {
  double e = 0;
  for (const auto& p : points) e = std::max(e, std::fabs(p.error()));
  return e;
}

namespace {

constexpr double kGiga = 1e9, kTera = 1e12;

}  // namespace

EpochWork epoch_work(const DeviceShape& s, const ModelSpec& m) {
  m.validate();
  EpochWork w;
  w.element_bytes = traits(m.precision).storage_bytes;
  const auto d = m.stored_dims();  // the widths the engine computes with (ModelSpec::stored_dims)
  const int L = m.layers;
  const double r = static_cast<double>(s.rows), nnz = static_cast<double>(s.graph_entries);
  // f: the sparse features' columns (the dataset's count); f_stored: the dense feature rows' stored width.
  const double f = static_cast<double>(m.features), f_stored = static_cast<double>(d[0]);
  const double act = traits(m.precision).storage_bytes;
  const bool sparse = uses_sparse_input(s, m);
  const double nnz_x = static_cast<double>(s.nonzeros(m.features));
  // The source rows an aggregation reads (forward) or writes (backward): gather's table, boundary's own and
  // received rows, else the device's rows.
  const double table = s.gather     ? static_cast<double>(s.table_block) * s.parts
                       : s.boundary ? r + static_cast<double>(s.recv_rows)
                                    : r;
  const bool source = s.gather || s.boundary;
  const bool comm = s.parts > 1;

  // One aggregation: CSR walk, one gathered input row per entry (no cache reuse assumed: the efficiency factor
  // absorbs L2 hits), output rows, the two D^-1/2 vectors.
  auto spmm = [&](double width, bool backward) {
    const double rows_out = source && backward ? table : r;
    const double cols_in = source && !backward ? table : r;
    w.spmm_bytes += rows_out * 8 + nnz * 4 + nnz * width * act + rows_out * width * act + (rows_out + cols_in) * 4;
    w.spmms.push_back({width, rows_out, cols_in, nnz});
    w.kernels += 1;
    if (s.gather) {  // staging copy and the all-gather / reduce-scatter
      w.stream_bytes += 2 * r * width * act;
      w.kernels += 1;
      w.collectives += 1;
    }
    if (s.boundary) {  // forward: pack the sent rows, copy the own rows; backward: scatter-add the returned rows
      const double sent = static_cast<double>(s.send_rows);
      w.stream_bytes += backward ? 3 * sent * width * 4 : 2 * (sent + r) * width * act;
      w.kernels += backward ? 1 : 2;
      w.collectives += 1;
    }
  };
  auto gemm = [&](double mm, double nn, double kk, double out_bytes = 0) {
    const double flops = 2 * mm * nn * kk, bytes = (mm * kk + kk * nn) * act + mm * nn * (out_bytes > 0 ? out_bytes : act);
    w.gemm_flops += flops;
    w.gemm_bytes += bytes;
    w.gemms.push_back({mm, nn, kk, flops, bytes});
    w.kernels += 1;
  };
  auto elementwise = [&](double bytes, int kernels = 1) {
    w.stream_bytes += bytes;
    w.kernels += kernels;
  };
  // bf16 storage: the epilogue reads float and writes bf16, and logits and the loss gradient stay float. An
  // aggregation whose output a GEMM reads as bf16: the local one (single device, drop, halo) stores bf16 from the
  // SpMM (one more small launch rounds its long rows); gather and boundary return float rows that one pass rounds.
  const bool bf16 = traits(m.precision).bf16_storage;
  auto to_bf16 = [&](double elements) {
    if (bf16) elementwise(elements * (4 + 2));
  };
  auto spmm_to_bf16 = [&](double elements) {
    if (!bf16) return;
    if (source) {
      to_bf16(elements);
    } else {
      w.kernels += 1;
    }
  };

  // Forward.
  // A pipeline stage runs its own layers [first, last); the loss on the last stage only.
  const int first = m.first_layer(), last = m.last_layer();
  for (int l = first; l < last; ++l) {
    const double in = static_cast<double>(d[l]), out = static_cast<double>(d[l + 1]);
    if (l == 0 && sparse) {
      if (m.dropout) elementwise(nnz_x * 12);           // dropout on the stored values (columns, values, output)
      elementwise(nnz_x * (4 + act) + (r + 1) * 8 + r * out * (bf16 ? 4 : act));  // X W (W stays in cache)
      to_bf16(r * out);
      spmm(out, false);
    } else {
      if (l == 0 && m.dropout) elementwise(2 * r * f_stored * act);
      if (aggregates_first(d, l)) {
        spmm(in, false);
        spmm_to_bf16(r * in);
        gemm(r, out, in, 4);  // float output: the epilogue reads it (bf16: rounds it)
      } else {
        gemm(r, out, in);
        spmm(out, false);
      }
    }
    // Bias, ReLU, dropout of the next input (bf16: float in, bf16 out) and its positive mask (a byte per 4
    // columns); the last layer's bias comes with the loss.
    if (l < L - 1) elementwise((bf16 ? 6 : 2 * act) * r * out + r * out / 4 + out * 4);
  }
  // Loss, one pass over every row (kernels::bias_softmax_cross_entropy_async): the float logits read and written
  // back with the bias, the gradient written in its storage type, slots, labels and per-row losses; then the bias
  // gradient's partial sums and the loss reduction.
  const double classes = static_cast<double>(d[L]);
  const double train = static_cast<double>(s.split_rows[0]);
  if (last == L) elementwise(r * classes * (8 + act) + r * 4 + train * 8, 3);
  if (comm) w.collectives += 1;
  // Backward.
  for (int l = last - 1; l >= first; --l) {
    const double in = static_cast<double>(d[l]), out = static_cast<double>(d[l + 1]);
    const bool aggregate_first = aggregates_first(d, l);  // never the sparse-input layer 0 (it narrows)
    // The bias gradient comes with the pass that made dZ: the loss for the loss layer, the ReLU / dropout backward
    // below it (the layer above's, or a pipeline stage's on the received gradient: dZ, dh and the positive mask).
    if (l == last - 1 && last < L) elementwise(2 * r * out * act + r * out / 4, 2);
    if (aggregate_first) {
      gemm(in, out, r);
      if (l > 0) {
        gemm(r, in, out);
        spmm(in, true);
        spmm_to_bf16(r * in);
      }
    } else {
      spmm(out, true);
      if (!(l == 0 && sparse)) spmm_to_bf16(r * out);
      if (l == 0 && sparse) {
        if (m.dropout) elementwise(nnz_x * 12);
        elementwise(nnz_x * (4 + act) + nnz_x * out * act + (f + 1) * 8 + f * out * 4);  // X^T dP
      } else {
        gemm(in, out, r);
      }
      if (l > 0) gemm(r, in, out);
    }
    // ReLU / dropout backward with the bias gradient of layer l - 1 (a pipeline stage sends its input gradient to
    // the stage below instead, which runs it: the l == last - 1 term above)
    if (l > first) elementwise(2 * r * in * act + r * in / 4, 2);
  }
  // Gradient all-reduce and Adam (two kernels per layer: weights, bias).
  double params = 0;
  for (int l = first; l < last; ++l) params += static_cast<double>(d[l] * d[l + 1] + d[l + 1]);
  if (comm) w.collectives += 1;
  elementwise(params * 4 * 7, 2 * (last - first));
  w.comm_bytes = static_cast<double>(comm_bytes_per_epoch(s, m));
  if (m.stages > 1) {  // pipeline: activations to the next stage, their gradients back to the previous one
    w.comm_bytes = static_cast<double>(pipeline_send_bytes(s, m));
    w.collectives += (first > 0 ? 1 : 0) + (last < L ? 1 : 0);
  }
  return w;
}

std::int64_t pipeline_send_bytes(const DeviceShape& s, const ModelSpec& m) {
  if (m.stages <= 1) return 0;
  const auto d = m.stored_dims();
  std::int64_t bytes = 0;
  if (m.last_layer() < m.layers) bytes += s.rows * d[static_cast<std::size_t>(m.last_layer())] * traits(m.precision).storage_bytes;
  if (m.first_layer() > 0) bytes += s.rows * d[static_cast<std::size_t>(m.first_layer())] * 4;
  return bytes;
}

Link link_for(const Card& card, int gpus) {
  if (gpus <= 1) return {"none", 0};
  if (card.nvlink_gbs > 0 && gpus <= card.nvlink_max_gpus) return {"nvlink", card.nvlink_gbs / 2};
  return {"pcie" + std::to_string(card.pcie_generation), card.pcie_gbs};
}

namespace {
/// Which SpMM the epoch's aggregations are priced with: the own kernel, cuSPARSE, or per call the faster (kAuto).
enum class SpmmPick { kOwn, kCusparse, kFaster };

EpochTime predict(const EpochWork& w, const Card& card, const Calibration& cal, const Link& link, SpmmPick pick,
                  Precision precision) {
  GCNPART_EXPECTS(card.memory_bandwidth_gbs > 0 && card.fp32_tflops > 0, "a card with bandwidth and FP32 throughput");
  EpochTime t;
  t.measured = card.id == cal.card;
  const double bw = card.memory_bandwidth_gbs * kGiga;
  const PrecisionTraits& math = traits(precision);
  double tflops = card.fp32_tflops;
  Precision gemm_math = Precision::kFp32;
  if (math.tf32_gemm && card.tf32_tflops > 0) tflops = card.tf32_tflops, gemm_math = Precision::kTf32;
  if (math.bf16_storage && card.bf16_tflops > 0) tflops = card.bf16_tflops, gemm_math = Precision::kBf16;
  const double flops = tflops * kTera;
  const SpmmEfficiency& spmm_eff = cal.spmm(pick == SpmmPick::kCusparse, math.bf16_storage);
  const L2Reuse reuse{w.degree_ratio > 0 ? w.degree_ratio : 1.0, &w.reuse, cal.l2_share, cal.frequency_blend};
  if (!w.spmms.empty()) {
    for (const auto& call : w.spmms) {
      double s = spmm_call_seconds(call, w.element_bytes, reuse, card, spmm_eff);
      if (pick == SpmmPick::kFaster && !math.bf16_storage)
        s = std::min(s, spmm_call_seconds(call, w.element_bytes, reuse, card, cal.spmm(true, false)));
      t.spmm += s;
    }
  } else {
    t.spmm = w.spmm_bytes / (bw * spmm_eff.gathered.at(64));  // no per-call terms: every byte as a gathered one
  }
  const Calibration::EpochFactors& in_epoch = cal.epoch(math.bf16_storage);
  t.spmm *= in_epoch.spmm;
  const double stream_eff =
      in_epoch.elementwise_efficiency > 0 ? in_epoch.elementwise_efficiency : cal.stream_efficiency;
  const double gemm_factor = in_epoch.gemm;
  t.stream = w.stream_bytes / (bw * stream_eff);
  for (const auto& g : w.gemms)
    t.gemm += gemm_factor * std::max(g.flops / (flops * cal.gemm_efficiency(gemm_math, g.m, g.n, g.k)),
                                     g.bytes / (bw * cal.stream_efficiency));
  t.launch = static_cast<double>(w.kernels) * cal.launch_seconds + cal.step_seconds;
  if (w.collectives > 0) {
    const double link_bw = link.gbs * kGiga * cal.link_efficiency;
    t.comm = static_cast<double>(w.collectives) * cal.collective_seconds + (link_bw > 0 ? w.comm_bytes / link_bw : 0);
  }
  t.seconds = t.spmm + t.stream + t.gemm + t.launch + t.comm;
  const std::pair<double, const char*> terms[] = {
      {t.spmm, "SpMM bandwidth"}, {t.stream, "element-wise bandwidth"}, {t.gemm, "GEMM"},
      {t.launch, "kernel launches"}, {t.comm, "communication"}};
  t.bound = std::max_element(std::begin(terms), std::end(terms))->second;
  return t;
}
}  // namespace

EpochTime predict_epoch(const EpochWork& w, const Card& card, const Calibration& cal, const Link& link, bool cusparse,
                        Precision precision) {
  return predict(w, card, cal, link, cusparse ? SpmmPick::kCusparse : SpmmPick::kOwn, precision);
}

EpochTime predict_epoch_autotuned(const EpochWork& w, const Card& card, const Calibration& cal, const Link& link,
                                  Precision precision) {
  return predict(w, card, cal, link, SpmmPick::kFaster, precision);
}

namespace {

constexpr const char* kBuiltinCalibrationOrigin = "partition/fit/calibration.json (built in)";

/// Reads calibration.json's fields, each checked (InvalidInput naming the file and the field).
class CalibrationReader {
 public:
  explicit CalibrationReader(std::string origin) : origin_(std::move(origin)) {}
  const nlohmann::json& field(const nlohmann::json& obj, const std::string& name, const std::string& path) const {
    if (!obj.is_object() || !obj.contains(name)) bad(path + name, "missing", "the field to be present");
    return obj.at(name);
  }
  double number(const nlohmann::json& obj, const std::string& name, const std::string& path, double min) const {
    const nlohmann::json& v = field(obj, name, path);
    if (!v.is_number() || !(v.get<double>() >= min)) bad(path + name, v.dump(), "a number >= " + std::to_string(min));
    return v.get<double>();
  }
  std::int64_t count(const nlohmann::json& obj, const std::string& name, const std::string& path) const {
    const nlohmann::json& v = field(obj, name, path);
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0) bad(path + name, v.dump(), "an integer >= 0");
    return v.get<std::int64_t>();
  }
  std::string text(const nlohmann::json& obj, const std::string& name, const std::string& path) const {
    const nlohmann::json& v = field(obj, name, path);
    if (!v.is_string()) bad(path + name, v.dump(), "a string");
    return v.get<std::string>();
  }
  /// An enumerator by its name (base/enums.hpp tables).
  template <class Enum>
  Enum name(const nlohmann::json& obj, const std::string& field_name, const std::string& path) const {
    const std::string value = text(obj, field_name, path);
    for (const auto& row : EnumNames<Enum>::table)
      if (value == row.name) return row.value;
    bad(path + field_name, value, or_list(enum_names<Enum>()));
  }
  [[noreturn]] void bad(const std::string& what, const std::string& value, const std::string& expected) const {
    throw InvalidInput(InputLocation{origin_, 0, 0}, what, value, expected);
  }

 private:
  std::string origin_;
};

/// A stored hit table (fractions at caches of 2^0, 2^1, ... rows), checked.
std::vector<double> hits_of(const CalibrationReader& in, const nlohmann::json& g, const std::string& field,
                            const std::string& path) {
  std::vector<double> hits;
  if (!g.contains(field)) return hits;
  const nlohmann::json& h = g.at(field);
  if (!h.is_array() || h.size() < 2) in.bad(path + field, h.dump().substr(0, 60), "an array of hit fractions");
  for (const auto& x : h) {
    if (!x.is_number() || !(x.get<double>() >= 0 && x.get<double>() <= 1) ||
        (!hits.empty() && x.get<double>() < hits.back()))
      in.bad(path + field, x.dump(), "nondecreasing fractions in [0, 1]");
    hits.push_back(x.get<double>());
  }
  return hits;
}

/// A stored reuse profile ("reuse_hits": LRU, "static_hits": frequency-optimal).
ReuseProfile reuse_of(const CalibrationReader& in, const nlohmann::json& g, const std::string& path) {
  ReuseProfile p;
  p.hits = hits_of(in, g, "reuse_hits", path);
  if (!p.hits.empty()) p.static_hits = hits_of(in, g, "static_hits", path);
  return p;
}

GraphStats calibration_graph(const CalibrationReader& in, const nlohmann::json& g, const std::string& name) {
  const std::string path = "graphs." + name + ".";
  GraphStats s;
  s.name = name;
  s.nodes = in.count(g, "nodes", path);
  s.edges = in.count(g, "edges", path);
  s.features = in.count(g, "features", path);
  s.classes = in.count(g, "classes", path);
  if (g.contains("feature_nonzeros"))
    s.feature_density = static_cast<double>(in.count(g, "feature_nonzeros", path)) /
                        (static_cast<double>(s.nodes) * static_cast<double>(s.features));
  else
    s.feature_density = in.number(g, "feature_density", path, 0);
  const nlohmann::json& splits = in.field(g, "splits", path);
  if (!splits.is_array() || splits.size() != 3) in.bad(path + "splits", splits.dump(), "[train, valid, test]");
  for (std::size_t i = 0; i < 3; ++i) {
    if (!splits[i].is_number_integer() || splits[i].get<std::int64_t>() < 0)
      in.bad(path + "splits", splits.dump(), "[train, valid, test] as integers >= 0");
    s.split_sizes[i] = splits[i].get<std::int64_t>();
  }
  s.degree_mean = 2.0 * static_cast<double>(s.edges) / static_cast<double>(s.nodes);
  if (g.contains("degree_second_moment")) s.degree_second_moment = in.number(g, "degree_second_moment", path, 0);
  s.reuse = reuse_of(in, g, path);
  s.validate();
  return s;
}

/// The fields a measured epoch and a profiled one share: what, its graph (and family), the model, the SpMM kind, the
/// time (at least `min_seconds`).
CalibrationMeasurement epoch_of(const CalibrationReader& in, const nlohmann::json& e, const nlohmann::json& graphs,
                                const std::string& path, double min_seconds) {
  CalibrationMeasurement m;
  m.what = in.text(e, "what", path);
  const std::string graph = in.text(e, "graph", path);
  m.graph = calibration_graph(in, in.field(graphs, graph, "graphs."), graph);
  if (graphs.at(graph).contains("family")) m.family = in.text(graphs.at(graph), "family", "graphs." + graph + ".");
  m.model.layers = static_cast<int>(in.count(e, "layers", path));
  m.model.hidden = in.count(e, "hidden", path);
  m.model.features = m.graph.features;
  m.model.classes = m.graph.classes;
  m.model.precision = in.name<Precision>(e, "precision", path);
  const SpmmAlgo algo = in.name<SpmmAlgo>(e, "spmm", path);
  m.cusparse = algo == SpmmAlgo::kCusparse;
  m.autotuned = algo == SpmmAlgo::kAuto;
  m.seconds = in.number(e, "seconds", path, min_seconds);
  return m;
}

}  // namespace

CalibrationData parse_calibration_data(const std::string& text, const std::string& origin) {
  const CalibrationReader in(origin);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    in.bad("not valid JSON", e.what(), "a JSON document {\"graphs\": {...}, \"measurements\": [...]}");
  }
  CalibrationData data;
  data.origin = origin;
  if (doc.is_object() && doc.contains("card")) data.card = in.text(doc, "card", "");
  if (doc.is_object() && doc.contains("measured")) data.measured = in.text(doc, "measured", "");
  const nlohmann::json& graphs = in.field(doc, "graphs", "");
  const nlohmann::json& list = in.field(doc, "measurements", "");
  if (!list.is_array()) in.bad("measurements", list.dump().substr(0, 60), "an array");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& e = list[i];
    const std::string path = "measurements[" + std::to_string(i) + "].";
    CalibrationMeasurement m = epoch_of(in, e, graphs, path, 0);
    if (e.contains("role")) {
      const std::string role = in.text(e, "role", path);
      if (role != "launch" && role != "held-out") in.bad(path + "role", role, "\"launch\" or \"held-out\"");
      m.fixes_launch = role == "launch";
    }
    m.model.validate();
    data.epochs.push_back(std::move(m));
  }
  if (doc.contains("epoch_profiles")) {
    const nlohmann::json& ps = doc.at("epoch_profiles");
    if (!ps.is_array()) in.bad("epoch_profiles", ps.dump().substr(0, 60), "an array of profiled epochs");
    for (std::size_t i = 0; i < ps.size(); ++i) {
      const nlohmann::json& e = ps[i];
      const std::string path = "epoch_profiles[" + std::to_string(i) + "].";
      EpochProfile p;
      p.epoch = epoch_of(in, e, graphs, path, 1e-9);
      p.epoch.model.validate();
      const nlohmann::json& c = in.field(e, "class_seconds", path);
      p.spmm_seconds = in.number(c, "spmm", path + "class_seconds.", 0);
      p.gemm_seconds = in.number(c, "gemm", path + "class_seconds.", 0);
      p.other_seconds = in.number(c, "other", path + "class_seconds.", 0);
      data.profiles.push_back(std::move(p));
    }
  }
  if (doc.contains("spmm")) {
    const nlohmann::json& sp = doc.at("spmm");
    if (!sp.is_array()) in.bad("spmm", sp.dump().substr(0, 60), "an array of timed SpMM calls");
    for (std::size_t i = 0; i < sp.size(); ++i) {
      const std::string path = "spmm[" + std::to_string(i) + "].";
      SpmmSample x;
      x.graph = in.text(sp[i], "graph", path);
      x.call.rows_out = x.call.cols_in = static_cast<double>(in.count(sp[i], "rows", path));
      x.call.entries = static_cast<double>(in.count(sp[i], "entries", path));
      x.call.width = in.number(sp[i], "width", path, 1);
      x.degree_ratio = in.number(sp[i], "degree_ratio", path, 0);
      const std::string kind = in.text(sp[i], "kind", path);
      if (kind != "own" && kind != "cusparse" && kind != "own-bf16") in.bad(path + "kind", kind, "own, cusparse or own-bf16");
      x.cusparse = kind == "cusparse";
      x.bf16 = kind == "own-bf16";
      x.seconds = in.number(sp[i], "seconds", path, 1e-9);
      // The timed graph's family and reuse profile, when the document has them (spmm_graphs.NAME).
      if (doc.contains("spmm_graphs") && doc.at("spmm_graphs").contains(x.graph)) {
        const nlohmann::json& g = doc.at("spmm_graphs").at(x.graph);
        const std::string gpath = "spmm_graphs." + x.graph + ".";
        if (g.contains("family")) x.family = in.text(g, "family", gpath);
        x.reuse = reuse_of(in, g, gpath);
      }
      data.spmm.push_back(x);
    }
  }
  if (doc.contains("gemm")) {
    const nlohmann::json& gm = doc.at("gemm");
    if (!gm.is_array()) in.bad("gemm", gm.dump().substr(0, 60), "an array of timed GEMMs");
    for (std::size_t i = 0; i < gm.size(); ++i) {
      const std::string path = "gemm[" + std::to_string(i) + "].";
      GemmSample g;
      g.m = in.number(gm[i], "m", path, 1);
      g.n = in.number(gm[i], "n", path, 1);
      g.k = in.number(gm[i], "k", path, 1);
      g.math = in.name<Precision>(gm[i], "math", path);
      g.seconds = in.number(gm[i], "seconds", path, 1e-9);
      data.gemm.push_back(g);
    }
  }
  if (doc.contains("copy_gbs")) data.copy_gbs = in.number(doc, "copy_gbs", "", 0);
  if (doc.contains("link_gbs")) data.link_gbs = in.number(doc, "link_gbs", "", 0);
  if (doc.contains("collective_seconds")) data.collective_seconds = in.number(doc, "collective_seconds", "", 0);
  if (doc.contains("held_out")) {
    const nlohmann::json& h = doc.at("held_out");
    data.held_out_residual = in.number(h, "residual", "held_out.", 0);
    data.held_out_source = in.text(h, "source", "held_out.");
  }
  return data;
}

CalibrationData CalibrationData::without_family(const std::string& family) const {
  CalibrationData d = *this;
  std::erase_if(d.spmm, [&](const SpmmSample& x) { return x.family == family; });
  std::erase_if(d.epochs, [&](const CalibrationMeasurement& m) { return m.family == family; });
  std::erase_if(d.profiles, [&](const EpochProfile& p) { return p.epoch.family == family; });
  d.origin += " without family " + family;
  return d;
}

std::vector<std::string> CalibrationData::families() const {
  std::vector<std::string> out;
  for (const auto& x : spmm)
    if (!x.family.empty() && std::find(out.begin(), out.end(), x.family) == out.end()) out.push_back(x.family);
  return out;
}

std::vector<CalibrationMeasurement> parse_calibration(const std::string& text, const std::string& origin) {
  return parse_calibration_data(text, origin).epochs;
}

CalibrationData builtin_calibration() {
  return parse_calibration_data(kBuiltinCalibrationJson, kBuiltinCalibrationOrigin);
}

CalibrationData load_calibration(const std::string& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw IoError(file, "cannot open the calibration file");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_calibration_data(text.str(), file);
}

std::vector<CalibrationMeasurement> h200_measurements() { return builtin_calibration().epochs; }

namespace {

/// Least squares for x in rows [a_0 .. a_{n-1} | y] through the normal equations (Gaussian elimination with
/// partial pivoting); none when they are singular.
std::optional<std::vector<double>> least_squares(const std::vector<std::vector<double>>& rows, std::size_t n) {
  std::vector<std::vector<double>> m(n, std::vector<double>(n + 1, 0.0));
  for (const auto& r : rows)
    for (std::size_t i = 0; i < n; ++i) {
      for (std::size_t j = 0; j < n; ++j) m[i][j] += r[i] * r[j];
      m[i][n] += r[i] * r[n];
    }
  for (std::size_t c = 0; c < n; ++c) {
    std::size_t pivot = c;
    for (std::size_t r = c + 1; r < n; ++r)
      if (std::fabs(m[r][c]) > std::fabs(m[pivot][c])) pivot = r;
    if (std::fabs(m[pivot][c]) < 1e-300) return std::nullopt;
    std::swap(m[c], m[pivot]);
    for (std::size_t r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (std::size_t j = c; j <= n; ++j) m[r][j] -= f * m[c][j];
    }
  }
  std::vector<double> x(n);
  for (std::size_t i = 0; i < n; ++i) x[i] = m[i][n] / m[i][i];
  return x;
}

/// Least squares over the columns `cols` of rows [a_0 .. a_{n-1} | y] (the others taken as 0).
std::optional<std::vector<double>> least_squares_on(const std::vector<std::vector<double>>& rows, std::size_t n,
                                                    const std::vector<std::size_t>& cols) {
  std::vector<std::vector<double>> reduced;
  reduced.reserve(rows.size());
  for (const auto& r : rows) {
    std::vector<double> row;
    row.reserve(cols.size() + 1);
    for (std::size_t c : cols) row.push_back(r[c]);
    row.push_back(r[n]);
    reduced.push_back(std::move(row));
  }
  const auto sub = least_squares(reduced, cols.size());
  if (!sub) return std::nullopt;
  std::vector<double> x(n, 0.0);
  for (std::size_t k = 0; k < cols.size(); ++k) x[cols[k]] = (*sub)[k];
  return x;
}

/// Least squares with every unknown >= 0: the unconstrained solution when it is non-negative, else Lawson and
/// Hanson's active-set method (columns enter while the residual's gradient favours them and leave when an
/// interpolation step reaches 0); none when a needed subsystem is singular.
std::optional<std::vector<double>> nonnegative_least_squares(const std::vector<std::vector<double>>& rows,
                                                             std::size_t n) {
  std::vector<std::size_t> all(n);
  for (std::size_t i = 0; i < n; ++i) all[i] = i;
  if (const auto x = least_squares_on(rows, n, all);
      x && std::all_of(x->begin(), x->end(), [](double v) { return v >= 0; }))
    return x;
  // gradient of -|y - A x|^2 / 2: A^T (y - A x)
  const auto gradient = [&](const std::vector<double>& x) {
    std::vector<double> w(n, 0.0);
    for (const auto& r : rows) {
      double residual = r[n];
      for (std::size_t j = 0; j < n; ++j) residual -= r[j] * x[j];
      for (std::size_t j = 0; j < n; ++j) w[j] += r[j] * residual;
    }
    return w;
  };
  constexpr double kTolerance = 1e-12;
  std::vector<double> x(n, 0.0);
  std::vector<bool> passive(n, false);
  for (std::size_t outer = 0; outer < 3 * n; ++outer) {
    const std::vector<double> w = gradient(x);
    std::size_t enter = n;
    for (std::size_t j = 0; j < n; ++j)
      if (!passive[j] && w[j] > kTolerance && (enter == n || w[j] > w[enter])) enter = j;
    if (enter == n) return x;  // optimal: no zero unknown would lower the residual
    passive[enter] = true;
    for (std::size_t inner = 0; inner < 3 * n; ++inner) {
      std::vector<std::size_t> cols;
      for (std::size_t j = 0; j < n; ++j)
        if (passive[j]) cols.push_back(j);
      const auto s = least_squares_on(rows, n, cols);
      if (!s) return std::nullopt;
      bool feasible = true;
      double alpha = 1;
      for (std::size_t j : cols)
        if ((*s)[j] <= 0) {
          feasible = false;
          alpha = std::min(alpha, x[j] / std::max(x[j] - (*s)[j], 1e-300));
        }
      if (feasible) {
        x = *s;
        break;
      }
      for (std::size_t j = 0; j < n; ++j) x[j] += alpha * ((*s)[j] - x[j]);
      for (std::size_t j : cols)
        if (x[j] <= kTolerance) passive[j] = false, x[j] = 0;
    }
  }
  return x;
}

EpochWork work_of(const CalibrationMeasurement& m) {
  EpochWork w = epoch_work(single_device_shape(m.graph), m.model);
  if (m.graph.degree_second_moment > 0 && m.graph.degree_mean > 0)
    w.degree_ratio = m.graph.degree_second_moment / (m.graph.degree_mean * m.graph.degree_mean);
  w.reuse = m.graph.reuse;
  return w;
}

}  // namespace

Calibration calibrate(const Card& card, const std::vector<CalibrationMeasurement>& measurements) {
  CalibrationData data;
  data.card = card.id;
  data.epochs = measurements;
  return calibrate(card, data);
}

/// Upper bound of a fitted SpMM DRAM efficiency (see calibrate).
constexpr double kMaxDramEfficiency = 2.0;

namespace {

/// The SpMM terms of `cal` from the timed calls at L2 share `share`, per kind: t = fixed + a_w gathered DRAM bytes /
/// bandwidth + c_w streamed DRAM bytes / bandwidth + b_w L2 bytes / SMs, by non-negative least squares on the
/// relative error (each row divided by its time); the DRAM efficiencies are 1 / a_w and 1 / c_w, the L2 rate per SM
/// 1 / b_w. Returns the summed squared relative residual of the kinds fitted (the defaults kept, and noted, for a
/// kind with too few calls).
double fit_spmm_terms(const Card& card, const CalibrationData& data, double share, double blend, Calibration& cal) {
  cal.l2_share = share;
  cal.frequency_blend = blend;
  const double bw = card.memory_bandwidth_gbs * kGiga;
  const double sms = card.sms > 0 ? card.sms : kDefaultSms;
  double residual = 0;
  for (int kind = 0; kind < 3; ++kind) {
    std::vector<const SpmmSample*> rows;
    std::vector<double> widths;
    for (const auto& x : data.spmm)
      if ((kind == 2) == x.bf16 && (kind == 1) == x.cusparse) {
        rows.push_back(&x);
        if (std::find(widths.begin(), widths.end(), x.call.width) == widths.end()) widths.push_back(x.call.width);
      }
    std::sort(widths.begin(), widths.end());
    const char* name = kind == 2 ? "spmm_bf16" : kind == 1 ? "spmm_cusparse" : "spmm_own";
    const std::size_t nw = widths.size(), n = 3 * nw + 1;
    if (rows.size() < n) {  // too few calls to separate the terms: keep the defaults
      cal.provenance.emplace_back(name, rows.empty() ? "default: not measured" : "default: too few timed calls to fit");
      continue;
    }
    std::vector<std::vector<double>> a;
    for (const SpmmSample* x : rows) {
      const L2Reuse reuse{x->degree_ratio, &x->reuse, share, blend};
      const SpmmBytes b = spmm_call_bytes(x->call, x->bf16 ? 2.0 : 4.0, card.l2_bytes, reuse);
      const auto i = static_cast<std::size_t>(std::find(widths.begin(), widths.end(), x->call.width) - widths.begin());
      std::vector<double> row(n + 1, 0.0);
      row[i] = b.gathered() / bw / x->seconds;
      row[nw + i] = b.l2 / sms / x->seconds;
      row[2 * nw + i] = b.stream / bw / x->seconds;
      row[3 * nw] = 1 / x->seconds;
      row[n] = 1;
      a.push_back(std::move(row));
    }
    const std::optional<std::vector<double>> coef = nonnegative_least_squares(a, n);
    bool ok = coef.has_value();
    for (std::size_t i = 0; ok && i < n; ++i) ok = (*coef)[i] >= 0 && std::isfinite((*coef)[i]);
    ok = ok && std::any_of(coef->begin(), coef->begin() + static_cast<std::ptrdiff_t>(nw), [](double c) { return c > 0; });
    if (!ok) {
      cal.provenance.emplace_back(name, "default: the timed calls gave no positive fit");
      continue;
    }
    for (const auto& r : a) {
      double e = r[n];
      for (std::size_t j = 0; j < n; ++j) e -= r[j] * (*coef)[j];
      residual += e * e;
    }
    SpmmEfficiency eff;
    eff.gathered.points.clear();
    eff.stream.points.clear();
    eff.l2_per_sm.points.clear();
    for (std::size_t i = 0; i < nw; ++i) {
      // A DRAM term the fit dropped (0) or tiny: bounded at kMaxDramEfficiency (above 1: the byte model counts more
      // DRAM traffic than a well-ordered graph causes, its L2 serving more than the estimate says; for the streamed
      // bytes, at the widths where the calls show no cost of their own for them: they overlap the gathered reads).
      eff.gathered.points.emplace_back(widths[i], std::min(kMaxDramEfficiency, 1 / std::max((*coef)[i], 1e-9)));
      eff.stream.points.emplace_back(widths[i], std::min(kMaxDramEfficiency, 1 / std::max((*coef)[2 * nw + i], 1e-9)));
      eff.l2_per_sm.points.emplace_back(widths[i], 1 / std::max((*coef)[nw + i], 1e-30));
    }
    eff.fixed_seconds = (*coef)[3 * nw];
    (kind == 2 ? cal.spmm_bf16 : kind == 1 ? cal.spmm_cusparse : cal.spmm_own) = eff;
    cal.provenance.emplace_back(name, "measured: " + std::to_string(rows.size()) + " SpMM calls (" +
                                          std::to_string(nw) + " widths) timed on " + card.name);
  }
  return residual;
}

}  // namespace

Calibration calibrate(const Card& card, const CalibrationData& data) {
  Calibration cal;
  cal.card = card.id;
  const Link none{"none", 0};
  auto note = [&](const std::string& factor, const std::string& where) { cal.provenance.emplace_back(factor, where); };
  // SpMM: per kind the terms at each L2 share of a grid when the timed graphs carry measured reuse profiles (the
  // share with the least squared relative residual over every call kept), else at the whole L2.
  const bool profiled = !data.spmm.empty() && std::all_of(data.spmm.begin(), data.spmm.end(),
                                                          [](const SpmmSample& x) { return !x.reuse.empty(); });
  std::vector<double> shares{1.0}, blends{0.0};
  if (profiled) shares = {0.25, 0.375, 0.5, 0.625, 0.75, 0.875, 1.0};
  const bool optimal = profiled && std::all_of(data.spmm.begin(), data.spmm.end(),
                                               [](const SpmmSample& x) { return !x.reuse.static_hits.empty(); });
  if (optimal) blends = {0.0, 0.25, 0.5, 0.75, 1.0};
  double best_residual = -1;
  for (double share : shares)
    for (double blend : blends) {
      Calibration trial = cal;
      const double residual = fit_spmm_terms(card, data, share, blend, trial);
      if (best_residual < 0 || residual < best_residual) best_residual = residual, cal = std::move(trial);
    }
  cal.profiled = profiled;
  if (profiled)
    note("l2_share", "measured: " + std::to_string(cal.l2_share).substr(0, 5) +
                         " of the L2 holds gathered rows, " + std::to_string(cal.frequency_blend).substr(0, 4) +
                         " of the way from LRU to the frequency-optimal cache (least residual over the SpMM calls)");
  // What the SpMM terms saw: families, sizes, and the reuse of kCoverageRowBytes rows at the card's L2.
  cal.families = data.families();
  for (const auto& x : data.spmm) {
    const double hit = L2Reuse{x.degree_ratio > 0 ? x.degree_ratio : 1.0, &x.reuse, cal.l2_share, cal.frequency_blend}
                           .hit_fraction(card.l2_bytes, kCoverageRowBytes, x.call.cols_in);
    const bool first = cal.calibrated_rows_max == 0;
    cal.calibrated_rows_min = first ? x.call.rows_out : std::min(cal.calibrated_rows_min, x.call.rows_out);
    cal.calibrated_rows_max = std::max(cal.calibrated_rows_max, x.call.rows_out);
    cal.calibrated_hit_min = first ? hit : std::min(cal.calibrated_hit_min, hit);
    cal.calibrated_hit_max = first ? hit : std::max(cal.calibrated_hit_max, hit);
  }
  if (data.copy_gbs > 0) {
    cal.stream_efficiency = std::min(1.0, data.copy_gbs / card.memory_bandwidth_gbs);
    note("stream", "measured: device-to-device copy on " + card.name);
  } else {
    note("stream", "default: not measured");
  }
  for (Precision math : {Precision::kFp32, Precision::kTf32, Precision::kBf16}) {
    std::vector<double> effs;
    const double rate = math == Precision::kBf16   ? card.bf16_tflops
                        : math == Precision::kTf32 ? card.tf32_tflops
                                                   : card.fp32_tflops;
    for (const auto& g : data.gemm)
      if (g.math == math && rate > 0 && g.seconds > 0) {
        effs.push_back(std::min(1.0, 2 * g.m * g.n * g.k / (rate * kTera * g.seconds)));
        cal.gemm_points.push_back({math, g.m, g.n, g.k, effs.back()});
      }
    double& eff = math == Precision::kBf16   ? cal.gemm_bf16_efficiency
                  : math == Precision::kTf32 ? cal.gemm_tf32_efficiency
                                             : cal.gemm_fp32_efficiency;
    const std::string name = std::string("gemm_") + to_string(math);
    if (effs.empty()) {
      note(name, "default: not measured");
      continue;
    }
    std::sort(effs.begin(), effs.end());
    eff = std::min(1.0, effs[effs.size() / 2]);
    note(name, "measured: " + std::to_string(effs.size()) + " GEMM shapes on " + card.name +
                   " (each GEMM at its nearest shape; median " + std::to_string(eff).substr(0, 5) + ")");
  }
  if (data.link_gbs > 0 && card.nvlink_gbs > 0) {
    cal.link_efficiency = std::min(1.0, data.link_gbs / (card.nvlink_gbs / 2));
    note("link", "measured: all-reduce bus bandwidth over NVLink on " + card.name);
  } else {
    note("link", "default: not measured");
  }
  if (data.collective_seconds > 0) {
    cal.collective_seconds = data.collective_seconds;
    note("collective_latency", "measured on " + card.name);
  } else {
    note("collective_latency", "default: not measured");
  }
  // Launch cost: least squares through the step cost on the launch-bound epochs (role "launch").
  auto fit_launch = [&](bool last) {
    cal.launch_seconds = Calibration{}.launch_seconds;  // each pass from the default: the note says what is in use
    double num = 0, den = 0;
    int launch_points = 0;
    for (const auto& m : data.epochs) {
      if (!m.fixes_launch) continue;
      const EpochWork w = work_of(m);
      const EpochTime t = predict_epoch(w, card, cal, none, m.cusparse, m.model.precision);
      const double k = static_cast<double>(w.kernels);
      num += (m.seconds - (t.spmm + t.stream + t.gemm) - cal.step_seconds) * k;
      den += k * k;
      ++launch_points;
    }
    if (den > 0 && num > 0 && std::isfinite(num / den)) {
      cal.launch_seconds = num / den;
      if (last)
        note("launch", "measured: least squares on " + std::to_string(launch_points) + " launch-bound epochs on " +
                           card.name);
    } else if (last) {
      note("launch", "default: not measured");
    }
  };
  // Profiled epochs, per storage type (fp32 for fp32 / tf32 epochs; bf16): the element-wise kernels' efficiency
  // (their bytes over the "other" class's time less its launches) and the GEMMs' in-epoch factor (the "gemm" class
  // over the per-shape terms), each by least squares on the relative error.
  auto fit_profiles = [&](bool last) {
    // Each pass from the defaults, so that a pass that fits nothing leaves what its (absent) note says.
    cal.epoch_fp32 = cal.epoch_bf16 = Calibration::EpochFactors{};
    // A class below kMinClassSeconds is not measured; an "other" class that is mostly launches says little about
    // the element-wise bandwidth (and its remainder would dominate the least squares).
    constexpr double kMinClassSeconds = 1e-7, kMinStreamShare = 0.2;
    for (const bool bf16 : {false, true}) {
      double ss = 0, s1 = 0, gs = 0, g1 = 0;
      std::vector<double> spmm_ratios;
      int used = 0;
      for (const auto& p : data.profiles) {
        if (traits(p.epoch.model.precision).bf16_storage != bf16) continue;
        const EpochWork w = work_of(p.epoch);
        // Element-wise at the card's full bandwidth (their time then gives the efficiency); GEMMs at their shapes'
        // rates (the in-epoch factor 1).
        Calibration unit = cal;
        unit.epoch(bf16) = {.elementwise_efficiency = 1, .gemm = 1, .spmm = 1};
        const EpochTime t = predict_epoch_autotuned(w, card, unit, none, p.epoch.model.precision);
        const double other = p.other_seconds - t.launch;
        if (p.other_seconds > kMinClassSeconds && other > kMinStreamShare * p.other_seconds && t.stream > 0) {
          const double x = t.stream / other;  // other = launches + stream / efficiency
          ss += x * x, s1 += x;
        }
        if (p.gemm_seconds > kMinClassSeconds && t.gemm > 0) {
          const double x = t.gemm / p.gemm_seconds;  // gemm = factor x predicted
          gs += x * x, g1 += x;
        }
        if (p.spmm_seconds > kMinClassSeconds && t.spmm > 0) spmm_ratios.push_back(p.spmm_seconds / t.spmm);
        ++used;
      }
      const std::string kind = bf16 ? "bf16" : "fp32";
      if (s1 > 0 && std::isfinite(ss / s1)) {
        cal.epoch(bf16).elementwise_efficiency = std::clamp(ss / s1, 0.05, 1.0);
        if (last)
          note(bf16 ? "elementwise_bf16" : "elementwise",
               "measured: element-wise kernels of " + std::to_string(used) + " " + kind + " profiled epochs on " +
                   card.name + " (their launches taken out)");
      }
      if (g1 > 0 && std::isfinite(g1 / gs)) {
        cal.epoch(bf16).gemm = std::clamp(g1 / gs, 0.5, 4.0);
        if (last)
          note(bf16 ? "gemm_epoch_bf16" : "gemm_epoch",
               "measured: GEMMs of " + std::to_string(used) + " " + kind + " profiled epochs on " + card.name +
                   " against the same shapes timed alone");
      }
      if (!spmm_ratios.empty()) {  // the median: one profile whose classes lose time (a stall) moves it little
        cal.epoch(bf16).spmm = std::clamp(median(spmm_ratios), 0.5, 2.0);
        if (last)
          note(bf16 ? "spmm_epoch_bf16" : "spmm_epoch",
               "measured: SpMMs of " + std::to_string(used) + " " + kind + " profiled epochs on " + card.name +
                   " against the same calls timed alone (median ratio)");
      }
    }
  };
  // Launches first (their epochs are tiny: the element-wise efficiency hardly matters there), then the profiles
  // less their launches, then both again with what the other fitted.
  fit_launch(false);
  fit_profiles(false);
  fit_launch(false);
  fit_profiles(true);
  fit_launch(true);
  for (const auto& m : data.epochs) {
    if (m.fixes_launch) continue;
    const EpochWork w = work_of(m);
    const EpochTime t = m.autotuned ? predict_epoch_autotuned(w, card, cal, none, m.model.precision)
                                    : predict_epoch(w, card, cal, none, m.cusparse, m.model.precision);
    cal.points.push_back({m.what, m.seconds, t.seconds});
  }
  // Every fitted factor finite: a document whose numbers overflow the fits is refused, never priced with NaN.
  for (const auto& [name, value] : std::initializer_list<std::pair<const char*, double>>{
           {"launch", cal.launch_seconds}, {"elementwise", cal.epoch_fp32.elementwise_efficiency},
           {"elementwise_bf16", cal.epoch_bf16.elementwise_efficiency}, {"gemm_epoch", cal.epoch_fp32.gemm},
           {"gemm_epoch_bf16", cal.epoch_bf16.gemm}, {"spmm_epoch", cal.epoch_fp32.spmm},
           {"spmm_epoch_bf16", cal.epoch_bf16.spmm}, {"stream", cal.stream_efficiency}})
    if (!std::isfinite(value))
      throw InvalidInput(InputLocation{data.origin.empty() ? std::string("calibration") : data.origin, 0, 0},
                         "the calibration's measurements give a non-finite factor", name, "finite measured times");
  cal.held_out_residual = data.held_out_residual >= 0 ? data.held_out_residual : cal.max_error();
  cal.held_out_source = data.held_out_source.empty()
                            ? "worst of " + std::to_string(cal.points.size()) + " held-out epochs"
                            : data.held_out_source;
  cal.fitted = true;
  cal.source = "per-kernel efficiencies measured on " + card.name + (data.measured.empty() ? "" : " (" + data.measured + ")") +
               "; held-out epochs: " + std::to_string(cal.points.size());
  return cal;
}

std::vector<HeldOutCheck> check_held_out(const Card& card, const CalibrationData& data, const Calibration& whole) {
  const Link none{"none", 0};
  std::map<std::string, Calibration> without;  // one calibration per family left out
  std::vector<HeldOutCheck> out;
  for (const auto& m : data.epochs) {
    if (m.fixes_launch || m.family.empty()) continue;
    auto it = without.find(m.family);
    if (it == without.end()) it = without.emplace(m.family, calibrate(card, data.without_family(m.family))).first;
    const EpochWork w = work_of(m);
    const auto price = [&](const Calibration& cal) {
      return m.autotuned ? predict_epoch_autotuned(w, card, cal, none, m.model.precision)
                         : predict_epoch(w, card, cal, none, m.cusparse, m.model.precision);
    };
    out.push_back({m.what, m.family, m.seconds, price(it->second).seconds, price(whole)});
  }
  return out;
}

std::vector<ProfileCheck> check_profiles(const Card& card, const CalibrationData& data, const Calibration& whole) {
  std::vector<ProfileCheck> out;
  for (const auto& p : data.profiles) {
    const EpochWork w = work_of(p.epoch);
    out.push_back({p.epoch.what, p.epoch.model.precision, p.epoch.seconds, p.spmm_seconds, p.gemm_seconds,
                   p.other_seconds, predict_epoch_autotuned(w, card, whole, Link{"none", 0}, p.epoch.model.precision)});
  }
  return out;
}

}  // namespace gcnpart::partition
