// Datasets shared by the engine and partition tests (binaries that link gcnpart::datasets), loaded or generated
// once per binary.
#pragma once

#include <cstdint>

#include "datasets/generators.hpp"
#include "datasets/loaders.hpp"
#include "base/philox.hpp"
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

/// A small random dataset: ring plus chords (u -> 7u + 3: every block of rows reaches rows far away), random
/// features, labels, train split on half the nodes, valid = test = the other half.
inline datasets::Dataset tiny_dataset(std::int64_t n, std::int64_t f, std::int32_t c, std::uint64_t seed) {
  datasets::Dataset ds;
  ds.name = "tiny";
  datasets::EdgeList e;
  e.num_nodes = n;
  for (std::int64_t u = 0; u < n; ++u) {
    e.src.push_back(static_cast<NodeId>(u));
    e.dst.push_back(static_cast<NodeId>((u + 1) % n));
    e.src.push_back(static_cast<NodeId>(u));
    e.dst.push_back(static_cast<NodeId>((u * 7 + 3) % n));
  }
  ds.graph = datasets::build_csr(e);
  ds.num_features = f;
  ds.num_classes = c;
  for (std::int64_t i = 0; i < n * f; ++i) {
    const auto r = rng::philox4x32(seed, static_cast<std::uint64_t>(i), 1);
    ds.features.push_back(rng::to_unit_float(r.v[0]) * 2.0f);
  }
  for (std::int64_t u = 0; u < n; ++u) ds.labels.push_back(static_cast<std::int32_t>((u * 5 + seed) % c));
  for (std::int64_t u = 0; u < n; u += 2) ds.splits["train"].push_back(static_cast<NodeId>(u));
  for (std::int64_t u = 1; u < n; u += 2) ds.splits["valid"].push_back(static_cast<NodeId>(u));
  ds.splits["test"] = ds.splits["valid"];
  return ds;
}

}  // namespace gcnpart::testing
