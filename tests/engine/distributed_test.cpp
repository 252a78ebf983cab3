#include "engine/distributed.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include "datasets/generators.hpp"
#include "datasets/loaders.hpp"
#include "kernels/core/error.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using namespace gcnpart::engine;
using partition::Strategy;

namespace {

const datasets::Dataset& cora() {
  static const datasets::Dataset ds = datasets::load_dataset(testing::data_dir() + "/cora");
  return ds;
}

const datasets::Dataset& generated() {
  static const datasets::Dataset ds = [] {
    datasets::SbmParams p;
    p.nodes = 3000;
    p.classes = 5;
    p.features = 48;
    p.seed = 11;
    return datasets::generate_sbm(p);
  }();
  return ds;
}

TrainConfig twenty_epochs(int layers) {
  TrainConfig cfg;
  cfg.epochs = 20;
  cfg.model.layers = layers;
  cfg.model.seed = 3;
  cfg.model.dropout = 0.5f;
  cfg.evaluate_every_epoch = false;
  return cfg;
}

void check_same_training(const RunReport& single, const DistributedReport& dist, double tolerance) {
  REQUIRE(dist.train_loss.size() == single.train_loss.size());
  for (std::size_t e = 0; e < single.train_loss.size(); ++e) {
    INFO("epoch " << e << ": single " << single.train_loss[e] << " vs " << dist.train_loss[e]);
    CHECK(std::fabs(dist.train_loss[e] - single.train_loss[e]) <= tolerance * std::fabs(single.train_loss[e]));
  }
  REQUIRE(dist.parameters.size() == single.parameters.size());
  double max_diff = 0, max_abs = 0;
  for (std::size_t t = 0; t < single.parameters.size(); ++t)
    for (std::size_t i = 0; i < single.parameters[t].size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(dist.parameters[t][i] - single.parameters[t][i])));
      max_abs = std::max(max_abs, static_cast<double>(std::fabs(single.parameters[t][i])));
    }
  INFO("largest weight difference " << max_diff << " of weights up to " << max_abs);
  CHECK(max_diff <= 1e-4 * max_abs);
}

void check_exact_strategies(const datasets::Dataset& ds, int layers) {
  const auto cfg = twenty_epochs(layers);
  const auto single = train_single(single_device_problem(ds, true), Device{}, cfg);
  for (Strategy s : {Strategy::kHalo, Strategy::kGather, Strategy::kPipeline}) {
    for (int k : {2, 3, 4}) {
      if (s == Strategy::kPipeline && k > layers) continue;  // a stage needs at least one layer
      INFO(ds.name << ": " << partition::strategy_name(s) << " on " << k << " virtual devices, " << layers
                   << " layers");
      const auto plan = partition::make_plan(ds.graph, s, k, layers);
      const auto dist = train_distributed(ds, plan, cfg);
      check_same_training(single, dist, 1e-5);
      CHECK(dist.accuracy[2] == doctest::Approx(single.accuracy[2]).epsilon(0.005));
    }
  }
}

}  // namespace

TEST_CASE("halo, gather and pipeline on 2, 3 and 4 virtual devices reproduce single-device training on Cora") {
  check_exact_strategies(cora(), 2);
}

TEST_CASE("halo, gather and pipeline reproduce single-device training on a generated graph with 3 layers") {
  check_exact_strategies(generated(), 3);
}

TEST_CASE("drop on one device equals single-device training") {
  const auto cfg = twenty_epochs(2);
  const auto single = train_single(single_device_problem(cora(), true), Device{}, cfg);
  const auto plan = partition::make_plan(cora().graph, Strategy::kDrop, 1, 2);
  const auto dist = train_distributed(cora(), plan, cfg);
  check_same_training(single, dist, 1e-6);
}

TEST_CASE("drop on 4 devices loses edges and trains to a different loss than single") {
  const auto cfg = twenty_epochs(2);
  const auto single = train_single(single_device_problem(cora(), true), Device{}, cfg);
  const auto plan = partition::make_plan(cora().graph, Strategy::kDrop, 4, 2);
  CHECK(plan.metrics.lost_edges > 0);
  const auto dist = train_distributed(cora(), plan, cfg);
  CHECK(std::fabs(dist.train_loss.back() - single.train_loss.back()) > 1e-4);
}

TEST_CASE("every virtual device tracks its own peak memory and the gather table dominates gather's") {
  const auto cfg = twenty_epochs(2);
  const auto plan = partition::make_plan(cora().graph, Strategy::kGather, 4, 2);
  const auto dist = train_distributed(cora(), plan, cfg);
  REQUIRE(dist.memory.size() == 4);
  for (const auto& m : dist.memory) {
    CHECK(m.peak > 0);
    CHECK(m.current <= m.peak);
  }
  for (std::size_t d = 0; d < 4; ++d) {
    const auto comm = dist.memory[d].at_peak_by[static_cast<std::size_t>(MemoryCategory::kCommunication)];
    CHECK(comm >= plan.table_block * 4 * 16 * 4);  // the table: parts x block slots x widest aggregation (16) floats
    CHECK(dist.bytes_sent_per_epoch[d] > 0);
  }
}

TEST_CASE("a device that runs out of memory fails the run with its message instead of hanging the others") {
  auto cfg = twenty_epochs(2);
  cfg.memory_limit = 64 * 1024;
  const auto plan = partition::make_plan(cora().graph, Strategy::kHalo, 3, 2);
  CHECK_THROWS_AS(train_distributed(cora(), plan, cfg), OutOfMemory);
}

TEST_SUITE("gpu") {
  TEST_CASE("halo and gather on every visible GPU through NCCL reproduce single-GPU losses on Cora") {
    REQUIRE_MESSAGE(cuda_device_count() > 0, "no CUDA device: the gpu suite needs one");
    const int gpus = cuda_device_count();
    auto cfg = twenty_epochs(2);
    const auto single = train_single(single_device_problem(cora(), true), Device::parse("cuda:0"), cfg);
    LaunchOptions launch;
    launch.backend = kernels::Backend::kCuda;
    for (Strategy s : {Strategy::kHalo, Strategy::kGather}) {
      INFO(partition::strategy_name(s) << " on " << gpus << " GPU(s)");
      const auto plan = partition::make_plan(cora().graph, s, gpus, 2);
      const auto dist = train_distributed(cora(), plan, cfg, {}, launch);
      check_same_training(single, dist, 1e-4);
      CHECK(dist.driver_bytes.size() == static_cast<std::size_t>(gpus));
    }
  }
}

TEST_CASE("pipeline with 4 layers on 2 and 4 stages reproduces single-device training and holds only its layers") {
  const auto cfg = twenty_epochs(4);
  const auto single = train_single(single_device_problem(generated(), true), Device{}, cfg);
  for (int k : {2, 4}) {
    INFO("pipeline on " << k << " stages");
    const auto plan = partition::make_plan(generated().graph, Strategy::kPipeline, k, 4);
    const auto dist = train_distributed(generated(), plan, cfg);
    check_same_training(single, dist, 1e-5);
    const auto w = dist.memory[0].at_peak_by[static_cast<std::size_t>(MemoryCategory::kWeights)];
    CHECK(w < single.memory.at_peak_by[static_cast<std::size_t>(MemoryCategory::kWeights)]);
  }
}

TEST_CASE("pipeline refuses more stages than layers") {
  const auto plan = partition::make_plan(cora().graph, Strategy::kPipeline, 3, 2);
  CHECK_THROWS_AS(train_distributed(cora(), plan, twenty_epochs(2)), InvalidInput);
}
