#include "engine/gcn.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <numeric>

#include "datasets/loaders.hpp"
#include "engine/trainer.hpp"
#include "kernels/core/atomic_file.hpp"
#include "kernels/core/error.hpp"
#include "kernels/core/philox.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using namespace gcnpart::engine;

namespace {

/// A small random dataset: ring plus chords, random features, labels, train split on half the nodes.
datasets::Dataset tiny_dataset(std::int64_t n, std::int64_t f, std::int32_t c, std::uint64_t seed) {
  datasets::Dataset ds;
  ds.name = "tiny";
  datasets::EdgeList e;
  e.num_nodes = n;
  for (std::int64_t u = 0; u < n; ++u) {
    e.src.push_back(static_cast<NodeId>(u));
    e.dst.push_back(static_cast<NodeId>((u + 1) % n));
    e.src.push_back(static_cast<NodeId>(u));
    e.dst.push_back(static_cast<NodeId>((u * 7 + 3) % n));
  }
  ds.graph = datasets::build_csr(e);
  ds.num_features = f;
  ds.num_classes = c;
  for (std::int64_t i = 0; i < n * f; ++i) {
    const auto r = rng::philox4x32(seed, static_cast<std::uint64_t>(i), 1);
    ds.features.push_back(rng::to_unit_float(r.v[0]) * 2.0f);
  }
  for (std::int64_t u = 0; u < n; ++u) ds.labels.push_back(static_cast<std::int32_t>((u * 5 + seed) % c));
  for (std::int64_t u = 0; u < n; u += 2) ds.splits["train"].push_back(static_cast<NodeId>(u));
  for (std::int64_t u = 1; u < n; u += 2) ds.splits["valid"].push_back(static_cast<NodeId>(u));
  ds.splits["test"] = ds.splits["valid"];
  return ds;
}

/// Double-precision GCN forward + mean cross-entropy over the training rows, written independently of the engine.
double reference_loss(const LocalProblem& p, const std::vector<std::int64_t>& dims,
                      const std::vector<std::vector<double>>& params) {
  const std::int64_t n = p.num_rows;
  std::vector<double> h(p.features.begin(), p.features.end());
  const std::size_t layers = dims.size() - 1;
  for (std::size_t l = 0; l < layers; ++l) {
    const std::int64_t in = dims[l], out = dims[l + 1];
    std::vector<double> agg(static_cast<std::size_t>(n * in), 0.0);
    for (std::int64_t i = 0; i < n; ++i)
      for (RowOffset e = p.graph.row_offsets[i]; e < p.graph.row_offsets[i + 1]; ++e) {
        const NodeId j = p.graph.col_ids[e];
        const double a = static_cast<double>(p.dinv_row[i]) * p.dinv_col[j];
        for (std::int64_t k = 0; k < in; ++k) agg[i * in + k] += a * h[j * in + k];
      }
    std::vector<double> z(static_cast<std::size_t>(n * out), 0.0);
    const auto& w = params[2 * l];
    const auto& b = params[2 * l + 1];
    for (std::int64_t i = 0; i < n; ++i)
      for (std::int64_t o = 0; o < out; ++o) {
        double s = b[o];
        for (std::int64_t k = 0; k < in; ++k) s += agg[i * in + k] * w[k * out + o];
        z[i * out + o] = (l + 1 < layers) ? std::max(s, 0.0) : s;
      }
    h = std::move(z);
  }
  const std::int64_t c = dims.back();
  double loss = 0;
  for (NodeId i : p.train_rows) {
    double mx = -1e300;
    for (std::int64_t k = 0; k < c; ++k) mx = std::max(mx, h[i * c + k]);
    double se = 0;
    for (std::int64_t k = 0; k < c; ++k) se += std::exp(h[i * c + k] - mx);
    loss += -(h[i * c + p.labels[i]] - mx - std::log(se));
  }
  return loss / static_cast<double>(p.train_rows.size());
}

void check_gradients(int layers, std::int64_t features, std::int64_t hidden, std::int32_t classes) {
  const auto ds = tiny_dataset(9, features, classes, 3);
  const LocalProblem p = single_device_problem(ds, false);
  GcnConfig cfg;
  cfg.layers = layers;
  cfg.hidden = hidden;
  cfg.dropout = 0.0f;
  cfg.seed = 5;
  Resources res(Device{});
  GcnModel model(res, p, cfg);
  const double loss_sum = model.forward_backward(0);
  const auto grads = model.gradients();
  const auto params = model.parameters();
  std::vector<std::vector<double>> dp;
  for (const auto& t : params) dp.emplace_back(t.begin(), t.end());
  const double ref = reference_loss(p, model.dims(), dp);
  CHECK(loss_sum / static_cast<double>(p.train_rows.size()) == doctest::Approx(ref).epsilon(1e-5));
  const double h = 1e-6;
  for (std::size_t t = 0; t < dp.size(); ++t) {
    for (std::size_t i = 0; i < dp[t].size(); ++i) {
      auto plus = dp, minus = dp;
      plus[t][i] += h;
      minus[t][i] -= h;
      const double fd = (reference_loss(p, model.dims(), plus) - reference_loss(p, model.dims(), minus)) / (2 * h);
      INFO("tensor " << t << " index " << i);
      CHECK(grads[t][i] == doctest::Approx(fd).epsilon(2e-3).scale(1e-2));
    }
  }
}

}  // namespace

TEST_CASE("GCN gradients match finite differences of a double-precision reference for both aggregation orders") {
  check_gradients(2, 5, 4, 3);  // layer 0: 5 > 4 -> Â(XW); layer 1: 4 > 3 -> Â(HW)
  check_gradients(2, 3, 6, 2);  // layer 0: 3 <= 6 -> (ÂX)W
  check_gradients(3, 4, 4, 3);  // a middle layer: (ÂH)W with in == out
}

TEST_CASE("tracked peak equals an independent count of the bytes the model holds") {
  const auto ds = tiny_dataset(50, 12, 4, 1);
  const LocalProblem p = single_device_problem(ds, true);
  GcnConfig cfg;
  cfg.layers = 2;
  cfg.hidden = 8;
  cfg.dropout = 0.5f;
  Resources res(Device{});
  {
    GcnModel model(res, p, cfg);
    (void)model.train_step(0);
    (void)model.evaluate();
    const std::int64_t n = p.num_rows, e = p.graph.num_edges(), f = 12, h = 8, c = 4;
    const std::int64_t graph = (n + 1) * 8 + e * 4 + 2 * n * 4 + n * 4;  // offsets, cols, dinv x2, global ids
    const std::int64_t feats = n * f * 4 + n * 4 +
                               static_cast<std::int64_t>(p.train_rows.size() + p.valid_rows.size() + p.test_rows.size()) * 4;
    const std::int64_t params = f * h + h + h * c + c;
    const std::int64_t weights = params * 4, grads_params = params * 4, optimizer = 2 * params * 4;
    // inputs: dropped X (n x f), H1 (n x h); layer 0: 12 > 8 -> Â(XW), layer 1: 8 > 4 -> Â(HW): nothing aggregated.
    const std::int64_t activations = n * f * 4 + n * h * 4 + n * c * 4;
    // tmp: the widest Â(HW) product (h); dZ ping-pong: n x c and n x h.
    const std::int64_t workspace = n * h * 4 + 4 * 4 + 4 * 8;
    const std::int64_t gradients = grads_params + n * c * 4 + n * h * 4;
    const auto stats = res.memory().stats();
    const auto at = [&](MemoryCategory cat) { return stats.at_peak_by[static_cast<std::size_t>(cat)]; };
    CHECK(at(MemoryCategory::kGraph) == graph);
    CHECK(at(MemoryCategory::kFeatures) == feats);
    CHECK(at(MemoryCategory::kWeights) == weights);
    CHECK(at(MemoryCategory::kOptimizer) == optimizer);
    CHECK(at(MemoryCategory::kActivations) == activations);
    CHECK(at(MemoryCategory::kGradients) == gradients);
    CHECK(at(MemoryCategory::kWorkspace) >= workspace);  // CPU kernels may add their own scratch
    CHECK(stats.peak == std::accumulate(stats.at_peak_by.begin(), stats.at_peak_by.end(), std::int64_t{0}));
    CHECK(stats.current == stats.peak - (at(MemoryCategory::kWorkspace) - workspace));
  }
  CHECK(res.memory().stats().current == 0);
}

TEST_CASE("a memory limit below the model's needs fails with the numbers of a real out-of-memory error") {
  const auto ds = tiny_dataset(40, 16, 3, 2);
  const LocalProblem p = single_device_problem(ds, true);
  Resources res(Device{}, 4096);
  try {
    GcnModel model(res, p, GcnConfig{});
    FAIL("expected OutOfMemory");
  } catch (const OutOfMemory& e) {
    const std::string msg = e.what();
    CHECK(msg.find("cpu:0") != std::string::npos);
    CHECK(msg.find("asked") != std::string::npos);
    CHECK(msg.find("limit 4.00 KiB") != std::string::npos);
  }
  CHECK(res.memory().stats().current == 0);
}

TEST_CASE("saved weights load back bit for bit and refuse a model of other widths") {
  testing::TempDir dir;
  const std::vector<std::int64_t> dims{5, 4, 3};
  std::vector<std::vector<float>> params{std::vector<float>(20, 0.25f), {1, 2, 3, 4}, std::vector<float>(12, -1.5f),
                                         {7, 8, 9}};
  save_weights(dir.file("w.bin"), dims, params);
  CHECK(load_weights(dir.file("w.bin"), dims) == params);
  CHECK_THROWS_AS(load_weights(dir.file("w.bin"), {5, 8, 3}), InvalidInput);
  CHECK_THROWS_AS(load_weights(dir.file("missing.bin"), dims), IoError);
}

TEST_CASE("training reduces the loss and is deterministic for a seed on the CPU") {
  const auto ds = tiny_dataset(60, 10, 3, 4);
  const LocalProblem p = single_device_problem(ds, true);
  TrainConfig cfg;
  cfg.epochs = 30;
  const auto a = train_single(p, Device{}, cfg);
  const auto b = train_single(p, Device{}, cfg);
  CHECK(a.train_loss == b.train_loss);
  CHECK(a.train_loss.back() < a.train_loss.front());
}

namespace {
double mean_test_accuracy(const std::string& name, int seeds) {
  const auto ds = datasets::load_dataset(testing::data_dir() + "/" + name);
  const LocalProblem p = single_device_problem(ds, true);
  double sum = 0;
  for (int s = 0; s < seeds; ++s) {
    TrainConfig cfg;
    cfg.evaluate_every_epoch = false;
    cfg.model.seed = static_cast<std::uint64_t>(s + 1);
    sum += train_single(p, Device{}, cfg).accuracy[2];
  }
  return sum / seeds;
}
}  // namespace

TEST_CASE("GCN reaches the paper's accuracy on Cora over 10 seeds on the CPU") {
  const double acc = mean_test_accuracy("cora", 10);
  MESSAGE("Cora mean test accuracy " << 100 * acc << " %");
  CHECK(acc >= 0.805);
}

TEST_CASE("GCN reaches the paper's accuracy on CiteSeer over 10 seeds on the CPU") {
  const double acc = mean_test_accuracy("citeseer", 10);
  MESSAGE("CiteSeer mean test accuracy " << 100 * acc << " %");
  CHECK(acc >= 0.695);
}

TEST_CASE("sparse input features give the same losses as dense ones, dropout included") {
  const auto ds = datasets::load_dataset(testing::data_dir() + "/cora");
  const LocalProblem p = single_device_problem(ds, true);
  TrainConfig cfg;
  cfg.epochs = 8;
  const auto sparse = train_single(p, Device{}, cfg);
  cfg.model.sparse_features_below = 0.0;
  const auto dense = train_single(p, Device{}, cfg);
  REQUIRE(sparse.train_loss.size() == dense.train_loss.size());
  for (std::size_t e = 0; e < dense.train_loss.size(); ++e)
    CHECK(sparse.train_loss[e] == doctest::Approx(dense.train_loss[e]).epsilon(1e-5));
  CHECK(sparse.memory.peak < dense.memory.peak);
}

TEST_CASE("a run killed after a checkpoint and resumed ends with the same weights and losses as an uninterrupted run") {
  const auto ds = datasets::load_dataset(testing::data_dir() + "/cora");
  const LocalProblem p = single_device_problem(ds, true);
  testing::TempDir dir;
  TrainConfig cfg;
  cfg.epochs = 30;
  cfg.early_stopping = 50;  // exercises the stored early-stopping state without stopping
  const auto whole = train_single(p, Device{}, cfg);

  cfg.checkpoint_dir = dir.path.string();
  cfg.checkpoint_every = 5;
  struct Killed {};
  CHECK_THROWS_AS(train_single(p, Device{}, cfg,
                               [](int epoch, double, double, double) {
                                 if (epoch == 17) throw Killed{};  // dies after epoch 17; last checkpoint: 15
                               }),
                  Killed);
  cfg.resume = true;
  const auto resumed = train_single(p, Device{}, cfg);
  CHECK(resumed.train_loss == whole.train_loss);
  CHECK(resumed.valid_loss == whole.valid_loss);
  CHECK(resumed.parameters == whole.parameters);
  CHECK(resumed.epochs_run == whole.epochs_run);
}

TEST_CASE("a corrupt or foreign checkpoint is refused") {
  testing::TempDir dir;
  write_file_atomic(dir.file("bad.gckpt"), "GCNPCKP1 but then garbage");
  CHECK_THROWS_AS(load_checkpoint(dir.file("bad.gckpt")), InvalidInput);
  write_file_atomic(dir.file("other.gckpt"), "something else entirely");
  CHECK_THROWS_AS(load_checkpoint(dir.file("other.gckpt")), InvalidInput);
  CHECK_THROWS_AS(load_checkpoint(dir.file("missing.gckpt")), IoError);
}
