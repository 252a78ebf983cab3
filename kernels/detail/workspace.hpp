// Scratch memory for one kernel call, taken from ctx.allocator (category kWorkspace unless told) on ctx.stream and
// returned on destruction on the same stream, right after the work that uses it has been queued there (the
// allocator is stream-ordered: see Allocator).
#pragma once

#include <cstddef>
#include <new>
#include <utility>

#include "kernels/context.hpp"
#include "base/error.hpp"

namespace gcnpart::kernels::detail {

class Workspace {
 public:
  Workspace() = default;
  /// A CPU context without an allocator gets plain heap memory; a CUDA context must have one.
  Workspace(const Context& ctx, std::size_t bytes, MemoryCategory category = MemoryCategory::kWorkspace)
      : allocator_(ctx.allocator), stream_(ctx.stream), bytes_(bytes), category_(category) {
    if (bytes_ == 0) return;
    if (allocator_ != nullptr) {
      ptr_ = allocator_->allocate(bytes_, category_, stream_);
    } else {
      GCNPART_EXPECTS(!ctx.is_cuda(), "a CUDA context needs an allocator for kernel workspaces");
      ptr_ = ::operator new(bytes_, std::align_val_t{kHostAlignment});
    }
  }
  ~Workspace() { release(); }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
  Workspace(Workspace&& o) noexcept { *this = std::move(o); }
  Workspace& operator=(Workspace&& o) noexcept {
    if (this != &o) {
      release();
      allocator_ = o.allocator_;
      stream_ = o.stream_;
      ptr_ = o.ptr_;
      bytes_ = o.bytes_;
      category_ = o.category_;
      o.ptr_ = nullptr;
      o.bytes_ = 0;
    }
    return *this;
  }

  [[nodiscard]] void* get() const noexcept { return ptr_; }
  template <class T>
  [[nodiscard]] T* as(std::size_t byte_offset = 0) const noexcept {
    return reinterpret_cast<T*>(static_cast<char*>(ptr_) + byte_offset);
  }
  [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

  /// Rounds a byte count up so that a second array placed after it stays 256-byte aligned.
  static constexpr std::size_t align_up(std::size_t bytes) noexcept { return (bytes + 255) / 256 * 256; }

 private:
  static constexpr std::size_t kHostAlignment = 64;

  void release() noexcept {
    if (ptr_ == nullptr) return;
    if (allocator_ != nullptr) {
      allocator_->deallocate(ptr_, bytes_, category_, stream_);
    } else {
      ::operator delete(ptr_, std::align_val_t{kHostAlignment});
    }
    ptr_ = nullptr;
  }

  Allocator* allocator_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  MemoryCategory category_ = MemoryCategory::kWorkspace;
};

}  // namespace gcnpart::kernels::detail
