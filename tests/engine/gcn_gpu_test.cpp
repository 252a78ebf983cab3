#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "datasets/loaders.hpp"
#include "engine/trainer.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using namespace gcnpart::engine;

TEST_SUITE("gpu") {
  TEST_CASE("CPU and GPU training on Cora give the same loss per epoch within 1e-4 relative for 20 epochs") {
    REQUIRE_MESSAGE(cuda_device_count() > 0, "no CUDA device: the gpu suite needs one");
    const auto ds = datasets::load_dataset(testing::data_dir() + "/cora");
    const LocalProblem p = single_device_problem(ds, true);
    TrainConfig cfg;
    cfg.epochs = 20;
    cfg.model.seed = 7;
    const auto cpu = train_single(p, Device{}, cfg);
    for (auto algo : {SpmmAlgo::kOwn, SpmmAlgo::kCusparse}) {
      cfg.model.spmm = algo;
      const auto gpu = train_single(p, Device::parse("cuda:0"), cfg);
      REQUIRE(gpu.train_loss.size() == cpu.train_loss.size());
      for (std::size_t e = 0; e < cpu.train_loss.size(); ++e) {
        INFO("epoch " << e << " algo " << static_cast<int>(algo));
        CHECK(std::fabs(gpu.train_loss[e] - cpu.train_loss[e]) <= 1e-4 * std::fabs(cpu.train_loss[e]));
      }
    }
  }

  TEST_CASE("GCN reaches the paper's accuracy on Cora and CiteSeer over 10 seeds on the GPU") {
    REQUIRE_MESSAGE(cuda_device_count() > 0, "no CUDA device: the gpu suite needs one");
    for (const char* name : {"cora", "citeseer"}) {
      const auto ds = datasets::load_dataset(testing::data_dir() + "/" + name);
      const LocalProblem p = single_device_problem(ds, true);
      double sum = 0;
      for (int s = 1; s <= 10; ++s) {
        TrainConfig cfg;
        cfg.model.seed = static_cast<std::uint64_t>(s);
        sum += train_single(p, Device::parse("cuda:0"), cfg).accuracy[2];
      }
      MESSAGE(name << " GPU mean test accuracy " << 10 * sum << " %");
      CHECK(sum / 10 >= (std::string(name) == "cora" ? 0.805 : 0.695));
    }
  }

  TEST_CASE("CPU and GPU bf16 training on Cora give the same loss per epoch within 2e-4 relative for 20 epochs") {
    REQUIRE_MESSAGE(cuda_device_count() > 0, "no CUDA device: the gpu suite needs one");
    const auto ds = datasets::load_dataset(testing::data_dir() + "/cora");
    const LocalProblem p = single_device_problem(ds, true);
    TrainConfig cfg;
    cfg.epochs = 20;
    cfg.model.seed = 7;
    cfg.model.precision = Precision::kBf16;
    const auto cpu = train_single(p, Device{}, cfg);
    const auto gpu = train_single(p, Device::parse("cuda:0"), cfg);
    cfg.model.precision = Precision::kFp32;
    const auto gpu32 = train_single(p, Device::parse("cuda:0"), cfg);
    REQUIRE(gpu.train_loss.size() == cpu.train_loss.size());
    // Both are bf16 runs whose float sums differ in order only (SpMM, cuBLAS bf16 tensor cores, column sums), but a
    // last-bit difference can flip the bf16 rounding of a stored value near a tie. On the CPU an order-only change
    // (halo on 2 to 4 virtual devices) moves these 20 epochs' bf16 losses by at most 2.0e-5 relative; the GPU
    // changes the order of every GEMM and SpMM as well: allow 10x. (bf16 vs fp32 on the CPU: 9.0e-5.)
    for (std::size_t e = 0; e < cpu.train_loss.size(); ++e) {
      INFO("epoch " << e << ": CPU " << cpu.train_loss[e] << ", GPU " << gpu.train_loss[e]);
      CHECK(std::fabs(gpu.train_loss[e] - cpu.train_loss[e]) <= 2e-4 * std::fabs(cpu.train_loss[e]));
    }
    CHECK(gpu.train_loss != gpu32.train_loss);  // the GPU really ran bf16 ...
    const auto choice = gpu.spmm_choices.find(16);  // ... with the bf16-input SpMM (the autotuner does not run)
    CHECK((choice != gpu.spmm_choices.end() && choice->second == "own-bf16"));
  }

  TEST_CASE("GPU bf16 test accuracy on Cora and CiteSeer over 10 seeds is within 0.5 points of GPU fp32") {
    REQUIRE_MESSAGE(cuda_device_count() > 0, "no CUDA device: the gpu suite needs one");
    for (const char* name : {"cora", "citeseer"}) {
      const auto ds = datasets::load_dataset(testing::data_dir() + "/" + name);
      const LocalProblem p = single_device_problem(ds, true);
      // The same seeds: the same initial weights and dropout masks. On the CPU this comparison gives 0.00 (Cora) and
      // 0.07 points (CiteSeer), single seeds at most 0.3 points apart.
      double sum32 = 0, sum16 = 0;
      for (int s = 1; s <= 10; ++s) {
        TrainConfig cfg;
        cfg.model.seed = static_cast<std::uint64_t>(s);
        sum32 += train_single(p, Device::parse("cuda:0"), cfg).accuracy[2];
        cfg.model.precision = Precision::kBf16;
        sum16 += train_single(p, Device::parse("cuda:0"), cfg).accuracy[2];
      }
      MESSAGE(name << " GPU mean test accuracy over 10 seeds: fp32 " << 10 * sum32 << " %, bf16 " << 10 * sum16
                   << " %");
      CHECK(std::fabs(sum16 - sum32) / 10 <= 0.005);
    }
  }
}
