#include "engine/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
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
  (void)res.context();  // handles now: library_bytes() measures them apart from the run's allocations
  if (!config.oom_hint.empty()) res.memory().set_oom_hint(config.oom_hint);
  RunReport report;
  report.seed = config.model.seed;
  GcnModel model(res, problem, config.model);
  if (!config.load_weights.empty()) model.set_parameters(load_weights(config.load_weights, model.dims()));
  if (device.is_cuda()) report.driver_peak_bytes = res.driver_used_bytes();
  auto mean = [](double sum, std::int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };
  double best_valid = std::numeric_limits<double>::infinity();
  int since_best = 0;
  int start = 0;
  const std::string ckpt = config.checkpoint_dir.empty() ? std::string() : config.checkpoint_dir + "/checkpoint.gckpt";
  if (config.resume && !ckpt.empty() && std::filesystem::exists(ckpt)) {
    const Checkpoint c = load_checkpoint(ckpt);
    if (c.dims != model.dims() || c.seed != config.model.seed)
      throw InvalidInput(InputLocation{ckpt, 0, 0}, "checkpoint of another model or seed",
                         "seed " + std::to_string(c.seed), "seed " + std::to_string(config.model.seed) + " and the same widths");
    model.set_state(c.model);
    start = c.next_epoch;
    report.train_loss = c.train_loss;
    report.valid_loss = c.valid_loss;
    best_valid = c.best_valid;
    since_best = c.since_best;
    report.epochs_run = start;
  }
  for (int epoch = start; epoch < config.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    const double loss_sum = model.train_step(epoch);
    const auto t1 = std::chrono::steady_clock::now();
    report.epoch_seconds.push_back(std::chrono::duration<double>(t1 - t0).count());
    if (device.is_cuda()) report.driver_peak_bytes = std::max(report.driver_peak_bytes, res.driver_used_bytes());
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
    bool stop = false;
    if (config.early_stopping > 0) {
      if (vloss < best_valid) {
        best_valid = vloss;
        since_best = 0;
      } else if (++since_best >= config.early_stopping) {
        stop = true;
      }
    }
    if (!ckpt.empty() && config.checkpoint_every > 0 && (epoch + 1) % config.checkpoint_every == 0) {
      Checkpoint c;
      c.dims = model.dims();
      c.seed = config.model.seed;
      c.next_epoch = epoch + 1;
      c.model = model.state();
      c.train_loss = report.train_loss;
      c.valid_loss = report.valid_loss;
      c.best_valid = best_valid;
      c.since_best = since_best;
      save_checkpoint(ckpt, c);
    }
    if (stop) break;
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
  MemoryCheck& mc = report.memory_check;
  mc.tracked_peak = report.memory.peak;
  mc.cache_slack = report.memory.reserved_peak - report.memory.peak;
  if (device.is_cuda()) {
    report.driver_peak_bytes = std::max(report.driver_peak_bytes, res.driver_used_bytes());
    mc.available = true;
    mc.measured = std::max(report.driver_peak_bytes, report.memory.driver_peak);
    mc.context = res.used_at_construction();
    mc.libraries = res.library_bytes();
  }
  return report;
}

namespace {
constexpr char kWeightsMagic[8] = {'G', 'C', 'N', 'P', 'W', 'T', 'S', '1'};
constexpr char kCheckpointMagic[8] = {'G', 'C', 'N', 'P', 'C', 'K', 'P', '1'};

template <class T>
void put_vector(AtomicFile& f, const std::vector<T>& v) {
  const std::int64_t n = static_cast<std::int64_t>(v.size());
  f.write(&n, sizeof n);
  f.write(v.data(), v.size() * sizeof(T));
}

/// Reads a length-prefixed vector, refusing lengths the rest of the file cannot hold.
template <class T>
std::vector<T> get_vector(std::ifstream& in, const std::string& path, std::uint64_t file_size, const char* what) {
  std::int64_t n = -1;
  in.read(reinterpret_cast<char*>(&n), sizeof n);
  const auto at = static_cast<std::uint64_t>(in.tellg());
  if (!in || n < 0 || static_cast<std::uint64_t>(n) * sizeof(T) > file_size - std::min(file_size, at))
    throw InvalidInput(InputLocation{path, 0, 0}, std::string("bad length of ") + what, std::to_string(n),
                       "a length the file can hold");
  std::vector<T> v(static_cast<std::size_t>(n));
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  if (!in) throw InvalidInput(InputLocation{path, 0, 0}, std::string("truncated ") + what, "end of file", "more data");
  return v;
}
}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  AtomicFile f(path);
  f.write(kCheckpointMagic, sizeof kCheckpointMagic);
  f.write(&c.seed, sizeof c.seed);
  const std::int64_t header[3] = {c.next_epoch, c.model.step, c.since_best};
  f.write(header, sizeof header);
  f.write(&c.best_valid, sizeof c.best_valid);
  put_vector(f, c.dims);
  put_vector(f, c.model.params);
  put_vector(f, c.model.adam_m);
  put_vector(f, c.model.adam_v);
  put_vector(f, c.train_loss);
  put_vector(f, c.valid_loss);
  f.commit();
}

Checkpoint load_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "cannot open checkpoint");
  const auto size = static_cast<std::uint64_t>(std::filesystem::file_size(path));
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, kCheckpointMagic, 8) != 0)
    throw InvalidInput(InputLocation{path, 0, 0}, "not a gcnpart checkpoint", "bad magic", "GCNPCKP1");
  Checkpoint c;
  std::int64_t header[3];
  in.read(reinterpret_cast<char*>(&c.seed), sizeof c.seed);
  in.read(reinterpret_cast<char*>(header), sizeof header);
  in.read(reinterpret_cast<char*>(&c.best_valid), sizeof c.best_valid);
  if (!in || header[0] < 0 || header[1] < 0 || header[2] < 0)
    throw InvalidInput(InputLocation{path, 0, 0}, "bad checkpoint header", "epoch " + std::to_string(header[0]),
                       "non-negative epoch, step and counter");
  c.next_epoch = static_cast<int>(header[0]);
  c.model.step = header[1];
  c.since_best = static_cast<int>(header[2]);
  c.dims = get_vector<std::int64_t>(in, path, size, "layer widths");
  c.model.params = get_vector<float>(in, path, size, "parameters");
  c.model.adam_m = get_vector<float>(in, path, size, "Adam first moments");
  c.model.adam_v = get_vector<float>(in, path, size, "Adam second moments");
  c.train_loss = get_vector<double>(in, path, size, "training losses");
  c.valid_loss = get_vector<double>(in, path, size, "validation losses");
  return c;
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
