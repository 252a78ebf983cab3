// partition_graph: METIS k-way, a keyed hash and contiguous ranges; the cut and volume are always recomputed here.
#include <metis.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>

#include "base/error.hpp"
#include "base/philox.hpp"
#include "partition/detail/plan_detail.hpp"
#include "partition/plan.hpp"

namespace gcnpart::partition {

// The CSR's column array is handed to METIS as adjncy without a copy (METIS reads it only): that needs the
// 32-bit idx_t of Debian's METIS 5.1 build.
static_assert(std::is_same_v<idx_t, NodeId>, "gcnpart expects METIS built with IDXTYPEWIDTH 32 (Debian libmetis-dev)");

namespace {

/// The share of the edges METIS sees on its retry after a failure (at most; a sampled call keeps its own share).
constexpr double kRetryEdgeSample = 0.1;

const char* metis_status_name(int status) {
  switch (status) {
    case METIS_ERROR_INPUT: return "METIS_ERROR_INPUT";
    case METIS_ERROR_MEMORY: return "METIS_ERROR_MEMORY";
    default: return "METIS_ERROR";
  }
}

void metis_kway(const datasets::Csr& graph, int parts, const PartitionOptions& options, std::vector<std::int32_t>& part_of) {
  if (graph.num_edges() > std::int64_t{std::numeric_limits<idx_t>::max()})
    throw InvalidInput::parameter("graph", std::to_string(graph.num_edges()) + " directed entries",
                                  "at most 2147483647 for METIS 5.1 with 32-bit idx_t (use the random or range "
                                  "partitioner)");
  const std::int64_t n = graph.num_nodes;
  idx_t nvtxs = static_cast<idx_t>(n);
  idx_t ncon = options.balance == Balance::kBoth ? 2 : 1;
  idx_t nparts = parts;
  // Node weights: 1 + degree (edges), degree + 1 + kRowWork (work: the node's row in device_work), or
  // (1, 1 + degree) per node (both); degrees of the full graph even when METIS sees a sample, since the work is
  // the full graph's.
  std::vector<idx_t> vwgt;
  if (options.balance != Balance::kNodes) {
    vwgt.resize(static_cast<std::size_t>(n) * static_cast<std::size_t>(ncon));
    // METIS sums weights in 32-bit idx_t: keep the total below 2^30.
    const std::int64_t row = options.balance == Balance::kWork ? 1 + kRowWork : 1;
    const std::int64_t divisor = std::max<std::int64_t>(1, (row * n + graph.num_edges()) / (std::int64_t{1} << 30) + 1);
    for (std::int64_t v = 0; v < n; ++v) {
      const auto degree = static_cast<idx_t>((graph.row_offsets[v + 1] - graph.row_offsets[v]) / divisor);
      if (options.balance == Balance::kWork) {
        vwgt[v] = std::max<idx_t>(1, static_cast<idx_t>((graph.row_offsets[v + 1] - graph.row_offsets[v] + row) / divisor));
      } else if (ncon == 2) {
        vwgt[2 * v] = 1;
        vwgt[2 * v + 1] = 1 + degree;
      } else {
        vwgt[v] = 1 + degree;
      }
    }
  }
  // METIS takes idx_t offsets: the int64 offsets are copied (4 bytes per node); the columns are not, unless sampled.
  std::vector<idx_t> xadj(graph.row_offsets.size());
  std::vector<idx_t> sampled;
  auto* adjncy = const_cast<idx_t*>(graph.col_ids.data());  // read only by METIS (tests check the graph is intact)
  if (options.metis_edge_sample >= 1.0) {
#pragma omp parallel for schedule(static) if (n > detail::kParallelMin)
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(xadj.size()); ++i)
      xadj[i] = static_cast<idx_t>(graph.row_offsets[i]);
  } else {
    // Edge {u, v} is kept when a hash of (seed, min, max) falls below the fraction: both directions agree.
    const std::uint64_t key = rng::stream_key(options.seed, rng::kSampling, 0x4D455449ull /* "METI" */);
    const auto threshold = static_cast<std::uint64_t>(std::ldexp(options.metis_edge_sample, 32));
    const auto* off = graph.row_offsets.data();
    const auto* col = graph.col_ids.data();
    auto kept = [&](std::int64_t u, NodeId v) {
      const auto a = static_cast<std::uint64_t>(std::min<std::int64_t>(u, v));
      const auto b = static_cast<std::uint64_t>(std::max<std::int64_t>(u, v));
      return (rng::mix64(key ^ rng::mix64(a << 32 | b)) & 0xffffffffull) < threshold;
    };
    std::vector<std::int64_t> count(static_cast<std::size_t>(n) + 1, 0);
#pragma omp parallel for schedule(dynamic, 4096) if (graph.num_edges() > detail::kParallelMin)
    for (std::int64_t u = 0; u < n; ++u)
      for (RowOffset k = off[u]; k < off[u + 1]; ++k) count[u + 1] += kept(u, col[k]);
    for (std::int64_t u = 0; u < n; ++u) count[u + 1] += count[u];
    sampled.resize(static_cast<std::size_t>(count[n]));
#pragma omp parallel for schedule(dynamic, 4096) if (graph.num_edges() > detail::kParallelMin)
    for (std::int64_t u = 0; u < n; ++u) {
      xadj[u] = static_cast<idx_t>(count[u]);
      std::int64_t at = count[u];
      for (RowOffset k = off[u]; k < off[u + 1]; ++k)
        if (kept(u, col[k])) sampled[at++] = col[k];
    }
    xadj[n] = static_cast<idx_t>(count[n]);
    adjncy = sampled.data();
  }

  idx_t metis_options[METIS_NOPTIONS];
  METIS_SetDefaultOptions(metis_options);
  metis_options[METIS_OPTION_SEED] = static_cast<idx_t>(options.seed & 0x7fffffffu);
  // METIS refuses a ufactor of 0 (METIS_ERROR_INPUT): --imbalance 1.0, in the documented range 1..3, asks for as
  // tight a balance as METIS allows, 1.001.
  metis_options[METIS_OPTION_UFACTOR] =
      std::max<idx_t>(1, static_cast<idx_t>(std::lround(1000.0 * (options.imbalance - 1.0))));
  metis_options[METIS_OPTION_OBJTYPE] = options.objective == Objective::kVolume ? METIS_OBJTYPE_VOL : METIS_OBJTYPE_CUT;
  metis_options[METIS_OPTION_NUMBERING] = 0;
  metis_options[METIS_OPTION_NITER] = options.metis_iterations;
  idx_t objval = 0;
  const int status = METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy, vwgt.empty() ? nullptr : vwgt.data(),
                                         nullptr, nullptr, &nparts, nullptr,
                                         nullptr, metis_options, &objval, part_of.data());
  if (status == METIS_ERROR_MEMORY)
    throw OutOfMemory("METIS_PartGraphKway ran out of host memory partitioning " + std::to_string(graph.num_nodes) +
                      " nodes and " + std::to_string(graph.num_edges()) + " directed entries into " +
                      std::to_string(parts) + " parts (its multilevel hierarchy keeps ~2 x 4 bytes per entry per "
                      "level); the random or range partitioner needs no extra memory");
  if (status != METIS_OK)
    throw Error(std::string("METIS_PartGraphKway failed with ") + metis_status_name(status) + " on " +
                std::to_string(graph.num_nodes) + " nodes, " + std::to_string(graph.num_edges()) + " entries, " +
                std::to_string(parts) + " parts" +
                (status == METIS_ERROR ? " (METIS 5.1's answer when an allocation fails inside its initial "
                                         "partitioning: usually host memory ran short)"
                                       : ""));
}

/// Partitioner::kRandom: part[v] from a hash keyed by (seed, v), the same parts whatever the thread count.
void random_parts(std::uint64_t seed, std::int64_t n, int parts, std::int32_t* part) {
  const std::uint64_t key = rng::stream_key(seed, rng::kRandomPartition);
#pragma omp parallel for schedule(static) if (n > detail::kParallelMin)
  for (std::int64_t v = 0; v < n; ++v)
    part[v] = static_cast<std::int32_t>(rng::philox4x32(key, static_cast<std::uint64_t>(v), 0).v[0] %
                                        static_cast<std::uint32_t>(parts));
}

}  // namespace

void check_imbalance(double imbalance, const std::string& parameter) {
  if (!std::isfinite(imbalance) || imbalance < kMinImbalance || imbalance > kMaxImbalance)
    throw InvalidInput::parameter(parameter, std::to_string(imbalance), "1..3 (max part weight / mean; 1.03 allows 3%)");
}

void validate_graph(const datasets::Csr& graph, const char* entry) { detail::check_graph(graph, entry); }

Partition partition_graph(const datasets::Csr& graph, int parts, const PartitionOptions& options) {
  if (options.check_graph) detail::check_graph(graph, "partition_graph");
  const std::int64_t n = graph.num_nodes;
  if (parts < 1 || parts > n)
    throw InvalidInput::parameter("parts", std::to_string(parts), "1.." + std::to_string(n) + " (the node count)");
  check_imbalance(options.imbalance, "imbalance");
  if (options.metis_iterations < 1 || options.metis_iterations > 1000)
    throw InvalidInput::parameter("metis_iterations", std::to_string(options.metis_iterations), "1..1000 (METIS' default 10)");
  if (!(options.metis_edge_sample > 0.0 && options.metis_edge_sample <= 1.0))
    throw InvalidInput::parameter("metis_edge_sample", std::to_string(options.metis_edge_sample),
                                  "a fraction in (0, 1] (1 = METIS sees every edge)");
  const auto start = std::chrono::steady_clock::now();
  Partition partition;
  partition.parts = parts;
  partition.method = options.method;
  partition.part_of.assign(static_cast<std::size_t>(n), 0);
  auto* part = partition.part_of.data();
  if (parts > 1) {
    switch (options.method) {
      case Partitioner::kMetis: {
        // METIS 5.1 fails when host memory runs short: an allocation failing in its coarsening or refinement
        // returns METIS_ERROR_MEMORY, one failing inside the recursive bisection its K-way scheme runs for the
        // initial partition returns METIS_ERROR after printing "Failed during initial partitioning" (the failure
        // seen once in four runs of a products-sized graph; reproduced under ulimit -v, bench/run/metis_memory.sh).
        // A partition of any kind is better than no answer: retry once with the next seed on a sample of the edges
        // (kRetryEdgeSample: METIS's memory shrinks with the edges it sees), then fall back to the random
        // partitioner, and say so.
        PartitionOptions attempt = options;
        int injected = options.inject_metis_failures;
        bool done = false;
        for (int tries = 0; tries < 2 && !done; ++tries, ++attempt.seed) {
          try {
            if (injected-- > 0)
              throw Error("METIS_PartGraphKway failed with METIS_ERROR (injected) on " +
                          std::to_string(graph.num_nodes) + " nodes");
            metis_kway(graph, parts, attempt, partition.part_of);
            done = true;
          } catch (const InvalidInput&) {
            throw;  // the graph or the options, not bad luck: retrying would fail alike
          } catch (const Error& e) {
            partition.note += (partition.note.empty() ? "" : "; ") + std::string(e.what()) + " (seed " +
                              std::to_string(attempt.seed) + ")";
            attempt.metis_edge_sample = std::min(attempt.metis_edge_sample, kRetryEdgeSample);
          }
        }
        if (!done) {
          partition.note += "; fell back to the random partitioner (seed " + std::to_string(options.seed) + ")";
          partition.method = Partitioner::kRandom;
          random_parts(options.seed, n, parts, part);
          break;
        }
        if (!partition.note.empty()) {
          std::ostringstream share;
          share << std::setprecision(2) << 100 * attempt.metis_edge_sample;  // 10, 2.5, 0.35
          partition.note += "; retried with seed " + std::to_string(attempt.seed - 1) + " on " + share.str() +
                            " % of the edges: it passed";
        }
        // METIS keeps its weights within the imbalance only loosely on power-law graphs (heavy hubs, K = 8), and
        // knows nothing of drop's work (in-part entries): the refinement finishes either. Both at once conflict on
        // RMAT (a part holding a dense core of hubs needs less gather work to hold as much drop work).
        if (options.balance == Balance::kWork)
          detail::refine_work_balance(graph, parts, options.imbalance, options.work_strategy == Strategy::kDrop, part);
        break;
      }
      case Partitioner::kRandom: {
        random_parts(options.seed, n, parts, part);
        break;
      }
      case Partitioner::kRange:
        // part = floor(v * parts / n): sizes differ by at most one.
#pragma omp parallel for schedule(static) if (n > detail::kParallelMin)
        for (std::int64_t v = 0; v < n; ++v) part[v] = static_cast<std::int32_t>(v * parts / n);
        break;
    }
  }
  detail::check_partition(graph, partition, "partition_graph (METIS output)");
  const detail::CutStats cut = options.measure_cut ? detail::cut_stats(graph, part, parts) : detail::CutStats{-1, -1};
  partition.edge_cut = cut.edge_cut;
  partition.comm_volume = cut.comm_volume;
  partition.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return partition;
}

}  // namespace gcnpart::partition
