#include "partition/streamed_plan.hpp"

#include <algorithm>
#include <numeric>
#include <optional>

#include "base/error.hpp"
#include "partition/memory_model.hpp"

namespace gcnpart::partition {

namespace {

constexpr int kFloatBytes = 4;
constexpr std::int64_t kMinPartRows = 1024;

std::string indexed(const char* name, std::int64_t i) { return std::string(name) + "[" + std::to_string(i) + "]"; }
std::int64_t mask_width(std::int64_t w) { return (w + 3) / 4; }

}  // namespace

const StreamedMatrix* StreamedPlan::find(const std::string& name) const {
  for (const StreamedMatrix& m : matrices)
    if (m.name == name) return &m;
  return nullptr;
}

bool StreamedPlan::on_device(const std::string& name) const {
  const StreamedMatrix* m = find(name);
  return m != nullptr && m->tier == Tier::kDevice;
}

bool streams(const DeviceShape& s, const ModelSpec& m) {
  return !s.gather && !s.boundary && s.parts <= 1 && m.stages == 1;
}

StreamedFlow streamed_flow(const std::vector<std::int64_t>& d, bool two_operands) {
  const int L = static_cast<int>(d.size()) - 1;
  StreamedFlow f;
  f.two_operands = two_operands;
  f.direct_input.assign(static_cast<std::size_t>(L), false);
  f.fused_gradient.assign(static_cast<std::size_t>(L), false);
  f.stored_input.assign(static_cast<std::size_t>(L), true);
  for (int l = 1; l < L; ++l) {
    f.direct_input[l] = two_operands && aggregates_first(d, l);
    f.stored_input[l] = !f.direct_input[l];
    f.fused_gradient[l] = aggregates_first(d, l - 1) &&
                          (l - 1 == 0 || two_operands || (l == L - 1 && !aggregates_first(d, l)));
  }
  return f;
}

namespace {

/// The plan with every saved matrix on the host, for one or two operands.
struct Draft {
  StreamedPlan plan;
  std::vector<std::int64_t> dims;
  int act = 4;
  std::int64_t n = 0;
  bool dropout = true;
  std::vector<std::int64_t> step_h2d, step_d2h;  ///< per matrix: bytes of one training step when on the host
  std::vector<Allocation> base, transients;
};

Draft draft_plan(const DeviceShape& s, const ModelSpec& m, Backend backend, std::int64_t budget, std::int64_t part_rows,
                 bool two_operands, std::int64_t part_share) {
  const auto d = m.stored_dims();
  const int L = m.layers;
  const std::int64_t n = s.rows;
  const int act = traits(m.precision).storage_bytes;
  const std::int64_t widest = *std::max_element(d.begin(), d.end());
  Draft dr;
  dr.dims = d;
  dr.act = act;
  dr.n = n;
  dr.dropout = m.dropout;
  StreamedPlan& plan = dr.plan;
  plan.flow = streamed_flow(d, two_operands);
  const StreamedFlow& flow = plan.flow;
  for (int l = 0; l < L; ++l) {
    std::int64_t& w = plan.operand_widths[flow.operand_of(l)];
    w = std::max(w, aggregates_first(d, l) ? d[l] : d[l + 1]);
  }
  plan.operand_width = std::max(plan.operand_widths[0], plan.operand_widths[1]);

  // The saved matrices and their traffic when they live on the host (engine/streamed_layers.cpp's passes): the
  // features are read by the forward and, where layer 0 multiplies first, by the backward (dropout is recomputed);
  // a stored input of layer l is written by layer l - 1 and read by layer l's forward, again by its backward where
  // it multiplies first; positive masks and aggregated inputs are written in forward and read in backward; a
  // gradient that is not fused is written by layer l's backward and read by layer l - 1's.
  auto matrix = [&](std::string name, std::string what, MemoryCategory c, std::int64_t width, int bytes,
                    std::int64_t step_h2d, std::int64_t step_d2h) {
    StreamedMatrix& x = plan.matrices.emplace_back();
    x.name = std::move(name);
    x.what = std::move(what);
    x.category = c;
    x.rows = n;
    x.width = width;
    x.element_bytes = bytes;
    const std::int64_t b = x.bytes();
    dr.step_h2d.push_back(step_h2d * b);
    dr.step_d2h.push_back(step_d2h * b);
  };
  matrix("features", "features", MemoryCategory::kFeatures, d[0], act, aggregates_first(d, 0) ? 1 : 2, 0);
  for (int l = 1; l < L; ++l) {
    if (flow.stored_input[l])
      matrix(indexed("inputs", l), "input of layer " + std::to_string(l), MemoryCategory::kActivations, d[l], act,
             aggregates_first(d, l) ? 1 : 2, 1);
    matrix(indexed("positive", l), "positive mask of layer " + std::to_string(l) + "'s input",
           MemoryCategory::kActivations, mask_width(d[l]), 1, 1, 1);
  }
  for (int l = 0; l < L; ++l)
    if (aggregates_first(d, l))
      matrix(indexed("aggregated", l), "aggregated input of layer " + std::to_string(l), MemoryCategory::kActivations,
             d[l], act, 1, 1);
  // grad[k]: the stored gradients of layer l's input for l = L-1 .. 1, alternating (k = (L-1-l) % 2), as a layer
  // that multiplies first reads its G whole while it writes the next.
  for (int k = 0; k < 2 && k < L - 1; ++k) {
    std::int64_t w = 0, widths = 0;
    for (int l = L - 1 - k; l >= 1; l -= 2) {
      if (flow.fused_gradient[l]) continue;
      w = std::max(w, d[l]);
      widths += d[l];
    }
    if (w == 0) continue;
    // Traffic in whole-matrix passes of its widest use; narrower uses move their own width (exact below).
    matrix(indexed("grad", k), "activation gradient " + std::string(k == 0 ? "A" : "B"), MemoryCategory::kGradients,
           w, act, 0, 0);
    dr.step_h2d.back() = dr.step_d2h.back() = n * widths * act;
  }

  // What is always on the device: the resident plan's data, parameters, scalars and graph (allocation_plan with
  // dense features and the own SpMM), the logits and their gradient, the SpMM operand(s) and the parts' buffers.
  const std::vector<Allocation> resident = allocation_plan(s, m, backend);
  const std::vector<std::string> kept = {"labels", "global_ids", "train_rows", "valid_rows", "test_rows",
                                         "loss_slots", "weights", "weights_bf16", "weight_gradients", "adam_m",
                                         "adam_v", "logits", "loss_scalars", "accuracy_counters", "step_scalars",
                                         "graph_offsets", "graph_columns", "dinv_rows", "dinv_cols",
                                         "graph_long_rows", "graph_long_prefix"};
  for (const Allocation& a : resident) {
    if (a.lifetime == Lifetime::kTransient) {
      dr.transients.push_back(a);
    } else if (std::find(kept.begin(), kept.end(), a.name) != kept.end()) {
      dr.base.push_back(a);
    }
  }
  using C = MemoryCategory;
  auto add = [&](std::string name, std::string what, C c, std::int64_t elements, int bytes) {
    dr.base.push_back({std::move(name), std::move(what), c, elements, bytes, Lifetime::kPersistent, true});
  };
  add("grad_logits", "gradient of the logits", C::kGradients, n * d[L], act);
  for (int k = 0; k < 2; ++k)
    if (plan.operand_widths[k] > 0)
      add(indexed("stream_operand", k), "SpMM operand (X W, a layer's input, G or G W^T)", C::kActivations,
          n * plan.operand_widths[k], act);
  // Per part: float SpMM / GEMM outputs, two scratch parts, and the copy slots (two of each, double-buffered): two of
  // rows and one of masks for uploads, the same for downloads.
  const std::int64_t row_bytes = widest * kFloatBytes + 2 * widest * act + 8 * widest * act + 4 * mask_width(widest);
  std::int64_t r = part_rows;
  if (r == 0) {
    r = std::max<std::int64_t>(budget / part_share / std::max<std::int64_t>(row_bytes, 1), kMinPartRows);
    r = std::min(r, n);
  }
  r = std::max<std::int64_t>(std::min(r, std::max<std::int64_t>(n, 1)), 1);
  plan.part_rows = r;
  plan.parts = n == 0 ? 0 : (n + r - 1) / r;
  add("part_float", "float rows of a part (SpMM and GEMM outputs)", C::kWorkspace, r * widest, kFloatBytes);
  for (int i = 0; i < 2; ++i) add(indexed("part_scratch", i), "scratch rows of a part", C::kWorkspace, r * widest, act);
  for (int slot = 0; slot < 3; ++slot)
    for (int b = 0; b < 2; ++b) {
      const std::int64_t bytes = slot < 2 ? r * widest * act : r * mask_width(widest);
      add("stage_in" + std::to_string(slot) + "[" + std::to_string(b) + "]", "upload slot of a part", C::kWorkspace,
          bytes, 1);
      add("stage_out" + std::to_string(slot) + "[" + std::to_string(b) + "]", "download slot of a part",
          C::kWorkspace, bytes, 1);
    }
  // A part's bias-gradient column sums and a one (the GEMM that adds them to the layer's).
  add("bias_partial", "bias-gradient column sums of a part", C::kWorkspace, widest + 1, kFloatBytes);
  return dr;
}

std::vector<Allocation> device_list(const Draft& dr) {
  std::vector<Allocation> all = dr.base;
  for (const StreamedMatrix& x : dr.plan.matrices)
    if (x.tier == Tier::kDevice)
      all.push_back({x.name, x.what, x.category, x.rows * x.width, x.element_bytes, Lifetime::kPersistent, true});
  all.insert(all.end(), dr.transients.begin(), dr.transients.end());
  return all;
}

}  // namespace

namespace {

std::vector<StreamedPhase> step_phases(const Draft& dr);

/// The draft's saved matrices placed: to the device, most bytes moved per byte held first (ties: the larger first),
/// while the peak fits the budget; the rest on the host.
StreamedPlan place(Draft dr, Backend backend, std::int64_t budget, bool all_host) {
  StreamedPlan& plan = dr.plan;
  std::vector<std::size_t> order(plan.matrices.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const double ba = static_cast<double>(plan.matrices[a].bytes()), bb = static_cast<double>(plan.matrices[b].bytes());
    const double ra = ba > 0 ? static_cast<double>(dr.step_h2d[a] + dr.step_d2h[a]) / ba : 0;
    const double rb = bb > 0 ? static_cast<double>(dr.step_h2d[b] + dr.step_d2h[b]) / bb : 0;
    if (ra != rb) return ra > rb;
    return ba > bb;
  });
  for (std::size_t i : order) {
    if (all_host) break;
    plan.matrices[i].tier = Tier::kDevice;
    if (estimate_plan_memory(device_list(dr), backend).peak > budget) plan.matrices[i].tier = Tier::kHost;
  }
  plan.device = device_list(dr);
  for (std::size_t i = 0; i < plan.matrices.size(); ++i) {
    if (plan.matrices[i].tier == Tier::kDevice) continue;
    plan.host_bytes += plan.matrices[i].bytes();
    plan.step_h2d_bytes += dr.step_h2d[i];
    plan.step_d2h_bytes += dr.step_d2h[i];
  }
  plan.step_phases = step_phases(dr);
  return std::move(dr.plan);
}

/// The passes of a training step (forward with dropout, backward), as engine/streamed_layers.cpp runs them, with the
/// bytes of their host-tier sources and sinks.
std::vector<StreamedPhase> step_phases(const Draft& dr) {
  const StreamedPlan& plan = dr.plan;
  const StreamedFlow& flow = plan.flow;
  const auto& d = dr.dims;
  const int L = static_cast<int>(d.size()) - 1;
  const std::int64_t n = dr.n;
  auto host = [&](const std::string& name) {
    const StreamedMatrix* m = plan.find(name);
    return m != nullptr && m->tier == Tier::kHost;
  };
  auto rows = [&](const std::string& name, std::int64_t width) { return host(name) ? n * width * dr.act : 0; };
  auto masks = [&](const std::string& name, std::int64_t width) { return host(name) ? n * mask_width(width) : 0; };
  auto input = [&](int l) { return l == 0 ? std::string("features") : indexed("inputs", l); };
  std::vector<StreamedPhase> out;
  auto phase = [&](std::string what, std::int64_t h2d, std::int64_t d2h, bool whole = false) {
    out.push_back({std::move(what), h2d, d2h, whole});
  };
  for (int l = 0; l < L; ++l) {
    const std::string at = "forward " + std::to_string(l);
    const bool last = l == L - 1;
    std::int64_t sink = 0;
    if (!last && !flow.direct_input[l + 1]) sink += rows(indexed("inputs", l + 1), d[l + 1]);
    if (!last) sink += masks(indexed("positive", l + 1), d[l + 1]);
    if (!aggregates_first(d, l)) {
      phase(at + ": X W", rows(input(l), d[l]), 0);
      phase(at + ": aggregate", 0, sink);
      continue;
    }
    if (l == 0 && dr.dropout) {
      phase(at + ": dropout", rows("features", d[0]), 0);  // dropout on the way into the operand
    } else if (l == 0 || !flow.direct_input[l]) {
      phase(at + ": whole input upload", rows(input(l), d[l]), 0, true);
    }
    phase(at + ": aggregate", 0, sink + rows(indexed("aggregated", l), d[l]));
  }
  bool first_pass_done = false;
  for (int l = L - 1; l >= 0; --l) {
    const std::string at = "backward " + std::to_string(l);
    const bool fuse = l > 0 && flow.fused_gradient[l];
    const std::string g_below = indexed("grad", (L - 1 - l) % 2);
    const std::int64_t g_out = l > 0 && !fuse ? rows(g_below, d[l]) : 0;
    const std::int64_t fused_in = fuse ? rows(indexed("aggregated", l - 1), d[l - 1]) : 0;
    const std::int64_t positive = l > 0 ? masks(indexed("positive", l), d[l]) : 0;
    if (!aggregates_first(d, l)) {
      if (l < L - 1) phase(at + ": whole G upload", rows(indexed("grad", (L - 2 - l) % 2), d[l + 1]), 0, true);
      phase(at + ": gradients", rows(input(l), d[l]) + fused_in + positive, g_out);
      first_pass_done = fuse;
      continue;
    }
    if (!first_pass_done) {
      const std::int64_t g_in = l == L - 1 ? 0 : rows(indexed("grad", (L - 2 - l) % 2), d[l + 1]);
      phase(at + ": weight gradient", g_in + rows(indexed("aggregated", l), d[l]), 0);
    }
    first_pass_done = false;
    if (l == 0) continue;
    phase(at + ": aggregate", positive + fused_in, g_out);
    first_pass_done = fuse;
  }
  return out;
}

}  // namespace

StreamedPlan::CopySeconds StreamedPlan::copy_seconds(double h2d_gbs, double d2h_gbs) const {
  CopySeconds c;
  for (const StreamedPhase& p : step_phases) {
    const double up = h2d_gbs > 0 ? static_cast<double>(p.h2d_bytes) / (h2d_gbs * 1e9) : 0;
    const double down = d2h_gbs > 0 ? static_cast<double>(p.d2h_bytes) / (d2h_gbs * 1e9) : 0;
    if (p.whole_upload) {
      c.serial += up;
    } else {
      c.passes += std::max(up, down);
    }
  }
  return c;
}

StreamedPlan streamed_plan(const DeviceShape& s, const ModelSpec& model, Backend backend, std::int64_t budget,
                           std::int64_t part_rows, bool all_host) {
  model.validate();
  if (part_rows < 0) throw InvalidInput::parameter("--offload-part-rows", std::to_string(part_rows), ">= 0");
  if (!streams(s, model))
    throw InvalidInput::parameter("--offload", "host",
                                  "a single-device run (offload streams one device's rows; pipeline, gather and "
                                  "boundary devices do not stream)");
  ModelSpec m = model;
  m.sparse_features_below = 0;  // dense features: they stream by rows like every other matrix
  m.spmm = SpmmAlgo::kOwn;      // the own kernel runs on row ranges (no whole-matrix cuSPARSE plan)
  m.cuda_graph = CudaGraphMode::kOff;
  // Candidates: one or two operands (two: each layer's input written straight into its operand, more gradients fused),
  // parts' buffers of 1/16, 1/32 or 1/64 of the budget (smaller parts leave room for a saved matrix on the device).
  // The plan that fits and moves the fewest bytes per step wins; ties: fewer parts, then two operands. None fits:
  // the smallest (the caller refuses it with its bytes).
  std::optional<StreamedPlan> best;
  std::int64_t best_moved = 0, best_peak = 0;
  bool best_fits = false;
  for (const bool two : {true, false}) {
    if (two && m.layers < 2) continue;
    for (const std::int64_t share : {std::int64_t{16}, std::int64_t{32}, std::int64_t{64}}) {
      if (part_rows > 0 && share != 16) continue;  // the part size is given
      StreamedPlan c = place(draft_plan(s, m, backend, budget, part_rows, two, share), backend, budget, all_host);
      const std::int64_t peak = estimate_plan_memory(c.device, backend).peak;
      const bool fits = peak <= budget;
      const std::int64_t moved = c.step_h2d_bytes + c.step_d2h_bytes;
      const bool better = !best || (fits && !best_fits) ||
                          (fits == best_fits && fits &&
                           (moved < best_moved || (moved == best_moved && c.parts < best->parts))) ||
                          (!fits && !best_fits && peak < best_peak);
      if (better) {
        best_moved = moved;
        best_peak = peak;
        best_fits = fits;
        best = std::move(c);
      }
    }
  }
  return std::move(*best);
}

}  // namespace gcnpart::partition
