#include "engine/problem.hpp"
#include "engine/trainer.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>

#include "datasets/generators.hpp"
#include "datasets/loaders.hpp"
#include "engine/train.hpp"
#include "base/error.hpp"
#include "dataset_fixtures.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using namespace gcnpart::engine;
using partition::Strategy;
using testing::cora;
using testing::dense_feature_graph;
using testing::sbm_3000;

namespace {

TrainConfig twenty_epochs(int layers) {
  TrainConfig cfg;
  cfg.epochs = 20;
  cfg.model.layers = layers;
  cfg.model.seed = 3;
  cfg.model.dropout = 0.5f;
  cfg.evaluate_every_epoch = false;
  return cfg;
}

void check_same_training(const TrainReport& single, const TrainReport& dist, double tolerance) {
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
  for (Strategy s : {Strategy::kHalo, Strategy::kGather, Strategy::kBoundary, Strategy::kPipeline}) {
    for (int k : {2, 3, 4}) {
      if (s == Strategy::kPipeline && k > layers) continue;  // a stage needs at least one layer
      INFO(ds.name << ": " << to_string(s) << " on " << k << " virtual devices, " << layers
                   << " layers");
      const auto plan = partition::make_plan(ds.graph, s, k, layers);
      const auto dist = train_distributed(ds, plan, cfg);
      check_same_training(single, dist, 1e-5);
      CHECK(dist.accuracy[2] == doctest::Approx(single.accuracy[2]).epsilon(0.005));
    }
  }
}

}  // namespace

TEST_CASE("halo, gather, boundary and pipeline on 2, 3 and 4 virtual devices reproduce single-device training on Cora") {
  check_exact_strategies(cora(), 2);
}

TEST_CASE("halo, gather, boundary and pipeline reproduce single-device training on a generated graph with 3 layers") {
  check_exact_strategies(sbm_3000(), 3);
}

TEST_CASE("boundary sends fewer bytes than gather's table, and nothing on one device, training as single does") {
  auto cfg = twenty_epochs(2);
  cfg.epochs = 3;
  const auto single = train_single(single_device_problem(cora(), true), Device{}, cfg);
  for (int k : {1, 2, 4}) {
    INFO("boundary on " << k << " virtual devices");
    const auto boundary = partition::make_plan(cora().graph, Strategy::kBoundary, k, 2);
    const auto dist = train_distributed(cora(), boundary, cfg);
    check_same_training(single, dist, 1e-5);
    if (k == 1) {
      CHECK(dist.bytes_sent_per_epoch[0] == 0);  // one device: nothing to exchange
      continue;
    }
    const auto gather = partition::make_plan(cora().graph, Strategy::kGather, k, 2);
    const auto table = train_distributed(cora(), gather, cfg);
    for (int d = 0; d < k; ++d) {
      INFO("device " << d);
      CHECK(dist.bytes_sent_per_epoch[d] > 0);
      CHECK(dist.bytes_sent_per_epoch[d] < table.bytes_sent_per_epoch[d]);
    }
  }
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

TEST_CASE("every device's epoch splits into communication and compute that add up to its epoch") {
  auto cfg = twenty_epochs(2);
  cfg.epochs = 6;
  for (Strategy s : {Strategy::kGather, Strategy::kHalo, Strategy::kBoundary, Strategy::kPipeline}) {
    INFO(to_string(s));
    const auto plan = partition::make_plan(cora().graph, s, 2, 2);
    const auto dist = train_distributed(cora(), plan, cfg);
    REQUIRE(dist.comm_ms_per_epoch.size() == 2);
    REQUIRE(dist.comm_seconds.size() == 2);
    for (std::size_t d = 0; d < 2; ++d) {
      INFO("device " << d);
      REQUIRE(dist.comm_seconds[d].size() == 6);
      REQUIRE(dist.device_step_seconds[d].size() == 6);
      for (std::size_t e = 0; e < 6; ++e) {
        CHECK(dist.comm_seconds[d][e] >= 0.0);
        CHECK(dist.comm_seconds[d][e] <= dist.device_step_seconds[d][e]);
      }
      CHECK(dist.comm_ms_per_epoch[d] > 0.0);  // every strategy communicates every epoch
      CHECK(dist.compute_ms_per_epoch[d] > 0.0);
      CHECK(dist.wait_ms_per_epoch[d] >= 0.0);
      CHECK(dist.comm_ms_per_epoch[d] + dist.wait_ms_per_epoch[d] + dist.compute_ms_per_epoch[d] ==
            doctest::Approx(dist.epoch_ms_per_epoch[d]).epsilon(1e-9));
      const double slowest = *std::max_element(dist.epoch_seconds.begin(), dist.epoch_seconds.end());
      CHECK(dist.epoch_ms_per_epoch[d] <= 1e3 * slowest);
    }
  }
}

TEST_CASE("reports carry one memory check per device, without a driver view on virtual CPU devices") {
  const auto cfg = twenty_epochs(2);
  const auto plan = partition::make_plan(cora().graph, Strategy::kHalo, 3, 2);
  const auto dist = train_distributed(cora(), plan, cfg);
  REQUIRE(dist.memory_check.size() == 3);
  for (std::size_t d = 0; d < 3; ++d) {
    const MemoryCheck& m = dist.memory_check[d];
    CHECK_FALSE(m.available);
    CHECK(m.tracked_peak == dist.memory[d].peak);
    CHECK(m.cache_slack == 0);  // host memory is freed, not cached
    CHECK(m.context == 0);
    CHECK(m.nccl == 0);
    CHECK(m.accounted() == m.tracked_peak);
    CHECK_FALSE(m.within(0.05));  // nothing measured, nothing confirmed
  }
  const auto single = train_single(single_device_problem(cora(), true), Device{}, cfg);
  CHECK_FALSE(single.memory_check[0].available);
  CHECK(single.memory_check[0].tracked_peak == single.memory[0].peak);
}

TEST_CASE("the memory check's relative error is measured over the accounted bytes") {
  MemoryCheck m;
  m.available = true;
  m.context = 500;
  m.nccl = 200;
  m.libraries = 50;
  m.tracked_peak = 200;
  m.cache_slack = 50;
  m.measured = 1040;
  CHECK(m.accounted() == 1000);
  CHECK(m.rel_error() == doctest::Approx(0.04));
  CHECK(m.within(0.05));
  m.measured = 940;
  CHECK(m.rel_error() == doctest::Approx(-0.06));
  CHECK_FALSE(m.within(0.05));
}

TEST_CASE("the link benchmark, forced on virtual devices, times the strategy's own collective at the training's size") {
  auto cfg = twenty_epochs(2);
  cfg.epochs = 4;
  LaunchOptions launch;
  launch.link = LaunchOptions::Link::kAlways;
  struct Case {
    Strategy strategy;
    CollectiveKind kind;
  };
  for (const Case c :
       {Case{Strategy::kGather, CollectiveKind::kAllGather}, Case{Strategy::kHalo, CollectiveKind::kAllReduce}}) {
    INFO(to_string(c.strategy));
    const auto plan = partition::make_plan(cora().graph, c.strategy, 2, 2);
    const auto dist = train_distributed(cora(), plan, cfg, {}, launch);
    REQUIRE(dist.has_link);
    CHECK(dist.link.collective == c.kind);
    CHECK(dist.link.payload_bytes > 0);
    CHECK(dist.link.calls_per_epoch >= 1);
    REQUIRE(dist.link.devices.size() == 2);
    for (const auto& d : dist.link.devices) {
      CHECK(d.train_GBps > 0.0);
      CHECK(d.train_same_GBps > 0.0);
      CHECK(d.plain_GBps > 0.0);
      CHECK(d.plain_median_ms > 0.0);
    }
    CHECK(dist.link.ratio() > 0.0);
    // The gather strategy's largest all-gather: the table block of the widest aggregation (16 hidden, fp32).
    if (c.strategy == Strategy::kGather) CHECK(dist.link.payload_bytes == plan.table_block * 16 * 4);
    // The benchmark ran after the report's figures were taken: they are the training's alone.
    const auto without = train_distributed(cora(), plan, cfg);
    CHECK_FALSE(without.has_link);  // kAuto: GPUs only
    CHECK(without.bytes_sent == dist.bytes_sent);
  }
  const auto pipeline = partition::make_plan(cora().graph, Strategy::kPipeline, 2, 2);
  CHECK_FALSE(train_distributed(cora(), pipeline, cfg, {}, launch).has_link);
}

TEST_SUITE("gpu") {
  TEST_CASE("on GPUs the driver's memory use is within 5 % of the accounted terms, and the link is measured") {
    REQUIRE_MESSAGE(cuda_device_count() > 0, "no CUDA device: the gpu suite needs one");
    const int gpus = cuda_device_count();
    auto cfg = twenty_epochs(2);
    LaunchOptions launch;
    launch.backend = Backend::kCuda;
    for (Strategy s : {Strategy::kHalo, Strategy::kGather}) {
      INFO(to_string(s) << " on " << gpus << " GPU(s)");
      const auto plan = partition::make_plan(cora().graph, s, gpus, 2);
      const auto dist = train_distributed(cora(), plan, cfg, {}, launch);
      REQUIRE(dist.memory_check.size() == static_cast<std::size_t>(gpus));
      for (const auto& m : dist.memory_check) {
        INFO("measured " << m.measured << ", context " << m.context << ", nccl " << m.nccl << ", libraries "
                         << m.libraries << ", tracked " << m.tracked_peak << ", slack " << m.cache_slack);
        CHECK(m.available);
        CHECK(m.context > 0);
        CHECK(m.within(0.05));
      }
      for (std::size_t d = 0; d < dist.comm_ms_per_epoch.size(); ++d)
        CHECK(dist.comm_ms_per_epoch[d] + dist.wait_ms_per_epoch[d] + dist.compute_ms_per_epoch[d] ==
              doctest::Approx(dist.epoch_ms_per_epoch[d]).epsilon(1e-9));
      CHECK(dist.has_link == (gpus > 1));
      if (dist.has_link) CHECK(dist.link.plain_GBps() > 0.0);
    }
  }


  TEST_CASE("halo, gather and boundary on every visible GPU through NCCL reproduce single-GPU losses on Cora") {
    REQUIRE_MESSAGE(cuda_device_count() > 0, "no CUDA device: the gpu suite needs one");
    const int gpus = cuda_device_count();
    auto cfg = twenty_epochs(2);
    const auto single = train_single(single_device_problem(cora(), true), Device::parse("cuda:0"), cfg);
    LaunchOptions launch;
    launch.backend = Backend::kCuda;
    for (Strategy s : {Strategy::kHalo, Strategy::kGather, Strategy::kBoundary}) {
      INFO(to_string(s) << " on " << gpus << " GPU(s)");
      const auto plan = partition::make_plan(cora().graph, s, gpus, 2);
      const auto dist = train_distributed(cora(), plan, cfg, {}, launch);
      check_same_training(single, dist, 1e-4);
      CHECK(dist.driver_bytes.size() == static_cast<std::size_t>(gpus));
    }
  }

  TEST_CASE("gather with its collectives in 2 and 4 column chunks reproduces single-GPU losses on Cora") {
    REQUIRE_MESSAGE(cuda_device_count() > 0, "no CUDA device: the gpu suite needs one");
    const int gpus = cuda_device_count();
    auto cfg = twenty_epochs(2);
    cfg.model.hidden = 64;  // chunks need widths of 32 columns or more
    const auto single = train_single(single_device_problem(cora(), true), Device::parse("cuda:0"), cfg);
    LaunchOptions launch;
    launch.backend = Backend::kCuda;
    const auto plan = partition::make_plan(cora().graph, Strategy::kGather, gpus, 2);
    for (int chunks : {2, 4}) {
      INFO(chunks << " chunks on " << gpus << " GPU(s)");
      cfg.model.gather_chunks = chunks;
      check_same_training(single, train_distributed(cora(), plan, cfg, {}, launch), 1e-4);
    }
  }
}

TEST_CASE("pipeline with 4 layers on 2 and 4 stages reproduces single-device training and holds only its layers") {
  const auto cfg = twenty_epochs(4);
  const auto single = train_single(single_device_problem(sbm_3000(), true), Device{}, cfg);
  for (int k : {2, 4}) {
    INFO("pipeline on " << k << " stages");
    const auto plan = partition::make_plan(sbm_3000().graph, Strategy::kPipeline, k, 4);
    const auto dist = train_distributed(sbm_3000(), plan, cfg);
    check_same_training(single, dist, 1e-5);
    const auto w = dist.memory[0].at_peak_by[static_cast<std::size_t>(MemoryCategory::kWeights)];
    CHECK(w < single.memory[0].at_peak_by[static_cast<std::size_t>(MemoryCategory::kWeights)]);
  }
}

TEST_CASE("pipeline refuses more stages than layers") {
  const auto plan = partition::make_plan(cora().graph, Strategy::kPipeline, 3, 2);
  CHECK_THROWS_AS(train_distributed(cora(), plan, twenty_epochs(2)), InvalidInput);
}

// ---------------------------------------------------------------------------------------------------- bf16

namespace {

TrainConfig bf16_ten_epochs(int layers, std::int64_t hidden) {
  TrainConfig cfg = twenty_epochs(layers);
  cfg.epochs = 10;
  cfg.model.hidden = hidden;
  cfg.model.precision = Precision::kBf16;
  return cfg;
}

/// Halo and gather on 2 and 3 virtual devices against single-device training, all in bf16. Only the summation
/// order of the SpMMs and of the gradient all-reduce differs, but a float sum that differs in its last bit can
/// flip the bf16 rounding (2^-9 relative) of a stored activation near a tie, so bf16 runs spread far more than the
/// fp32 ones (1e-7). 3 devices give the gather table an odd block: its bf16 all-gather pads every block by one
/// element when block x width is odd (GatherAggregation::forward_odd_bf16), here at the output layer (width =
/// classes, odd).
void check_bf16_strategies(const datasets::Dataset& ds, int layers, std::int64_t hidden) {
  const auto cfg = bf16_ten_epochs(layers, hidden);
  auto cfg32 = cfg;
  cfg32.model.precision = Precision::kFp32;
  const auto single = train_single(single_device_problem(ds, true), Device{}, cfg);
  REQUIRE(ds.num_classes % 2 == 1);
  for (Strategy s : {Strategy::kHalo, Strategy::kGather, Strategy::kBoundary}) {
    for (int k : {2, 3}) {
      INFO(ds.name << ": " << to_string(s) << " on " << k << " virtual devices in bf16");
      const auto plan = partition::make_plan(ds.graph, s, k, layers);
      if (s == Strategy::kGather && k == 3) {
        INFO("table block " << plan.table_block);
        REQUIRE(plan.table_block % 2 == 1);  // odd block x odd classes: the padded all-gather is exercised
      }
      const auto dist = train_distributed(ds, plan, cfg);
      REQUIRE(dist.train_loss.size() == single.train_loss.size());
      double gap = 0.0;
      for (std::size_t e = 0; e < single.train_loss.size(); ++e)
        gap = std::max(gap, std::fabs(dist.train_loss[e] - single.train_loss[e]) / std::fabs(single.train_loss[e]));
      // Measured at most 1.7e-5 (halo on 3 devices, dense graph); gather on Cora stays at 1.2e-7. 2e-4 leaves a
      // 10x margin and stays below the bf16 - fp32 gap growth a broken aggregation would cause.
      CHECK(gap <= 2e-4);
      double diff = 0.0, norm = 0.0;
      REQUIRE(dist.parameters.size() == single.parameters.size());
      for (std::size_t t = 0; t < single.parameters.size(); ++t)
        for (std::size_t i = 0; i < single.parameters[t].size(); ++i) {
          diff += std::pow(static_cast<double>(dist.parameters[t][i]) - single.parameters[t][i], 2);
          norm += std::pow(static_cast<double>(single.parameters[t][i]), 2);
        }
      // Adam turns the sign noise of near-zero gradients into full lr steps, so weights spread more than losses:
      // relative L2 difference measured at most 1.3e-2 (single bf16 vs single fp32: 1.8e-2 on Cora, 4.2e-2 on
      // the dense graph).
      CHECK(std::sqrt(diff / norm) <= 4e-2);
      CHECK(std::fabs(dist.accuracy[2] - single.accuracy[2]) <= 0.01);  // measured at most 0.003
      // bf16 reached every device: the same plan in fp32 gives other losses.
      CHECK(train_distributed(ds, plan, cfg32).train_loss != dist.train_loss);
    }
  }
}

}  // namespace

TEST_CASE("halo, gather and boundary on 2 and 3 virtual devices in bf16 reproduce bf16 single-device losses on Cora") {
  check_bf16_strategies(cora(), 2, 16);
}

TEST_CASE("halo, gather and boundary in bf16 reproduce bf16 single-device losses on a dense-feature graph, 3 layers") {
  check_bf16_strategies(dense_feature_graph(), 3, 64);
}

TEST_CASE("a killed and resumed halo, gather, boundary or pipeline run on 2 devices ends bit-identical to an "
          "uninterrupted one") {
  for (const Strategy s : {Strategy::kHalo, Strategy::kGather, Strategy::kBoundary, Strategy::kPipeline}) {
    CAPTURE(to_string(s));
    const auto plan = partition::make_plan(cora().graph, s, 2, 2);
    TrainConfig cfg = twenty_epochs(2);
    cfg.epochs = 12;
    cfg.early_stopping = 50;  // exercises the stored early-stopping state without stopping
    const auto whole = train_distributed(cora(), plan, cfg);

    testing::TempDir dir;
    cfg.checkpoint_dir = dir.path.string();
    cfg.checkpoint_every = 4;
    cfg.fault = {FaultInjection::Kind::kThrow, 1, 9};  // device 1 fails in epoch 9; last checkpoint after epoch 7
    CHECK_THROWS_AS(train_distributed(cora(), plan, cfg), FaultInjected);
    CHECK(read_checkpoint_latest(cfg.checkpoint_dir, 2) == 8);
    cfg.fault = {};
    cfg.resume = true;
    const auto resumed = train_distributed(cora(), plan, cfg);
    CHECK(resumed.resumed_at == 8);
    CHECK(resumed.epoch_seconds.size() == 4);
    CHECK(resumed.train_loss == whole.train_loss);  // bit-identical, not within a tolerance
    CHECK(resumed.valid_loss == whole.valid_loss);
    CHECK(resumed.parameters == whole.parameters);
    CHECK(resumed.accuracy[2] == whole.accuracy[2]);
    // Only the named generation is left: one file per device.
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path)) files += e.path().extension() == ".gckpt";
    CHECK(files == 2);
    // A checkpoint of 2 devices does not resume a run on 3.
    const auto three = partition::make_plan(cora().graph, s == Strategy::kPipeline ? Strategy::kHalo : s, 3, 2);
    CHECK_THROWS_AS(train_distributed(cora(), three, cfg), InvalidInput);
  }
}

TEST_CASE("single is the one training loop with one device: a resumed single run matches and names its generation") {
  const LocalProblem p = single_device_problem(cora(), true);
  TrainConfig cfg = twenty_epochs(2);
  cfg.epochs = 9;
  const auto whole = train_single(p, Device{}, cfg);
  CHECK(whole.parts == 1);
  CHECK(whole.memory.size() == 1);
  CHECK(whole.comm_ms_per_epoch == std::vector<double>{0.0});
  testing::TempDir dir;
  cfg.checkpoint_dir = dir.path.string();
  cfg.checkpoint_every = 3;
  cfg.fault = {FaultInjection::Kind::kThrow, 0, 7};
  CHECK_THROWS_AS(train_single(p, Device{}, cfg), FaultInjected);
  CHECK(read_checkpoint_latest(cfg.checkpoint_dir, 1) == 6);
  cfg.fault = {};
  cfg.resume = true;
  const auto resumed = train_single(p, Device{}, cfg);
  CHECK(resumed.train_loss == whole.train_loss);
  CHECK(resumed.parameters == whole.parameters);
}

TEST_CASE("time a fast device spends blocked on a straggler is waiting, not communication or compute") {
  const auto plan = partition::make_plan(cora().graph, Strategy::kGather, 2, 2);
  TrainConfig cfg = twenty_epochs(2);
  cfg.epochs = 6;
  cfg.fault.kind = FaultInjection::Kind::kSlow;
  cfg.fault.rank = 1;
  cfg.fault.slow_ms = 80;  // device 1 computes 80 ms longer every step (a margin over a loaded machine's noise)
  const auto dist = train_distributed(cora(), plan, cfg);
  REQUIRE(dist.wait_ms_per_epoch.size() == 2);
  INFO("device 0: compute " << dist.compute_ms_per_epoch[0] << " comm " << dist.comm_ms_per_epoch[0] << " wait "
                            << dist.wait_ms_per_epoch[0] << "; device 1: compute " << dist.compute_ms_per_epoch[1]
                            << " comm " << dist.comm_ms_per_epoch[1] << " wait " << dist.wait_ms_per_epoch[1]);
  CHECK(dist.wait_ms_per_epoch[0] >= 50.0);  // the fast device waits for the straggler's 80 ms
  CHECK(dist.wait_ms_per_epoch[1] <= 0.25 * dist.wait_ms_per_epoch[0]);
  CHECK(dist.compute_ms_per_epoch[1] >= dist.compute_ms_per_epoch[0] + 50.0);
  CHECK(dist.comm_ms_per_epoch[0] < dist.wait_ms_per_epoch[0]);  // the 80 ms went to waiting, not communication
  // max / mean of the measured compute; with device 1 at least 50 ms slower it exceeds 1 by a margin set by the
  // base compute, which a loaded CI machine stretches, so the bound is derived from the measurement, not fixed.
  const double c0 = dist.compute_ms_per_epoch[0], c1 = dist.compute_ms_per_epoch[1];
  CHECK(dist.compute_imbalance() == doctest::Approx(2.0 * std::max(c0, c1) / (c0 + c1)));
  CHECK(dist.compute_imbalance() >= 2.0 * (c0 + 50.0) / (2.0 * c0 + 50.0) - 1e-9);
  CHECK(dist.exposed_communication() >= 0.0);
  CHECK(dist.exposed_communication() < 1.0);
}

TEST_CASE("boundary gives the same losses with and without overlapping the interior rows with the exchange") {
  const auto plan = partition::make_plan(cora().graph, Strategy::kBoundary, 3, 2);
  TrainConfig cfg = twenty_epochs(2);
  cfg.epochs = 5;
  const auto with = train_distributed(cora(), plan, cfg);
  cfg.model.boundary_overlap = false;
  const auto without = train_distributed(cora(), plan, cfg);
  CHECK(with.train_loss == without.train_loss);  // row by row the same sums: bit-identical
  CHECK(with.parameters == without.parameters);
  CHECK(with.bytes_sent_per_epoch == without.bytes_sent_per_epoch);
}

TEST_CASE("a cancel flag set during training stops single and multi-device runs at the next epoch with Cancelled") {
  auto cfg = twenty_epochs(2);
  std::atomic<bool> cancel{false};
  cfg.cancel = &cancel;
  int epochs_seen = 0;
  const EpochCallback stop_after_three = [&](int epoch, double, double, double) {
    ++epochs_seen;
    if (epoch == 2) cancel = true;
  };
  CHECK_THROWS_AS(train_single(single_device_problem(cora(), true), Device{}, cfg, stop_after_three), Cancelled);
  CHECK(epochs_seen == 3);
  cancel = false;
  epochs_seen = 0;
  const auto plan = partition::make_plan(cora().graph, Strategy::kHalo, 2, 2);
  CHECK_THROWS_AS(train_distributed(cora(), plan, cfg, stop_after_three), Cancelled);
  CHECK(epochs_seen == 3);
  cancel = false;
  CHECK(train_single(single_device_problem(cora(), true), Device{}, cfg).epochs_run == 20);
}

TEST_CASE("predict gives every node's logits in dataset order, whose argmax reproduces the trained accuracy") {
  TrainRequest q;
  q.config = twenty_epochs(2);
  const auto s = train(cora(), q);
  const auto logits = predict(cora(), q.config.model, true, s.runs.front().parameters, Device{});
  const auto classes = static_cast<std::size_t>(cora().num_classes);
  REQUIRE(logits.size() == static_cast<std::size_t>(cora().num_nodes()) * classes);
  std::int64_t correct = 0;
  const auto& test = cora().split("test");
  for (auto v : test) {
    const float* row = logits.data() + static_cast<std::size_t>(v) * classes;
    correct += std::max_element(row, row + classes) - row == cora().labels[v] ? 1 : 0;
  }
  CHECK(static_cast<double>(correct) / static_cast<double>(test.size()) == doctest::Approx(s.accuracy[2].mean));
}
