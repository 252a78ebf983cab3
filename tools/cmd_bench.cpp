// gcnpart bench spmm|epoch: GPU measurements of the SpMM (own kernel against every cuSPARSE algorithm) and of the
// GCN training epoch, with the physics METHOD.md asks for: median of many CUDA-event-timed runs after warm-up,
// bytes and FLOP over time, the fraction of the device-to-device copy bandwidth measured in the same run, peak
// memory, and the GPU, clocks and commit. All arguments are checked before the data is read or a GPU is touched.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "engine/gcn.hpp"
#include "engine/problem.hpp"
#include "engine/resources.hpp"
#include "kernels/core/cuda_check.hpp"
#include "kernels/core/error.hpp"
#include "kernels/cuda_event.hpp"
#include "kernels/ops.hpp"
#include "tools/cli_common.hpp"

#ifndef GCNPART_GIT_COMMIT
#define GCNPART_GIT_COMMIT "unknown"
#endif

namespace gcnpart::cli {

namespace {

// ------------------------------------------------------------------------------------------------ options

constexpr int kMinSpmmRepeats = 10;          ///< "median of >= 10 timed runs"
constexpr std::int64_t kMaxWidth = 1 << 16;  ///< a sanity bound on --widths
constexpr std::size_t kCopyBytes = std::size_t{1} << 30;  ///< copy-bandwidth buffer (1 GiB each way)
constexpr int kCopyRuns = 10;
constexpr double kMaxRelL2 = 1e-5;   ///< fp32 SpMM agreement: ||own - ref|| / ||ref||
constexpr double kMaxRelMax = 1e-4;  ///< and max |own - ref| / max |ref|
constexpr double kBf16SpeedupTarget = 1.7;  ///< issue 6: bf16 SpMM >= 1.7x the best fp32 cuSPARSE algorithm

struct BenchOptions {
  DataOptions data;
  std::string device = "cuda";
  std::string widths = "16,64,128,256";
  std::string precision = "fp32";
  std::string spmm = "all";
  int warmup = 5;
  int repeats = 20;
  std::string json;
  bool no_flush_l2 = false;
  kernels::SpmmTuning spmm_tuning;  ///< own kernel: --spmm-long-row, --spmm-segment
  // epoch
  int layers = 2;
  std::int64_t hidden = 256;
  bool no_normalize = false;
  std::uint64_t seed = 1;
};

/// "16,64,128,256" -> {16, 64, 128, 256}. @throws InvalidInput naming --widths.
std::vector<std::int64_t> parse_widths(const std::string& text) {
  const std::string expected = "comma-separated positive integers up to " + std::to_string(kMaxWidth) +
                               " without repeats, e.g. 16,64,128,256";
  std::vector<std::int64_t> out;
  std::set<std::int64_t> seen;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string item = text.substr(begin, end - begin);
    std::int64_t w = 0;
    const auto r = std::from_chars(item.data(), item.data() + item.size(), w);
    if (item.empty() || r.ec != std::errc() || r.ptr != item.data() + item.size() || w < 1 || w > kMaxWidth ||
        !seen.insert(w).second)
      throw InvalidInput::parameter("--widths", text, expected + " (bad item '" + item + "')");
    out.push_back(w);
    begin = end + 1;
  }
  return out;
}

void validate_counts(const BenchOptions& o, int min_repeats) {
  if (o.warmup < 0) throw InvalidInput::parameter("--warmup", std::to_string(o.warmup), ">= 0");
  if (o.repeats < min_repeats)
    throw InvalidInput::parameter("--repeats", std::to_string(o.repeats), ">= " + std::to_string(min_repeats));
}

/// The CUDA device to measure on. @throws InvalidInput naming --device for a CPU device or a missing GPU.
engine::Device cuda_device(const std::string& spec) {
  const engine::Device d = engine::Device::parse(spec, "--device");
  if (!d.is_cuda())
    throw InvalidInput::parameter("--device", spec,
                                  "a CUDA device (cuda or cuda:N): gcnpart bench times GPU kernels only (CPU "
                                  "training is measured by `gcnpart train --device cpu`)");
  const int n = engine::cuda_device_count();
  if (d.index >= n)
    throw InvalidInput::parameter("--device", spec,
                                  n == 0 ? std::string("a visible CUDA device, but none was found (gcnpart bench "
                                                       "runs on the GPU machine)")
                                         : "cuda:0..cuda:" + std::to_string(n - 1));
  return d;
}


// ------------------------------------------------------------------------------------------------ helpers

struct Summary {
  double median = 0, min = 0, p90 = 0, mean = 0;
};

/// Median, minimum, 90th percentile (nearest rank) and mean.
Summary summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  s.min = v.front();
  s.p90 = v[static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(n))) - 1];
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(n);
  return s;
}

nlohmann::json summary_json(const std::vector<double>& v) {
  const Summary s = summarize(v);
  return {{"median", s.median}, {"min", s.min}, {"p90", s.p90}, {"mean", s.mean}, {"runs", v.size()}, {"all", v}};
}

nlohmann::json memory_json(const engine::MemoryStats& m) {
  nlohmann::json at_peak = nlohmann::json::object();
  for (int c = 0; c < static_cast<int>(MemoryCategory::kCount); ++c)
    at_peak[memory_category_name(static_cast<MemoryCategory>(c))] = m.at_peak_by[static_cast<std::size_t>(c)];
  return {{"peak_bytes", m.peak}, {"at_peak_by_category", at_peak}, {"allocations", m.allocations}};
}

/// GPU name, multiprocessors, memory, L2, peak clocks (device attributes: CUDA 13 dropped them from
/// cudaDeviceProp) and the bandwidth those clocks imply (2 transfers per memory clock x bus width).
nlohmann::json gpu_json(int device) {
  cudaDeviceProp p{};
  GCNPART_CUDA_TRY(cudaGetDeviceProperties(&p, device));
  int sm_khz = 0, mem_khz = 0, bus_bits = 0, runtime = 0, driver = 0;
  GCNPART_CUDA_TRY(cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, device));
  GCNPART_CUDA_TRY(cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device));
  GCNPART_CUDA_TRY(cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device));
  GCNPART_CUDA_TRY(cudaRuntimeGetVersion(&runtime));
  GCNPART_CUDA_TRY(cudaDriverGetVersion(&driver));
  return {{"device", device},
          {"name", p.name},
          {"compute_capability", std::to_string(p.major) + "." + std::to_string(p.minor)},
          {"multiprocessors", p.multiProcessorCount},
          {"memory_bytes", static_cast<std::int64_t>(p.totalGlobalMem)},
          {"l2_bytes", p.l2CacheSize},
          {"sm_clock_max_mhz", sm_khz / 1000.0},
          {"memory_clock_max_mhz", mem_khz / 1000.0},
          {"memory_bus_bits", bus_bits},
          {"theoretical_bandwidth_gbs", 2.0 * mem_khz * 1e3 * (bus_bits / 8.0) / 1e9},
          {"cuda_runtime", runtime},
          {"cuda_driver", driver}};
}

/// Plain cudaMalloc'd scratch that is not part of the measured workload (copy-bandwidth buffers, the L2 flush),
/// kept out of the tracked memory so that the reported peaks are the workload's alone.
class ScratchBuffer {
 public:
  explicit ScratchBuffer(std::size_t bytes) : bytes_(bytes) {
    if (bytes_ > 0) GCNPART_CUDA_TRY(cudaMalloc(&data_, bytes_));
  }
  ~ScratchBuffer() {
    if (data_ != nullptr) GCNPART_CUDA_TRY_NO_THROW(cudaFree(data_));
  }
  ScratchBuffer(const ScratchBuffer&) = delete;
  ScratchBuffer& operator=(const ScratchBuffer&) = delete;
  [[nodiscard]] void* get() const noexcept { return data_; }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

/// Times `call` on `stream`: `warmup` untimed calls, then `repeats` calls each between two events (the L2 flush,
/// when given, runs before each start event and is not timed). Returns milliseconds per call.
std::vector<double> time_calls(cudaStream_t stream, int warmup, int repeats, const ScratchBuffer* flush,
                               const std::function<void()>& call) {
  for (int i = 0; i < warmup; ++i) call();
  std::vector<kernels::CudaEvent> start, stop;
  start.reserve(static_cast<std::size_t>(repeats));
  stop.reserve(static_cast<std::size_t>(repeats));
  for (int i = 0; i < repeats; ++i) {
    start.emplace_back();
    stop.emplace_back();
  }
  for (int i = 0; i < repeats; ++i) {
    if (flush != nullptr) GCNPART_CUDA_TRY(cudaMemsetAsync(flush->get(), i & 0xff, flush->bytes(), stream));
    start[static_cast<std::size_t>(i)].record(stream);
    call();
    stop[static_cast<std::size_t>(i)].record(stream);
  }
  GCNPART_CUDA_TRY(cudaStreamSynchronize(stream));
  std::vector<double> ms;
  for (int i = 0; i < repeats; ++i)
    ms.push_back(kernels::elapsed_ms(start[static_cast<std::size_t>(i)], stop[static_cast<std::size_t>(i)]));
  return ms;
}

/// Device-to-device copy bandwidth: median of kCopyRuns cudaMemcpyAsync of kCopyBytes, counting bytes read plus
/// bytes written (the convention of METHOD.md, so that a kernel's read + write traffic compares directly).
nlohmann::json measure_copy_bandwidth(cudaStream_t stream, double* gbs) {
  ScratchBuffer src(kCopyBytes), dst(kCopyBytes);
  GCNPART_CUDA_TRY(cudaMemsetAsync(src.get(), 0x5a, kCopyBytes, stream));
  const auto ms = time_calls(stream, 3, kCopyRuns, nullptr, [&] {
    GCNPART_CUDA_TRY(cudaMemcpyAsync(dst.get(), src.get(), kCopyBytes, cudaMemcpyDeviceToDevice, stream));
  });
  const Summary s = summarize(ms);
  *gbs = 2.0 * static_cast<double>(kCopyBytes) / (s.median * 1e-3) / 1e9;
  return {{"bytes_per_copy", kCopyBytes},
          {"gbs", *gbs},
          {"time_ms", summary_json(ms)},
          {"formula", "2 x bytes_per_copy / median time (bytes read + bytes written), cudaMemcpyAsync D2D"}};
}

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

struct Difference {
  double rel_l2 = 0;   ///< ||got - ref||_2 / ||ref||_2
  double rel_max = 0;  ///< max |got - ref| / max |ref|
};

/// Compares over the entries where both are finite (non-finite entries are counted separately).
Difference compare(const std::vector<float>& got, const std::vector<float>& ref) {
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
  Difference r;
  r.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  r.rel_max = max_ref > 0 ? max_diff / max_ref : max_diff;
  return r;
}

// ------------------------------------------------------------------------------------------------ spmm

/// One SpMM implementation at one width.
struct SpmmResult {
  std::string name;          ///< "own", "own-bf16", "cusparse-alg0" (default), "cusparse-alg1..3" (CSR ALG1..3)
  bool bf16 = false;         ///< X stored as bf16 (fp32 accumulation and Y)
  std::string status = "ok"; ///< "ok", "unsupported", "out of memory"
  std::string message;
  std::vector<double> ms;
  std::int64_t peak_tracked = 0, extra_tracked = 0, workspace = 0;
  std::int64_t nonfinite = 0;
  std::optional<Difference> error;  ///< against the reference implementation of this width
  std::string error_against;
};

void run_bench_spmm(const BenchOptions& o) {
  const std::vector<std::int64_t> widths = parse_widths(o.widths);
  validate_counts(o, kMinSpmmRepeats);
  o.spmm_tuning.validate();
  const engine::Device device = cuda_device(o.device);
  const bool bf16 = o.precision == "bf16";

  const auto ds = load_data(o.data);
  // Â exactly as the engine builds it (engine::single_device_problem): the graph plus a self loop on every
  // node, entries 1 (edge weights ignored), both scales D^-1/2 of the looped degrees.
  const datasets::Csr graph = engine::with_self_loops(ds.graph);
  const std::int64_t n = graph.num_nodes, nnz = graph.num_edges();
  std::vector<float> dinv(static_cast<std::size_t>(n));
  for (std::int64_t u = 0; u < n; ++u) {
    const auto d = static_cast<double>(graph.degree(u));
    dinv[static_cast<std::size_t>(u)] = d > 0 ? static_cast<float>(1.0 / std::sqrt(d)) : 0.0f;
  }
  const std::int64_t max_width = *std::max_element(widths.begin(), widths.end());
  const bool run_own = o.spmm != "cusparse", run_cusparse = o.spmm != "own";
  std::fprintf(stderr,
               "gcnpart bench spmm: %s (%s nodes, %s entries of Â with self loops) on %s (%s), widths %s, %s\n",
               ds.name.c_str(), with_commas(n).c_str(), with_commas(nnz).c_str(), device.name().c_str(),
               engine::cuda_device_name(device.index).c_str(), o.widths.c_str(),
               bf16 ? "bf16 X (own-bf16) beside fp32" : o.precision.c_str());

  engine::Resources res(device);
  const kernels::Context& ctx = res.context();
  const nlohmann::json gpu = gpu_json(device.index);
  double copy_gbs = 0;
  const nlohmann::json copy = measure_copy_bandwidth(ctx.stream, &copy_gbs);

  // The workload: Â (offsets, column ids, D^-1/2), X (n x max_width, random) and Y, through tracked memory.
  using engine::upload;
  auto offsets = upload(res, graph.row_offsets, MemoryCategory::kGraph);
  auto cols = upload(res, graph.col_ids, MemoryCategory::kGraph);
  auto scale = upload(res, dinv, MemoryCategory::kGraph);
  auto x = upload(res, random_matrix(n * max_width, o.seed), MemoryCategory::kFeatures);
  engine::Buffer<float> y(res.memory(), n * max_width, MemoryCategory::kActivations, res.stream());
  // bf16: X converted once, outside every timed region (the first n x w values serve width w, as for fp32), and
  // widened back once so that the bf16 kernel can be checked against the fp32 kernel on the very same values.
  engine::Buffer<std::uint16_t> x_bf16;
  engine::Buffer<float> x_rounded;
  if (bf16) {
    x_bf16 = engine::Buffer<std::uint16_t>(res.memory(), n * max_width, MemoryCategory::kFeatures, res.stream());
    x_rounded = engine::Buffer<float>(res.memory(), n * max_width, MemoryCategory::kFeatures, res.stream());
    kernels::convert_to_bf16_async(ctx, x.data(), n * max_width, x_bf16.data());
    kernels::convert_from_bf16_async(ctx, x_bf16.data(), n * max_width, x_rounded.data());
  }
  res.synchronize();
  const CsrView a{n, n, offsets.data(), cols.data(), nullptr};
  // Each timed call starts with a cold L2 (a write of twice its size), so a graph whose operands fit in L2 is
  // not measured out of the cache; both peers run under the same condition.
  std::unique_ptr<ScratchBuffer> flush;
  if (!o.no_flush_l2) flush = std::make_unique<ScratchBuffer>(2 * static_cast<std::size_t>(gpu["l2_bytes"].get<int>()));

  const std::string traffic_formula =
      "8 (n + 1) row offsets + 4 nnz column ids + 2 x 4 n scale vectors + 4 n width (X read once) + 4 n width "
      "(Y written once), n = rows, nnz = entries of Â";
  const std::string traffic_formula_bf16 =
      "8 (n + 1) row offsets + 4 nnz column ids + 2 x 4 n scale vectors + 2 n width (X read once, bf16) + 4 n width "
      "(Y written once, fp32)";
  auto min_bytes = [&](std::int64_t w, bool x_bf16_bytes) {
    return 8.0 * static_cast<double>(n + 1) + 4.0 * static_cast<double>(nnz) + 8.0 * static_cast<double>(n) +
           (x_bf16_bytes ? 6.0 : 8.0) * static_cast<double>(n) * static_cast<double>(w);
  };

  nlohmann::json widths_json = nlohmann::json::array();
  bool all_verified = true;
  std::printf("%-6s %-14s %10s %10s %10s %9s %7s %9s %11s\n", "width", "spmm", "median ms", "min ms", "p90 ms", "GB/s",
              "% copy", "GFLOP/s", "rel error");
  for (const std::int64_t w : widths) {
    const std::size_t out_count = static_cast<std::size_t>(n * w);
    std::vector<SpmmResult> results;
    // The first implementation that runs (own, when asked for) is the reference of this width: its output stays
    // on the host and every later output is compared with it as soon as it is made.
    std::vector<float> ref_output;
    std::string ref_name;
    // Measures one implementation: time it, then run it once more on a poisoned (NaN) Y and check the output.
    // With `reference` (the bf16 kernel), the output is checked against what `reference` writes into Y instead of
    // against the first implementation, and it does not become the reference of the fp32 implementations.
    auto measure = [&](const std::string& name, const std::function<std::size_t()>& prepare,
                       const std::function<void()>& call, const std::function<void()>& reference = {},
                       const std::string& reference_name = {}) {
      SpmmResult r;
      r.name = name;
      r.bf16 = static_cast<bool>(reference);
      try {
        res.synchronize();
        res.memory().reset_peak();
        const std::int64_t before = res.memory().stats().current;
        r.workspace = static_cast<std::int64_t>(prepare());
        r.ms = time_calls(ctx.stream, o.warmup, o.repeats, flush.get(), call);
        GCNPART_CUDA_TRY(cudaMemsetAsync(y.data(), 0xff, out_count * sizeof(float), ctx.stream));
        call();
        std::vector<float> output(out_count);
        GCNPART_CUDA_TRY(cudaMemcpyAsync(output.data(), y.data(), out_count * sizeof(float), cudaMemcpyDeviceToHost,
                                         ctx.stream));
        GCNPART_CUDA_TRY(cudaStreamSynchronize(ctx.stream));
        r.peak_tracked = res.memory().stats().peak;
        r.extra_tracked = r.peak_tracked - before;
        r.nonfinite = count_nonfinite(output);
        if (reference) {
          reference();
          std::vector<float> want(out_count);
          GCNPART_CUDA_TRY(cudaMemcpyAsync(want.data(), y.data(), out_count * sizeof(float), cudaMemcpyDeviceToHost,
                                           ctx.stream));
          GCNPART_CUDA_TRY(cudaStreamSynchronize(ctx.stream));
          r.error = compare(output, want);
          r.error_against = reference_name;
        } else if (ref_name.empty()) {
          ref_output = std::move(output);
          ref_name = name;
        } else {
          r.error = compare(output, ref_output);
          r.error_against = ref_name;
        }
      } catch (const OutOfMemory& e) {
        r.status = "out of memory";
        r.message = e.what();
      } catch (const DeviceError& e) {
        (void)cudaGetLastError();  // clear a non-sticky error so that the next implementation starts clean
        r.status = "unsupported";
        r.message = e.what();
      }
      if (r.status != "ok") {
        r.ms.clear();
        std::fprintf(stderr, "gcnpart bench spmm: width %lld, %s: %s: %s\n", static_cast<long long>(w), name.c_str(),
                     r.status.c_str(), r.message.c_str());
      }
      results.push_back(std::move(r));
    };

    if (run_own && bf16)
      measure(
          "own-bf16", [] { return std::size_t{0}; },
          [&] {
            kernels::spmm_bf16_async(ctx, a, scale.data(), scale.data(), x_bf16.data(), w, y.data(), w, w,
                                     o.spmm_tuning);
          },
          [&] {
            kernels::spmm_async(ctx, a, scale.data(), scale.data(), x_rounded.data(), w, y.data(), w, w,
                                SpmmAlgo::kOwn, o.spmm_tuning);
          },
          "own (fp32) on the bf16-rounded X");
    if (run_own)
      measure("own", [] { return std::size_t{0}; },
              [&] {
                kernels::spmm_async(ctx, a, scale.data(), scale.data(), x.data(), w, y.data(), w, w,
                                    SpmmAlgo::kOwn, o.spmm_tuning);
              });
    if (run_cusparse)
      for (int alg = 0; alg <= 3; ++alg) {
        std::unique_ptr<kernels::CusparseSpmm> plan;
        measure(
            "cusparse-alg" + std::to_string(alg),
            [&] {
              plan = std::make_unique<kernels::CusparseSpmm>(ctx, a, scale.data(), scale.data(), w, alg);
              return plan->workspace_bytes();
            },
            [&] { plan->run_async(x.data(), y.data()); });
        res.synchronize();
        plan.reset();
      }

    std::vector<float>().swap(ref_output);
    double worst_l2 = 0, worst_max = 0;
    bool compared = false;
    for (const auto& r : results)
      if (r.error) {
        compared = true;
        worst_l2 = std::max(worst_l2, r.error->rel_l2);
        worst_max = std::max(worst_max, r.error->rel_max);
      }
    const bool within = !compared || (worst_l2 <= kMaxRelL2 && worst_max <= kMaxRelMax);
    bool finite = true;  // the poisoned Y was overwritten everywhere
    for (const auto& r : results) finite = finite && (r.status != "ok" || r.nonfinite == 0);
    const bool verified = compared && within && finite;
    if (!within || !finite) all_verified = false;

    const SpmmResult* own = nullptr;
    const SpmmResult* own_bf16 = nullptr;
    const SpmmResult* best = nullptr;  // the fastest fp32 cuSPARSE algorithm
    for (const auto& r : results) {
      if (r.status != "ok") continue;
      if (r.name == "own") own = &r;
      else if (r.name == "own-bf16") own_bf16 = &r;
      else if (best == nullptr || summarize(r.ms).median < summarize(best->ms).median) best = &r;
    }

    const double flop = 2.0 * static_cast<double>(nnz) * static_cast<double>(w);
    nlohmann::json rows = nlohmann::json::array();
    for (const auto& r : results) {
      nlohmann::json j = {{"spmm", r.name}, {"status", r.status}};
      if (r.status != "ok") {
        j["message"] = r.message;
        rows.push_back(j);
        std::printf("%-6lld %-14s %s\n", static_cast<long long>(w), r.name.c_str(), r.status.c_str());
        continue;
      }
      const Summary s = summarize(r.ms);
      const double bytes = min_bytes(w, r.bf16);
      const double gbs = bytes / (s.median * 1e-3) / 1e9, gflops = flop / (s.median * 1e-3) / 1e9;
      j["precision"] = r.bf16 ? "bf16 X, fp32 accumulation and Y" : "fp32";
      j["min_bytes"] = bytes;
      j["time_ms"] = summary_json(r.ms);
      j["gbs"] = gbs;
      j["fraction_of_copy_bandwidth"] = copy_gbs > 0 ? gbs / copy_gbs : 0.0;
      j["gflops"] = gflops;
      j["peak_tracked_bytes"] = r.peak_tracked;
      j["extra_tracked_bytes"] = r.extra_tracked;
      j["library_workspace_bytes"] = r.workspace;
      j["nonfinite_outputs"] = r.nonfinite;
      if (r.error)
        j["error"] = {{"against", r.error_against}, {"rel_l2", r.error->rel_l2}, {"rel_max", r.error->rel_max}};
      rows.push_back(j);
      char err[32] = "-";
      if (r.error) std::snprintf(err, sizeof err, "%.2e", r.error->rel_max);
      std::printf("%-6lld %-14s %10.4f %10.4f %10.4f %9.1f %6.1f%% %9.1f %11s\n", static_cast<long long>(w),
                  r.name.c_str(), s.median, s.min, s.p90, gbs, copy_gbs > 0 ? 100 * gbs / copy_gbs : 0.0, gflops,
                  err);
    }
    nlohmann::json wj = {{"width", w},
                         {"min_bytes", min_bytes(w, false)},
                         {"flop", flop},
                         {"results", rows},
                         {"verified", verified},
                         {"verification",
                          compared ? nlohmann::json{{"worst_rel_l2", worst_l2},
                                                    {"worst_rel_max", worst_max},
                                                    {"tolerance_rel_l2", kMaxRelL2},
                                                    {"tolerance_rel_max", kMaxRelMax},
                                                    {"against", ref_name}}
                                   : nlohmann::json("not done: fewer than two implementations ran")}};
    if (best != nullptr) {
      wj["best_cusparse"] = best->name;
      wj["best_cusparse_median_ms"] = summarize(best->ms).median;
    }
    if (own != nullptr && best != nullptr) {
      const double own_ms = summarize(own->ms).median, best_ms = summarize(best->ms).median;
      wj["own_over_best_cusparse_time"] = own_ms / best_ms;
      wj["speedup_vs_best_cusparse"] = best_ms / own_ms;
      std::printf("%-6lld own vs best cuSPARSE (%s): %.2fx %s\n", static_cast<long long>(w), best->name.c_str(),
                  own_ms <= best_ms ? best_ms / own_ms : own_ms / best_ms, own_ms <= best_ms ? "faster" : "SLOWER");
    }
    if (own_bf16 != nullptr && best != nullptr) {
      const double bf16_ms = summarize(own_bf16->ms).median, best_ms = summarize(best->ms).median;
      wj["bf16_speedup_vs_best_cusparse_fp32"] = best_ms / bf16_ms;
      wj["bf16_speedup_target"] = kBf16SpeedupTarget;
      std::printf("%-6lld own-bf16 vs best fp32 cuSPARSE (%s): %.2fx (target >= %.1fx: %s)\n",
                  static_cast<long long>(w), best->name.c_str(), best_ms / bf16_ms, kBf16SpeedupTarget,
                  best_ms / bf16_ms >= kBf16SpeedupTarget ? "met" : "NOT MET");
    }
    if (own_bf16 != nullptr && own != nullptr)
      wj["bf16_speedup_vs_own_fp32"] = summarize(own->ms).median / summarize(own_bf16->ms).median;
    widths_json.push_back(wj);
  }
  std::printf("copy bandwidth %.1f GB/s (D2D, read + write); Â %s rows, %s entries; %s\n", copy_gbs,
              with_commas(n).c_str(), with_commas(nnz).c_str(), all_verified ? "outputs agree" : "OUTPUTS DISAGREE");

  if (!o.json.empty()) {
    nlohmann::json j;
    j["command"] = "bench spmm";
    j["date"] = now_iso();
    j["commit"] = GCNPART_GIT_COMMIT;
    j["gpu"] = gpu;
    j["dataset"] = dataset_json(ds);
    j["matrix"] = {{"description", "Â = D^-1/2 (A + I) D^-1/2, no value array for the own kernel (scales applied on "
                                   "the fly); cuSPARSE gets Â's values materialised once"},
                   {"rows", n},
                   {"entries", nnz},
                   {"self_loops_added", nnz - ds.graph.num_edges()}};
    j["precision"] = o.precision;
    if (o.precision == "tf32") j["precision_note"] = "SpMM has no tensor-core path: tf32 affects GEMMs only";
    if (bf16) {
      j["precision_note"] =
          "own-bf16: X stored as bf16 (converted once, outside the timed region), fp32 weights, accumulation and Y; "
          "checked against the fp32 own kernel on the bf16-rounded X. The own and cuSPARSE rows are fp32 on the "
          "original X, measured in the same run: bf16_speedup_vs_best_cusparse_fp32 is the issue's ratio";
      j["traffic_formula_bf16"] = traffic_formula_bf16;
    }
    j["settings"] = {{"warmup", o.warmup},
                     {"repeats", o.repeats},
                     {"flush_l2_before_each_run", !o.no_flush_l2},
                     {"timing", "CUDA events around each call on the device's stream"},
                     {"spmm", o.spmm},
                     {"spmm_long_row", o.spmm_tuning.long_row},
                     {"spmm_segment", o.spmm_tuning.segment},
                     {"seed", o.seed}};
    j["copy_bandwidth"] = copy;
    j["traffic_formula"] = traffic_formula;
    j["flop_formula"] = "2 nnz width";
    j["widths"] = widths_json;
    j["memory"] = memory_json(res.memory().stats());
    write_json(o.json, j);
  }
  if (!all_verified)
    throw Error("gcnpart bench spmm: implementations disagree beyond rel_l2 " + std::to_string(kMaxRelL2) +
                " / rel_max " + std::to_string(kMaxRelMax) + " or left non-finite outputs (see the table" +
                (o.json.empty() ? std::string(")") : " and " + o.json + ")"));
}

// ------------------------------------------------------------------------------------------------ epoch

void run_bench_epoch(const BenchOptions& o) {
  validate_counts(o, 1);
  engine::GcnConfig model;
  model.layers = o.layers;
  model.hidden = o.hidden;
  model.seed = o.seed;
  model.precision = from_string<Precision>(o.precision, "--precision");
  model.spmm_tuning = o.spmm_tuning;
  model.validate();
  const engine::Device device = cuda_device(o.device);

  std::vector<std::pair<std::string, SpmmAlgo>> variants;
  if (o.spmm == "own" || o.spmm == "all") variants.emplace_back("own", SpmmAlgo::kOwn);
  if ((o.spmm == "cusparse" || o.spmm == "all") && !model.bf16())  // bf16 SpMM is the own kernel only
    variants.emplace_back("cusparse", SpmmAlgo::kCusparse);
  if (o.spmm == "cusparse" && model.bf16())
    throw InvalidInput::parameter("--spmm", "cusparse", "own, auto or all with --precision bf16 (own kernel only)");
  if (o.spmm == "auto" || o.spmm == "all") variants.emplace_back("auto", SpmmAlgo::kAuto);

  const auto ds = load_data(o.data);
  const engine::LocalProblem problem = engine::single_device_problem(ds, !o.no_normalize);
  const auto dims = model.dims(problem.num_features, problem.num_classes);
  std::string arch;
  for (auto d : dims) arch += (arch.empty() ? "" : "-") + std::to_string(d);
  std::fprintf(stderr, "gcnpart bench epoch: %s (%s nodes, %s edges) on %s (%s), GCN %s, %s, %d + %d epochs\n",
               ds.name.c_str(), with_commas(ds.num_nodes()).c_str(), with_commas(ds.graph.num_edges()).c_str(),
               device.name().c_str(), engine::cuda_device_name(device.index).c_str(), arch.c_str(),
               o.precision.c_str(), o.warmup, o.repeats);
  const nlohmann::json gpu = gpu_json(device.index);

  nlohmann::json runs = nlohmann::json::array();
  std::map<std::string, double> median_ms;
  std::printf("%-9s %10s %10s %10s %10s %12s %12s\n", "spmm", "median ms", "min ms", "p90 ms", "wall ms", "peak tracked",
              "driver used");
  for (const auto& [name, algo] : variants) {
    nlohmann::json run = {{"spmm", name}};
    try {
      engine::GcnConfig cfg = model;
      cfg.spmm = algo;
      const auto t0 = std::chrono::steady_clock::now();
      engine::Resources res(device);
      engine::GcnModel gcn(res, problem, cfg);
      const double setup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const std::int64_t driver_setup = res.driver_used_bytes();
      const cudaStream_t stream = res.context().stream;
      kernels::CudaEvent start, stop;
      std::vector<double> event_ms, wall_ms, loss;
      for (int epoch = 0; epoch < o.warmup + o.repeats; ++epoch) {
        const auto w0 = std::chrono::steady_clock::now();
        start.record(stream);
        const double loss_sum = gcn.train_step(epoch);  // synchronises
        stop.record(stream);
        stop.synchronize();
        const double wall = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - w0).count();
        loss.push_back(problem.global_train > 0 ? loss_sum / static_cast<double>(problem.global_train) : 0.0);
        if (epoch < o.warmup) continue;
        event_ms.push_back(kernels::elapsed_ms(start, stop));
        wall_ms.push_back(wall);
      }
      const engine::MemoryStats mem = res.memory().stats();
      const std::int64_t driver_end = res.driver_used_bytes();
      const Summary s = summarize(event_ms), sw = summarize(wall_ms);
      median_ms[name] = s.median;
      run["status"] = "ok";
      run["epoch_ms"] = summary_json(event_ms);
      run["wall_ms"] = summary_json(wall_ms);
      run["train_loss"] = loss;
      run["setup_seconds"] = setup_s;
      run["memory"] = memory_json(mem);
      run["peak_tracked_bytes"] = mem.peak;
      run["driver_used_bytes"] = {{"after_setup", driver_setup}, {"after_training", driver_end},
                                  {"note", "cudaMemGetInfo total - free: includes the CUDA context and libraries"}};
      std::printf("%-9s %10.3f %10.3f %10.3f %10.3f %12s %12s\n", name.c_str(), s.median, s.min, s.p90, sw.median,
                  human_bytes(static_cast<double>(mem.peak)).c_str(),
                  human_bytes(static_cast<double>(std::max(driver_setup, driver_end))).c_str());
    } catch (const OutOfMemory& e) {
      run["status"] = "out of memory";
      run["message"] = e.what();
      std::printf("%-9s out of memory: %s\n", name.c_str(), e.what());
    }
    runs.push_back(run);
  }
  if (median_ms.count("own") && median_ms.count("cusparse"))
    std::printf("own vs cuSPARSE epoch: %.2fx\n", median_ms["cusparse"] / median_ms["own"]);

  if (!o.json.empty()) {
    nlohmann::json j;
    j["command"] = "bench epoch";
    j["date"] = now_iso();
    j["commit"] = GCNPART_GIT_COMMIT;
    j["gpu"] = gpu;
    j["dataset"] = dataset_json(ds);
    j["model"] = {{"dims", dims},
                  {"layers", model.layers},
                  {"hidden", model.hidden},
                  {"dropout", model.dropout},
                  {"lr", model.lr},
                  {"weight_decay", model.weight_decay},
                  {"weight_decay_all_layers", model.weight_decay_all_layers},
                  {"optimizer", "Adam"},
                  {"normalize_features", !o.no_normalize}};
    j["precision"] = o.precision;
    j["settings"] = {{"warmup", o.warmup},
                     {"repeats", o.repeats},
                     {"timing", "CUDA events around GcnModel::train_step (forward, backward, Adam; it synchronises), "
                                "wall time alongside"},
                     {"seed", o.seed}};
    j["runs"] = runs;
    if (median_ms.count("own") && median_ms.count("cusparse"))
      j["speedup_own_vs_cusparse"] = median_ms["cusparse"] / median_ms["own"];
    write_json(o.json, j);
  }
}

void add_shared_options(CLI::App& cmd, BenchOptions& o, const std::vector<std::string>& spmm_choices) {
  add_data_options(cmd, o.data);
  cmd.add_option("--device", o.device, "CUDA device: cuda or cuda:N (GPU only)")->capture_default_str();
  cmd.add_option("--precision", o.precision,
                 "fp32, tf32 (TF32 GEMMs) or bf16 (spmm: bf16 X, fp32 accumulation, beside the fp32 peers; epoch: "
                 "bf16 features and activations, bf16 GEMMs, fp32 accumulation and master weights)")
      ->check(CLI::IsMember(enum_names<Precision>()))
      ->capture_default_str();
  cmd.add_option("--spmm", o.spmm, "Which SpMM to measure")->check(CLI::IsMember(spmm_choices))->capture_default_str();
  add_spmm_tuning_options(cmd, o.spmm_tuning);
  cmd.add_option("--warmup", o.warmup, "Untimed runs first")->capture_default_str();
  cmd.add_option("--repeats", o.repeats, "Timed runs (the median is reported)")->capture_default_str();
  cmd.add_option("--seed", o.seed, "Seed (random X for spmm, weights and dropout for epoch)")->capture_default_str();
  cmd.add_option("--json", o.json, "Write the full report as JSON");
}

}  // namespace

Command register_bench(CLI::App& app) {
  auto* cmd = app.add_subcommand("bench", "Measure the SpMM against cuSPARSE, or the GCN training epoch, on a GPU");
  cmd->require_subcommand(1);
  auto spmm_opts = std::make_shared<BenchOptions>();
  auto epoch_opts = std::make_shared<BenchOptions>();

  auto* s = cmd->add_subcommand(
      "spmm", "Â X for each width: own kernel and every cusparseSpMM algorithm (time, GB/s, GFLOP/s, agreement)");
  add_shared_options(*s, *spmm_opts, {"own", "cusparse", "all"});
  s->add_option("--widths", spmm_opts->widths, "Dense widths, comma-separated")->capture_default_str();
  s->add_flag("--no-flush-l2", spmm_opts->no_flush_l2, "Do not write an L2-sized buffer before each timed run");

  auto* e = cmd->add_subcommand("epoch", "GCN training epochs (forward, backward, Adam): time and peak memory");
  add_shared_options(*e, *epoch_opts, {"own", "cusparse", "auto", "all"});
  e->add_option("--layers", epoch_opts->layers, "GCN layers")->capture_default_str();
  e->add_option("--hidden", epoch_opts->hidden, "Hidden width")->capture_default_str();
  e->add_flag("--no-normalize", epoch_opts->no_normalize, "Do not row-normalise the input features");

  const Command nccl = register_bench_nccl(*cmd);  // tools/cmd_bench_nccl.cpp

  return {cmd, [s, spmm_opts, epoch_opts, nccl] {
            if (nccl.app->parsed())
              nccl.run();
            else if (s->parsed())
              run_bench_spmm(*spmm_opts);
            else
              run_bench_epoch(*epoch_opts);
          }};
}

}  // namespace gcnpart::cli
