#include "engine/distributed.hpp"

#include <omp.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <atomic>
#include <memory>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <thread>

#include "engine/inprocess_communicator.hpp"
#include "engine/link_benchmark.hpp"
#include "engine/mpi_communicator.hpp"
#include "engine/nccl_communicator.hpp"
#include "base/error.hpp"

namespace gcnpart::engine {

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

LocalProblem device_problem(const datasets::Dataset& ds, const partition::Plan& plan, int device,
                            bool normalize_features) {
  GCNPART_EXPECTS(device >= 0 && device < static_cast<int>(plan.devices.size()), "device out of the plan's range");
  if (!ds.has_features() || !ds.has_labels())
    throw InvalidInput(InputLocation{ds.name, 0, 0}, "dataset has no features or labels",
                       std::to_string(ds.num_features) + " features", "features and labels");
  const partition::DevicePlan& dp = plan.devices[static_cast<std::size_t>(device)];
  LocalProblem p;
  p.name = ds.name + "@" + std::to_string(device);
  const std::int64_t f = ds.num_features;
  const bool gather = plan.strategy == partition::Strategy::kGather;
  const bool boundary = plan.strategy == partition::Strategy::kBoundary;
  // Rows (and, except for gather and boundary, columns) are the local nodes: own part first.
  const std::int64_t n_local =
      gather || boundary ? dp.num_inner : static_cast<std::int64_t>(dp.local_nodes.size());
  p.num_rows = p.num_cols = n_local;
  p.global_ids.assign(dp.local_nodes.begin(), dp.local_nodes.begin() + n_local);
  p.num_features = f;
  p.features = feature_rows(ds, p.global_ids.data(), n_local, normalize_features);
  p.labels.resize(static_cast<std::size_t>(n_local));
  for (std::int64_t i = 0; i < n_local; ++i) p.labels[i] = ds.labels[p.global_ids[i]];
  p.num_classes = ds.num_classes;
  // From here on a row's global id is the user's (dropout masks are keyed by it; see partition/reorder.hpp).
  if (!ds.user_ids.empty())
    for (auto& id : p.global_ids) id = ds.user_ids[id];

  // Split rows: own nodes only, so that every node's loss is counted exactly once over the devices.
  std::vector<std::int32_t> local_of(static_cast<std::size_t>(ds.num_nodes()), -1);
  for (std::int64_t i = 0; i < dp.num_inner; ++i) local_of[dp.local_nodes[i]] = static_cast<std::int32_t>(i);
  auto rows_of = [&](const char* name, std::vector<NodeId>& rows, std::int64_t& global) {
    const auto it = ds.splits.find(name);
    if (it == ds.splits.end()) return;
    global = static_cast<std::int64_t>(it->second.size());
    for (NodeId v : it->second)
      if (local_of[v] >= 0) rows.push_back(local_of[v]);
    std::sort(rows.begin(), rows.end());
  };
  if (ds.split("train").empty())  // ds.split throws for a missing one, naming the splits there are
    throw InvalidInput(InputLocation{"dataset " + ds.name + " split train", 0, 0}, "empty training split", "0 nodes",
                       "at least one labelled training node (nothing to train on, no accuracy to report)");
  rows_of("train", p.train_rows, p.global_train);
  rows_of("valid", p.valid_rows, p.global_valid);
  rows_of("test", p.test_rows, p.global_test);

  if (gather) {
    p.gather = true;
    p.parts = plan.parts;
    p.table_block = plan.table_block;
    p.gather_forward = dp.gather_forward;
    p.gather_backward = dp.gather_backward;
    p.table_dinv = plan.table_dinv;
    p.dinv_row = dp.dinv_own;
    p.dinv_col = dp.dinv_own;
  } else if (boundary) {
    p.boundary = true;
    p.parts = plan.parts;
    p.gather_forward = dp.gather_forward;
    p.gather_backward = dp.gather_backward;
    p.table_dinv = dp.dinv;
    p.dinv_row = dp.dinv_own;
    p.dinv_col = dp.dinv_own;
    p.recv_counts = dp.recv_counts;
    p.send_rows.resize(static_cast<std::size_t>(plan.parts));
    p.interior_rows = dp.num_inner;
    for (int q = 0; q < plan.parts; ++q) {
      const auto b = dp.send_rows.row_offsets[q], e = dp.send_rows.row_offsets[q + 1];
      p.send_rows[q].assign(dp.send_rows.col_ids.begin() + b, dp.send_rows.col_ids.begin() + e);
      if (b < e) p.interior_rows = std::min<std::int64_t>(p.interior_rows, p.send_rows[q].front());
    }
  } else {
    p.graph = dp.local_graph;
    p.dinv_row = dp.dinv;
    p.dinv_col = dp.dinv;
  }
  return p;
}

namespace {

/// What the device held before the run's own allocations (GPUs): the CUDA context, and what NCCL took.
struct DeviceBaseline {
  std::int64_t context = 0, nccl = 0;
  bool known = false;  ///< false: take the context from the device's Resources (one device, no NCCL)
};

/// What one device measured, gathered into the report after the run.
struct RankResult {
  std::vector<double> step_seconds, comm_seconds;
  MemoryStats memory;
  MemoryCheck memory_check;
  std::int64_t bytes_sent = 0, bytes_first_epoch = 0, driver_bytes = 0;
  std::vector<std::vector<float>> parameters;  ///< pipeline: this stage's layers
  bool has_link = false;
  CollectiveKind link_kind = CollectiveKind::kAllGather;
  std::int64_t link_payload = 0, link_calls = 0;
  LinkDevice link;
};

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
std::string shortest(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

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

/// The one training loop. Trains `problem` on `device` as rank comm->rank() of comm->size() devices (comm null:
/// one device, no communication); fills `mine` with what this device measured and, on rank 0, the report's
/// global figures (losses, accuracy, weights). Every device runs the same epochs: losses and the validation loss
/// that early stopping reads are all-reduced, so all stop together.
void run_device(const LocalProblem& problem, partition::Strategy strategy, int parts, const TrainConfig& config,
                const EpochCallback& on_epoch, const LaunchOptions& launch, const Device& device,
                Communicator* comm, DeviceBaseline baseline, TrainReport& report, RankResult& mine) {
  const int rank = comm != nullptr ? comm->rank() : 0;
  Resources res(device, config.memory_limit);
  const kernels::Context& ctx = res.context();  // handles now: library_bytes() measures them apart from the run
  if (!config.oom_hint.empty()) res.memory().set_oom_hint(config.oom_hint);
  GcnConfig model_config = config.model;
  const bool pipeline = strategy == partition::Strategy::kPipeline;
  if (pipeline) model_config.pipeline_stages = parts;
  GcnModel model(res, problem, model_config, comm);
  if (!config.load_weights.empty()) {
    auto all = load_weights(config.load_weights, model.dims());
    const auto [first, last] = model.layer_range();
    model.set_parameters(std::vector<std::vector<float>>(all.begin() + 2 * first, all.begin() + 2 * last));
  }
  if (!baseline.known) baseline.context = res.used_at_construction();
  std::int64_t driver_sampled = 0;  // cudaMemGetInfo after set-up and at the end of every epoch
  if (device.is_cuda()) driver_sampled = mine.driver_bytes = res.driver_used_bytes();
  auto take_tallies = [&] { return comm != nullptr ? comm->take_tallies() : std::vector<CommTally>{}; };
  auto bytes_sent = [&] { return comm != nullptr ? comm->bytes_sent() : std::int64_t{0}; };
  (void)take_tallies();  // set-up's calls belong to no epoch
  std::vector<CommTally> first_epoch_calls, measured_calls;
  auto mean = [](double sum, std::int64_t n) { return n > 0 ? sum / static_cast<double>(n) : 0.0; };

  LoopState st = resume_from_checkpoint(config, rank, parts, model);
  if (rank == 0) report.resumed_at = st.start;
  const bool eval = config.evaluate_every_epoch || config.early_stopping > 0;
  const bool checkpoints = !config.checkpoint_dir.empty() && config.checkpoint_every > 0;
  for (int epoch = st.start; epoch < config.epochs; ++epoch) {
    if (config.cancel != nullptr && config.cancel->load(std::memory_order_relaxed))
      throw Cancelled("training cancelled before epoch " + std::to_string(epoch + 1));
    const std::int64_t sent_before = bytes_sent();
    const auto t0 = std::chrono::steady_clock::now();
    if (config.fault.kind == FaultInjection::Kind::kSlow && config.fault.rank == rank)
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(config.fault.slow_ms));
    const double loss_sum = model.train_step(epoch);  // ends with the stream synchronised
    mine.step_seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::vector<CommTally> calls = take_tallies();
    mine.comm_seconds.push_back(Communicator::total_ms(calls) * 1e-3);
    if (epoch == st.start) {
      mine.bytes_first_epoch = bytes_sent() - sent_before;
      first_epoch_calls = calls;
    }
    if (epoch > st.start || config.epochs - st.start == 1)
      measured_calls.insert(measured_calls.end(), calls.begin(), calls.end());
    if (device.is_cuda()) driver_sampled = std::max(driver_sampled, res.driver_used_bytes());
    inject_fault(config.fault, rank, epoch);
    st.train_loss.push_back(mean(loss_sum, problem.global_train));
    // The loss is all-reduced, so every device stops here together: no report computed from NaN weights.
    if (!std::isfinite(st.train_loss.back()))
      throw InvalidInput(InputLocation{"training", 0, 0},
                         "the run diverged: training loss in epoch " + std::to_string(epoch + 1) + " is not finite",
                         std::to_string(st.train_loss.back()),
                         "finite losses (lower --lr, now " + shortest(config.model.lr) +
                             ", or check the features for huge values)");
    double vloss = 0, vacc = 0;
    if (eval) {
      const EvalResult ev = model.evaluate();
      vloss = mean(ev.loss_sum[1], problem.global_valid);
      vacc = mean(static_cast<double>(ev.correct[1]), problem.global_valid);
      (void)take_tallies();  // evaluation's calls are not the train step's
      st.valid_loss.push_back(vloss);
    }
    if (rank == 0 && on_epoch) on_epoch(epoch, st.train_loss.back(), vloss, vacc);
    bool stop = false;
    if (config.early_stopping > 0) {
      if (vloss < st.best_valid) {
        st.best_valid = vloss;
        st.since_best = 0;
      } else if (++st.since_best >= config.early_stopping) {
        stop = true;
      }
    }
    if (checkpoints && (epoch + 1) % config.checkpoint_every == 0)
      write_checkpoint(config, rank, parts, epoch, model, st, comm, ctx);
    if (stop) break;
  }
  const EvalResult ev = model.evaluate();
  (void)take_tallies();
  auto params = model.parameters();
  if (pipeline) mine.parameters = params;
  mine.memory = res.memory().stats();
  mine.bytes_sent = bytes_sent();
  MemoryCheck& mc = mine.memory_check;
  mc.tracked_peak = mine.memory.peak;
  mc.cache_slack = mine.memory.reserved_peak - mine.memory.peak;
  if (device.is_cuda()) {
    driver_sampled = std::max(driver_sampled, res.driver_used_bytes());
    mine.driver_bytes = std::max(mine.driver_bytes, driver_sampled);
    mc.available = true;
    mc.measured = std::max(driver_sampled, mine.memory.driver_peak);
    mc.context = baseline.context;
    mc.nccl = baseline.nccl;
    mc.libraries = res.library_bytes();
  }
  if (rank == 0) {
    report.epochs_run = static_cast<int>(st.train_loss.size());  // restored history included
    report.train_loss = std::move(st.train_loss);
    report.valid_loss = std::move(st.valid_loss);
    const std::int64_t totals[3] = {problem.global_train, problem.global_valid, problem.global_test};
    for (int s = 0; s < 3; ++s) {
      report.accuracy[s] = mean(static_cast<double>(ev.correct[s]), totals[s]);
      report.loss[s] = mean(ev.loss_sum[s], totals[s]);
    }
    report.parameters = std::move(params);
    report.spmm_choices = model.spmm_choices();
    report.cuda_graph = model.cuda_graph_status();
  }

  // The link: after everything above is measured, so that its buffers and calls change none of it.
  CollectiveKind kind{};
  const bool wanted = launch.link == LaunchOptions::Link::kAlways ||
                      (launch.link == LaunchOptions::Link::kAuto && device.is_cuda());
  if (!wanted || comm == nullptr || comm->size() < 2 || !link_collective(strategy, kind)) return;
  for (const CommTally& t : first_epoch_calls)  // identical on every rank: every rank makes the same calls
    if (t.kind == kind && t.payload_bytes >= mine.link_payload) {
      mine.link_payload = t.payload_bytes;
      mine.link_calls = t.calls;
    }
  if (mine.link_payload == 0) return;
  double all_ms = 0, same_ms = 0;
  std::int64_t all_sent = 0, same_sent = 0;
  for (const CommTally& t : measured_calls) {
    all_ms += t.ms;
    all_sent += t.bytes_sent;
    if (t.kind == kind && t.payload_bytes == mine.link_payload) {
      same_ms += t.ms;
      same_sent += t.bytes_sent;
    }
  }
  const CollectiveTiming plain = benchmark_collective(*comm, res, kind, mine.link_payload);
  mine.has_link = true;
  mine.link_kind = kind;
  mine.link.train_GBps = all_ms > 0 ? static_cast<double>(all_sent) / (all_ms * 1e-3) / 1e9 : 0.0;
  mine.link.train_same_GBps = same_ms > 0 ? static_cast<double>(same_sent) / (same_ms * 1e-3) / 1e9 : 0.0;
  mine.link.plain_GBps = plain.bus_GBps();
  mine.link.plain_median_ms = plain.median_ms;
}

double mean_of(const std::vector<double>& v, std::size_t from) {
  if (v.size() <= from) return 0.0;
  double sum = 0;
  for (std::size_t i = from; i < v.size(); ++i) sum += v[i];
  return sum / static_cast<double>(v.size() - from);
}

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

/// Exchanges every rank's RankResult over MPI (fixed-size records: the epoch count is bounded by config).
void mpi_gather_results(const RankResult& mine, std::vector<RankResult>& all, int max_epochs) {
  struct Fixed {
    MemoryStats memory;
    MemoryCheck memory_check;
    LinkDevice link;
    std::int64_t bytes_sent, bytes_first_epoch, driver_bytes, epochs, has_link, link_kind, link_payload, link_calls;
  };
  const std::size_t series = static_cast<std::size_t>(max_epochs) * sizeof(double);
  const std::size_t record = sizeof(Fixed) + 2 * series;
  std::vector<char> out(record, 0), in(record * all.size(), 0);
  Fixed f{mine.memory,
          mine.memory_check,
          mine.link,
          mine.bytes_sent,
          mine.bytes_first_epoch,
          mine.driver_bytes,
          static_cast<std::int64_t>(mine.step_seconds.size()),
          mine.has_link ? 1 : 0,
          static_cast<std::int64_t>(mine.link_kind),
          mine.link_payload,
          mine.link_calls};
  std::memcpy(out.data(), &f, sizeof f);
  std::memcpy(out.data() + sizeof f, mine.step_seconds.data(), mine.step_seconds.size() * sizeof(double));
  std::memcpy(out.data() + sizeof f + series, mine.comm_seconds.data(), mine.comm_seconds.size() * sizeof(double));
  mpi_allgather_bytes(out.data(), record, in.data());
  for (std::size_t r = 0; r < all.size(); ++r) {
    Fixed g;
    const char* at = in.data() + r * record;
    std::memcpy(&g, at, sizeof g);
    all[r].memory = g.memory;
    all[r].memory_check = g.memory_check;
    all[r].link = g.link;
    all[r].bytes_sent = g.bytes_sent;
    all[r].bytes_first_epoch = g.bytes_first_epoch;
    all[r].driver_bytes = g.driver_bytes;
    all[r].has_link = g.has_link != 0;
    all[r].link_kind = static_cast<CollectiveKind>(g.link_kind);
    all[r].link_payload = g.link_payload;
    all[r].link_calls = g.link_calls;
    const auto n = static_cast<std::size_t>(g.epochs);
    all[r].step_seconds.resize(n);
    all[r].comm_seconds.resize(n);
    std::memcpy(all[r].step_seconds.data(), at + sizeof g, n * sizeof(double));
    std::memcpy(all[r].comm_seconds.data(), at + sizeof g + series, n * sizeof(double));
  }
}

/// What NCCL should connect up front: the collectives every strategy uses, point to point for the pipeline and
/// boundary's exchange (ring neighbours: every pair for 2 devices; further pairs connect on first use).
NcclConnect nccl_connect(partition::Strategy s) {
  NcclConnect c;
  const auto kind = partition::traits(s).communication;
  c.point_to_point = kind == partition::Communication::kPointToPoint || kind == partition::Communication::kAllToAll;
  return c;
}

bool is_abort_echo(const std::exception_ptr& e) {
  try {
    std::rethrow_exception(e);
  } catch (const Error& err) {
    return std::string(err.what()).rfind("collective aborted", 0) == 0;
  } catch (...) {
    return false;
  }
}

}  // namespace

TrainReport train_single(const LocalProblem& problem, const Device& device, const TrainConfig& config,
                         const EpochCallback& on_epoch) {
  config.validate();
  TrainReport report;
  report.seed = config.model.seed;
  LaunchOptions launch;
  launch.backend = device.backend;
  std::vector<RankResult> results(1);
  run_device(problem, partition::Strategy::kSingle, 1, config, on_epoch, launch, device, nullptr, {}, report,
             results[0]);
  fill_report(report, results);
  return report;
}

TrainReport train_distributed(const datasets::Dataset& ds, const partition::Plan& plan, const TrainConfig& config,
                              const EpochCallback& on_epoch, const LaunchOptions& launch) {
  config.validate();
  const int k = plan.parts;
  GCNPART_EXPECTS(static_cast<int>(plan.devices.size()) == k, "plan has one DevicePlan per part");
  const bool cuda = launch.backend == Backend::kCuda;
  if (cuda) {
    expect_cuda_build("--device cuda");
    const int visible = cuda_device_count();
    const int needed = launch.mpi ? 1 : k;
    if (visible < needed)
      throw InvalidInput::parameter("--gpus", std::to_string(k),
                                    "at most the " + std::to_string(visible) + " visible CUDA devices");
  }
  partition::check_strategy(plan.strategy, k, config.model.layers, config.model.precision);
  TrainReport report;
  report.strategy = plan.strategy;
  report.parts = k;
  report.seed = config.model.seed;

  if (launch.mpi) {
    // One process per device: this process is rank mpi_rank(); per-rank figures are exchanged over MPI.
    const int rank = mpi_rank();
    if (mpi_size() != k)
      throw InvalidInput::parameter("--parts", std::to_string(k),
                                    "the number of MPI ranks (" + std::to_string(mpi_size()) + ")");
    RankResult mine;
    std::unique_ptr<Communicator> comm;
    DeviceBaseline baseline;
    Device device{launch.backend, rank};
    if (cuda) {
      device.index = mpi_local_rank() % cuda_device_count();
      const NcclId id = mpi_broadcast_nccl_id();
      auto nccl = std::make_unique<NcclCommunicator>(id, rank, k, device.index, nccl_connect(plan.strategy),
                                                     launch.nccl_timeout_s);
      baseline = {nccl->used_before_init(), nccl->init_bytes(), true};
      comm = std::move(nccl);
    } else {
      comm = std::make_unique<MpiCommunicator>();
    }
    const LocalProblem problem = device_problem(ds, plan, rank, config.normalize_features);
    run_device(problem, plan.strategy, k, config, rank == 0 ? on_epoch : EpochCallback{}, launch, device,
               comm.get(), baseline, report, mine);
    std::vector<RankResult> all(static_cast<std::size_t>(k));
    mpi_gather_results(mine, all, config.epochs);
    fill_report(report, all);
    return report;
  }

  std::vector<RankResult> results(static_cast<std::size_t>(k));
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(k));
  auto group = cuda ? nullptr : std::make_shared<InProcessGroup>(k);
  const NcclId nccl_id = cuda ? nccl_unique_id() : NcclId{};
  std::atomic<bool> failed{false};
  const int threads_each = std::max(1, omp_get_max_threads() / k);

  auto worker = [&](int rank) {
    try {
      omp_set_num_threads(threads_each);
      std::unique_ptr<Communicator> comm;
      DeviceBaseline baseline;
      if (cuda) {
        // Threads mode connects point to point lazily: the pipeline hung at start on 2 H200s with the up-front
        // send/recv of connect_up_front (one process, one thread per GPU); under mpirun it connects fine.
        NcclConnect connect = nccl_connect(plan.strategy);
        connect.point_to_point = false;
        auto nccl = std::make_unique<NcclCommunicator>(nccl_id, rank, k, rank, connect, launch.nccl_timeout_s);
        nccl->set_abort_flag(&failed);
        baseline = {nccl->used_before_init(), nccl->init_bytes(), true};
        comm = std::move(nccl);
      } else {
        comm = std::make_unique<InProcessCommunicator>(group, rank);
      }
      const LocalProblem problem = device_problem(ds, plan, rank, config.normalize_features);
      run_device(problem, plan.strategy, k, config, on_epoch, launch, Device{launch.backend, rank}, comm.get(),
                 baseline, report, results[rank]);
    } catch (...) {
      errors[rank] = std::current_exception();
      failed = true;
      if (group) group->abort(rank);
    }
  };

  std::vector<std::thread> pool;
  for (int r = 1; r < k; ++r) pool.emplace_back(worker, r);
  worker(0);
  for (auto& t : pool) t.join();
  // Report the root cause: the first error that is not the abort it caused in the others.
  for (int r = 0; r < k; ++r)
    if (errors[r] && !is_abort_echo(errors[r])) std::rethrow_exception(errors[r]);
  for (int r = 0; r < k; ++r)
    if (errors[r]) std::rethrow_exception(errors[r]);
  fill_report(report, results);
  if (plan.strategy == partition::Strategy::kPipeline) {  // every stage's layers, in layer order
    report.parameters.clear();
    for (const auto& r : results) report.parameters.insert(report.parameters.end(), r.parameters.begin(), r.parameters.end());
  }
  return report;
}

}  // namespace gcnpart::engine
