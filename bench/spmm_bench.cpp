// bench_spmm: the own SpMM against every cuSPARSE algorithm, with the physics METHOD.md asks for: median of many
// CUDA-event-timed runs after warm-up, bytes and FLOP over time, the fraction of the device-to-device copy
// bandwidth measured in the same run, tracked peak memory, agreement between the implementations.
#include <algorithm>
#include <cmath>
#include <memory>
#include <chrono>
#include <set>

#include "bench/bench.hpp"
#include "bench/detail/timing.hpp"
#include "engine/problem.hpp"
#include "engine/report_json.hpp"
#include "base/error.hpp"
#include "base/spmm_layout.hpp"
#include "kernels/long_rows.hpp"
#include "kernels/ops.hpp"
#include "partition/reorder.hpp"

namespace gcnpart::bench {

namespace {

constexpr std::size_t kCopyBytes = std::size_t{1} << 30;  ///< copy-bandwidth buffer (1 GiB each way)
constexpr int kCopyRuns = 10;

const char* const kTrafficFormula =
    "8 (n + 1) row offsets + 4 nnz column ids + 2 x 4 n scale vectors + 4 n width (X read once) + 4 n width "
    "(Y written once), n = rows, nnz = entries of Â";
const char* const kTrafficFormulaBf16 =
    "8 (n + 1) row offsets + 4 nnz column ids + 2 x 4 n scale vectors + 2 n width (X read once, bf16) + 4 n width "
    "(Y written once, fp32)";

/// Uniform values in [-1, 1) from a counter hash (splitmix64): random, reproducible, never all zeros.
std::vector<float> random_matrix(std::int64_t count, std::uint64_t seed) {
  std::vector<float> v(static_cast<std::size_t>(count));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < count; ++i) {
    std::uint64_t z = seed * 0xD1B54A32D192ED03ULL + static_cast<std::uint64_t>(i + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    z ^= z >> 31;
    v[static_cast<std::size_t>(i)] = static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
  }
  return v;
}

std::int64_t count_nonfinite(const std::vector<float>& v) {
  std::int64_t bad = 0;
#pragma omp parallel for reduction(+ : bad) schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(v.size()); ++i)
    bad += std::isfinite(v[static_cast<std::size_t>(i)]) ? 0 : 1;
  return bad;
}

/// ||got - ref||_2 / ||ref||_2 and max |got - ref| / max |ref| over the entries where both are finite
/// (non-finite entries are counted separately).
void compare(const std::vector<float>& got, const std::vector<float>& ref, SpmmRun& r) {
  double num = 0, den = 0, max_diff = 0, max_ref = 0;
#pragma omp parallel for reduction(+ : num, den) reduction(max : max_diff, max_ref) schedule(static)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(got.size()); ++i) {
    const float a = got[static_cast<std::size_t>(i)], b = ref[static_cast<std::size_t>(i)];
    if (!std::isfinite(a) || !std::isfinite(b)) continue;
    const double d = static_cast<double>(a) - static_cast<double>(b);
    num += d * d;
    den += static_cast<double>(b) * b;
    max_diff = std::max(max_diff, std::fabs(d));
    max_ref = std::max(max_ref, std::fabs(static_cast<double>(b)));
  }
  r.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  r.rel_max = max_ref > 0 ? max_diff / max_ref : max_diff;
}

/// Device-to-device copy bandwidth: median of kCopyRuns cudaMemcpyAsync of kCopyBytes, counting bytes read plus
/// bytes written (the convention of METHOD.md, so that a kernel's read + write traffic compares directly).
void measure_copy_bandwidth(cudaStream_t stream, engine::TrackingMemoryResource& scratch, SpmmBenchReport& report) {
  constexpr auto kCount = static_cast<std::int64_t>(kCopyBytes);
  engine::Buffer<std::uint8_t> src(scratch, kCount, MemoryCategory::kWorkspace, stream);
  engine::Buffer<std::uint8_t> dst(scratch, kCount, MemoryCategory::kWorkspace, stream);
  detail::fill_bytes_async(src.data(), 0x5a, kCopyBytes, stream);
  const auto ms = detail::time_calls(stream, 3, kCopyRuns, nullptr,
                                     [&] { detail::copy_bytes_async(dst.data(), src.data(), kCopyBytes, stream); });
  report.copy_bytes = static_cast<std::int64_t>(kCopyBytes);
  report.copy_ms = Summary::of(ms);
  report.copy_gbs = 2.0 * static_cast<double>(kCopyBytes) / (report.copy_ms.median * 1e-3) / 1e9;
}

/// Â exactly as the engine builds it (engine::single_device_problem), X and Y, in tracked device memory; the
/// bf16 copies of X when asked for.
struct Workload {
  std::int64_t n = 0, nnz = 0, max_width = 0;
  engine::Buffer<RowOffset> offsets;
  engine::Buffer<NodeId> cols;
  engine::Buffer<float> scale, x, y, x_rounded;
  engine::Buffer<kernels::Bf16> x_bf16;
  kernels::LongRows long_rows;  // the own SpMM's long-row list, as engine/aggregation.cpp keeps it with Â
  engine::Buffer<NodeId> long_ids;
  engine::Buffer<std::int64_t> long_prefix;
  LongRowsView long_view{};
  CsrView a{};  // points at long_view: the object stays where it was built
  Workload() = default;
  Workload(const Workload&) = delete;
  Workload& operator=(const Workload&) = delete;
};

/// The graph plus a self loop on every node, entries 1 (edge weights ignored), both scales D^-1/2 of the looped
/// degrees; X random (n x the widest width). bf16: X converted once, outside every timed region (the first n x w
/// values serve width w, as for fp32), and widened back once so that the bf16 kernel can be checked against the
/// fp32 kernel on the very same values.
void upload_workload(engine::Resources& res, const datasets::Csr& graph, const SpmmBenchConfig& c, Workload& w) {
  w.n = graph.num_nodes;
  w.nnz = graph.num_edges();
  w.max_width = *std::max_element(c.widths.begin(), c.widths.end());
  std::vector<float> dinv(static_cast<std::size_t>(w.n));
  for (std::int64_t u = 0; u < w.n; ++u) {
    const auto d = static_cast<double>(graph.degree(u));
    dinv[static_cast<std::size_t>(u)] = d > 0 ? static_cast<float>(1.0 / std::sqrt(d)) : 0.0f;
  }
  const std::int64_t count = w.n * w.max_width;
  w.offsets = engine::upload(res, graph.row_offsets, MemoryCategory::kGraph);
  w.cols = engine::upload(res, graph.col_ids, MemoryCategory::kGraph);
  w.scale = engine::upload(res, dinv, MemoryCategory::kGraph);
  w.x = engine::upload(res, random_matrix(count, c.seed), MemoryCategory::kFeatures);
  w.y = engine::Buffer<float>(res.memory(), count, MemoryCategory::kActivations, res.stream());
  if (c.precision == "bf16") {
    const kernels::Context& ctx = res.context();
    w.x_bf16 = engine::Buffer<kernels::Bf16>(res.memory(), count, MemoryCategory::kFeatures, res.stream());
    w.x_rounded = engine::Buffer<float>(res.memory(), count, MemoryCategory::kFeatures, res.stream());
    kernels::convert_to_bf16_async(ctx, w.x.data(), count, w.x_bf16.data());
    kernels::convert_from_bf16_async(ctx, w.x_bf16.data(), count, w.x_rounded.data());
  }
  w.long_rows = kernels::list_long_rows(graph.row_offsets.data(), w.n, kernels::spmm_long_rows_floor(w.nnz));
  w.long_ids = engine::upload(res, w.long_rows.rows, MemoryCategory::kGraph);
  w.long_prefix = engine::upload(res, w.long_rows.prefix, MemoryCategory::kGraph);
  res.synchronize();
  w.long_view = LongRowsView{w.offsets.data(),  w.n,
                             w.long_rows.floor, static_cast<std::int64_t>(w.long_rows.rows.size()),
                             w.long_ids.data(), w.long_prefix.data(),
                             w.long_rows.prefix.data()};
  w.a = CsrView{w.n, w.n, w.offsets.data(), w.cols.data(), nullptr, w.nnz};
  w.a.long_rows = &w.long_view;
}

std::vector<float> download(engine::Resources& res, const engine::Buffer<float>& y, std::size_t count) {
  std::vector<float> out(count);
  const cudaStream_t stream = res.context().stream;
  detail::copy_bytes_async(out.data(), y.data(), count * sizeof(float), stream);
  detail::synchronize_stream(stream);
  return out;
}

/// Measures the implementations of one width one after the other. The first that runs without a `reference`
/// becomes the reference of this width: its output stays on the host and every later output is compared with it.
class WidthHarness {
 public:
  WidthHarness(engine::Resources& res, Workload& w, const SpmmBenchConfig& c, engine::Buffer<std::uint8_t>* flush,
               std::int64_t width)
      : res_(res), w_(w), c_(c), flush_(flush), width_(width), count_(static_cast<std::size_t>(w.n * width)) {}

  /// Times `call`, then runs it once more on a poisoned (NaN) Y and checks the output. With `reference` (the bf16
  /// kernel), the output is checked against what `reference` writes into Y instead.
  void measure(const std::string& name, const std::function<std::size_t()>& prepare,
               const std::function<void()>& call, const std::function<void()>& reference = {},
               const std::string& reference_name = {}) {
    SpmmRun r;
    r.name = name;
    r.bf16 = static_cast<bool>(reference);
    try {
      run(r, prepare, call, reference, reference_name);
    } catch (const OutOfMemory& e) {
      r.status = "out of memory";
      r.message = e.what();
    } catch (const DeviceError& e) {
      detail::clear_cuda_error();  // clear a non-sticky error so that the next implementation starts clean
      r.status = "unsupported";
      r.message = e.what();
    }
    if (r.status != "ok") {
      r.time_ms = Summary{};
      if (c_.log)
        c_.log("gcnpart bench spmm: width " + std::to_string(width_) + ", " + name + ": " + r.status + ": " +
               r.message);
    }
    results.push_back(std::move(r));
  }

  std::vector<SpmmRun> results;
  std::string reference_name;

 private:
  void run(SpmmRun& r, const std::function<std::size_t()>& prepare, const std::function<void()>& call,
           const std::function<void()>& reference, const std::string& against) {
    const cudaStream_t stream = res_.context().stream;
    res_.synchronize();
    res_.memory().reset_peak();
    const std::int64_t before = res_.memory().stats().current;
    r.workspace = static_cast<std::int64_t>(prepare());
    r.time_ms = Summary::of(detail::time_calls(stream, c_.warmup, c_.repeats, flush_, call));
    detail::fill_bytes_async(w_.y.data(), 0xff, count_ * sizeof(float), stream);
    call();
    std::vector<float> output = download(res_, w_.y, count_);
    r.peak_tracked = res_.memory().stats().peak;
    r.extra_tracked = r.peak_tracked - before;
    r.nonfinite = count_nonfinite(output);
    if (reference) {
      reference();
      compare(output, download(res_, w_.y, count_), r);
      r.error_against = against;
    } else if (reference_name.empty()) {
      reference_output_ = std::move(output);
      reference_name = r.name;
    } else {
      compare(output, reference_output_, r);
      r.error_against = reference_name;
    }
  }

  engine::Resources& res_;
  Workload& w_;
  const SpmmBenchConfig& c_;
  engine::Buffer<std::uint8_t>* flush_;
  std::int64_t width_;
  std::size_t count_;
  std::vector<float> reference_output_;
};

/// Bytes, rates and the verdict of one width, from its measured runs. Returns whether the outputs agree within
/// kMaxRelL2 / kMaxRelMax (or were not compared) and are all finite.
bool summarise_width(SpmmWidth& w, std::int64_t n, std::int64_t nnz, double copy_gbs) {
  auto min_bytes = [&](bool x_bf16) {
    return 8.0 * static_cast<double>(n + 1) + 4.0 * static_cast<double>(nnz) + 8.0 * static_cast<double>(n) +
           (x_bf16 ? 6.0 : 8.0) * static_cast<double>(n) * static_cast<double>(w.width);
  };
  w.min_bytes = min_bytes(false);
  w.flop = 2.0 * static_cast<double>(nnz) * static_cast<double>(w.width);
  bool finite = true;  // the poisoned Y was overwritten everywhere
  for (SpmmRun& r : w.results) {
    if (r.status != "ok") continue;
    r.min_bytes = min_bytes(r.bf16);
    r.gbs = r.min_bytes / (r.time_ms.median * 1e-3) / 1e9;
    r.gflops = w.flop / (r.time_ms.median * 1e-3) / 1e9;
    r.fraction_of_copy_bandwidth = copy_gbs > 0 ? r.gbs / copy_gbs : 0.0;
    finite = finite && r.nonfinite == 0;
    if (!r.rel_l2) continue;
    w.compared = true;
    w.worst_rel_l2 = std::max(w.worst_rel_l2, *r.rel_l2);
    w.worst_rel_max = std::max(w.worst_rel_max, *r.rel_max);
  }
  const bool within = !w.compared || (w.worst_rel_l2 <= kMaxRelL2 && w.worst_rel_max <= kMaxRelMax);
  w.verified = w.compared && within && finite;
  return within && finite;
}

SpmmWidth measure_width(engine::Resources& res, Workload& wl, const SpmmBenchConfig& c,
                        engine::Buffer<std::uint8_t>* flush, std::int64_t w) {
  const kernels::Context& ctx = res.context();
  const float* scale = wl.scale.data();
  WidthHarness h(res, wl, c, flush, w);
  const bool run_own = c.spmm != "cusparse", run_cusparse = c.spmm != "own";
  auto none = [] { return std::size_t{0}; };
  if (run_own && c.precision == "bf16")
    h.measure(
        "own-bf16", none,
        [&] {
          kernels::spmm_bf16_async(ctx, wl.a, scale, scale, kernels::make_view(wl.x_bf16.data(), wl.a.num_cols, w),
                                   kernels::make_view(wl.y.data(), wl.a.num_rows, w), c.spmm_tuning);
        },
        [&] {
          kernels::spmm_async(ctx, wl.a, scale, scale, kernels::make_view(wl.x_rounded.data(), wl.a.num_cols, w),
                              kernels::make_view(wl.y.data(), wl.a.num_rows, w), SpmmAlgo::kOwn, c.spmm_tuning);
        },
        "own (fp32) on the bf16-rounded X");
  if (run_own)
    h.measure("own", none, [&] {
      kernels::spmm_async(ctx, wl.a, scale, scale, kernels::make_view(wl.x.data(), wl.a.num_cols, w),
                          kernels::make_view(wl.y.data(), wl.a.num_rows, w), SpmmAlgo::kOwn, c.spmm_tuning);
    });
  if (run_cusparse)
    for (int alg = 0; alg <= 3; ++alg) {
      std::unique_ptr<kernels::CusparseSpmm> plan;
      h.measure(
          "cusparse-alg" + std::to_string(alg),
          [&] {
            plan = std::make_unique<kernels::CusparseSpmm>(ctx, wl.a, scale, scale, w, alg);
            return plan->workspace_bytes();
          },
          [&] {
            plan->run_async(kernels::make_view(wl.x.data(), wl.a.num_cols, w),
                            kernels::make_view(wl.y.data(), wl.a.num_rows, w));
          });
      res.synchronize();
      plan.reset();
    }
  SpmmWidth out;
  out.width = w;
  out.results = std::move(h.results);
  out.reference = h.reference_name;
  return out;
}

const SpmmRun* find_run(const std::vector<SpmmRun>& runs, const std::string& name) {
  for (const auto& r : runs)
    if (r.status == "ok" && r.name == name) return &r;
  return nullptr;
}

}  // namespace

void SpmmBenchConfig::validate() const {
  const std::string expected = "positive integers up to " + std::to_string(kMaxWidth) + " without repeats";
  std::set<std::int64_t> seen;
  if (widths.empty()) throw InvalidInput::parameter("--widths", "", expected);
  for (std::int64_t w : widths)
    if (w < 1 || w > kMaxWidth || !seen.insert(w).second)
      throw InvalidInput::parameter("--widths", std::to_string(w), expected);
  if (precision != "fp32" && precision != "tf32" && precision != "bf16")
    throw InvalidInput::parameter("--precision", precision, "fp32, tf32 or bf16");
  if (spmm != "own" && spmm != "cusparse" && spmm != "all")
    throw InvalidInput::parameter("--spmm", spmm, "own, cusparse or all");
  if (warmup < 0) throw InvalidInput::parameter("--warmup", std::to_string(warmup), ">= 0");
  if (repeats < kMinSpmmRepeats)
    throw InvalidInput::parameter("--repeats", std::to_string(repeats), ">= " + std::to_string(kMinSpmmRepeats));
  (void)cuda_device(device);
}

const SpmmRun* SpmmWidth::own() const { return find_run(results, "own"); }
const SpmmRun* SpmmWidth::own_bf16() const { return find_run(results, "own-bf16"); }

const SpmmRun* SpmmWidth::best_cusparse() const {
  const SpmmRun* best = nullptr;
  for (const auto& r : results)
    if (r.status == "ok" && r.name.rfind("cusparse", 0) == 0 && (best == nullptr || r.time_ms.median < best->time_ms.median))
      best = &r;
  return best;
}

SpmmBenchReport bench_spmm(const datasets::Dataset& data, const SpmmBenchConfig& config) {
  config.validate();
  const engine::Device device = cuda_device(config.device);
  SpmmBenchReport report;
  report.config = config;
  report.config.log = nullptr;
  report.date = detail::now_iso();
  report.commit = detail::commit();
  report.dataset = engine::dataset_json(data);
  partition::Reordering reordering = partition::locality_order(data.graph, config.reorder);
  datasets::Csr reordered;
  if (!reordering.identity()) {  // the permutation alone is timed: adding self loops is set-up either way
    const auto t_apply = std::chrono::steady_clock::now();
    reordered = partition::permute_graph(data.graph, reordering);
    report.reorder_seconds[1] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_apply).count();
  }
  report.reorder_seconds[0] = reordering.order_seconds;
  const datasets::Csr graph = engine::with_self_loops(reordering.identity() ? data.graph : reordered);
  report.rows = graph.num_nodes;
  report.entries = graph.num_edges();
  report.self_loops_added = report.entries - data.graph.num_edges();
  if (config.log) {
    std::string widths;
    for (auto w : config.widths) widths += (widths.empty() ? "" : ",") + std::to_string(w);
    config.log("gcnpart bench spmm: " + data.name + " (" + detail::commas(report.rows) + " nodes, " + detail::commas(report.entries) +
               " entries of Â with self loops) on " + device.name() + " (" + engine::cuda_device_name(device.index) +
               "), widths " + widths + ", " +
               (config.precision == "bf16" ? std::string("bf16 X (own-bf16) beside fp32") : config.precision));
  }
  engine::Resources res(device);
  // The harness's own device memory (copy buffers, L2 flush): tracked, but apart from the workload's.
  engine::TrackingMemoryResource scratch(MemorySpace::kDevice, device.index, device.name() + " bench scratch");
  const cudaStream_t stream = res.context().stream;
  report.gpu = GpuInfo::query(device.index);
  measure_copy_bandwidth(stream, scratch, report);
  scratch.release_cache();

  Workload wl;
  upload_workload(res, graph, config, wl);
  // Each timed call starts with a cold L2 (a write of twice its size), so a graph whose operands fit in L2 is
  // not measured out of the cache; both peers run under the same condition.
  engine::Buffer<std::uint8_t> flush;
  if (config.flush_l2)
    flush = engine::Buffer<std::uint8_t>(scratch, 2 * static_cast<std::int64_t>(report.gpu.l2_bytes),
                                         MemoryCategory::kWorkspace, res.stream());
  for (const std::int64_t w : config.widths) {
    SpmmWidth width = measure_width(res, wl, config, &flush, w);
    if (!summarise_width(width, wl.n, wl.nnz, report.copy_gbs)) report.all_verified = false;
    report.widths.push_back(std::move(width));
  }
  report.memory = res.memory().stats();
  report.scratch_memory = scratch.stats();
  return report;
}

nlohmann::json SpmmRun::to_json() const {
  nlohmann::json j = {{"spmm", name}, {"status", status}};
  if (status != "ok") {
    j["message"] = message;
    return j;
  }
  j["precision"] = bf16 ? "bf16 X, fp32 accumulation and Y" : "fp32";
  j["min_bytes"] = min_bytes;
  j["time_ms"] = time_ms.to_json();
  j["gbs"] = gbs;
  j["fraction_of_copy_bandwidth"] = fraction_of_copy_bandwidth;
  j["gflops"] = gflops;
  j["peak_tracked_bytes"] = peak_tracked;
  j["extra_tracked_bytes"] = extra_tracked;
  j["library_workspace_bytes"] = workspace;
  j["nonfinite_outputs"] = nonfinite;
  if (rel_l2) j["error"] = {{"against", error_against}, {"rel_l2", *rel_l2}, {"rel_max", *rel_max}};
  return j;
}

nlohmann::json SpmmWidth::to_json() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : results) rows.push_back(r.to_json());
  nlohmann::json j = {{"width", width},
                      {"min_bytes", min_bytes},
                      {"flop", flop},
                      {"results", rows},
                      {"verified", verified},
                      {"verification",
                       compared ? nlohmann::json{{"worst_rel_l2", worst_rel_l2},
                                                 {"worst_rel_max", worst_rel_max},
                                                 {"tolerance_rel_l2", kMaxRelL2},
                                                 {"tolerance_rel_max", kMaxRelMax},
                                                 {"against", reference}}
                                : nlohmann::json("not done: fewer than two implementations ran")}};
  const SpmmRun *best = best_cusparse(), *mine = own(), *mine_bf16 = own_bf16();
  if (best != nullptr) {
    j["best_cusparse"] = best->name;
    j["best_cusparse_median_ms"] = best->time_ms.median;
  }
  if (mine != nullptr && best != nullptr) {
    j["own_over_best_cusparse_time"] = mine->time_ms.median / best->time_ms.median;
    j["speedup_vs_best_cusparse"] = best->time_ms.median / mine->time_ms.median;
  }
  if (mine_bf16 != nullptr && best != nullptr) {
    j["bf16_speedup_vs_best_cusparse_fp32"] = best->time_ms.median / mine_bf16->time_ms.median;
    j["bf16_speedup_target"] = kBf16SpeedupTarget;
  }
  if (mine_bf16 != nullptr && mine != nullptr)
    j["bf16_speedup_vs_own_fp32"] = mine->time_ms.median / mine_bf16->time_ms.median;
  return j;
}

nlohmann::json SpmmBenchReport::to_json() const {
  nlohmann::json j;
  j["command"] = "bench spmm";
  j["date"] = date;
  j["commit"] = commit;
  j["gpu"] = gpu.to_json();
  j["dataset"] = dataset;
  j["matrix"] = {{"description", "Â = D^-1/2 (A + I) D^-1/2, no value array for the own kernel (scales applied on "
                                 "the fly); cuSPARSE gets Â's values materialised once"},
                 {"rows", rows},
                 {"entries", entries},
                 {"self_loops_added", self_loops_added}};
  j["precision"] = config.precision;
  if (config.precision == "tf32") j["precision_note"] = "SpMM has no tensor-core path: tf32 affects GEMMs only";
  if (config.precision == "bf16") {
    j["precision_note"] =
        "own-bf16: X stored as bf16 (converted once, outside the timed region), fp32 weights, accumulation and Y; "
        "checked against the fp32 own kernel on the bf16-rounded X. The own and cuSPARSE rows are fp32 on the "
        "original X, measured in the same run: bf16_speedup_vs_best_cusparse_fp32 is the issue's ratio";
    j["traffic_formula_bf16"] = kTrafficFormulaBf16;
  }
  j["settings"] = {{"warmup", config.warmup},
                   {"repeats", config.repeats},
                   {"flush_l2_before_each_run", config.flush_l2},
                   {"timing", "CUDA events around each call on the device's stream"},
                   {"spmm", config.spmm},
                   {"seed", config.seed}};
  engine::add_spmm_tuning_json(j["settings"], config.spmm_tuning);
  j["reorder"] = {{"method", to_string(config.reorder)},
                  {"order_seconds", reorder_seconds[0]},
                  {"apply_seconds", reorder_seconds[1]}};
  j["copy_bandwidth"] = {{"bytes_per_copy", copy_bytes},
                         {"gbs", copy_gbs},
                         {"time_ms", copy_ms.to_json()},
                         {"formula", "2 x bytes_per_copy / median time (bytes read + bytes written), cudaMemcpyAsync D2D"}};
  j["traffic_formula"] = kTrafficFormula;
  j["flop_formula"] = "2 nnz width";
  j["widths"] = nlohmann::json::array();
  for (const auto& w : widths) j["widths"].push_back(w.to_json());
  j["memory"] = engine::to_json(memory);
  j["scratch_memory"] = engine::to_json(scratch_memory);
  return j;
}

}  // namespace gcnpart::bench
