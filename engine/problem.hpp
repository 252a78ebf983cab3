// What one device trains on: its local graph (with self loops), normalisation, features, labels and the rows
// that count in each split. For `single` the local problem is the whole dataset; partition strategies build one
// per device from a plan.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "datasets/dataset.hpp"
#include "partition/plan.hpp"
#include "partition/reorder.hpp"

namespace gcnpart::engine {

/// How a device's rows aggregate, per strategy family (partition::traits(strategy).communication decides which).

/// Single, drop and halo: the device's own local graph, rows = columns = its local nodes (own part first, then the
/// halo rings); symmetric, so backward multiplies by the same matrix.
struct OwnGraph {
  /// num_rows x num_cols, self loops included (Â = diag(dinv_row) A diag(dinv_col)).
  datasets::Csr graph;
  std::vector<float> dinv_row, dinv_col;
};

/// Gather: the rows are this device's own nodes; aggregation reads a table of every device's rows (parts x
/// table_block slots), filled by an all-gather before each aggregation.
struct GatherTable {
  int parts = 1;
  std::int64_t table_block = 0;
  datasets::Csr forward;          ///< own rows x table slots (self loops included)
  datasets::Csr backward;         ///< table slots x own rows (its transpose)
  std::vector<float> dinv_own;    ///< D^-1/2 of the own rows
  std::vector<float> table_dinv;  ///< D^-1/2 per slot
};

/// Boundary: the rows are this device's own nodes, ordered [interior | boundary] (interior rows have only own
/// neighbours); aggregation reads [own rows | rows received from the other devices] (by device).
struct BoundaryExchange {
  int parts = 1;
  datasets::Csr forward;                       ///< own rows x local columns (self loops included)
  datasets::Csr backward;                      ///< local columns x own rows (its transpose)
  std::vector<float> dinv_own;                 ///< D^-1/2 of the own rows
  std::vector<float> dinv_local;               ///< D^-1/2 of the local columns
  std::int64_t interior_rows = 0;              ///< own rows [0, interior_rows) have no neighbour elsewhere
  std::vector<std::vector<NodeId>> send_rows;  ///< per device: own rows it needs, in the order it stores them
  std::vector<std::int64_t> recv_counts;       ///< per device: rows received from it (0 for this device)
};

/// What one device aggregates over; make_aggregation (engine/aggregation.hpp) visits it.
using LocalStructure = std::variant<OwnGraph, GatherTable, BoundaryExchange>;

struct LocalProblem {
  std::string name;
  std::int64_t num_rows = 0, num_cols = 0;
  /// The graph this device aggregates over and how.
  LocalStructure structure;
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

  /// The own graph (single, drop, halo). @throws LogicError for another structure.
  [[nodiscard]] const OwnGraph& own_graph() const;
  /// Entries of the matrix forward aggregation multiplies by.
  [[nodiscard]] std::int64_t aggregation_entries() const;
};

/// Returns a copy of `g` with a self loop on every node that lacks one (rows stay sorted).
datasets::Csr with_self_loops(const datasets::Csr& g);

/// The feature rows of the nodes `nodes[0..count)` of `ds` (of nodes 0..count-1 when `nodes` is null), copied in one
/// parallel pass that first-touches the new array and, when `normalize`, divides each row by its L1 norm (its sum
/// for the non-negative bag-of-words features of Kipf & Welling; signed features keep their signs; zero rows stay
/// zero).
HostVector<float> feature_rows(const datasets::Dataset& ds, const NodeId* nodes, std::int64_t count, bool normalize);

/// What every strategy needs of a dataset before it trains: features and labels of at least 2 classes. Front-ends
/// call it before they print anything about the run. @throws InvalidInput naming the dataset and what is missing.
void check_trainable(const datasets::Dataset& ds);

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
