#include <doctest/doctest.h>

#include <cmath>

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
    for (auto algo : {kernels::SpmmAlgo::kOwn, kernels::SpmmAlgo::kCusparse}) {
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
}
