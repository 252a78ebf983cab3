#include "base/philox.hpp"

#include <doctest/doctest.h>

#include <set>

using namespace gcnpart::rng;

TEST_CASE("philox4x32 matches the Random123 known-answer vector") {
  // Random123 kat_vectors: philox4x32 10 rounds, counter = 0, key = 0.
  const Philox4 r = philox4x32(0, 0, 0);
  CHECK(r.v[0] == 0x6627e8d5u);
  CHECK(r.v[1] == 0xe169c58du);
  CHECK(r.v[2] == 0xbc57ac4cu);
  CHECK(r.v[3] == 0x9b00dbd8u);
}

TEST_CASE("permute_index is a bijection on [0, n) for awkward n") {
  for (std::uint64_t n : {1ull, 2ull, 7ull, 1000ull, 4096ull, 5000ull}) {
    std::set<std::uint64_t> seen;
    for (std::uint64_t i = 0; i < n; ++i) {
      const auto y = permute_index(i, n, 42);
      CHECK(y < n);
      seen.insert(y);
    }
    CHECK(seen.size() == n);
  }
}

TEST_CASE("to_unit_float stays in [0, 1)") {
  CHECK(to_unit_float(0) == 0.0f);
  CHECK(to_unit_float(0xffffffffu) < 1.0f);
}
