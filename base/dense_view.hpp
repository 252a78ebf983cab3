// Non-owning view of a dense row-major matrix: what kernel entry points take instead of a pointer, a leading
// dimension and a width (RAFT's mdspan views, reduced to the one layout gcnpart uses). Host or device memory, as
// the owner decides; the element type says float32 or bf16 and, through `const`, whether the kernel writes.
#pragma once

#include <cstdint>
#include <type_traits>

#include "base/host_device.hpp"

namespace gcnpart::kernels {

/// bfloat16 (the top half of an IEEE float32), stored as its raw bits; conversions in kernels/detail/bf16.hpp.
/// A distinct type, so that a bf16 buffer cannot be passed where floats or plain 16-bit integers are meant (or
/// the reverse). Same size, alignment and bits as CUDA's __nv_bfloat16: .cu files reinterpret_cast Bf16* to it or
/// to std::uint16_t*. An aggregate: `Bf16{}` and `std::vector<Bf16>(n)` hold +0.
struct Bf16 {
  std::uint16_t raw;

  static constexpr Bf16 from_bits(std::uint16_t b) { return Bf16{b}; }
  [[nodiscard]] constexpr std::uint16_t bits() const { return raw; }
  /// Bitwise equality (so +0 != -0 and a NaN equals itself): what tests of stored bits need.
  friend constexpr bool operator==(Bf16 a, Bf16 b) { return a.raw == b.raw; }
  friend constexpr bool operator!=(Bf16 a, Bf16 b) { return a.raw != b.raw; }
};
static_assert(sizeof(Bf16) == 2 && alignof(Bf16) == 2, "Bf16 must be laid out as 16 raw bits");
static_assert(std::is_trivially_copyable_v<Bf16> && std::is_standard_layout_v<Bf16>,
              "Bf16 buffers are copied with memcpy / cudaMemcpy");

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
