#include "partition/cost_model.hpp"

#include <algorithm>
#include <cmath>

#include "kernels/core/error.hpp"

namespace gcnpart::partition {

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
  const double f = static_cast<double>(m.features), act = m.precision == Precision::kBf16 ? 2 : 4;
  const bool sparse = uses_sparse_input(s, m);
  const double nnz_x = static_cast<double>(s.nonzeros(m.features));
  const double table = s.gather ? static_cast<double>(s.table_block) * s.parts : r;
  const bool comm = s.parts > 1;

  // One aggregation: CSR walk, one gathered input row per entry (no cache reuse assumed: the efficiency factor
  // absorbs L2 hits), output rows, the two D^-1/2 vectors.
  auto spmm = [&](double width, bool backward) {
    const double rows_out = s.gather && backward ? table : r;
    const double cols_in = s.gather && !backward ? table : r;
    w.spmm_bytes += rows_out * 8 + nnz * 4 + nnz * width * act + rows_out * width * act + (rows_out + cols_in) * 4;
    w.kernels += 1;
    if (s.gather) {  // staging copy and the all-gather / reduce-scatter
      w.stream_bytes += 2 * r * width * act;
      w.kernels += 1;
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
      spmm(in <= out ? in : out, false);
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
    const bool aggregate_first = d[l] <= d[l + 1] && !(l == 0 && sparse);
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
                        GemmMath math) {
  GCNPART_EXPECTS(card.memory_bandwidth_gbs > 0 && card.fp32_tflops > 0, "a card with bandwidth and FP32 throughput");
  EpochTime t;
  const double bw = card.memory_bandwidth_gbs * kGiga;
  double tflops = card.fp32_tflops;
  if (math == GemmMath::kTf32 && card.tf32_tflops > 0) tflops = card.tf32_tflops;
  if (math == GemmMath::kBf16 && card.bf16_tflops > 0) tflops = card.bf16_tflops;
  const double flops = tflops * kTera;
  const double spmm_eff = cusparse ? cal.spmm_cusparse_efficiency : cal.spmm_own_efficiency;
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

std::vector<CalibrationMeasurement> h200_measurements() {
  // Cora and CiteSeer: bench/results/h200-2026-11-29/train-*.json (mean train step over 10 runs x 199 epochs);
  // RMAT: the lead's figures for `gcnpart train rmat18 --hidden 256 --layers 3` (bench/gpu_single.sh).
  auto planetoid = [](const char* name, std::int64_t n, std::int64_t e, std::int64_t f, std::int64_t nnz,
                      std::int64_t c, std::int64_t train) {
    GraphStats g;
    g.name = name;
    g.nodes = n;
    g.edges = e;
    g.features = f;
    g.classes = c;
    g.feature_density = static_cast<double>(nnz) / (static_cast<double>(n) * static_cast<double>(f));
    g.split_sizes = {train, 500, 1000};
    g.degree_mean = 2.0 * static_cast<double>(e) / static_cast<double>(n);
    return g;
  };
  const GraphStats cora = planetoid("cora", 2708, 5278, 1433, 49216, 7, 140);
  const GraphStats citeseer = planetoid("citeseer", 3327, 4552, 3703, 105165, 6, 120);
  GraphStats rmat;
  rmat.name = "rmat-s18-e16";
  rmat.nodes = 262144;
  rmat.edges = 3805589;
  rmat.features = 128;
  rmat.classes = 40;
  rmat.feature_density = 1.0;
  rmat.split_sizes = {157286, 52429, 52429};
  rmat.degree_mean = 2.0 * 3805589 / 262144;
  auto model = [](const GraphStats& g, std::int64_t hidden, int layers) {
    ModelSpec m;
    m.layers = layers;
    m.hidden = hidden;
    m.features = g.features;
    m.classes = g.classes;
    return m;
  };
  return {
      {"Cora, own SpMM", cora, model(cora, 16, 2), false, 0.796e-3},
      {"Cora, cuSPARSE", cora, model(cora, 16, 2), true, 0.733e-3},
      {"CiteSeer, own SpMM", citeseer, model(citeseer, 16, 2), false, 0.617e-3},
      {"CiteSeer, cuSPARSE", citeseer, model(citeseer, 16, 2), true, 0.612e-3},
      {"RMAT-18 ef16 F128 h256 L3, own SpMM", rmat, model(rmat, 256, 3), false, 17.7e-3},
      {"RMAT-18 ef16 F128 h256 L3, cuSPARSE", rmat, model(rmat, 256, 3), true, 8.9e-3},
  };
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
    const EpochTime t = predict_epoch(row.work, card, cal, none, m.cusparse);
    (t.spmm + t.stream + t.gemm < 0.1 * m.seconds ? small : large).push_back(row);
  }
  if (!small.empty()) {
    double num = 0, den = 0;
    for (const auto& row : small) {
      const EpochTime t = predict_epoch(row.work, card, cal, none, row.m->cusparse);
      const double k = static_cast<double>(row.work.kernels);
      num += (row.m->seconds - (t.spmm + t.stream + t.gemm) - cal.step_seconds) * k;
      den += k * k;
    }
    if (den > 0 && num > 0) cal.launch_seconds = num / den;
  }
  for (bool cusparse : {false, true}) {
    for (const auto& row : large) {
      if (row.m->cusparse != cusparse) continue;
      Calibration probe = cal;
      probe.spmm_own_efficiency = probe.spmm_cusparse_efficiency = 1.0;
      const EpochTime t = predict_epoch(row.work, card, probe, none, cusparse);
      const double spmm_seconds = row.m->seconds - (t.seconds - t.spmm);
      // If the other terms already explain the measurement, leave the factor at 1 (the residual shows it).
      const double eff = spmm_seconds > 0.05 * row.m->seconds ? t.spmm / spmm_seconds : 1.0;
      (cusparse ? cal.spmm_cusparse_efficiency : cal.spmm_own_efficiency) = eff;
    }
  }
  for (const auto& m : measurements) {
    const EpochTime t = predict_epoch(epoch_work(single_device_shape(m.graph), m.model), card, cal, none, m.cusparse);
    cal.points.push_back({m.what, m.seconds, t.seconds});
  }
  cal.fitted = true;
  cal.source = "fitted on " + std::to_string(measurements.size()) + " epochs measured on " + card.name +
               " (2026-11-29); bandwidth, GEMM and link factors other than the SpMM ones are uncalibrated defaults";
  return cal;
}

}  // namespace gcnpart::partition
