#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "engine/memory.hpp"
#include "engine/step_graph.hpp"
#include "base/error.hpp"

using namespace gcnpart;
using namespace gcnpart::engine;

namespace {

/// The allocation pattern of a step: nested scoped requests, returned in reverse.
std::vector<void*> nested_requests(Allocator& a, const std::vector<std::size_t>& sizes) {
  std::vector<void*> got;
  for (std::size_t s : sizes) got.push_back(a.allocate(s, MemoryCategory::kWorkspace, nullptr));
  for (std::size_t i = sizes.size(); i-- > 0;) a.deallocate(got[i], sizes[i], MemoryCategory::kWorkspace, nullptr);
  return got;
}

}  // namespace

TEST_CASE("the stack arena measures a step's deepest scratch, then serves the same requests at the same addresses") {
  TrackingMemoryResource parent(MemorySpace::kHost, 0, "cpu:0");
  StackArena arena(parent);
  const std::vector<std::size_t> step{1000, 10, 300};
  (void)nested_requests(arena, step);
  (void)nested_requests(arena, {5000});
  // 1000 -> offset 0, 10 -> 1024, 300 -> 1280: end 1580; then 5000 alone.
  CHECK(arena.high_water() == 5000);
  CHECK(parent.stats().current == 0);  // measuring: the parent's memory, all returned
  arena.reserve(nullptr);
  CHECK(arena.capacity() == 5120);  // rounded to 256 bytes
  CHECK(parent.stats().current == 5120);
  const auto first = nested_requests(arena, step);
  const auto again = nested_requests(arena, step);
  CHECK(first == again);
  CHECK(static_cast<char*>(first[1]) - static_cast<char*>(first[0]) == 1024);
  CHECK(static_cast<char*>(first[2]) - static_cast<char*>(first[0]) == 1280);
  CHECK(parent.stats().current == 5120);  // served from the block: no parent request
  CHECK(arena.fallbacks() == 0);

  // Too big: the parent serves it while fallback is on, and it takes no stack space.
  void* big = arena.allocate(6000, MemoryCategory::kWorkspace, nullptr);
  CHECK(arena.fallbacks() == 1);
  CHECK(parent.stats().current == 5120 + 6000);
  void* small = arena.allocate(100, MemoryCategory::kWorkspace, nullptr);
  CHECK(small == first[0]);
  arena.deallocate(big, 6000, MemoryCategory::kWorkspace, nullptr);  // out of order: fine
  arena.deallocate(small, 100, MemoryCategory::kWorkspace, nullptr);
  CHECK(parent.stats().current == 5120);

  // While capturing (fallback off) a request that does not fit is refused, and the arena stays usable.
  arena.set_fallback(false);
  void* a = arena.allocate(5000, MemoryCategory::kWorkspace, nullptr);
  CHECK_THROWS_AS((void)arena.allocate(200, MemoryCategory::kWorkspace, nullptr), LogicError);
  arena.deallocate(a, 5000, MemoryCategory::kWorkspace, nullptr);
  CHECK(arena.allocate(200, MemoryCategory::kWorkspace, nullptr) == first[0]);
}

TEST_CASE("the stack arena reuses space only once everything above it is free") {
  TrackingMemoryResource parent(MemorySpace::kHost, 0, "cpu:0");
  StackArena arena(parent);
  (void)nested_requests(arena, {256, 256, 256});
  arena.reserve(nullptr);
  void* a = arena.allocate(256, MemoryCategory::kWorkspace, nullptr);
  void* b = arena.allocate(256, MemoryCategory::kWorkspace, nullptr);
  arena.deallocate(a, 256, MemoryCategory::kWorkspace, nullptr);  // below b: its space stays taken
  void* c = arena.allocate(256, MemoryCategory::kWorkspace, nullptr);
  CHECK(c == static_cast<char*>(b) + 256);
  arena.deallocate(c, 256, MemoryCategory::kWorkspace, nullptr);
  arena.deallocate(b, 256, MemoryCategory::kWorkspace, nullptr);
  CHECK(arena.allocate(256, MemoryCategory::kWorkspace, nullptr) == a);
  CHECK_THROWS_AS(arena.reserve(nullptr), LogicError);  // once only
}
