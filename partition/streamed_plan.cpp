#include "partition/streamed_plan.hpp"

#include <algorithm>
#include <numeric>

#include "base/error.hpp"
#include "partition/memory_model.hpp"

namespace gcnpart::partition {

namespace {

constexpr int kFloatBytes = 4;
constexpr std::int64_t kMinPartRows = 1024;
/// The parts' buffers take about this share of the device budget when the part size is chosen.
constexpr std::int64_t kPartShare = 16;

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
  const auto d = m.stored_dims();
  const int L = m.layers;
  const std::int64_t n = s.rows;
  const int act = traits(m.precision).storage_bytes;
  const std::int64_t widest = *std::max_element(d.begin(), d.end());

  StreamedPlan plan;
  for (int l = 0; l < L; ++l)
    plan.operand_width = std::max(plan.operand_width, aggregates_first(d, l) ? d[l] : d[l + 1]);

  // The saved matrices and their traffic when they live on the host (engine/streamed_layers.cpp's phases): the
  // features are read by the forward and, where layer 0 multiplies first, by the backward (dropout is recomputed);
  // layer l's input is written by layer l - 1 and read by layer l, again in backward where layer l multiplies first;
  // positive masks and aggregated inputs are written in forward and read in backward; the activation gradient of
  // layer l's input (width d[l]) is written by layer l's backward and read by layer l - 1's.
  auto matrix = [&](std::string name, std::string what, MemoryCategory c, std::int64_t width, int bytes) -> StreamedMatrix& {
    StreamedMatrix& x = plan.matrices.emplace_back();
    x.name = std::move(name);
    x.what = std::move(what);
    x.category = c;
    x.rows = n;
    x.width = width;
    x.element_bytes = bytes;
    return x;
  };
  struct Traffic {
    std::int64_t step_h2d = 0, step_d2h = 0, eval_h2d = 0, eval_d2h = 0;
  };
  std::vector<Traffic> traffic;
  {
    StreamedMatrix& x = matrix("features", "features", MemoryCategory::kFeatures, d[0], act);
    const std::int64_t b = x.bytes();
    traffic.push_back({aggregates_first(d, 0) ? b : 2 * b, 0, b, 0});
  }
  for (int l = 1; l < L; ++l) {
    StreamedMatrix& x = matrix(indexed("inputs", l), "input of layer " + std::to_string(l),
                               MemoryCategory::kActivations, d[l], act);
    const std::int64_t b = x.bytes();
    traffic.push_back({aggregates_first(d, l) ? b : 2 * b, b, b, b});
    StreamedMatrix& p = matrix(indexed("positive", l), "positive mask of layer " + std::to_string(l) + "'s input",
                               MemoryCategory::kActivations, mask_width(d[l]), 1);
    traffic.push_back({p.bytes(), p.bytes(), 0, 0});
  }
  for (int l = 0; l < L; ++l)
    if (aggregates_first(d, l)) {
      StreamedMatrix& x = matrix(indexed("aggregated", l), "aggregated input of layer " + std::to_string(l),
                                 MemoryCategory::kActivations, d[l], act);
      traffic.push_back({x.bytes(), x.bytes(), 0, 0});
    }
  // grad[k]: the gradients of layer l's input for l = L-1 .. 1 alternate between two buffers (k = (L-1-l) % 2), as
  // a multiply-first layer reads its G whole while it writes the next.
  for (int k = 0; k < 2 && k < L - 1; ++k) {
    std::int64_t w = 0, moved = 0;
    for (int l = L - 1 - k; l >= 1; l -= 2) {
      w = std::max(w, d[l]);
      moved += n * d[l] * act;
    }
    matrix(indexed("grad", k), "activation gradient " + std::string(k == 0 ? "A" : "B"), MemoryCategory::kGradients,
           w, act);
    traffic.push_back({moved, moved, 0, 0});
  }
  for (std::size_t i = 0; i < plan.matrices.size(); ++i) {
    plan.matrices[i].step_passes = static_cast<int>(
        plan.matrices[i].bytes() > 0 ? (traffic[i].step_h2d + traffic[i].step_d2h) / plan.matrices[i].bytes() : 0);
    plan.matrices[i].eval_passes = static_cast<int>(
        plan.matrices[i].bytes() > 0 ? (traffic[i].eval_h2d + traffic[i].eval_d2h) / plan.matrices[i].bytes() : 0);
  }

  // What is always on the device: the resident plan's data, parameters, scalars and graph (allocation_plan with
  // dense features and the own SpMM), the logits and their gradient, the SpMM operand and the parts' buffers.
  const std::vector<Allocation> resident = allocation_plan(s, m, backend);
  std::vector<Allocation> base, transients;
  const std::vector<std::string> kept = {"labels", "global_ids", "train_rows", "valid_rows", "test_rows",
                                         "loss_slots", "weights", "weights_bf16", "weight_gradients", "adam_m",
                                         "adam_v", "logits", "loss_scalars", "accuracy_counters", "step_scalars",
                                         "graph_offsets", "graph_columns", "dinv_rows", "dinv_cols",
                                         "graph_long_rows", "graph_long_prefix"};
  for (const Allocation& a : resident) {
    if (a.lifetime == Lifetime::kTransient) {
      transients.push_back(a);
    } else if (std::find(kept.begin(), kept.end(), a.name) != kept.end()) {
      base.push_back(a);
    }
  }
  using C = MemoryCategory;
  auto add = [&](std::string name, std::string what, C c, std::int64_t elements, int bytes) {
    base.push_back({std::move(name), std::move(what), c, elements, bytes, Lifetime::kPersistent, true});
  };
  add("grad_logits", "gradient of the logits", C::kGradients, n * d[L], act);
  add("stream_operand", "SpMM operand (X W, a layer's input, G or G W^T)", C::kActivations, n * plan.operand_width, act);
  // Per part: float SpMM / GEMM outputs, two scratch parts, and the copy slots (two of each, double-buffered): two of
  // rows and one of masks for uploads, the same for downloads.
  const std::int64_t row_bytes = widest * kFloatBytes + 2 * widest * act + 8 * widest * act + 4 * mask_width(widest);
  std::int64_t r = part_rows;
  if (r == 0) {
    r = std::max<std::int64_t>(budget / kPartShare / std::max<std::int64_t>(row_bytes, 1), kMinPartRows);
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

  // Saved matrices to the device, most passes per byte first (ties: the larger first), while the peak fits.
  std::vector<std::size_t> order(plan.matrices.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  auto moved = [&](std::size_t i) { return traffic[i].step_h2d + traffic[i].step_d2h; };
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    const double ra = plan.matrices[a].bytes() > 0 ? static_cast<double>(moved(a)) / plan.matrices[a].bytes() : 0;
    const double rb = plan.matrices[b].bytes() > 0 ? static_cast<double>(moved(b)) / plan.matrices[b].bytes() : 0;
    if (ra != rb) return ra > rb;
    return plan.matrices[a].bytes() > plan.matrices[b].bytes();
  });
  auto listed = [&] {
    std::vector<Allocation> all = base;
    for (const StreamedMatrix& x : plan.matrices)
      if (x.tier == Tier::kDevice)
        all.push_back({x.name, x.what, x.category, x.rows * x.width, x.element_bytes, Lifetime::kPersistent, true});
    all.insert(all.end(), transients.begin(), transients.end());
    return all;
  };
  for (std::size_t i : order) {
    if (all_host) break;
    plan.matrices[i].tier = Tier::kDevice;
    if (estimate_plan_memory(listed(), backend).peak > budget) plan.matrices[i].tier = Tier::kHost;
  }
  plan.device = listed();
  for (std::size_t i = 0; i < plan.matrices.size(); ++i) {
    if (plan.matrices[i].tier == Tier::kDevice) continue;
    plan.host_bytes += plan.matrices[i].bytes();
    plan.step_h2d_bytes += traffic[i].step_h2d;
    plan.step_d2h_bytes += traffic[i].step_d2h;
    plan.eval_h2d_bytes += traffic[i].eval_h2d;
    plan.eval_d2h_bytes += traffic[i].eval_d2h;
  }
  return plan;
}

}  // namespace gcnpart::partition
