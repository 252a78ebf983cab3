// Tests of base/dense_view.hpp, and of the shape checks the kernel entry points make on views.
#include "base/dense_view.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "base/error.hpp"
#include "kernels/ops.hpp"

using namespace gcnpart;
using namespace gcnpart::kernels;

namespace {
const Context kCpu{};
}  // namespace

TEST_CASE("make_view packs rows by default and row(i) starts ld elements further each row") {
  std::vector<float> buf(12);
  const MatrixView packed = make_view(buf.data(), 3, 4);
  CHECK(packed.ld == 4);
  CHECK(packed.size() == 12);
  CHECK(packed.contiguous());
  const MatrixView strided = make_view(buf.data(), 2, 3, 6);
  CHECK(strided.row(1) == buf.data() + 6);
  CHECK(!strided.contiguous());
  CHECK(make_view(buf.data(), 1, 3, 6).contiguous());  // one row has no gap
  CHECK(make_view(buf.data(), 0, 3).empty());
  CHECK(make_view(buf.data(), 3, 0).empty());
  CHECK(MatrixView{}.empty());
}

TEST_CASE("a writable view converts to a read-only one but not back, and bf16 views are their own type") {
  static_assert(std::is_convertible_v<MatrixView, ConstMatrixView>);
  static_assert(!std::is_convertible_v<ConstMatrixView, MatrixView>);
  static_assert(!std::is_convertible_v<MatrixView, Bf16MatrixView>);
  static_assert(!std::is_convertible_v<Bf16MatrixView, ConstMatrixView>);
  static_assert(std::is_convertible_v<Bf16MatrixView, ConstBf16MatrixView>);
  static_assert(std::is_same_v<decltype(make_view(static_cast<const float*>(nullptr), 1, 1)), ConstMatrixView>);
  std::vector<float> buf(6);
  const ConstMatrixView c = make_view(buf.data(), 2, 3);
  CHECK(c.data == buf.data());
  CHECK(c.rows == 2);
  CHECK(c.cols == 3);
  CHECK(c.ld == 3);
}

TEST_CASE("Bf16 is a distinct 16-bit type: no conversion from or to integers or floats, bits kept exactly") {
  static_assert(sizeof(Bf16) == 2 && alignof(Bf16) == 2);
  static_assert(std::is_trivially_copyable_v<Bf16> && std::is_standard_layout_v<Bf16>);
  static_assert(!std::is_convertible_v<std::uint16_t, Bf16> && !std::is_convertible_v<Bf16, std::uint16_t>);
  static_assert(!std::is_convertible_v<float, Bf16> && !std::is_convertible_v<Bf16, float>);
  static_assert(!std::is_convertible_v<std::uint16_t*, Bf16*> && !std::is_convertible_v<float*, const Bf16*>);
  static_assert(!std::is_convertible_v<DenseView<std::uint16_t>, ConstBf16MatrixView>);
  static_assert(Bf16::from_bits(0x3f80).bits() == 0x3f80);
  const std::vector<Bf16> zeros(3);
  CHECK(zeros[2].bits() == 0);  // value-initialised: +0
  CHECK(Bf16::from_bits(0x7fc0) == Bf16::from_bits(0x7fc0));  // bitwise: a NaN equals itself
  CHECK(Bf16::from_bits(0x8000) != Bf16{});                   // -0 and +0 differ
}

TEST_CASE("SpMM refuses views whose shapes do not match the sparse matrix, naming the extent") {
  const RowOffset offsets[] = {0, 1, 2, 3};
  const NodeId cols[] = {0, 1, 0};
  const CsrView a{3, 2, offsets, cols, nullptr};  // 3 x 2
  std::vector<float> x(2 * 4, 1.0f), y(3 * 4);
  spmm_async(kCpu, a, nullptr, nullptr, make_view(x.data(), 2, 4), make_view(y.data(), 3, 4));
  CHECK(y == std::vector<float>(12, 1.0f));
  CHECK_THROWS_WITH_AS(spmm_async(kCpu, a, nullptr, nullptr, make_view(x.data(), 1, 4), make_view(y.data(), 3, 4)),
                       doctest::Contains("x.rows"), InvalidInput);
  CHECK_THROWS_WITH_AS(spmm_async(kCpu, a, nullptr, nullptr, make_view(x.data(), 2, 4), make_view(y.data(), 2, 4)),
                       doctest::Contains("y.rows"), InvalidInput);
  CHECK_THROWS_WITH_AS(spmm_async(kCpu, a, nullptr, nullptr, make_view(x.data(), 2, 4), make_view(y.data(), 3, 3)),
                       doctest::Contains("y.cols"), InvalidInput);
  CHECK_THROWS_WITH_AS(spmm_async(kCpu, a, nullptr, nullptr, make_view(x.data(), 2, 4, 3), make_view(y.data(), 3, 4)),
                       doctest::Contains("x.ld"), InvalidInput);
}

TEST_CASE("GEMM reads m, n and k from its views and refuses inner extents that disagree") {
  std::vector<float> a(6, 1.0f), b(6, 1.0f), c(4, -1.0f);
  gemm_async(kCpu, false, false, 1.0f, make_view(a.data(), 2, 3), make_view(b.data(), 3, 2), 0.0f,
             make_view(c.data(), 2, 2));
  CHECK(c == std::vector<float>(4, 3.0f));
  gemm_async(kCpu, true, true, 1.0f, make_view(a.data(), 3, 2), make_view(b.data(), 2, 3), 0.0f,
             make_view(c.data(), 2, 2));
  CHECK(c == std::vector<float>(4, 3.0f));
  CHECK_THROWS_AS(gemm_async(kCpu, false, false, 1.0f, make_view(a.data(), 2, 3), make_view(b.data(), 2, 3), 0.0f,
                             make_view(c.data(), 2, 2)),
                  InvalidInput);  // k: 3 against 2
  CHECK_THROWS_AS(gemm_async(kCpu, true, false, 1.0f, make_view(a.data(), 2, 3), make_view(b.data(), 3, 2), 0.0f,
                             make_view(c.data(), 2, 2)),
                  InvalidInput);  // op(A) is 3 x 2, C has 2 rows
  CHECK_THROWS_AS(gemm_async(kCpu, false, false, 1.0f, make_view(a.data(), 2, 3), make_view(b.data(), 3, 2), 0.0f,
                             make_view(c.data(), 2, 1)),
                  InvalidInput);  // n: 2 against 1
}

TEST_CASE("element-wise kernels refuse strided views and outputs of another shape") {
  std::vector<float> z(8, 1.0f), out(8);
  CHECK_THROWS_WITH_AS(
      bias_act_dropout_async(kCpu, make_view(z.data(), 2, 3, 4), nullptr, true, Dropout{}, make_view(out.data(), 2, 3)),
      doctest::Contains("z.ld"), InvalidInput);
  CHECK_THROWS_AS(dropout_async(kCpu, make_view(z.data(), 2, 4), Dropout{}, make_view(out.data(), 4, 2)),
                  InvalidInput);
  CHECK_THROWS_AS(column_sum_async(kCpu, make_view(z.data(), 2, 3, 4), out.data()), InvalidInput);
  const std::vector<NodeId> idx = {1, 0};
  CHECK_THROWS_AS(gather_rows_async(kCpu, make_view(z.data(), 2, 4), idx.data(), make_view(out.data(), 2, 3)),
                  InvalidInput);
  std::vector<float> grad(8);
  float loss = 0.0f;
  const std::vector<std::int32_t> labels = {0, 1};
  CHECK_THROWS_AS(softmax_cross_entropy_async(kCpu, make_view(z.data(), 2, 4), labels.data(), idx.data(), 2, 1.0f,
                                              &loss, make_view(grad.data(), 4, 2)),
                  InvalidInput);
  softmax_cross_entropy_async(kCpu, make_view(z.data(), 2, 4), labels.data(), idx.data(), 2, 1.0f, &loss,
                              MatrixView{});  // no gradient asked
  CHECK(loss > 0.0f);
  // Padded logits (ld > classes) are accepted; the gradient must share their leading dimension.
  CHECK_THROWS_WITH_AS(softmax_cross_entropy_async(kCpu, make_view(z.data(), 2, 3, 4), labels.data(), idx.data(), 2,
                                                   1.0f, &loss, make_view(grad.data(), 2, 3)),
                       doctest::Contains("grad.ld"), InvalidInput);
}
