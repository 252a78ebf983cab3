#include "kernels/op_profiler.hpp"

#include <doctest/doctest.h>

#include <vector>

#include "kernels/ops.hpp"

using namespace gcnpart;
using namespace gcnpart::kernels;

TEST_CASE("operations are attributed to their class by name, and only when a profiler is attached") {
  static_assert(op_class("spmm(ctx, a, ...)") == OpClass::kSpmm);
  static_assert(op_class("spmm_bf16(ctx, ...)") == OpClass::kSpmm);
  static_assert(op_class("gemm_bf16(ctx, ...)") == OpClass::kGemm);
  static_assert(op_class("softmax_cross_entropy(ctx, ...)") == OpClass::kOther);
  static_assert(op_class("sp") == OpClass::kOther);
  static_assert(op_name("spmm_bf16(ctx, a, x)") == "spmm_bf16");
  static_assert(op_name("synchronize") == "synchronize");

  // A 3 x 3 path graph, X 3 x 2, W 2 x 2.
  const std::vector<RowOffset> offsets{0, 1, 3, 4};
  const std::vector<NodeId> cols{1, 0, 2, 1};
  const CsrView a{3, 3, offsets.data(), cols.data(), nullptr};
  std::vector<float> x{1, 2, 3, 4, 5, 6}, y(6), w{1, 0, 0, 1}, z(6);
  OpProfiler profiler;
  Context ctx;
  spmm_async(ctx, a, nullptr, nullptr, make_view<const float>(x.data(), 3, 2), make_view(y.data(), 3, 2));
  CHECK(profiler.summary().total_ms() == 0);  // not attached
  ctx.profiler = &profiler;
  for (int i = 0; i < 3; ++i)
    spmm_async(ctx, a, nullptr, nullptr, make_view<const float>(x.data(), 3, 2), make_view(y.data(), 3, 2));
  gemm_async(ctx, false, false, 1.0f, make_view<const float>(y.data(), 3, 2), make_view<const float>(w.data(), 2, 2),
             0.0f, make_view(z.data(), 3, 2));
  bias_act_dropout_async(ctx, make_view<const float>(z.data(), 3, 2), nullptr, true, Dropout{}, make_view(z.data(), 3, 2));
  synchronize(ctx);  // not an operation
  const OpProfile p = profiler.summary();
  CHECK(p.calls[0] == 3);
  CHECK(p.calls[1] == 1);
  CHECK(p.calls[2] == 1);
  CHECK(p.ms[0] > 0);  // three timed SpMMs took some time
  // By name, slowest first, the names of the backend functions; their times add up to the classes'.
  REQUIRE(p.ops.size() == 3);
  double named = 0;
  std::int64_t named_calls = 0;
  for (std::size_t i = 0; i < p.ops.size(); ++i) {
    if (i > 0) CHECK(p.ops[i - 1].ms >= p.ops[i].ms);
    named += p.ops[i].ms;
    named_calls += p.ops[i].calls;
    if (p.ops[i].name == "spmm") CHECK(p.ops[i].calls == 3);
  }
  CHECK(named_calls == 5);
  CHECK(named == doctest::Approx(p.total_ms()));
  const auto has = [&](const char* name) {
    for (const auto& o : p.ops)
      if (o.name == name) return true;
    return false;
  };
  CHECK(has("gemm"));
  CHECK(has("bias_act_dropout"));
  CHECK(z == std::vector<float>{3, 4, 6, 8, 3, 4});  // the work still happened: Y = A X, Z = relu(Y W), W = I
  profiler.reset();
  CHECK(profiler.summary().calls[0] == 0);
}
