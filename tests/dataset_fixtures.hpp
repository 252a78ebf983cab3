// Datasets shared by the engine and partition tests (binaries that link gcnpart::datasets), loaded or generated
// once per binary.
#pragma once

#include <cstdint>

#include "datasets/generators.hpp"
#include "datasets/loaders.hpp"
#include "test_support.hpp"

namespace gcnpart::testing {

/// Cora from the shared datasets folder (fails loudly when it is missing, see data_dir()).
inline const datasets::Dataset& cora() {
  static const datasets::Dataset ds = datasets::load_dataset(data_dir() + "/cora");
  return ds;
}

/// A 3000-node SBM with 5 classes and 48 dense Gaussian features (seed 11), `train_per_class` training nodes per class
/// (0: the generator's default). With 3 layers of hidden 64 the first two layers aggregate first (48 <= 64,
/// 64 <= 64) and the last multiplies first (64 > 5): both orders, no sparse-input path.
inline datasets::Dataset make_sbm_3000(std::int32_t train_per_class = 0) {
  datasets::SbmParams p;
  p.nodes = 3000;
  p.classes = 5;
  p.features = 48;
  p.seed = 11;
  if (train_per_class > 0) p.train_per_class = train_per_class;
  return datasets::generate_sbm(p);
}

/// make_sbm_3000() with the generator's split.
inline const datasets::Dataset& sbm_3000() {
  static const datasets::Dataset ds = make_sbm_3000();
  return ds;
}

/// make_sbm_3000(300): enough training rows that gradients carry signal beyond the cancellation of a few rows.
inline const datasets::Dataset& dense_feature_graph() {
  static const datasets::Dataset ds = make_sbm_3000(300);
  return ds;
}

}  // namespace gcnpart::testing
