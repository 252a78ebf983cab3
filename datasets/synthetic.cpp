#include <algorithm>
#include <cmath>
#include <numbers>

#include "datasets/dataset.hpp"
#include "datasets/detail/synthetic.hpp"
#include "base/error.hpp"
#include "base/philox.hpp"

namespace gcnpart::datasets {

namespace detail {

void normal4(std::uint64_t key, std::uint64_t a, std::uint64_t b, double out[4]) {
  const rng::Philox4 r = rng::philox4x32(key, a, b);
  for (int pair = 0; pair < 2; ++pair) {
    // (x + 0.5) / 2^32 lies in (0, 1): log never sees 0.
    const double u1 = (static_cast<double>(r.v[2 * pair]) + 0.5) * (1.0 / 4294967296.0);
    const double u2 = static_cast<double>(r.v[2 * pair + 1]) * (1.0 / 4294967296.0);
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double angle = 2.0 * std::numbers::pi * u2;
    out[2 * pair] = radius * std::cos(angle);
    out[2 * pair + 1] = radius * std::sin(angle);
  }
}

HostVector<float> class_gaussian_features(const std::vector<std::int32_t>& labels, std::int32_t classes,
                                           std::int64_t features, double signal, std::uint64_t mean_key,
                                           std::uint64_t noise_key) {
  const auto n = static_cast<std::int64_t>(labels.size());
  const std::int64_t blocks = (features + 3) / 4;
  std::vector<double> means(static_cast<std::size_t>(classes) * static_cast<std::size_t>(blocks) * 4);
  for (std::int32_t c = 0; c < classes; ++c)
    for (std::int64_t j = 0; j < blocks; ++j) normal4(mean_key, static_cast<std::uint64_t>(c), j, &means[(c * blocks + j) * 4]);

  HostVector<float> x(static_cast<std::size_t>(n) * static_cast<std::size_t>(features));  // rows written in parallel
#pragma omp parallel for schedule(static)
  for (std::int64_t u = 0; u < n; ++u) {
    const double* mean = &means[static_cast<std::size_t>(labels[u]) * static_cast<std::size_t>(blocks) * 4];
    float* row = &x[static_cast<std::size_t>(u) * static_cast<std::size_t>(features)];
    for (std::int64_t j = 0; j < blocks; ++j) {
      double noise[4];
      normal4(noise_key, static_cast<std::uint64_t>(u), static_cast<std::uint64_t>(j), noise);
      for (std::int64_t k = 0; k < 4 && 4 * j + k < features; ++k)
        row[4 * j + k] = static_cast<float>(signal * mean[4 * j + k] + noise[k]);
    }
  }
  return x;
}

void sort_split(std::vector<NodeId>& ids) { std::sort(ids.begin(), ids.end()); }

}  // namespace detail

namespace {
// Pairwise distance between two class means is about signal * sqrt(2 F) = 2.8 standard deviations whatever F:
// one node's features name its class most of the time (~80% for a handful of classes), never always.
double synthetic_signal(std::int64_t features) { return 2.0 / std::sqrt(static_cast<double>(features)); }
}  // namespace

void add_synthetic_features(Dataset& ds, std::int64_t features, std::int32_t classes, std::uint64_t seed) {
  if (features <= 0) throw InvalidInput::parameter("features", std::to_string(features), "> 0");
  if (classes < 2) throw InvalidInput::parameter("classes", std::to_string(classes), ">= 2");
  const std::int64_t n = ds.num_nodes();
  if (n > 0 && features > (std::int64_t{1} << 62) / n)
    throw InvalidInput::parameter("features", std::to_string(features),
                                  "at most " + std::to_string((std::int64_t{1} << 62) / n) + " for " +
                                      std::to_string(n) + " nodes");

  const std::uint64_t label_key = rng::stream_key(seed, rng::kSyntheticFeatures, 0);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
  for (std::int64_t u = 0; u < n; ++u) {
    const rng::Philox4 r = rng::philox4x32(label_key, static_cast<std::uint64_t>(u), 0);
    labels[u] = static_cast<std::int32_t>(detail::uniform_below(r.v[0], r.v[1], classes));
  }
  ds.features = detail::class_gaussian_features(labels, classes, features, synthetic_signal(features),
                                                rng::stream_key(seed, rng::kSyntheticFeatures, 1),
                                                rng::stream_key(seed, rng::kSyntheticFeatures, 2));
  ds.num_features = features;
  ds.labels = std::move(labels);
  ds.num_classes = classes;

  // 60/20/20 by position in a keyed permutation of the nodes.
  const std::uint64_t split_key = rng::stream_key(seed, rng::kSyntheticFeatures, 3);
  const std::int64_t train_end = n * 6 / 10, valid_end = n * 8 / 10;
  std::vector<NodeId> order(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
  for (std::int64_t p = 0; p < n; ++p)
    order[p] = static_cast<NodeId>(rng::permute_index(static_cast<std::uint64_t>(p), static_cast<std::uint64_t>(n), split_key));
  ds.splits.clear();
  ds.splits["train"].assign(order.begin(), order.begin() + train_end);
  ds.splits["valid"].assign(order.begin() + train_end, order.begin() + valid_end);
  ds.splits["test"].assign(order.begin() + valid_end, order.end());
  for (auto& [name, ids] : ds.splits) detail::sort_split(ids);

  ds.provenance += (ds.provenance.empty() ? "" : "; ") + std::string("synthetic features=") +
                   std::to_string(features) + " classes=" + std::to_string(classes) + " seed=" + std::to_string(seed) +
                   " (labels hashed from node ids, class-dependent Gaussian features, 60/20/20 split)";
}

}  // namespace gcnpart::datasets
