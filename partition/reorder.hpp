// Locality reordering: renumber a graph's nodes so that rows processed at the same time gather from nearby rows
// (L2 reuse in the SpMM) and rows of like degree share warps. Exact: a permutation applied once to the dataset;
// the node keeps its user id (Dataset::user_ids), by which dropout masks are drawn, so a reordered run trains the
// same model up to summation order. Weights do not depend on the order; per-node outputs (engine::predict) are
// computed on the user's dataset.
#pragma once

#include <cstdint>
#include <vector>

#include "datasets/dataset.hpp"
#include "base/enums.hpp"

namespace gcnpart::partition {

struct Reordering {
  Reorder method = Reorder::kNone;
  std::vector<NodeId> order;  ///< new id -> old id (empty: the identity)
  std::vector<NodeId> rank;   ///< old id -> new id (empty: the identity)
  double order_seconds = 0;   ///< computing the order
  double apply_seconds = 0;   ///< permuting the dataset (permute())
  [[nodiscard]] bool identity() const noexcept { return order.empty(); }
};

/// The order `method` gives `graph` (symmetric CSR, as datasets build it). kNone gives the identity.
/// Deterministic. @throws OutOfMemory from METIS.
Reordering locality_order(const datasets::Csr& graph, Reorder method);

/// `g` with its nodes renumbered by `r`: row i is old row r.order[i], columns mapped through r.rank and sorted.
datasets::Csr permute_graph(const datasets::Csr& g, const Reordering& r);

/// Whether permute() moves the feature rows too. kLeave: the result keeps num_features but holds no feature rows;
/// its one reader takes them from the input through r.order (engine::single_device_problem with `features_from`),
/// so the rows are copied once, by the pass that copies and normalises them for training anyway.
enum class PermuteFeatures { kCopy, kLeave };

/// `ds` with its nodes renumbered by `r` (new node i = old node r.order[i]): graph rows and columns (rows sorted
/// again), features (unless kLeave), labels, split ids (each split's list order kept) and user_ids (composed with
/// the input's). Records the time in r.apply_seconds. The identity returns a copy.
datasets::Dataset permute(const datasets::Dataset& ds, Reordering& r, PermuteFeatures features = PermuteFeatures::kCopy);

/// `user` in the order `method` gives it: the order goes into `r`; unless it is the identity, `storage` receives the
/// permuted dataset (features as `features` says), which is returned; else `user` itself (no copy).
const datasets::Dataset& reorder_dataset(const datasets::Dataset& user, Reorder method, Reordering& r,
                                         datasets::Dataset& storage,
                                         PermuteFeatures features = PermuteFeatures::kCopy);

}  // namespace gcnpart::partition
