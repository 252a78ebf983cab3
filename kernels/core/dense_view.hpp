// Non-owning view of a dense row-major matrix: what kernel entry points take instead of a pointer, a leading
// dimension and a width (RAFT's mdspan views, reduced to the one layout gcnpart uses). Host or device memory, as
// the owner decides; the element type says float32 or bf16 and, through `const`, whether the kernel writes.
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/core/host_device.hpp"

namespace gcnpart::kernels {

/// bfloat16 as raw bits (the top half of an IEEE float32); see kernels/detail/bf16.hpp.
using Bf16 = std::uint16_t;

/// rows x cols elements, row i starting at data + i * ld (ld >= cols). `DenseView<const T>` reads only; a
/// `DenseView<T>` converts to it implicitly. A default-constructed view is empty (data null, 0 x 0).
template <class T>
struct DenseView {
  T* data = nullptr;
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;

  constexpr DenseView() = default;
  constexpr DenseView(T* data_, std::int64_t rows_, std::int64_t cols_, std::int64_t ld_)
      : data(data_), rows(rows_), cols(cols_), ld(ld_) {}
  /// A writable view is also a read-only one.
  template <class U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>)
  constexpr DenseView(const DenseView<U>& other)  // NOLINT(google-explicit-constructor): like T* -> const T*
      : data(other.data), rows(other.rows), cols(other.cols), ld(other.ld) {}

  GCNPART_HD T* row(std::int64_t i) const { return data + i * ld; }
  GCNPART_HD std::int64_t size() const { return rows * cols; }
  GCNPART_HD bool empty() const { return rows == 0 || cols == 0; }
  /// Rows follow each other without a gap (what the element-wise kernels need).
  GCNPART_HD bool contiguous() const { return ld == cols || rows <= 1; }
};

using MatrixView = DenseView<float>;
using ConstMatrixView = DenseView<const float>;
using Bf16MatrixView = DenseView<Bf16>;
using ConstBf16MatrixView = DenseView<const Bf16>;

/// A view of rows x cols elements at `data` with leading dimension `ld` (rows packed when omitted).
template <class T>
constexpr DenseView<T> make_view(T* data, std::int64_t rows, std::int64_t cols, std::int64_t ld) {
  return DenseView<T>(data, rows, cols, ld);
}
template <class T>
constexpr DenseView<T> make_view(T* data, std::int64_t rows, std::int64_t cols) {
  return DenseView<T>(data, rows, cols, cols);
}

}  // namespace gcnpart::kernels
