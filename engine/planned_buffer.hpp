// Buffers allocated by name from the device's allocation plan (partition/allocation_plan.hpp): the size, the
// element type's width and the memory category come from the one list the memory model sums.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/resources.hpp"
#include "base/error.hpp"
#include "partition/allocation_plan.hpp"

namespace gcnpart::engine {

using AllocationPlan = std::vector<partition::Allocation>;

namespace detail {

template <typename T>
const partition::Allocation& planned(const AllocationPlan& plan, std::string_view name) {
  const partition::Allocation* a = partition::find_allocation(plan, name);
  GCNPART_EXPECTS(a != nullptr, ("the allocation plan lists " + std::string(name)).c_str());
  GCNPART_EXPECTS(a->engine_buffer && a->lifetime == partition::Lifetime::kPersistent,
                  (std::string(name) + " is a persistent engine buffer in the allocation plan").c_str());
  GCNPART_EXPECTS(a->element_bytes == static_cast<int>(sizeof(T)),
                  ("element size of " + std::string(name) + " matches the allocation plan").c_str());
  return *a;
}

}  // namespace detail

/// The plan's buffer `name` (uninitialised). Throws a contract error when the plan lacks it or its element size
/// is not sizeof(T).
template <typename T>
Buffer<T> take(Resources& res, const AllocationPlan& plan, std::string_view name) {
  const partition::Allocation& a = detail::planned<T>(plan, name);
  return Buffer<T>(res.memory(), a.elements, a.category, res.stream());
}

/// take() when the plan lists `name`, else an empty buffer (the plan decides which optional buffers exist).
template <typename T>
Buffer<T> take_if_planned(Resources& res, const AllocationPlan& plan, std::string_view name) {
  if (partition::find_allocation(plan, name) == nullptr) return Buffer<T>();
  return take<T>(res, plan, name);
}

/// The plan's buffer `name` holding a copy of `host`, whose size must be the planned one.
template <typename T, typename Alloc>
Buffer<T> upload_planned(Resources& res, const AllocationPlan& plan, std::string_view name,
                         const std::vector<T, Alloc>& host) {
  const partition::Allocation& a = detail::planned<T>(plan, name);
  GCNPART_EXPECTS(a.elements == static_cast<std::int64_t>(host.size()),
                  ("size of " + std::string(name) + " matches the allocation plan").c_str());
  return upload(res, host, a.category);
}

}  // namespace gcnpart::engine
