#include "engine/trainer.hpp"

#include <chrono>
#include <cstring>
#include <fstream>
#include <limits>

#include "kernels/core/atomic_file.hpp"
#include "kernels/core/error.hpp"

namespace gcnpart::engine {

void TrainConfig::validate() const {
  model.validate();
  if (epochs < 1) throw InvalidInput::parameter("--epochs", std::to_string(epochs), ">= 1");
  if (early_stopping < 0) throw InvalidInput::parameter("--early-stopping", std::to_string(early_stopping), ">= 0");
  if (memory_limit < 0) throw InvalidInput::parameter("--memory-limit", std::to_string(memory_limit), ">= 0 bytes");
}

RunReport train_single(const LocalProblem& problem, const Device& device, const TrainConfig& config,
                       const EpochCallback& on_epoch) {
  config.validate();
  Resources res(device, config.memory_limit);
  if (!config.oom_hint.empty()) res.memory().set_oom_hint(config.oom_hint);
  RunReport report;
  report.seed = config.model.seed;
  GcnModel model(res, problem, config.model);
  if (!config.load_weights.empty()) model.set_parameters(load_weights(config.load_weights, model.dims()));
  if (device.is_cuda()) report.driver_peak_bytes = res.driver_used_bytes();
  auto mean = [](double sum, std::int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };
  double best_valid = std::numeric_limits<double>::infinity();
  int since_best = 0;
  for (int epoch = 0; epoch < config.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    const double loss_sum = model.train_step(epoch);
    const auto t1 = std::chrono::steady_clock::now();
    report.epoch_seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    report.train_loss.push_back(mean(loss_sum, problem.global_train));
    report.epochs_run = epoch + 1;
    if (!config.evaluate_every_epoch && config.early_stopping == 0) {
      if (on_epoch) on_epoch(epoch, report.train_loss.back(), 0.0, 0.0);
      continue;
    }
    const EvalResult ev = model.evaluate();
    const double vloss = mean(ev.loss_sum[1], problem.global_valid);
    report.valid_loss.push_back(vloss);
    if (on_epoch) on_epoch(epoch, report.train_loss.back(), vloss, mean(ev.correct[1], problem.global_valid));
    if (config.early_stopping > 0) {
      if (vloss < best_valid) {
        best_valid = vloss;
        since_best = 0;
      } else if (++since_best >= config.early_stopping) {
        break;
      }
    }
  }
  const EvalResult ev = model.evaluate();
  const std::int64_t totals[3] = {problem.global_train, problem.global_valid, problem.global_test};
  for (int s = 0; s < 3; ++s) {
    report.accuracy[s] = mean(static_cast<double>(ev.correct[s]), totals[s]);
    report.loss[s] = mean(ev.loss_sum[s], totals[s]);
  }
  report.parameters = model.parameters();
  report.spmm_choices = model.spmm_choices();
  report.memory = res.memory().stats();
  if (device.is_cuda()) report.driver_peak_bytes = std::max(report.driver_peak_bytes, res.driver_used_bytes());
  return report;
}

namespace {
constexpr char kWeightsMagic[8] = {'G', 'C', 'N', 'P', 'W', 'T', 'S', '1'};
}

void save_weights(const std::string& path, const std::vector<std::int64_t>& dims,
                  const std::vector<std::vector<float>>& params) {
  AtomicFile f(path);
  f.write(kWeightsMagic, sizeof kWeightsMagic);
  const std::int64_t n = static_cast<std::int64_t>(dims.size());
  f.write(&n, sizeof n);
  f.write(dims.data(), dims.size() * sizeof(std::int64_t));
  for (const auto& p : params) {
    const std::int64_t count = static_cast<std::int64_t>(p.size());
    f.write(&count, sizeof count);
    f.write(p.data(), p.size() * sizeof(float));
  }
  f.commit();
}

std::vector<std::vector<float>> load_weights(const std::string& path, const std::vector<std::int64_t>& dims) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "cannot open weights file");
  auto fail = [&](const std::string& problem, const std::string& value, const std::string& expected) {
    throw InvalidInput(InputLocation{path, 0, 0}, problem, value, expected);
  };
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, kWeightsMagic, 8) != 0)
    fail("not a gcnpart weights file", "bad magic", "GCNPWTS1");
  std::int64_t n = 0;
  if (!in.read(reinterpret_cast<char*>(&n), sizeof n) || n < 2 || n > 65)
    fail("layer count", std::to_string(n), "2..65 widths");
  std::vector<std::int64_t> saved(static_cast<std::size_t>(n));
  in.read(reinterpret_cast<char*>(saved.data()), static_cast<std::streamsize>(n * sizeof(std::int64_t)));
  if (!in) fail("truncated header", "end of file", "layer widths");
  if (saved != dims) {
    std::string s, d;
    for (auto v : saved) s += (s.empty() ? "" : ",") + std::to_string(v);
    for (auto v : dims) d += (d.empty() ? "" : ",") + std::to_string(v);
    fail("layer widths do not match the model", s, d);
  }
  std::vector<std::vector<float>> params;
  for (std::int64_t l = 0; l + 1 < n; ++l) {
    for (const std::int64_t want : {saved[l] * saved[l + 1], saved[l + 1]}) {
      std::int64_t count = 0;
      if (!in.read(reinterpret_cast<char*>(&count), sizeof count) || count != want)
        fail("tensor size of layer " + std::to_string(l), std::to_string(count), std::to_string(want));
      std::vector<float> p(static_cast<std::size_t>(count));
      if (!in.read(reinterpret_cast<char*>(p.data()), static_cast<std::streamsize>(count * sizeof(float))))
        fail("truncated tensor of layer " + std::to_string(l), "end of file", std::to_string(count) + " floats");
      params.push_back(std::move(p));
    }
  }
  return params;
}

}  // namespace gcnpart::engine
