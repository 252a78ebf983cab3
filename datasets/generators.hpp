// Synthetic graphs, deterministic for a seed whatever the thread count (counter-based RNG per edge index).
#pragma once

#include <cstdint>

#include "datasets/dataset.hpp"

namespace gcnpart::datasets {

/// Graph500 RMAT: 2^scale nodes, edge_factor * 2^scale edges drawn with probabilities (a, b, c, d), node ids
/// permuted by a keyed bijection, then symmetrised, deduplicated, self loops dropped. With features > 0 and
/// classes > 0, synthetic features / labels / split as in add_synthetic_features.
struct RmatParams {
  int scale = 16;
  double edge_factor = 16;
  double a = 0.57, b = 0.19, c = 0.19;  // d = 1 - a - b - c
  std::int64_t features = 0;
  std::int32_t classes = 0;
  std::uint64_t seed = 1;
};
Dataset generate_rmat(const RmatParams& params);

/// Stochastic block model: `classes` blocks, expected degree `avg_degree`, a fraction `p_intra` of each node's
/// edges inside its block; features are class-dependent Gaussians (mean separation `feature_signal`);
/// fixed split of train_per_class per class, `valid` and `test` nodes.
/// Defaults calibrated with a numpy GCN (datasets/README.md): features alone ~50% test accuracy (logistic
/// regression), 2-layer GCN hidden 16 ~85%; with p_intra 0.8 at this degree the GCN reaches 99% (too easy).
struct SbmParams {
  std::int64_t nodes = 10000;
  std::int32_t classes = 7;
  double avg_degree = 10;
  double p_intra = 0.5;
  std::int64_t features = 64;
  double feature_signal = 0.25;
  std::int64_t train_per_class = 20;
  std::int64_t valid = 500;
  std::int64_t test = 1000;
  std::uint64_t seed = 1;
};
Dataset generate_sbm(const SbmParams& params);

/// A structured mesh: a 2-D grid with both diagonals (8 neighbours inside, a quad / triangle finite-element mesh's
/// degree) or a 3-D grid (6 neighbours), side^dims nodes; ids in row-major order, or shuffled by a keyed bijection
/// (`shuffle`: a mesh file written in no particular order). With features > 0 and classes > 0, synthetic features /
/// labels / split as in add_synthetic_features.
struct GridParams {
  std::int64_t side = 1000;
  int dims = 2;
  bool shuffle = true;
  std::int64_t features = 0;
  std::int32_t classes = 0;
  std::uint64_t seed = 1;
};
Dataset generate_grid(const GridParams& params);

/// The built-in demo dataset: a deterministic SBM of 10,000 nodes (what `gcnpart` uses when no data is given).
Dataset demo_dataset();

}  // namespace gcnpart::datasets
