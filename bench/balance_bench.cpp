// Node-balanced vs work-balanced METIS partitions: for each graph and K, the predicted work imbalance (device_work,
// max / mean) of the gather, drop and halo (2 layers) plans, each on the partition make_plan builds for it, with
// the edge cut and the partitioning time.
// Graphs: rmatS (RMAT scale S, edge factor 16, seed 1) or a path under $GCNPART_DATA (snap/email-Enron.txt.gz).
// One JSON object on stdout; --out writes it to a file too.
//
//   balance_bench [--graphs rmat16,rmat17,rmat18,snap/email-Enron.txt.gz] [--parts 2,4,8] [--commit abc]
//                 [--machine "2-core CPU dev machine"] [--out bench/results/balance-cpu-DATE.json]
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/generators.hpp"
#include "datasets/loaders.hpp"
#include "base/error.hpp"
#include "partition/plan.hpp"

namespace {

using nlohmann::json;
namespace part = gcnpart::partition;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

// Per strategy, the partition make_plan would build (work balance refines the strategy's own work: drop's
// partition differs from gather's and halo's); its work imbalance, edge cut and time.
json measure(const gcnpart::datasets::Csr& g, int k, part::Balance balance) {
  json j;
  part::PartitionOptions options;
  options.balance = balance;
  const part::Partition shared = part::partition_graph(g, k, options);  // gather's, halo's (and drop's by nodes)
  options.work_strategy = part::Strategy::kDrop;
  const part::Partition drop = balance == part::Balance::kWork ? part::partition_graph(g, k, options) : shared;
  for (auto s : {part::Strategy::kGather, part::Strategy::kDrop, part::Strategy::kHalo}) {
    const part::Partition& p = s == part::Strategy::kDrop ? drop : shared;
    const part::PlanMetrics m = part::plan_metrics(g, s, p, 2);
    j[to_string(s)] = {
        {"work_imbalance", m.work_imbalance}, {"node_imbalance", m.node_imbalance}, {"edge_cut", p.edge_cut},
        {"edge_cut_fraction", static_cast<double>(p.edge_cut) / static_cast<double>(g.num_edges() / 2)},
        {"partition_seconds", p.seconds}};
  }
  return j;
}

}  // namespace

int main(int argc, char** argv) try {
  std::vector<std::string> graphs = {"rmat16", "rmat17", "rmat18", "snap/email-Enron.txt.gz",
                                     "snap/soc-Slashdot0902.txt.gz"};
  std::vector<int> parts = {2, 4, 8};
  std::string commit = "unknown", machine = "2-core CPU dev machine", out;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--graphs") graphs = split(v);
    else if (k == "--parts") { parts.clear(); for (const auto& p : split(v)) parts.push_back(std::stoi(p)); }
    else if (k == "--commit") commit = v;
    else if (k == "--machine") machine = v;
    else if (k == "--out") out = v;
    else throw gcnpart::InvalidInput::parameter(k, v, "--graphs, --parts, --commit, --machine or --out");
  }
  const char* env = std::getenv("GCNPART_DATA");
  const std::string data = env != nullptr ? env : "";
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  json report = {{"bench", "balance"}, {"date", date}, {"commit", commit}, {"machine", machine},
                 {"row_work", part::kRowWork}, {"layers_for_halo", 2}, {"imbalance_target", 1.03},
                 {"work_model", "work(d) = local Â entries (self loops included) + kRowWork x rows (device_work)"}};
  json rows = json::array();
  for (const auto& name : graphs) {
    gcnpart::datasets::Csr g;
    if (name.rfind("rmat", 0) == 0) g = gcnpart::datasets::generate_rmat({.scale = std::stoi(name.substr(4)), .edge_factor = 16, .seed = 1}).graph;
    else g = gcnpart::datasets::load_dataset(data + "/" + name).graph;
    for (int k : parts) {
      json r = {{"graph", name}, {"nodes", g.num_nodes}, {"edges", g.num_edges() / 2}, {"parts", k},
                {"nodes_balanced", measure(g, k, part::Balance::kNodes)},
                {"work_balanced", measure(g, k, part::Balance::kWork)}};
      std::cerr << r.dump() << "\n";
      rows.push_back(r);
    }
  }
  report["rows"] = rows;
  std::cout << report.dump(2) << "\n";
  if (!out.empty()) std::ofstream(out) << report.dump(2) << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "balance_bench: " << e.what() << "\n";
  return 1;
}
