#include "partition/streamed_plan.hpp"

#include <doctest/doctest.h>

#include "base/error.hpp"
#include "partition/memory_model.hpp"

using namespace gcnpart;
using namespace gcnpart::partition;

namespace {

DeviceShape shape_of(std::int64_t rows, std::int64_t entries) {
  DeviceShape s;
  s.rows = rows;
  s.graph_entries = entries;
  s.feature_nonzeros = -1;
  s.split_rows = {rows / 10, rows / 10, rows / 10};
  return s;
}

ModelSpec model_of(std::int64_t features, std::int64_t hidden, int layers, std::int64_t classes, Precision p) {
  ModelSpec m;
  m.features = features;
  m.hidden = hidden;
  m.layers = layers;
  m.classes = classes;
  m.precision = p;
  return m;
}

}  // namespace

TEST_CASE("a streamed plan fits its budget, its passes add up to its traffic, and a smaller budget moves more") {
  const DeviceShape s = shape_of(200000, 4000000);
  for (const ModelSpec& m : {model_of(100, 1024, 3, 47, Precision::kFp32), model_of(512, 256, 3, 47, Precision::kFp32),
                            model_of(128, 256, 4, 16, Precision::kBf16), model_of(64, 64, 2, 8, Precision::kFp32)}) {
    CAPTURE(m.features);
    CAPTURE(m.hidden);
    CAPTURE(m.layers);
    const std::int64_t resident = estimate_device_memory(s, m, Backend::kCuda).peak;
    std::int64_t previous_moved = -1;
    int priced = 0;  // budgets the plan fits (at least the widest must: the loop must check something)
    for (const double share : {0.9, 0.6, 0.4}) {
      CAPTURE(share);
      const auto budget = static_cast<std::int64_t>(share * static_cast<double>(resident));
      const StreamedPlan plan = streamed_plan(s, m, Backend::kCuda, budget);
      const std::int64_t peak = estimate_plan_memory(plan.device, Backend::kCuda).peak;
      if (peak > budget) continue;  // too tight for this model: the engine refuses it with the bytes
      ++priced;
      std::int64_t h2d = 0, d2h = 0;
      for (const StreamedPhase& p : plan.step_phases) h2d += p.h2d_bytes, d2h += p.d2h_bytes;
      CHECK(h2d == plan.step_h2d_bytes);
      CHECK(d2h == plan.step_d2h_bytes);
      std::int64_t host = 0;
      for (const StreamedMatrix& x : plan.matrices)
        if (x.tier == Tier::kHost) host += x.bytes();
      CHECK(host == plan.host_bytes);
      const std::int64_t moved = plan.step_h2d_bytes + plan.step_d2h_bytes;
      if (previous_moved >= 0) CHECK(moved >= previous_moved);
      previous_moved = moved;
      const auto c = plan.copy_seconds(50, 50);
      CHECK(c.serial + c.passes >= static_cast<double>(std::max(h2d, d2h)) / 50e9 * 0.999);
    }
    CHECK(priced > 0);
  }
}

TEST_CASE("an all-host plan keeps nothing saved on the device; a given part size is kept; multi-device refused") {
  const DeviceShape s = shape_of(50000, 600000);
  const ModelSpec m = model_of(100, 256, 3, 47, Precision::kFp32);
  const StreamedPlan plan = streamed_plan(s, m, Backend::kCpu, std::int64_t{1} << 40, 1000, true);
  for (const StreamedMatrix& x : plan.matrices) CHECK(x.tier == Tier::kHost);
  CHECK(plan.part_rows == 1000);
  CHECK(plan.parts == 50);
  DeviceShape gather = s;
  gather.gather = true;
  gather.parts = 2;
  gather.table_block = s.rows;
  CHECK_THROWS_AS((void)streamed_plan(gather, m, Backend::kCpu, std::int64_t{1} << 40), InvalidInput);
  CHECK_THROWS_AS((void)streamed_plan(s, m, Backend::kCpu, std::int64_t{1} << 40, -1), InvalidInput);
}

TEST_CASE("the flow writes an aggregate-first layer's input into its own operand and fuses gradients as the rule says") {
  // 100 -> 1024 -> 1024 -> 48: layers 0 and 1 aggregate first, layer 2 multiplies first.
  const std::vector<std::int64_t> d{100, 1024, 1024, 48};
  const StreamedFlow two = streamed_flow(d, true);
  CHECK(two.direct_input[1]);
  CHECK_FALSE(two.direct_input[2]);
  CHECK(two.fused_gradient[2]);
  CHECK(two.fused_gradient[1]);
  CHECK(two.operand_of(1) != two.operand_of(2));
  const StreamedFlow one = streamed_flow(d, false);
  CHECK_FALSE(one.direct_input[1]);
  CHECK(one.fused_gradient[2]);  // the output layer reads the logits' gradient, not the operand
  CHECK(one.fused_gradient[1]);  // layer 0's first pass writes no operand
  // 512 -> 256 -> 256 -> 48: layer 0 multiplies first: its gradient input is read whole, never fused.
  const StreamedFlow wide = streamed_flow({512, 256, 256, 48}, false);
  CHECK_FALSE(wide.fused_gradient[1]);
  CHECK(wide.fused_gradient[2]);
}
