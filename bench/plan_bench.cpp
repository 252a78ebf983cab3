// Planner at scale: generates RMAT (default scale 21, edge factor 30: 2M nodes, ~58M undirected edges), then for
// every K partitions it with METIS once and builds the drop, halo and gather plans from that partition, measuring
//   metis     partition_graph: wall time and peak resident memory above what was resident before the call,
//   plan      make_plan from the partition: wall time, peak above the baseline, and the bytes of the plan it
//             returns; working memory = peak - plan bytes (an upper bound when the peak falls at the end, where
//             the whole plan is alive; the peak itself bounds the working memory from above),
//   metrics   plan_metrics (no per-device arrays) for halo: time and peak,
// repeated for each METIS configuration asked for (default METIS, and --sample F: METIS on a fraction F of the
// edges, cut still measured on the full graph). Peaks come from VmHWM after resetting it through
// /proc/self/clear_refs (Linux >= 4.0). One JSON object on stdout; --out writes it to a file too.
//
//   plan_bench [--scale 21] [--edge-factor 30] [--parts 2,4,8] [--layers 2] [--sample 0.1] [--commit abc]
//              [--machine "2-core CPU dev machine"] [--out bench/results/plans-rmat21-cpu-DATE.json]
#include <malloc.h>
#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/generators.hpp"
#include "base/error.hpp"
#include "partition/plan.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using nlohmann::json;
namespace part = gcnpart::partition;

struct Args {
  int scale = 21;
  double edge_factor = 30;
  std::vector<int> parts = {2, 4, 8};
  int layers = 2;
  std::vector<double> samples;  // extra METIS configurations on a fraction of the edges
  std::string commit = "unknown";
  std::string machine = "2-core CPU dev machine";
  std::string out;
};

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw gcnpart::InvalidInput::parameter(k, "", "a value after " + k);
      return argv[++i];
    };
    if (k == "--scale") a.scale = std::stoi(value());
    else if (k == "--edge-factor") a.edge_factor = std::stod(value());
    else if (k == "--parts") {
      a.parts.clear();
      for (const auto& p : split(value())) a.parts.push_back(std::stoi(p));
    } else if (k == "--layers") a.layers = std::stoi(value());
    else if (k == "--sample") {
      for (const auto& p : split(value())) a.samples.push_back(std::stod(p));
    } else if (k == "--commit") a.commit = value();
    else if (k == "--machine") a.machine = value();
    else if (k == "--out") a.out = value();
    else throw gcnpart::InvalidInput::parameter(k, k, "--scale, --edge-factor, --parts, --layers, --sample, --commit, --machine, --out");
  }
  return a;
}

// VmRSS / VmHWM in bytes from /proc/self/status.
std::int64_t status_bytes(const std::string& key) {
  std::ifstream f("/proc/self/status");
  for (std::string line; std::getline(f, line);)
    if (line.rfind(key + ":", 0) == 0) return std::stoll(line.substr(key.size() + 1)) * 1024;
  return -1;
}

// Resets the peak (VmHWM) to the current resident size; false when the kernel refuses.
bool reset_peak() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

// Runs fn, returning {seconds, peak bytes above the resident size before it}.
// The baseline is taken after malloc_trim, so pages freed by an earlier step (and kept by the allocator) are not
// silently reused and missed.
template <class Fn>
std::pair<double, std::int64_t> measure(Fn fn, bool& peak_reset_ok) {
  malloc_trim(0);
  peak_reset_ok = reset_peak() && peak_reset_ok;
  const std::int64_t base = status_bytes("VmRSS");
  const auto start = Clock::now();
  fn();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return {seconds, status_bytes("VmHWM") - base};
}

std::int64_t csr_bytes(const gcnpart::datasets::Csr& m) { return m.bytes(); }

// Bytes of every array a plan holds.
std::int64_t plan_bytes(const part::Plan& p) {
  std::int64_t b = static_cast<std::int64_t>(p.partition.part_of.size() * 4 + p.table_dinv.size() * 4 + p.table_nodes.size() * 4);
  for (const auto& d : p.devices)
    b += static_cast<std::int64_t>(d.local_nodes.size() * 4 + d.ring_sizes.size() * 8 + d.dinv.size() * 4 + d.dinv_own.size() * 4) +
         csr_bytes(d.local_graph) + csr_bytes(d.gather_forward) + csr_bytes(d.gather_backward);
  return b;
}

json metrics_json(const part::PlanMetrics& m) {
  std::vector<std::int64_t> halo_total;
  for (const auto& per_device : m.halo_per_hop) {
    if (halo_total.size() < per_device.size()) halo_total.resize(per_device.size(), 0);
    for (std::size_t h = 0; h < per_device.size(); ++h) halo_total[h] += per_device[h];
  }
  return json{{"edge_cut", m.edge_cut},
              {"comm_volume", m.comm_volume},
              {"lost_edges", m.lost_edges},
              {"lost_fraction", m.lost_fraction},
              {"inner_nodes", m.inner_nodes},
              {"local_nodes", m.local_nodes},
              {"local_edges", m.local_edges},
              {"halo_per_hop_total", halo_total},
              {"replication_factor", m.replication_factor},
              {"replicated_edges", m.replicated_edges},
              {"table_rows", m.table_rows},
              {"index_bytes", m.index_bytes},
              {"node_imbalance", m.node_imbalance},
              {"edge_imbalance", m.edge_imbalance}};
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

double gib(std::int64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0); }

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    // A fixed mmap threshold (glibc otherwise raises it up to 32 MiB after large frees): big arrays are mapped
    // and unmapped, so resident memory follows what is alive.
    mallopt(M_MMAP_THRESHOLD, 1 << 20);
    bool peak_reset_ok = true;
    gcnpart::datasets::Dataset ds;
    const auto [gen_seconds, gen_peak] = measure(
        [&] { ds = gcnpart::datasets::generate_rmat({.scale = args.scale, .edge_factor = args.edge_factor}); },
        peak_reset_ok);
    const gcnpart::datasets::Csr& g = ds.graph;
    const std::int64_t graph_bytes = g.bytes();
    std::cerr << "graph: " << g.num_nodes << " nodes, " << g.num_edges() / 2 << " undirected edges, "
              << gib(graph_bytes) << " GiB CSR, generated in " << gen_seconds << " s\n";

    json runs = json::array();
    std::vector<std::pair<std::string, part::PartitionOptions>> configs = {{"metis", part::PartitionOptions{}}};
    for (const double f : args.samples) {
      part::PartitionOptions o;
      o.metis_edge_sample = f;
      std::ostringstream name;
      name << "metis-sample-" << f;
      configs.emplace_back(name.str(), o);
    }
    for (const int k : args.parts) {
      for (const auto& [config, options] : configs) {
        part::Partition partition;
        const auto [metis_seconds, metis_peak] = measure([&] { partition = part::partition_graph(g, k, options); }, peak_reset_ok);
        std::cerr << "K=" << k << " " << config << ": " << metis_seconds << " s, peak +" << gib(metis_peak)
                  << " GiB, cut " << partition.edge_cut << "\n";
        json run{{"parts", k},
                 {"partitioner", config},
                 {"metis_edge_sample", options.metis_edge_sample},
                 {"metis_iterations", options.metis_iterations},
                 {"metis_seconds", metis_seconds},
                 {"metis_peak_bytes", metis_peak},
                 {"metis_peak_over_graph", static_cast<double>(metis_peak) / static_cast<double>(graph_bytes)},
                 {"edge_cut", partition.edge_cut},
                 {"edge_cut_fraction", static_cast<double>(partition.edge_cut) / static_cast<double>(g.num_edges() / 2)},
                 {"comm_volume", partition.comm_volume}};
        json plans = json::object();
        for (const part::Strategy s : {part::Strategy::kDrop, part::Strategy::kHalo, part::Strategy::kGather}) {
          std::int64_t bytes = 0;
          json metrics;
          const auto [plan_seconds, plan_peak] = measure(
              [&] {
                const part::Plan plan = part::make_plan(g, s, partition, args.layers);
                bytes = plan_bytes(plan);
                metrics = metrics_json(plan.metrics);
              },
              peak_reset_ok);
          const std::int64_t working = plan_peak - bytes;
          std::cerr << "  " << to_string(s) << ": " << plan_seconds << " s, peak +" << gib(plan_peak)
                    << " GiB, plan " << gib(bytes) << " GiB\n";
          plans[to_string(s)] = json{
              {"plan_seconds", plan_seconds},
              {"total_seconds_with_metis", plan_seconds + metis_seconds},
              {"peak_bytes", plan_peak},
              {"plan_bytes", bytes},
              {"working_bytes", working},
              {"working_over_graph", static_cast<double>(working) / static_cast<double>(graph_bytes)},
              {"metrics", metrics}};
        }
        run["plans"] = plans;
        // Halo metrics without materialising the plan.
        const auto [metrics_seconds, metrics_peak] =
            measure([&] { (void)part::plan_metrics(g, part::Strategy::kHalo, partition, args.layers); }, peak_reset_ok);
        run["halo_plan_metrics"] = json{{"seconds", metrics_seconds},
                                        {"peak_bytes", metrics_peak},
                                        {"peak_over_graph", static_cast<double>(metrics_peak) / static_cast<double>(graph_bytes)}};
        runs.push_back(run);
      }
      // Reference: a random partition's cut.
      const part::Partition random = part::partition_graph(g, k, {.method = part::Partitioner::kRandom});
      runs.push_back(json{{"parts", k},
                          {"partitioner", "random"},
                          {"metis_seconds", random.seconds},
                          {"edge_cut", random.edge_cut},
                          {"edge_cut_fraction", static_cast<double>(random.edge_cut) / static_cast<double>(g.num_edges() / 2)},
                          {"comm_volume", random.comm_volume}});
    }

    std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
    json result{
        {"benchmark", "plan_bench"},
        {"date", date},
        {"commit", args.commit},
        {"machine", args.machine},
        {"cpu", cpu_model()},
        {"threads", omp_get_max_threads()},
        {"host_memory_bytes", static_cast<std::int64_t>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGE_SIZE)},
        {"graph", json{{"generator", "rmat"},
                       {"scale", args.scale},
                       {"edge_factor", args.edge_factor},
                       {"nodes", g.num_nodes},
                       {"undirected_edges", g.num_edges() / 2},
                       {"csr_bytes", graph_bytes},
                       {"generate_seconds", gen_seconds}}},
        {"layers", args.layers},
        {"peak_reset_ok", peak_reset_ok},
        {"notes",
         "peak_bytes: VmHWM above VmRSS at the call's start (after malloc_trim; mmap threshold fixed at 1 MiB; "
         "VmHWM reset through /proc/self/clear_refs). "
         "working_bytes = peak_bytes - plan_bytes. total_seconds_with_metis = METIS (once per K and configuration) "
         "+ that plan. The scale target: total under 120 s, working memory under 3x csr_bytes."},
        {"runs", runs}};
    std::cout << result.dump(2) << "\n";
    if (!args.out.empty()) {
      std::ofstream out(args.out);
      if (!(out << result.dump(2) << "\n")) throw gcnpart::IoError(args.out, "cannot write");
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "plan_bench: " << e.what() << "\n";
    return 1;
  }
}
