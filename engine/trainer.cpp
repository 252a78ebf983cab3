#include "engine/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <tuple>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <limits>
#include <memory>
#include <thread>

#include "base/error.hpp"
#include "datasets/loaders.hpp"
#include "base/format.hpp"
#include "engine/detail/device_run.hpp"
#include "engine/link_benchmark.hpp"

// The one training loop (run_device), the same for every strategy and launch mode; the launcher that drives K
// devices as threads or MPI ranks is engine/launch.cpp.
namespace gcnpart::engine {

void TrainConfig::validate() const {
  model.validate();
  if (epochs < 1) throw InvalidInput::parameter("--epochs", std::to_string(epochs), ">= 1");
  if (early_stopping < 0) throw InvalidInput::parameter("--early-stopping", std::to_string(early_stopping), ">= 0");
  if (memory_limit < 0) throw InvalidInput::parameter("--memory-limit", std::to_string(memory_limit), ">= 0 bytes");
  if (checkpoint_every < 0)
    throw InvalidInput::parameter("--checkpoint-every", std::to_string(checkpoint_every), ">= 1 epochs");
  if (!checkpoint_dir.empty() && checkpoint_every == 0 && !resume)
    throw InvalidInput::parameter("--checkpoint", checkpoint_dir,
                                  "--checkpoint-every N as well (without it no checkpoint would be written)");
  if (resume && checkpoint_dir.empty())
    throw InvalidInput::parameter("--resume", "without --checkpoint", "--checkpoint DIR naming the folder to resume");
}

namespace {
template <typename Field>
double device_mean(const std::vector<LinkDevice>& devices, Field field) {
  if (devices.empty()) return 0.0;
  double sum = 0;
  for (const auto& d : devices) sum += d.*field;
  return sum / static_cast<double>(devices.size());
}
}  // namespace

double LinkReport::train_GBps() const noexcept { return device_mean(devices, &LinkDevice::train_GBps); }
double LinkReport::train_same_GBps() const noexcept { return device_mean(devices, &LinkDevice::train_same_GBps); }
double LinkReport::plain_GBps() const noexcept { return device_mean(devices, &LinkDevice::plain_GBps); }
double LinkReport::ratio() const noexcept { return plain_GBps() > 0 ? train_GBps() / plain_GBps() : 0.0; }
double LinkReport::same_ratio() const noexcept { return plain_GBps() > 0 ? train_same_GBps() / plain_GBps() : 0.0; }

double TrainReport::exposed_communication() const noexcept {
  if (epoch_ms_per_epoch.empty()) return 0.0;
  const double epoch = *std::max_element(epoch_ms_per_epoch.begin(), epoch_ms_per_epoch.end());
  const double compute = *std::max_element(compute_ms_per_epoch.begin(), compute_ms_per_epoch.end());
  return epoch > 0 ? std::max(0.0, epoch - compute) / epoch : 0.0;
}

double TrainReport::compute_imbalance() const noexcept {
  double sum = 0, most = 0;
  for (const double c : compute_ms_per_epoch) {
    sum += c;
    most = std::max(most, c);
  }
  return sum > 0 ? most * static_cast<double>(compute_ms_per_epoch.size()) / sum : 1.0;
}


namespace detail {
namespace {

/// Which collective LinkReport compares for a strategy (its communication kind), or false for none.
bool link_collective(partition::Strategy s, CollectiveKind& kind) {
  switch (partition::traits(s).communication) {
    case partition::Communication::kAllGatherTable: kind = CollectiveKind::kAllGather; return true;
    case partition::Communication::kAllReduce: kind = CollectiveKind::kAllReduce; return true;
    // No plain collective to compare an all-to-all of uneven blocks or point-to-point messages with.
    default: return false;
  }
}

/// Epochs whose means the report gives: all but the first (warm-up: allocations, autotuning, lazy loading)
/// when there are more.
std::size_t first_measured_epoch(std::size_t epochs) { return epochs > 1 ? 1 : 0; }

/// What the loop carries from epoch to epoch (and a checkpoint restores).
struct LoopState {
  int start = 0;
  double best_valid = std::numeric_limits<double>::infinity();
  int since_best = 0;
  std::vector<double> train_loss, valid_loss;
};

/// "1e+30", "0.01": a value as a person would type it, not std::to_string's fixed notation.
std::string shortest(float v) { return format_shortest(v); }

/// Loads the checkpoint generation DIR/checkpoint.latest names into the model and the loop's state.
LoopState resume_from_checkpoint(const TrainConfig& config, int rank, int parts, GcnModel& model) {
  LoopState st;
  if (!config.resume || config.checkpoint_dir.empty()) return st;
  const auto epoch = read_checkpoint_latest(config.checkpoint_dir, parts);
  if (!epoch)  // silently starting from scratch would pass a fresh run off as a resumed one
    throw InvalidInput(InputLocation{config.checkpoint_dir, 0, 0}, "nothing to resume",
                       "no checkpoint.latest in the folder",
                       "a folder written by --checkpoint DIR --checkpoint-every N (or drop --resume)");
  const std::string path = checkpoint_path(config.checkpoint_dir, rank, parts, *epoch);
  const Checkpoint c = load_checkpoint(path);
  if (c.dims != model.dims() || c.seed != config.model.seed)
    throw InvalidInput(InputLocation{path, 0, 0}, "checkpoint of another model or seed",
                       "seed " + std::to_string(c.seed),
                       "seed " + std::to_string(config.model.seed) + " and the same widths");
  model.set_state(c.model);
  st.start = c.next_epoch;
  st.train_loss = c.train_loss;
  st.valid_loss = c.valid_loss;
  st.best_valid = c.best_valid;
  st.since_best = c.since_best;
  return st;
}

/// Writes this device's checkpoint after `epoch`; once every device has, rank 0 names the generation in
/// DIR/checkpoint.latest, and then each device removes its older generations.
void write_checkpoint(const TrainConfig& config, int rank, int parts, int epoch, GcnModel& model,
                      const LoopState& st, Communicator* comm, const kernels::Context& ctx) {
  Checkpoint c;
  c.dims = model.dims();
  c.seed = config.model.seed;
  c.next_epoch = epoch + 1;
  c.model = model.state();
  c.train_loss = st.train_loss;
  c.valid_loss = st.valid_loss;
  c.best_valid = st.best_valid;
  c.since_best = st.since_best;
  save_checkpoint(checkpoint_path(config.checkpoint_dir, rank, parts, c.next_epoch), c);
  if (comm != nullptr) comm->barrier(ctx);
  if (rank == 0) write_checkpoint_latest(config.checkpoint_dir, parts, c.next_epoch);
  if (comm != nullptr) comm->barrier(ctx);
  remove_checkpoints_except(config.checkpoint_dir, rank, parts, c.next_epoch);
}

void inject_fault(const FaultInjection& fault, int rank, int epoch) {
  if (fault.kind == FaultInjection::Kind::kNone || fault.kind == FaultInjection::Kind::kSlow || fault.rank != rank ||
      fault.epoch != epoch)
    return;
  if (fault.kind == FaultInjection::Kind::kKill) std::raise(SIGKILL);
  throw FaultInjected("injected fault: device " + std::to_string(rank) + " failed in epoch " + std::to_string(epoch));
}


/// The cap of a device's tracked memory: --memory-limit, else on CPU devices the host budget shared by the K devices
/// (datasets::default_max_host_bytes: 3/4 of the tightest of the physical memory, ulimit -v and the cgroup's limit).
/// A model too large for the host is then refused with its bytes when its buffers are allocated, before the first
/// epoch, instead of growing until the kernel kills the process.
std::int64_t device_memory_cap(const TrainConfig& config, const Device& device, int parts) {
  if (config.memory_limit > 0 || device.is_cuda()) return config.memory_limit;
  return datasets::default_max_host_bytes() / std::max(1, parts);
}

/// One device's run of the loop: set-up (resources, model, weights, resumed state), epochs, the final evaluation
/// and memory figures, then the link benchmark.
class DeviceLoop {
 public:
  DeviceLoop(const LocalProblem& problem, partition::Strategy strategy, int parts, const TrainConfig& config,
             const Device& device, Communicator* comm, RankResult& mine)
      : problem_(problem),
        strategy_(strategy),
        parts_(parts),
        config_(config),
        device_(device),
        comm_(comm),
        mine_(mine),
        rank_(comm != nullptr ? comm->rank() : 0),
        res_(device, device_memory_cap(config, device, parts)),
        ctx_(res_.context()) {  // handles now: library_bytes() measures them apart from the run
    if (!config_.oom_hint.empty()) res_.memory().set_oom_hint(config_.oom_hint);
    GcnConfig model_config = config_.model;
    if (pipeline()) model_config.pipeline_stages = parts_;
    model_ = std::make_unique<GcnModel>(res_, problem_, model_config, comm_);
    if (!config_.load_weights.empty()) {
      auto all = load_weights(config_.load_weights, model_->dims());
      const auto [first, last] = model_->layer_range();
      model_->set_parameters(std::vector<std::vector<float>>(all.begin() + 2 * first, all.begin() + 2 * last));
    }
    if (device_.is_cuda()) driver_sampled_ = mine_.driver_bytes = res_.driver_used_bytes();
    (void)take_tallies();  // set-up's calls belong to no epoch
  }

  /// Epochs from the resumed one (or 0) to config.epochs, or until early stopping.
  void train(const EpochCallback& on_epoch, TrainReport& report) {
    st_ = resume_from_checkpoint(config_, rank_, parts_, *model_);
    if (rank_ == 0) report.resumed_at = st_.start;
    const bool checkpoints = !config_.checkpoint_dir.empty() && config_.checkpoint_every > 0;
    for (int epoch = st_.start; epoch < config_.epochs; ++epoch) {
      const bool stop = train_epoch(epoch, on_epoch);
      if (checkpoints && (epoch + 1) % config_.checkpoint_every == 0)
        write_checkpoint(config_, rank_, parts_, epoch, *model_, st_, comm_, ctx_);
      if (stop) break;
    }
  }

  /// The final evaluation, memory figures and (rank 0) the report's global figures.
  void finish(DeviceBaseline baseline, TrainReport& report) {
    if (!baseline.known) baseline.context = res_.used_at_construction();
    const EvalResult ev = model_->evaluate();
    (void)take_tallies();
    auto params = model_->parameters();
    if (pipeline()) mine_.parameters = params;
    mine_.memory = res_.memory().stats();
    mine_.bytes_sent = bytes_sent();
    MemoryCheck& mc = mine_.memory_check;
    mc.tracked_peak = mine_.memory.peak;
    mc.cache_slack = mine_.memory.reserved_peak - mine_.memory.peak;
    if (device_.is_cuda()) {
      driver_sampled_ = std::max(driver_sampled_, res_.driver_used_bytes());
      mine_.driver_bytes = std::max(mine_.driver_bytes, driver_sampled_);
      mc.available = true;
      mc.measured = std::max(driver_sampled_, mine_.memory.driver_peak);
      mc.context = baseline.context;
      mc.nccl = baseline.nccl;
      mc.libraries = res_.library_bytes();
    }
    if (rank_ != 0) return;
    report.epochs_run = static_cast<int>(st_.train_loss.size());  // restored history included
    report.train_loss = std::move(st_.train_loss);
    report.valid_loss = std::move(st_.valid_loss);
    const std::int64_t totals[3] = {problem_.global_train, problem_.global_valid, problem_.global_test};
    for (int s = 0; s < 3; ++s) {
      report.accuracy[s] = mean(static_cast<double>(ev.correct[s]), totals[s]);
      report.loss[s] = mean(ev.loss_sum[s], totals[s]);
    }
    report.parameters = std::move(params);
    report.spmm_choices = model_->spmm_choices();
    report.cuda_graph = model_->cuda_graph_status();
    report_offload(report.offload);
  }

  /// The streamed plan and its measured figures (after every other figure: the kernels-only step below leaves the
  /// saved activations and gradients meaningless, the weights untouched).
  void report_offload(OffloadReport& o) {
    o.mode = to_string(config_.model.offload);
    StreamedLayers* s = model_->streamed();
    if (s == nullptr) return;
    const partition::StreamedPlan& plan = s->plan();
    o.streamed = true;
    o.part_rows = plan.part_rows;
    o.parts = plan.parts;
    o.operands = plan.flow.two_operands ? 2 : 1;
    o.host_bytes = plan.host_bytes;
    for (const auto& m : plan.matrices) (m.tier == partition::Tier::kHost ? o.on_host : o.on_device).push_back(m.name);
    o.plan_h2d_bytes = plan.step_h2d_bytes;
    o.plan_d2h_bytes = plan.step_d2h_bytes;
    o.step_h2d_bytes = s->stats().step_h2d_bytes;
    o.step_d2h_bytes = s->stats().step_d2h_bytes;
    if (!device_.is_cuda()) return;
    std::tie(o.h2d_GBps, o.d2h_GBps) = s->measure_copy_bandwidth();
    s->skip_copies(true);
    const int epoch = std::max(0, config_.epochs - 1);
    (void)model_->forward_backward(epoch);  // warm-up
    const auto t0 = std::chrono::steady_clock::now();
    (void)model_->forward_backward(epoch);
    o.compute_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    s->skip_copies(false);
    auto copy_ms = [](std::int64_t bytes, double gbps) { return gbps > 0 ? static_cast<double>(bytes) / gbps * 1e-6 : 0.0; };
    o.lower_bound_ms = std::max({o.compute_ms, copy_ms(o.step_h2d_bytes, o.h2d_GBps), copy_ms(o.step_d2h_bytes, o.d2h_GBps)});
  }

  /// The link: after everything above is measured, so that its buffers and calls change none of it.
  void measure_link(const LaunchOptions& launch) {
    CollectiveKind kind{};
    const bool wanted = launch.link == LaunchOptions::Link::kAlways ||
                        (launch.link == LaunchOptions::Link::kAuto && device_.is_cuda());
    if (!wanted || comm_ == nullptr || comm_->size() < 2 || !link_collective(strategy_, kind)) return;
    for (const CommTally& t : first_epoch_calls_)  // identical on every rank: every rank makes the same calls
      if (t.kind == kind && t.payload_bytes >= mine_.link_payload) {
        mine_.link_payload = t.payload_bytes;
        mine_.link_calls = t.calls;
      }
    if (mine_.link_payload == 0) return;
    double all_ms = 0, same_ms = 0;
    std::int64_t all_sent = 0, same_sent = 0;
    for (const CommTally& t : measured_calls_) {
      all_ms += t.ms;
      all_sent += t.bytes_sent;
      if (t.kind == kind && t.payload_bytes == mine_.link_payload) {
        same_ms += t.ms;
        same_sent += t.bytes_sent;
      }
    }
    const CollectiveTiming plain = benchmark_collective(*comm_, res_, kind, mine_.link_payload);
    mine_.has_link = true;
    mine_.link_kind = kind;
    mine_.link.train_GBps = all_ms > 0 ? static_cast<double>(all_sent) / (all_ms * 1e-3) / 1e9 : 0.0;
    mine_.link.train_same_GBps = same_ms > 0 ? static_cast<double>(same_sent) / (same_ms * 1e-3) / 1e9 : 0.0;
    mine_.link.plain_GBps = plain.bus_GBps();
    mine_.link.plain_median_ms = plain.median_ms;
  }

 private:
  [[nodiscard]] bool pipeline() const noexcept { return partition::splits_layers(strategy_); }
  std::vector<CommTally> take_tallies() { return comm_ != nullptr ? comm_->take_tallies() : std::vector<CommTally>{}; }
  [[nodiscard]] std::int64_t bytes_sent() const { return comm_ != nullptr ? comm_->bytes_sent() : std::int64_t{0}; }
  static double mean(double sum, std::int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; }

  /// One epoch: the training step (timed, its communication tallied), the fault injection of the tests, the loss
  /// (a non-finite one ends the run on every device), the evaluation and early stopping. Returns whether to stop.
  bool train_epoch(int epoch, const EpochCallback& on_epoch) {
    if (config_.cancel != nullptr && config_.cancel->load(std::memory_order_relaxed))
      throw Cancelled("training cancelled before epoch " + std::to_string(epoch + 1));
    const std::int64_t sent_before = bytes_sent();
    const auto t0 = std::chrono::steady_clock::now();
    if (config_.fault.kind == FaultInjection::Kind::kSlow && config_.fault.rank == rank_)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(config_.fault.slow_ms));
    const double loss_sum = model_->train_step(epoch);  // ends with the stream synchronised
    mine_.step_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::vector<CommTally> calls = take_tallies();
    mine_.comm_seconds.push_back(Communicator::total_ms(calls) * 1e-3);
    if (epoch == st_.start) {
      mine_.bytes_first_epoch = bytes_sent() - sent_before;
      first_epoch_calls_ = calls;
    }
    if (epoch > st_.start || config_.epochs - st_.start == 1)
      measured_calls_.insert(measured_calls_.end(), calls.begin(), calls.end());
    if (device_.is_cuda()) driver_sampled_ = std::max(driver_sampled_, res_.driver_used_bytes());
    inject_fault(config_.fault, rank_, epoch);
    st_.train_loss.push_back(mean(loss_sum, problem_.global_train));
    // The loss is all-reduced, so every device stops here together: no report computed from NaN weights.
    if (!std::isfinite(st_.train_loss.back()))
      throw InvalidInput(InputLocation{"training", 0, 0},
                         "the run diverged: training loss in epoch " + std::to_string(epoch + 1) + " is not finite",
                         std::to_string(st_.train_loss.back()),
                         "finite losses (lower --lr, now " + shortest(config_.model.lr) +
                             ", or check the features for huge values)");
    double vloss = 0, vacc = 0;
    if (config_.evaluate_every_epoch || config_.early_stopping > 0) {
      const EvalResult ev = model_->evaluate();
      vloss = mean(ev.loss_sum[1], problem_.global_valid);
      vacc = mean(static_cast<double>(ev.correct[1]), problem_.global_valid);
      (void)take_tallies();  // evaluation's calls are not the train step's
      st_.valid_loss.push_back(vloss);
    }
    if (rank_ == 0 && on_epoch) on_epoch(epoch, st_.train_loss.back(), vloss, vacc);
    if (config_.early_stopping <= 0) return false;
    if (vloss < st_.best_valid) {
      st_.best_valid = vloss;
      st_.since_best = 0;
      return false;
    }
    return ++st_.since_best >= config_.early_stopping;
  }

  const LocalProblem& problem_;
  partition::Strategy strategy_;
  int parts_;
  const TrainConfig& config_;
  Device device_;
  Communicator* comm_;
  RankResult& mine_;
  int rank_;
  Resources res_;
  const kernels::Context& ctx_;
  std::unique_ptr<GcnModel> model_;
  LoopState st_;
  std::int64_t driver_sampled_ = 0;  ///< cudaMemGetInfo after set-up and at the end of every epoch
  std::vector<CommTally> first_epoch_calls_, measured_calls_;
};

}  // namespace

void run_device(const LocalProblem& problem, partition::Strategy strategy, int parts, const TrainConfig& config,
                const EpochCallback& on_epoch, const LaunchOptions& launch, const Device& device,
                Communicator* comm, DeviceBaseline baseline, TrainReport& report, RankResult& mine) {
  DeviceLoop loop(problem, strategy, parts, config, device, comm, mine);
  loop.train(on_epoch, report);
  loop.finish(baseline, report);
  loop.measure_link(launch);
}

namespace {

double mean_of(const std::vector<double>& v, std::size_t from) {
  if (v.size() <= from) return 0.0;
  double sum = 0;
  for (std::size_t i = from; i < v.size(); ++i) sum += v[i];
  return sum / static_cast<double>(v.size() - from);
}

}  // namespace

void fill_report(TrainReport& report, const std::vector<RankResult>& results) {
  const std::size_t k = results.size();
  report.memory.resize(k);
  report.bytes_sent.resize(k);
  report.bytes_sent_per_epoch.resize(k);
  report.driver_bytes.resize(k);
  report.device_step_seconds.resize(k);
  report.comm_seconds.resize(k);
  report.epoch_ms_per_epoch.resize(k);
  report.comm_ms_per_epoch.resize(k);
  report.wait_ms_per_epoch.resize(k);
  report.compute_ms_per_epoch.resize(k);
  report.memory_check.resize(k);
  // Time in communication calls splits into moving data and waiting for a slower peer: per epoch, the device
  // that spent the least time in its calls arrived last at them and waited for no one, so that least time is the
  // communication itself and every device's excess over it is waiting.
  std::size_t epochs = 0;
  for (const auto& res : results) epochs = std::max(epochs, res.comm_seconds.size());
  std::vector<double> least(epochs, std::numeric_limits<double>::infinity());
  for (const auto& res : results)
    for (std::size_t e = 0; e < res.comm_seconds.size(); ++e) least[e] = std::min(least[e], res.comm_seconds[e]);
  for (std::size_t r = 0; r < k; ++r) {
    const RankResult& res = results[r];
    report.memory[r] = res.memory;
    report.bytes_sent[r] = res.bytes_sent;
    report.bytes_sent_per_epoch[r] = res.bytes_first_epoch;
    report.driver_bytes[r] = res.driver_bytes;
    report.device_step_seconds[r] = res.step_seconds;
    report.comm_seconds[r] = res.comm_seconds;
    const std::size_t from = first_measured_epoch(res.step_seconds.size());
    report.epoch_ms_per_epoch[r] = 1e3 * mean_of(res.step_seconds, from);
    const double in_calls = 1e3 * mean_of(res.comm_seconds, from);
    report.comm_ms_per_epoch[r] = 1e3 * mean_of(least, from);  // every device runs the same epochs
    report.wait_ms_per_epoch[r] = in_calls - report.comm_ms_per_epoch[r];
    report.compute_ms_per_epoch[r] = report.epoch_ms_per_epoch[r] - in_calls;
    report.memory_check[r] = res.memory_check;
  }
  epochs = 0;
  for (const auto& res : results) epochs = std::max(epochs, res.step_seconds.size());
  report.epoch_seconds.clear();
  for (std::size_t e = 0; e < epochs; ++e) {
    double slowest = 0;
    for (const auto& res : results)
      if (e < res.step_seconds.size()) slowest = std::max(slowest, res.step_seconds[e]);
    report.epoch_seconds.push_back(slowest);
  }
  report.has_link =
      k > 0 && std::all_of(results.begin(), results.end(), [](const RankResult& r) { return r.has_link; });
  if (report.has_link) {
    report.link.collective = results[0].link_kind;
    report.link.payload_bytes = results[0].link_payload;
    report.link.calls_per_epoch = results[0].link_calls;
    report.link.repeats = kLinkRepeats;
    report.link.devices.clear();
    for (const auto& r : results) report.link.devices.push_back(r.link);
  }
}

}  // namespace detail

TrainReport train_single(const LocalProblem& problem, const Device& device, const TrainConfig& config,
                         const EpochCallback& on_epoch) {
  config.validate();
  TrainReport report;
  report.seed = config.model.seed;
  LaunchOptions launch;
  launch.backend = device.backend;
  std::vector<detail::RankResult> results(1);
  detail::run_device(problem, partition::Strategy::kSingle, 1, config, on_epoch, launch, device, nullptr, {}, report,
             results[0]);
  detail::fill_report(report, results);
  return report;
}

std::vector<double> timed_epochs(const std::vector<double>& epoch_seconds) {
  std::vector<double> t(epoch_seconds.begin() + (epoch_seconds.size() > 1 ? 1 : 0), epoch_seconds.end());
  std::sort(t.begin(), t.end());
  return t;
}

}  // namespace gcnpart::engine
