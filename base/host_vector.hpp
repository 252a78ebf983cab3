// Host arrays that skip value-initialisation: HostVector<T> is a std::vector whose resize(n) leaves trivially
// constructible elements uninitialised (default-initialised), so that a large array (a graph's column ids, a
// feature matrix) is written once, by the code that fills it, and its pages are first touched there, in
// parallel where that code is parallel, instead of by a serial zero fill. resize(n, value), assign and the
// constructors taking a value still initialise. Use it where every element is written right after the resize.
#pragma once

#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

namespace gcnpart {

template <class T>
class DefaultInitAllocator : public std::allocator<T> {
 public:
  using value_type = T;
  template <class U>
  struct rebind {
    using other = DefaultInitAllocator<U>;
  };
  DefaultInitAllocator() noexcept = default;
  template <class U>
  DefaultInitAllocator(const DefaultInitAllocator<U>&) noexcept {}  // NOLINT(google-explicit-constructor)

  /// Default-initialises: no write for trivial types.
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <class T, class U>
bool operator==(const DefaultInitAllocator<T>&, const DefaultInitAllocator<U>&) noexcept {
  return true;
}

template <class T>
using HostVector = std::vector<T, DefaultInitAllocator<T>>;

}  // namespace gcnpart
