// Shared by generators.cpp (SBM) and synthetic.cpp (add_synthetic_features): class-dependent Gaussian features
// and keyed splits, every value a pure function of (key, node, column) so that any thread count gives the same
// arrays.
#pragma once

#include <cstdint>
#include <vector>

#include "base/csr_view.hpp"
#include "base/host_vector.hpp"

namespace gcnpart::datasets::detail {

/// Four standard normals from one Philox block keyed by `key` at counter (a, b) (Box-Muller on two pairs).
void normal4(std::uint64_t key, std::uint64_t a, std::uint64_t b, double out[4]);

/// Row-major num_nodes x features: signal * mean[labels[u]] + N(0, 1), where each class mean has N(0, 1)
/// entries drawn under `mean_key` and the noise under `noise_key`. Parallel (OpenMP), deterministic.
HostVector<float> class_gaussian_features(const std::vector<std::int32_t>& labels, std::int32_t classes,
                                           std::int64_t features, double signal, std::uint64_t mean_key,
                                           std::uint64_t noise_key);

/// A uniform integer in [0, n) from 64 random bits hi:lo (multiply-shift; relative bias below n / 2^64).
inline std::int64_t uniform_below(std::uint32_t hi, std::uint32_t lo, std::int64_t n) {
  const unsigned __int128 bits = (static_cast<std::uint64_t>(hi) << 32) | lo;
  return static_cast<std::int64_t>((bits * static_cast<std::uint64_t>(n)) >> 64);
}

/// Sorts the ids of every split ascending (so gathers walk memory forwards).
void sort_split(std::vector<NodeId>& ids);

}  // namespace gcnpart::datasets::detail
