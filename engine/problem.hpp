// What one device trains on: its local graph (with self loops), normalisation, features, labels and the rows
// that count in each split. For `single` the local problem is the whole dataset; partition strategies build one
// per device from a plan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "datasets/dataset.hpp"
#include "partition/plan.hpp"
#include "partition/reorder.hpp"

namespace gcnpart::engine {

struct LocalProblem {
  std::string name;
  /// Local graph: num_rows x num_cols, self loops included (Â = diag(dinv_row) A diag(dinv_col)).
  datasets::Csr graph;
  std::int64_t num_rows = 0, num_cols = 0;
  std::vector<float> dinv_row, dinv_col;
  /// Input features of the column nodes (num_cols x num_features), already row-normalised if asked.
  std::int64_t num_features = 0;
  HostVector<float> features;
  /// Labels of the rows (num_rows), -1 = none.
  std::vector<std::int32_t> labels;
  std::int32_t num_classes = 0;
  /// The user's id (Dataset::user_ids, else the dataset id) of every local column (rows are columns
  /// 0..num_rows-1): dropout masks are keyed by it.
  std::vector<NodeId> global_ids;
  /// Local rows of each split that this device is responsible for (loss / accuracy counted here).
  std::vector<NodeId> train_rows, valid_rows, test_rows;
  /// Size of each split over all devices (normalises the loss so that the sum over devices is the mean).
  std::int64_t global_train = 0, global_valid = 0, global_test = 0;

  /// Gather strategy: the rows are this device's own nodes; aggregation reads a table of every device's rows
  /// (parts x table_block slots), filled by an all-gather before each aggregation. `graph` is then unused.
  bool gather = false;
  int parts = 1;
  std::int64_t table_block = 0;
  datasets::Csr gather_forward;   ///< own rows x table slots (self loops included)
  datasets::Csr gather_backward;  ///< table slots x own rows (its transpose)
  std::vector<float> table_dinv;  ///< D^-1/2 per slot

  /// Boundary strategy: the rows are this device's own nodes, ordered [interior | boundary] (interior rows have
  /// only own neighbours); aggregation reads [own rows | rows received from the other devices] (by device). Reuses
  /// gather_forward (own rows x local columns), gather_backward (its transpose) and table_dinv (D^-1/2 of the
  /// local columns); parts is the device count. `graph` is then unused.
  bool boundary = false;
  std::int64_t interior_rows = 0;                ///< own rows [0, interior_rows) have no neighbour elsewhere
  std::vector<std::vector<NodeId>> send_rows;    ///< per device: own rows it needs, in the order it stores them
  std::vector<std::int64_t> recv_counts;         ///< per device: rows received from it (0 for this device)
};

/// Returns a copy of `g` with a self loop on every node that lacks one (rows stay sorted).
datasets::Csr with_self_loops(const datasets::Csr& g);

/// The feature rows of the nodes `nodes[0..count)` of `ds` (of nodes 0..count-1 when `nodes` is null), copied in one
/// parallel pass that first-touches the new array and, when `normalize`, divides each row by its L1 norm (its sum
/// for the non-negative bag-of-words features of Kipf & Welling; signed features keep their signs; zero rows stay
/// zero).
HostVector<float> feature_rows(const datasets::Dataset& ds, const NodeId* nodes, std::int64_t count, bool normalize);

/// The whole dataset as one device's problem. @throws InvalidInput if the dataset has no features or labels,
/// or lacks a train split.
LocalProblem single_device_problem(const datasets::Dataset& ds, bool normalize_features);
/// The same for ds = partition::reorder_dataset(user, method, r, storage, PermuteFeatures::kLeave) (ds is `user`
/// when r is the identity): node i's feature rows are user's row r.order[i], gathered in the one pass that copies
/// and normalises them, so the reordering never copies the features.
LocalProblem single_device_problem(const datasets::Dataset& ds, bool normalize_features, const datasets::Dataset& user,
                                   const partition::Reordering& r);

/// Device `device`'s problem under `plan`: its local nodes' features (normalised if asked), labels and user ids, the
/// split rows it owns (each node's loss counts on exactly one device), and the structure its strategy aggregates
/// over (local graph, gather table or boundary exchange). @throws InvalidInput when the dataset has no features or
/// labels, or an empty training split.
LocalProblem device_problem(const datasets::Dataset& ds, const partition::Plan& plan, int device,
                            bool normalize_features);

}  // namespace gcnpart::engine
