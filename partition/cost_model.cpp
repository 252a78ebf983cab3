#include "partition/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "kernels/core/error.hpp"
#include "partition/allocation_plan.hpp"

namespace gcnpart::partition {

extern const char* const kBuiltinCalibrationJson;  // partition/calibration.json, compiled in (calibration_data.cpp.in)

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
  const auto d = m.dims();
  const int L = m.layers;
  const double r = static_cast<double>(s.rows), nnz = static_cast<double>(s.graph_entries);
  const double f = static_cast<double>(m.features), act = traits(m.precision).storage_bytes;
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
  auto gemm = [&](double mm, double nn, double kk) {
    const double flops = 2 * mm * nn * kk, bytes = (mm * kk + kk * nn + mm * nn) * act;
    w.gemm_flops += flops;
    w.gemm_bytes += bytes;
    w.gemms.emplace_back(flops, bytes);
    w.kernels += 1;
  };
  auto elementwise = [&](double bytes, int kernels = 1) {
    w.stream_bytes += bytes;
    w.kernels += kernels;
  };

  // Forward.
  for (int l = 0; l < L; ++l) {
    const double in = static_cast<double>(d[l]), out = static_cast<double>(d[l + 1]);
    if (l == 0 && sparse) {
      if (m.dropout) elementwise(nnz_x * 12);           // dropout on the stored values (columns, values, output)
      elementwise(nnz_x * (4 + act) + (r + 1) * 8 + r * out * act);  // X W (W stays in cache)
      spmm(out, false);
    } else {
      if (l == 0 && m.dropout) elementwise(2 * r * f * act);
      gemm(r, out, in);
      spmm(aggregates_first(d, l) ? in : out, false);
    }
    elementwise(2 * r * out * act + out * 4);  // bias, ReLU, dropout of the next input
  }
  // Loss: zero the gradient, per-row softmax cross-entropy, reduction.
  const double classes = static_cast<double>(d[L]);
  const double train = static_cast<double>(s.split_rows[0]);
  elementwise(r * classes * act + 2 * train * classes * act + train * 8, 3);
  if (comm) w.collectives += 1;
  // Backward.
  for (int l = L - 1; l >= 0; --l) {
    const double in = static_cast<double>(d[l]), out = static_cast<double>(d[l + 1]);
    const bool aggregate_first = aggregates_first(d, l);  // never the sparse-input layer 0 (it narrows)
    elementwise(r * out * act, 2);  // bias gradient (column sums over slabs, then their sum)
    if (aggregate_first) {
      gemm(in, out, r);
      if (l > 0) {
        gemm(r, in, out);
        spmm(in, true);
      }
    } else {
      spmm(out, true);
      if (l == 0 && sparse) {
        if (m.dropout) elementwise(nnz_x * 12);
        elementwise(nnz_x * (4 + act) + nnz_x * out * act + (f + 1) * 8 + f * out * 4);  // X^T dP
      } else {
        gemm(in, out, r);
      }
      if (l > 0) gemm(r, in, out);
    }
    if (l > 0) elementwise(3 * r * in * act);  // ReLU / dropout backward
  }
  // Gradient all-reduce and Adam (two kernels per layer: weights, bias).
  const double params = static_cast<double>(m.parameters());
  if (comm) w.collectives += 1;
  elementwise(params * 4 * 7, 2 * L);
  w.comm_bytes = static_cast<double>(comm_bytes_per_epoch(s, m));
  return w;
}

Link link_for(const Card& card, int gpus) {
  if (gpus <= 1) return {"none", 0};
  if (card.nvlink_gbs > 0 && gpus <= card.nvlink_max_gpus) return {"nvlink", card.nvlink_gbs / 2};
  return {"pcie" + std::to_string(card.pcie_generation), card.pcie_gbs};
}

EpochTime predict_epoch(const EpochWork& w, const Card& card, const Calibration& cal, const Link& link, bool cusparse,
                        Precision precision) {
  GCNPART_EXPECTS(card.memory_bandwidth_gbs > 0 && card.fp32_tflops > 0, "a card with bandwidth and FP32 throughput");
  EpochTime t;
  const double bw = card.memory_bandwidth_gbs * kGiga;
  double tflops = card.fp32_tflops;
  const PrecisionTraits& math = traits(precision);
  if (math.tf32_gemm && card.tf32_tflops > 0) tflops = card.tf32_tflops;
  if (math.bf16_storage && card.bf16_tflops > 0) tflops = card.bf16_tflops;
  const double flops = tflops * kTera;
  const double spmm_eff = math.bf16_storage ? cal.spmm_bf16_efficiency
                          : cusparse         ? cal.spmm_cusparse_efficiency
                                             : cal.spmm_own_efficiency;
  t.spmm = w.spmm_bytes / (bw * spmm_eff);
  t.stream = w.stream_bytes / (bw * cal.stream_efficiency);
  for (const auto& [fl, by] : w.gemms)
    t.gemm += std::max(fl / (flops * cal.gemm_efficiency), by / (bw * cal.stream_efficiency));
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

namespace {

constexpr const char* kBuiltinCalibrationOrigin = "partition/calibration.json (built in)";

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
  /// An enumerator by its name (kernels/core/enums.hpp tables).
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
  s.validate();
  return s;
}

}  // namespace

std::vector<CalibrationMeasurement> parse_calibration(const std::string& text, const std::string& origin) {
  const CalibrationReader in(origin);
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    in.bad("not valid JSON", e.what(), "a JSON document {\"graphs\": {...}, \"measurements\": [...]}");
  }
  const nlohmann::json& graphs = in.field(doc, "graphs", "");
  const nlohmann::json& list = in.field(doc, "measurements", "");
  if (!list.is_array()) in.bad("measurements", list.dump().substr(0, 60), "an array");
  std::vector<CalibrationMeasurement> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const nlohmann::json& e = list[i];
    const std::string path = "measurements[" + std::to_string(i) + "].";
    CalibrationMeasurement m;
    m.what = in.text(e, "what", path);
    const std::string graph = in.text(e, "graph", path);
    m.graph = calibration_graph(in, in.field(graphs, graph, "graphs."), graph);
    m.model.layers = static_cast<int>(in.count(e, "layers", path));
    m.model.hidden = in.count(e, "hidden", path);
    m.model.features = m.graph.features;
    m.model.classes = m.graph.classes;
    m.model.precision = in.name<Precision>(e, "precision", path);
    m.cusparse = in.name<SpmmAlgo>(e, "spmm", path) == SpmmAlgo::kCusparse;
    m.seconds = in.number(e, "seconds", path, 0);
    m.model.validate();
    out.push_back(std::move(m));
  }
  return out;
}

std::vector<CalibrationMeasurement> h200_measurements() {
  return parse_calibration(kBuiltinCalibrationJson, kBuiltinCalibrationOrigin);
}

Calibration calibrate(const Card& card, const std::vector<CalibrationMeasurement>& measurements) {
  Calibration cal;
  const Link none{"none", 0};
  // Launch-bound points (predicted bandwidth and GEMM terms under 10% of the measurement) fix the per-kernel cost,
  // by least squares through the step cost; the rest fix the SpMM efficiencies, one factor per SpMM.
  struct Row {
    const CalibrationMeasurement* m;
    EpochWork work;
  };
  std::vector<Row> small, large;
  for (const auto& m : measurements) {
    Row row{&m, epoch_work(single_device_shape(m.graph), m.model)};
    const EpochTime t = predict_epoch(row.work, card, cal, none, m.cusparse,
                                      m.model.precision);
    (t.spmm + t.stream + t.gemm < 0.1 * m.seconds ? small : large).push_back(row);
  }
  if (!small.empty()) {
    double num = 0, den = 0;
    for (const auto& row : small) {
      const EpochTime t = predict_epoch(row.work, card, cal, none, row.m->cusparse,
                                        row.m->model.precision);
      const double k = static_cast<double>(row.work.kernels);
      num += (row.m->seconds - (t.spmm + t.stream + t.gemm) - cal.step_seconds) * k;
      den += k * k;
    }
    if (den > 0 && num > 0) cal.launch_seconds = num / den;
  }
  // The large epochs fix one SpMM time factor per kind (own fp32, cuSPARSE fp32, own bf16) and one factor shared by
  // the element-wise and GEMM terms: measured ~ a_kind * SpMM + b * (stream + GEMM) + launches, by least squares on
  // the relative error (linear in the factors; the GEMM term is taken at the default efficiencies). Efficiencies are
  // then 1 / a_kind and the stream / GEMM efficiencies are divided by b.
  auto kind_of = [](const CalibrationMeasurement& m) {
    return m.model.precision == Precision::kBf16 ? 2 : m.cusparse ? 1 : 0;
  };
  constexpr int kUnknowns = 4;  // a_own, a_cusparse, a_bf16, b
  double ata[kUnknowns][kUnknowns] = {}, atb[kUnknowns] = {};
  bool seen[3] = {false, false, false};
  for (const auto& row : large) {
    Calibration probe = cal;
    probe.spmm_own_efficiency = probe.spmm_cusparse_efficiency = probe.spmm_bf16_efficiency = 1.0;
    const EpochTime t = predict_epoch(row.work, card, probe, none, row.m->cusparse, row.m->model.precision);
    double x[kUnknowns] = {0, 0, 0, (t.stream + t.gemm) / row.m->seconds};
    x[kind_of(*row.m)] = t.spmm / row.m->seconds;
    seen[kind_of(*row.m)] = true;
    const double y = 1.0 - (t.launch + t.comm) / row.m->seconds;
    for (int i = 0; i < kUnknowns; ++i) {
      for (int j = 0; j < kUnknowns; ++j) ata[i][j] += x[i] * x[j];
      atb[i] += x[i] * y;
    }
  }
  for (int k = 0; k < 3; ++k)
    if (!seen[k]) {  // no point of this kind: keep its default (a = 1 / default efficiency), solve for the rest
      for (int j = 0; j < kUnknowns; ++j) ata[k][j] = ata[j][k] = 0;
      ata[k][k] = 1;
      atb[k] = 1.0 / (k == 2 ? cal.spmm_bf16_efficiency : k == 1 ? cal.spmm_cusparse_efficiency : cal.spmm_own_efficiency);
    }
  if (!large.empty()) {
    // Gaussian elimination with partial pivoting on the normal equations.
    double m[kUnknowns][kUnknowns + 1];
    for (int i = 0; i < kUnknowns; ++i) {
      for (int j = 0; j < kUnknowns; ++j) m[i][j] = ata[i][j];
      m[i][kUnknowns] = atb[i];
    }
    bool solvable = true;
    for (int c = 0; c < kUnknowns && solvable; ++c) {
      int pivot = c;
      for (int r = c + 1; r < kUnknowns; ++r)
        if (std::fabs(m[r][c]) > std::fabs(m[pivot][c])) pivot = r;
      if (std::fabs(m[pivot][c]) < 1e-12) solvable = false;
      if (!solvable) break;
      for (int j = 0; j <= kUnknowns; ++j) std::swap(m[c][j], m[pivot][j]);
      for (int r = 0; r < kUnknowns; ++r) {
        if (r == c) continue;
        const double f = m[r][c] / m[c][c];
        for (int j = c; j <= kUnknowns; ++j) m[r][j] -= f * m[c][j];
      }
    }
    double a[kUnknowns];
    for (int i = 0; i < kUnknowns && solvable; ++i) {
      a[i] = m[i][kUnknowns] / m[i][i];
      if (!(a[i] > 0) || !std::isfinite(a[i])) solvable = false;  // a negative factor would be meaningless
    }
    if (solvable) {
      cal.spmm_own_efficiency = 1.0 / a[0];
      cal.spmm_cusparse_efficiency = 1.0 / a[1];
      cal.spmm_bf16_efficiency = 1.0 / a[2];
      cal.stream_efficiency /= a[3];
      cal.gemm_efficiency /= a[3];
    }
  }
  for (const auto& m : measurements) {
    const EpochTime t =
        predict_epoch(epoch_work(single_device_shape(m.graph), m.model), card, cal, none, m.cusparse, m.model.precision);
    cal.points.push_back({m.what, m.seconds, t.seconds});
  }
  cal.fitted = true;
  cal.source = "fitted on " + std::to_string(measurements.size()) + " epochs measured on " + card.name +
               " (2026-11-29); bandwidth, GEMM and link factors other than the SpMM ones are uncalibrated defaults";
  return cal;
}

}  // namespace gcnpart::partition
