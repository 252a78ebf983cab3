#include "datasets/dataset.hpp"

#include <cmath>

#include "base/error.hpp"

namespace gcnpart::datasets {

namespace {
std::string dataset_label(const Dataset& ds) { return "dataset " + (ds.name.empty() ? std::string("<unnamed>") : ds.name); }

InputLocation at(const Dataset& ds, const std::string& what) { return InputLocation{dataset_label(ds) + " " + what, 0, 0}; }
}  // namespace

const std::vector<NodeId>& Dataset::split(const std::string& which) const {
  if (const auto it = splits.find(which); it != splits.end()) return it->second;
  std::string available;
  for (const auto& [name, ids] : splits) available += (available.empty() ? "" : ", ") + name;
  throw InvalidInput(at(*this, "splits"), "no such split", which,
                     available.empty() ? std::string("a split, but the dataset has none") : "one of: " + available);
}

void Dataset::validate() const {
  const std::int64_t n = graph.num_nodes;
  if (n < 0) throw InvalidInput(at(*this, "graph"), "negative node count", std::to_string(n), ">= 0");
  if (n > 0 || !graph.row_offsets.empty()) graph.validate(dataset_label(*this) + " graph");

  if (num_features < 0)
    throw InvalidInput(at(*this, "features"), "negative feature count", std::to_string(num_features), ">= 0");
  const auto expected_values = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(num_features);
  if (features.size() != expected_values)
    throw InvalidInput(at(*this, "features"), "feature array size", std::to_string(features.size()),
                       std::to_string(expected_values) + " = " + std::to_string(n) + " nodes x " +
                           std::to_string(num_features) + " features");
  for (std::size_t i = 0; i < features.size(); ++i) {
    if (!std::isfinite(features[i])) {
      const auto node = static_cast<std::int64_t>(i) / num_features;
      const auto col = static_cast<std::int64_t>(i) % num_features;
      throw InvalidInput(at(*this, "features node " + std::to_string(node) + " column " + std::to_string(col)),
                         "non-finite feature", std::to_string(features[i]), "a finite number");
    }
  }

  if (!user_ids.empty() && static_cast<std::int64_t>(user_ids.size()) != n)
    throw InvalidInput(at(*this, "user_ids"), "user id count", std::to_string(user_ids.size()),
                       std::to_string(n) + " (one per node, or none)");

  if (!labels.empty()) {
    if (static_cast<std::int64_t>(labels.size()) != n)
      throw InvalidInput(at(*this, "labels"), "label count", std::to_string(labels.size()),
                         std::to_string(n) + " (one per node)");
    if (num_classes <= 0)
      throw InvalidInput(at(*this, "num_classes"), "no classes for a labelled dataset", std::to_string(num_classes),
                         ">= 1");
    for (std::size_t i = 0; i < labels.size(); ++i) {
      if (labels[i] < -1 || labels[i] >= num_classes)
        throw InvalidInput(at(*this, "labels[" + std::to_string(i) + "]"), "label out of range",
                           std::to_string(labels[i]),
                           "-1 (unlabelled) or 0.." + std::to_string(num_classes - 1));
    }
  } else if (num_classes < 0) {
    throw InvalidInput(at(*this, "num_classes"), "negative class count", std::to_string(num_classes), ">= 0");
  }

  for (const auto& [name, ids] : splits) {
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const NodeId v = ids[i];
      const std::string where = "split " + name + "[" + std::to_string(i) + "]";
      if (v < 0 || v >= n)
        throw InvalidInput(at(*this, where), "node id out of range", std::to_string(v),
                           "0.." + std::to_string(n - 1));
      if (!labels.empty() && labels[v] < 0)
        throw InvalidInput(at(*this, where), "unlabelled node in a split", std::to_string(v),
                           "a node with a label (label -1 means unlabelled)");
    }
  }
}

}  // namespace gcnpart::datasets
