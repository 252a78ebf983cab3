#include "engine/streamed_layers.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>

#include "base/error.hpp"
#include "datasets/loaders.hpp"
#include "engine/gcn.hpp"
#include "engine/problem.hpp"
#include "engine/trainer.hpp"
#include "partition/memory_model.hpp"
#include "partition/streamed_plan.hpp"
#include "dataset_fixtures.hpp"

using namespace gcnpart;
using namespace gcnpart::engine;
using gcnpart::testing::tiny_dataset;

namespace {

TrainConfig config_of(int layers, std::int64_t hidden, Precision precision, int epochs) {
  TrainConfig cfg;
  cfg.epochs = epochs;
  cfg.model.layers = layers;
  cfg.model.hidden = hidden;
  cfg.model.dropout = 0.5f;
  cfg.model.precision = precision;
  cfg.model.offload = OffloadMode::kOff;
  return cfg;
}

/// The largest relative difference of two loss curves.
double worst_relative(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]) / std::abs(b[i]));
  return worst;
}

/// Tracked peaks of the resident plan and of the all-host streamed plan of `cfg` on a CPU device.
std::pair<std::int64_t, std::int64_t> peaks(const LocalProblem& p, const TrainConfig& cfg, std::int64_t part_rows) {
  const partition::DeviceShape shape = device_shape(p);
  const partition::ModelSpec spec = model_spec(p, cfg.model);
  const std::int64_t resident = partition::estimate_device_memory(shape, spec, Backend::kCpu).peak;
  const partition::StreamedPlan all_host =
      partition::streamed_plan(shape, spec, Backend::kCpu, resident, part_rows, true);
  return {resident, partition::estimate_plan_memory(all_host.device, Backend::kCpu).peak};
}

/// The message of the OutOfMemory a model of `model` on a CPU device capped at `limit` bytes is refused with; the
/// refusal comes before anything is allocated (the device's tracked peak stays 0).
std::string refusal(const LocalProblem& p, const GcnConfig& model, std::int64_t limit) {
  Resources res(Device{}, limit);
  std::string msg;
  try {
    GcnModel m(res, p, model);
    FAIL("expected OutOfMemory");
  } catch (const OutOfMemory& e) {
    msg = e.what();
  }
  CHECK(res.memory().stats().peak == 0);
  return msg;
}

}  // namespace

TEST_CASE("streamed training reproduces the resident losses within 1e-5 for every tier mix, 2 and 3 layers, dropout on") {
  // f = 24 < hidden 64: the first layers aggregate first; 64 -> 5 multiplies first. f = 100 > hidden 16: the first
  // layer multiplies first (dropout recomputed in backward). Parts of 37 rows: every part's edges reach other parts.
  struct Case {
    std::int64_t features, hidden;
    int layers;
  };
  for (const Case c : {Case{24, 64, 3}, Case{100, 16, 2}, Case{24, 64, 2}, Case{100, 16, 3}}) {
    CAPTURE(c.features);
    CAPTURE(c.hidden);
    CAPTURE(c.layers);
    const auto ds = tiny_dataset(300, c.features, 5, 7);
    const LocalProblem p = single_device_problem(ds, true);
    TrainConfig cfg = config_of(c.layers, c.hidden, Precision::kFp32, 20);
    const TrainReport resident = train_single(p, Device{}, cfg);
    CHECK_FALSE(resident.offload.streamed);

    cfg.model.offload_part_rows = 37;
    cfg.model.offload = OffloadMode::kHost;  // every saved matrix on the host
    const TrainReport host = train_single(p, Device{}, cfg);
    REQUIRE(host.offload.streamed);
    CHECK(host.offload.parts == 9);
    CHECK(host.offload.on_device.empty());
    CHECK(worst_relative(host.train_loss, resident.train_loss) < 1e-5);
    CHECK(worst_relative(host.valid_loss, resident.valid_loss) < 1e-5);
    CHECK(host.accuracy[2] == resident.accuracy[2]);
    // The plan's traffic is what the step moved.
    CHECK(host.offload.step_h2d_bytes == host.offload.plan_h2d_bytes);
    CHECK(host.offload.step_d2h_bytes == host.offload.plan_d2h_bytes);
    CHECK(host.offload.step_h2d_bytes > 0);

    // auto under a cap between the streamed minimum and the resident peak: some matrices on the device, some not.
    const auto [resident_peak, streamed_peak] = peaks(p, cfg, 37);
    REQUIRE(streamed_peak < resident_peak);
    cfg.model.offload = OffloadMode::kAuto;
    cfg.memory_limit = (resident_peak + streamed_peak) / 2;
    const TrainReport mixed = train_single(p, Device{}, cfg);
    REQUIRE(mixed.offload.streamed);
    CHECK_FALSE(mixed.offload.on_device.empty());
    CHECK_FALSE(mixed.offload.on_host.empty());
    CHECK(mixed.memory.front().peak <= cfg.memory_limit);
    CHECK(worst_relative(mixed.train_loss, resident.train_loss) < 1e-5);
    CHECK(mixed.offload.step_h2d_bytes + mixed.offload.step_d2h_bytes <
          host.offload.step_h2d_bytes + host.offload.step_d2h_bytes);

    // The tightest budget a streamed plan fits: one operand, every saved matrix on the host.
    const partition::DeviceShape shape = device_shape(p);
    const partition::ModelSpec spec = model_spec(p, cfg.model);
    std::int64_t tight = streamed_peak / 2;
    for (; tight < resident_peak; tight += std::max<std::int64_t>(streamed_peak / 200, 1)) {
      const auto plan = partition::streamed_plan(shape, spec, Backend::kCpu, tight, 37);
      if (partition::estimate_plan_memory(plan.device, Backend::kCpu).peak <= tight) break;
    }
    cfg.memory_limit = tight;
    const TrainReport one = train_single(p, Device{}, cfg);
    REQUIRE(one.offload.streamed);
    CHECK(one.offload.operands == 1);
    CHECK(host.offload.operands == 2);
    CHECK(worst_relative(one.train_loss, resident.train_loss) < 1e-5);
    CHECK(one.offload.step_h2d_bytes == one.offload.plan_h2d_bytes);
    CHECK(one.offload.step_d2h_bytes == one.offload.plan_d2h_bytes);
  }
}

TEST_CASE("streamed bf16 training tracks the resident bf16 losses and is deterministic") {
  const auto ds = tiny_dataset(300, 24, 5, 3);
  const LocalProblem p = single_device_problem(ds, true);
  TrainConfig cfg = config_of(3, 64, Precision::kBf16, 10);
  const TrainReport resident = train_single(p, Device{}, cfg);
  cfg.model.offload = OffloadMode::kHost;
  cfg.model.offload_part_rows = 50;
  const TrainReport a = train_single(p, Device{}, cfg);
  const TrainReport b = train_single(p, Device{}, cfg);
  REQUIRE(a.offload.streamed);
  CHECK(a.train_loss == b.train_loss);
  // dW and db are summed part by part, so the float weights differ in their last bits and their bf16 copies may
  // round apart: the curves agree to bf16's resolution, not bit for bit.
  CHECK(worst_relative(a.train_loss, resident.train_loss) < 5e-3);
}

TEST_CASE("a model that does not fit even streamed is refused before training with the bytes it needs") {
  const auto ds = tiny_dataset(300, 24, 5, 3);
  const LocalProblem p = single_device_problem(ds, true);
  GcnConfig model;
  model.layers = 2;
  model.hidden = 64;
  model.offload = OffloadMode::kHost;
  const std::string host = refusal(p, model, 16 << 10);
  CHECK(host.find("asked") != std::string::npos);
  CHECK(host.find("--offload host") != std::string::npos);
  CHECK(host.find("limit 16.00 KiB") != std::string::npos);
  model.offload = OffloadMode::kAuto;  // the resident refusal, which also says what streaming would need
  const std::string automatic = refusal(p, model, 16 << 10);
  CHECK(automatic.find("asked") != std::string::npos);
  CHECK(automatic.find("streamed through host memory it needs") != std::string::npos);
}

TEST_CASE("offload auto stays resident when the model fits; off refuses; host with a multi-device strategy is refused") {
  const auto ds = tiny_dataset(120, 24, 5, 3);
  const LocalProblem p = single_device_problem(ds, true);
  GcnConfig model;
  {
    Resources res(Device{}, 0);
    GcnModel m(res, p, model);
    CHECK(m.streamed() == nullptr);
  }
  TrainConfig cfg = config_of(2, 64, Precision::kFp32, 2);
  const auto [resident_peak, streamed_peak] = peaks(p, cfg, 16);
  REQUIRE(streamed_peak < resident_peak);
  model.hidden = 64;
  model.offload_part_rows = 16;
  model.offload = OffloadMode::kOff;
  Resources res(Device{}, (resident_peak + streamed_peak) / 2);
  CHECK_THROWS_AS(GcnModel(res, p, model), OutOfMemory);
  model.offload = OffloadMode::kAuto;
  GcnModel streamed(res, p, model);
  CHECK(streamed.streamed() != nullptr);
}

TEST_CASE("a streamed run resumed from a checkpoint ends with the losses of an uninterrupted streamed run") {
  const auto ds = tiny_dataset(200, 24, 5, 5);
  const LocalProblem p = single_device_problem(ds, true);
  TrainConfig cfg = config_of(2, 32, Precision::kFp32, 6);
  cfg.model.offload = OffloadMode::kHost;
  cfg.model.offload_part_rows = 64;
  const TrainReport whole = train_single(p, Device{}, cfg);
  const std::string dir = "streamed_checkpoint_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  cfg.checkpoint_dir = dir;
  cfg.checkpoint_every = 2;
  cfg.epochs = 4;
  (void)train_single(p, Device{}, cfg);
  cfg.epochs = 6;
  cfg.resume = true;
  const TrainReport resumed = train_single(p, Device{}, cfg);
  CHECK(resumed.train_loss == whole.train_loss);
  CHECK(resumed.parameters == whole.parameters);
  std::filesystem::remove_all(dir);
}
