// A node-classification dataset: graph + features + labels + splits, all on the host.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "datasets/csr.hpp"

namespace gcnpart::datasets {

/// The graph (symmetric, no self loops, unless a loader was told otherwise), dense row-major float32 node
/// features (num_nodes x num_features), int32 labels (-1 = unlabelled; empty = no labels) and named splits.
struct Dataset {
  std::string name;        ///< e.g. "cora", "rmat-s18-e16"
  std::string provenance;  ///< where it came from: path and format, or generator and parameters
  Csr graph;
  std::int64_t num_features = 0;
  HostVector<float> features;  ///< resize leaves it unwritten (base/host_vector.hpp)
  std::vector<std::int32_t> labels;
  std::int32_t num_classes = 0;
  std::map<std::string, std::vector<NodeId>> splits;  ///< "train", "valid", "test" (any names allowed)
  BuildStats build_stats;                             ///< what building the CSR removed
  /// Empty: node i is the user's node i. Else the user's id of each node, after a locality reordering
  /// (partition/reorder.hpp): dropout masks are drawn by it, and outputs are reported in that order.
  std::vector<NodeId> user_ids;

  [[nodiscard]] std::int64_t num_nodes() const noexcept { return graph.num_nodes; }
  [[nodiscard]] bool has_features() const noexcept { return num_features > 0; }
  [[nodiscard]] bool has_labels() const noexcept { return !labels.empty(); }
  [[nodiscard]] const std::vector<NodeId>& split(const std::string& which) const;
  [[nodiscard]] std::int64_t feature_bytes() const noexcept {
    return static_cast<std::int64_t>(features.size() * sizeof(float));
  }
  /// Checks every invariant (sizes agree, labels in [-1, classes), split ids in range and labelled,
  /// features finite); throws InvalidInput naming the dataset, array and first bad index.
  void validate() const;
};

/// Synthetic features and labels for a structure-only graph, only when asked: `classes` labels from a
/// deterministic hash of (seed, node) and `features` Gaussian columns whose mean depends on the label, plus a
/// random 60/20/20 split. Deterministic for a seed whatever the thread count.
void add_synthetic_features(Dataset& ds, std::int64_t features, std::int32_t classes, std::uint64_t seed);

}  // namespace gcnpart::datasets
