#include "engine/report_json.hpp"

namespace gcnpart::engine {

nlohmann::json to_json(const MemoryStats& m) {
  nlohmann::json at_peak = nlohmann::json::object();
  for (int c = 0; c < static_cast<int>(MemoryCategory::kCount); ++c)
    at_peak[memory_category_name(static_cast<MemoryCategory>(c))] = m.at_peak_by[static_cast<std::size_t>(c)];
  return {{"peak_bytes", m.peak}, {"at_peak_by_category", at_peak}, {"allocations", m.allocations},
          {"limit_bytes", m.limit}};
}

nlohmann::json to_json(const MemoryCheck& m) {
  nlohmann::json j = {{"available", m.available},      {"tracked_peak", m.tracked_peak},
                      {"cache_slack", m.cache_slack},  {"context", m.context},
                      {"nccl", m.nccl},                {"libraries", m.libraries},
                      {"accounted", m.accounted()},    {"measured", nullptr},
                      {"rel_error", nullptr},          {"within_5pct", nullptr}};
  if (m.available) {
    j["measured"] = m.measured;
    j["rel_error"] = m.rel_error();
    j["within_5pct"] = m.within(0.05);
  }
  return j;
}

nlohmann::json dataset_json(const datasets::Dataset& ds) {
  return {{"name", ds.name},         {"provenance", ds.provenance}, {"nodes", ds.num_nodes()},
          {"edges_directed", ds.graph.num_edges()}, {"features", ds.num_features}, {"classes", ds.num_classes}};
}

namespace {
nlohmann::json link_json(const LinkReport& l) {
  const std::string plain_key = l.collective == CollectiveKind::kAllGather   ? "plain_allgather_GBps"
                                : l.collective == CollectiveKind::kAllReduce ? "plain_allreduce_GBps"
                                                                             : "plain_reducescatter_GBps";
  nlohmann::json devices = nlohmann::json::array();
  for (const auto& d : l.devices)
    devices.push_back({{"train_GBps", d.train_GBps}, {"train_same_GBps", d.train_same_GBps},
                       {"plain_GBps", d.plain_GBps}, {"plain_median_ms", d.plain_median_ms}});
  return {{"collective", collective_name(l.collective)},
          {"bytes_per_call", l.payload_bytes},
          {"calls_per_epoch", l.calls_per_epoch},
          {"repeats", l.repeats},
          {"train_GBps", l.train_GBps()},
          {"train_same_GBps", l.train_same_GBps()},
          {"plain_GBps", l.plain_GBps()},
          {plain_key, l.plain_GBps()},
          {"ratio", l.ratio()},
          {"same_ratio", l.same_ratio()},
          {"devices", devices}};
}
}  // namespace

void add_spmm_tuning_json(nlohmann::json& j, const kernels::SpmmTuning& t) {
  j["spmm_long_row"] = t.long_row;
  j["spmm_segment"] = t.segment;
  j["spmm_slab"] = t.slab;
  j["spmm_lanes"] = t.lanes;
  j["spmm_pad"] = t.pad;
}

void add_device_json(nlohmann::json& j, const TrainReport& r) {
  nlohmann::json mem = nlohmann::json::array(), checks = nlohmann::json::array();
  for (const auto& m : r.memory) mem.push_back(to_json(m));
  for (const auto& m : r.memory_check) checks.push_back(to_json(m));
  j["memory"] = mem;
  j["bytes_sent_per_epoch"] = r.bytes_sent_per_epoch;
  j["driver_bytes"] = r.driver_bytes;
  j["comm_ms_per_epoch"] = r.comm_ms_per_epoch;
  j["wait_ms_per_epoch"] = r.wait_ms_per_epoch;
  j["compute_ms_per_epoch"] = r.compute_ms_per_epoch;
  j["exposed_communication"] = r.exposed_communication();
  j["work_imbalance_measured"] = r.compute_imbalance();
  j["device_epoch_ms"] = r.epoch_ms_per_epoch;
  j["memory_check"] = checks;
  j["link"] = r.has_link ? link_json(r.link) : nlohmann::json(nullptr);
}

nlohmann::json dataset_info_json(const datasets::Dataset& ds) {
  const auto deg = datasets::degree_stats(ds.graph);
  nlohmann::json j;
  j["name"] = ds.name;
  j["provenance"] = ds.provenance;
  j["nodes"] = ds.num_nodes();
  j["edges_directed"] = ds.graph.num_edges();
  const bool symmetric = ds.graph.is_symmetric();
  j["symmetric"] = symmetric;
  if (symmetric) j["edges_undirected"] = ds.graph.num_edges() / 2;
  j["weighted"] = ds.graph.weighted();
  j["degree"] = {{"min", deg.min}, {"mean", deg.mean}, {"median", deg.median}, {"p99", deg.p99}, {"max", deg.max}};
  j["isolated_nodes"] = deg.isolated;
  j["features"] = ds.num_features;
  j["classes"] = ds.num_classes;
  std::int64_t labelled = 0;
  for (auto l : ds.labels) labelled += l >= 0 ? 1 : 0;
  j["labelled_nodes"] = labelled;
  nlohmann::json splits = nlohmann::json::array();  // train, valid, test first, then any others
  for (const char* name : {"train", "valid", "test"})
    if (auto it = ds.splits.find(name); it != ds.splits.end()) splits.push_back({{"name", name}, {"size", it->second.size()}});
  for (const auto& [name, ids] : ds.splits)
    if (name != "train" && name != "valid" && name != "test") splits.push_back({{"name", name}, {"size", ids.size()}});
  j["splits"] = splits;
  j["bytes"] = {{"csr", ds.graph.bytes()}, {"features", ds.feature_bytes()},
                {"labels", static_cast<std::int64_t>(ds.labels.size() * sizeof(std::int32_t))}};
  j["build"] = {{"input_edges", ds.build_stats.input_edges},
                {"self_loops_removed", ds.build_stats.self_loops_removed},
                {"after_symmetrize", ds.build_stats.after_symmetrize},
                {"duplicates_removed", ds.build_stats.duplicates_removed},
                {"output_edges", ds.build_stats.output_edges}};
  return j;
}

}  // namespace gcnpart::engine
