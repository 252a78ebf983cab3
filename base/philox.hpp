// Counter-based random numbers (Philox4x32-10, Salmon et al., SC'11). The same (key, counter) gives the same
// numbers on every thread count, device count and backend: dropout masks, generators and random partitions
// are keyed by global ids so that every strategy draws identical numbers.
#pragma once

#include <cstdint>

#include "base/host_device.hpp"

namespace gcnpart::rng {

struct Philox4 {
  std::uint32_t v[4];
};

GCNPART_HD std::uint32_t mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi) {
  const std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  return static_cast<std::uint32_t>(p);
}

/// Philox4x32-10 of a 128-bit counter under a 64-bit key.
GCNPART_HD Philox4 philox4x32(std::uint64_t key, std::uint64_t counter_lo, std::uint64_t counter_hi) {
  std::uint32_t c0 = static_cast<std::uint32_t>(counter_lo), c1 = static_cast<std::uint32_t>(counter_lo >> 32);
  std::uint32_t c2 = static_cast<std::uint32_t>(counter_hi), c3 = static_cast<std::uint32_t>(counter_hi >> 32);
  std::uint32_t k0 = static_cast<std::uint32_t>(key), k1 = static_cast<std::uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, hi1;
    const std::uint32_t lo0 = mulhilo(0xD2511F53u, c0, hi0);
    const std::uint32_t lo1 = mulhilo(0xCD9E8D57u, c2, hi1);
    const std::uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Philox4{{c0, c1, c2, c3}};
}

/// Uniform float in [0, 1) from 24 random bits.
GCNPART_HD float to_unit_float(std::uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }

/// Uniform double in [0, 1) from 53 random bits.
GCNPART_HD double to_unit_double(std::uint32_t hi, std::uint32_t lo) {
  const std::uint64_t bits = (static_cast<std::uint64_t>(hi) << 21) ^ (lo >> 11);
  return static_cast<double>(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/// A 64-bit mix (splitmix64 finaliser): derive independent stream keys from (seed, purpose).
GCNPART_HD std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Stream key for one use of randomness: seed and a purpose tag (and optional sub-ids such as epoch, layer).
GCNPART_HD std::uint64_t stream_key(std::uint64_t seed, std::uint64_t purpose, std::uint64_t a = 0, std::uint64_t b = 0) {
  return mix64(mix64(mix64(seed ^ mix64(purpose)) ^ a) ^ b);
}

/// Purpose tags, so that no two uses of one seed share a stream.
enum Purpose : std::uint64_t {
  kDropout = 1,
  kRmatEdges = 2,
  kRmatPermutation = 3,
  kSbmEdges = 4,
  kSbmFeatures = 5,
  kSbmSplit = 6,
  kWeightInit = 7,
  kRandomPartition = 8,
  kSyntheticFeatures = 9,
  kSampling = 10,
  kGridPermutation = 11,
};

/// A bijection on [0, 2^bits): a 4-round Feistel network keyed by `key`. Used to permute node ids in parallel.
GCNPART_HD std::uint64_t feistel_permute(std::uint64_t x, unsigned bits, std::uint64_t key) {
  if (bits == 0) return 0;
  const unsigned lb = bits / 2, rb = bits - lb;  // left half lb bits, right half rb bits
  const std::uint64_t lmask = (lb == 64) ? ~0ull : ((1ull << lb) - 1), rmask = (1ull << rb) - 1;
  std::uint64_t l = (x >> rb) & lmask, r = x & rmask;
  // Unbalanced Feistel: alternate which side is mixed so that the map stays a bijection for odd bit counts.
  for (int round = 0; round < 4; ++round) {
    if ((round & 1) == 0) {
      l = (l ^ mix64(r ^ mix64(key + static_cast<std::uint64_t>(round)))) & lmask;
    } else {
      r = (r ^ mix64(l ^ mix64(key + static_cast<std::uint64_t>(round)))) & rmask;
    }
  }
  return (l << rb) | r;
}

/// A bijection on [0, n) for any n > 0, by cycle-walking a Feistel permutation of the next power of two.
GCNPART_HD std::uint64_t permute_index(std::uint64_t x, std::uint64_t n, std::uint64_t key) {
  unsigned bits = 0;
  while ((1ull << bits) < n) ++bits;
  std::uint64_t y = feistel_permute(x, bits, key);
  while (y >= n) y = feistel_permute(y, bits, key);
  return y;
}

}  // namespace gcnpart::rng
