// JSON of the engine's reports: what train, compare and the bindings write, serialised in one place.
#pragma once

#include <nlohmann/json.hpp>

#include "datasets/dataset.hpp"
#include "engine/memory.hpp"
#include "engine/trainer.hpp"
#include "kernels/ops.hpp"

namespace gcnpart::engine {

/// {peak_bytes, at_peak_by_category: {category: bytes}, allocations, limit_bytes}
nlohmann::json to_json(const MemoryStats& m);
/// {available, measured, tracked_peak, cache_slack, context, nccl, libraries, accounted, rel_error, within_5pct};
/// the driver-side figures are null where there is no driver view (CPU devices).
nlohmann::json to_json(const MemoryCheck& m);
/// {name, provenance, nodes, edges_directed, features, classes}: a dataset as every report gives it.
nlohmann::json dataset_json(const datasets::Dataset& ds);
/// What `gcnpart info` reports of a dataset (and the Python package's Dataset.info()): name, provenance, nodes,
/// edges (directed; undirected when symmetric), weighted, degree statistics, isolated nodes, features, classes,
/// labelled nodes, splits (train, valid, test first), bytes and what building the CSR removed.
nlohmann::json dataset_info_json(const datasets::Dataset& ds);
/// A run's per-device figures added to `j`: memory (one per device), bytes_sent_per_epoch, driver_bytes,
/// comm_ms_per_epoch, compute_ms_per_epoch, device_epoch_ms, memory_check (one per device) and link (null when
/// not measured).
void add_device_json(nlohmann::json& j, const TrainReport& r);
/// The own SpMM's tuning added to `j`: spmm_long_row, spmm_segment, spmm_slab, spmm_lanes, spmm_pad (as given;
/// 0 = automatic), in every report that ran the own kernel.
void add_spmm_tuning_json(nlohmann::json& j, const kernels::SpmmTuning& t);

}  // namespace gcnpart::engine
