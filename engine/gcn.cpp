#include "engine/gcn.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <type_traits>

#include "base/error.hpp"
#include "base/format.hpp"
#include "partition/memory_model.hpp"
#include "base/host_vector.hpp"
#include "base/philox.hpp"
#include "partition/strategy.hpp"
#include "partition/streamed_plan.hpp"
#include "datasets/loaders.hpp"

namespace gcnpart::engine {

using kernels::Context;

std::vector<std::int64_t> GcnConfig::dims(std::int64_t features, std::int64_t classes) const {
  std::vector<std::int64_t> d{features};
  for (int l = 0; l + 1 < layers; ++l) d.push_back(hidden);
  d.push_back(classes);
  return d;
}

std::vector<std::int64_t> GcnConfig::stored_dims(std::int64_t features, std::int64_t classes) const {
  return partition::stored_widths(dims(features, classes), precision);
}

void GcnConfig::validate() const {
  if (layers < 1 || layers > 64) throw InvalidInput::parameter("--layers", std::to_string(layers), "1..64");
  if (hidden < 1) throw InvalidInput::parameter("--hidden", std::to_string(hidden), ">= 1");
  if (!(dropout >= 0.0f && dropout < 1.0f))
    throw InvalidInput::parameter("--dropout", std::to_string(dropout), "a probability in [0, 1)");
  if (!(lr > 0.0f) || !std::isfinite(lr)) throw InvalidInput::parameter("--lr", std::to_string(lr), "> 0");
  if (!(weight_decay >= 0.0f) || !std::isfinite(weight_decay))
    throw InvalidInput::parameter("--weight-decay", std::to_string(weight_decay), ">= 0");
  if (bf16() && spmm == SpmmAlgo::kCusparse)
    throw InvalidInput::parameter("--spmm", "cusparse",
                                  "own or auto with --precision bf16 (cuSPARSE has no bf16-input, fp32-output CSR SpMM)");
  spmm_tuning.validate();
  if (gather_chunks < 1 || gather_chunks > kMaxGatherChunks)
    throw InvalidInput::parameter("--gather-chunks", std::to_string(gather_chunks),
                                  "1.." + std::to_string(kMaxGatherChunks));
}

partition::DeviceShape device_shape(const LocalProblem& p) {
  partition::DeviceShape s;
  s.rows = p.num_rows;
  s.graph_entries = p.aggregation_entries();
  std::int64_t nonzeros = 0;
#pragma omp parallel for reduction(+ : nonzeros)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(p.features.size()); ++i)
    nonzeros += p.features[i] != 0.0f ? 1 : 0;
  s.feature_nonzeros = nonzeros;
  s.split_rows = {static_cast<std::int64_t>(p.train_rows.size()), static_cast<std::int64_t>(p.valid_rows.size()),
                  static_cast<std::int64_t>(p.test_rows.size())};
  if (const auto* t = std::get_if<GatherTable>(&p.structure)) {
    s.gather = true;
    s.parts = t->parts;
    s.table_block = t->table_block;
  } else if (const auto* b = std::get_if<BoundaryExchange>(&p.structure)) {
    s.boundary = true;
    s.parts = b->parts;
    for (const auto& rows : b->send_rows) s.send_rows += static_cast<std::int64_t>(rows.size());
    for (auto c : b->recv_counts) s.recv_rows += c;
  }
  return s;
}

partition::ModelSpec model_spec(const LocalProblem& p, const GcnConfig& c, int stage, bool communicator) {
  partition::ModelSpec m;
  m.layers = c.layers;
  m.hidden = c.hidden;
  m.features = p.num_features;
  m.classes = p.num_classes;
  m.dropout = c.dropout > 0;
  m.sparse_features_below = c.sparse_features_below;
  m.precision = c.precision;
  m.spmm = c.spmm;
  m.spmm_pad = c.spmm_tuning.pad;
  m.stages = c.pipeline_stages;
  m.stage = stage;
  m.cuda_graph = communicator ? CudaGraphMode::kOff : c.cuda_graph;
  return m;
}

namespace {

enum Split { kTrain = 0, kValid = 1, kTest = 2 };

/// Row-major rows x cols floats as rows of `stored` >= cols elements (T = float: copied; T = Bf16: rounded), zeros
/// after each row's values; one parallel pass, which is also the first touch of the output (no zero fill).
template <class T>
HostVector<T> stored_rows(const float* x, std::int64_t rows, std::int64_t cols, std::int64_t stored) {
  HostVector<T> out(static_cast<std::size_t>(rows * stored));
#pragma omp parallel for schedule(static) if (rows * stored > (std::int64_t{1} << 16))
  for (std::int64_t i = 0; i < rows; ++i) {
    T* row = out.data() + i * stored;
    if constexpr (std::is_same_v<T, kernels::Bf16>) {
      kernels::convert_to_bf16_async(kernels::Context{}, x + i * cols, cols, row);
    } else {
      std::copy_n(x + i * cols, cols, row);
    }
    std::fill(row + cols, row + stored, T{});
  }
  return out;
}

}  // namespace

GcnModel::GcnModel(Resources& res, const LocalProblem& problem, const GcnConfig& config, Communicator* comm)
    : res_(res), problem_(problem), comm_(comm), config_(config) {
  config_.validate();
  GCNPART_EXPECTS(problem.num_rows == problem.num_cols, "GcnModel trains on a square local graph");
  res_.activate();
  const Context& ctx = res_.context();
  rows_ = problem.num_rows;
  cols_ = problem.num_cols;
  model_dims_ = config_.dims(problem.num_features, problem.num_classes);
  // Stored widths: as partition::ModelSpec::stored_dims, which the allocation plan uses.
  dims_ = config_.stored_dims(problem.num_features, problem.num_classes);
  const int L = config_.layers;
  stages_ = config_.pipeline_stages;
  if (stages_ > 1) {
    GCNPART_EXPECTS(comm_ != nullptr && comm_->size() == stages_, "a pipeline needs a communicator of its stages");
    partition::check_strategy(partition::Strategy::kPipeline, stages_, L, config_.precision);
    stage_ = comm_->rank();
  }
  first_ = stage_ * L / stages_;
  last_ = (stage_ + 1) * L / stages_;

  // Every buffer below (and the aggregation's) is allocated by name from the allocation plan, which the memory
  // model sums too; the plan also decides which optional buffers exist.
  const partition::DeviceShape shape = device_shape(problem);
  const partition::ModelSpec spec = model_spec(problem, config_, stage_, comm_ != nullptr);
  const Backend backend = ctx.is_cuda() ? Backend::kCuda : Backend::kCpu;
  const std::int64_t resident_peak = partition::estimate_device_memory(shape, spec, backend).peak;
  std::string streamed_note;
  const std::unique_ptr<partition::StreamedPlan> streamed =
      choose_streamed_plan(shape, spec, backend, resident_peak, streamed_note);
  if (streamed == nullptr) refuse_beyond_cap(resident_peak, streamed_note);
  const AllocationPlan plan = streamed != nullptr ? streamed->device : partition::allocation_plan(shape, spec, backend);
  if (streamed == nullptr && partition::uses_sparse_input(shape, spec))
    sparse_ = std::make_unique<SparseInput>(res_, plan, problem.features, cols_, problem.num_features,
                                            config_.spmm_tuning);
  upload_problem(plan, streamed == nullptr);
  ParameterLayout layout;
  layout.dims = dims_;
  layout.model_dims = model_dims_;
  layout.first = first_;
  layout.last = last_;
  layout.seed = config_.seed;
  layout.weight_decay = config_.weight_decay;
  layout.weight_decay_all_layers = config_.weight_decay_all_layers;
  layout.bf16_copy = config_.bf16();
  params_ = std::make_unique<ModelParameters>(res_, plan, layout, comm_);
  if (streamed == nullptr) {
    if (config_.bf16()) {
      allocate_activations(bf16_, plan);
      z32_ = take<float>(res_, plan, "z32");
    } else {
      allocate_activations(f32_, plan);
    }
  }
  logits_ = take_if_planned<float>(res_, plan, "logits");
  positive_.resize(static_cast<std::size_t>(L + 1));
  if (streamed == nullptr)
    for (int l = 0; l <= L; ++l)
      positive_[l] = take_if_planned<std::uint8_t>(res_, plan, "positive[" + std::to_string(l) + "]");
  scalar_f_ = take<float>(res_, plan, "loss_scalars");
  scalar_i_ = take<std::int64_t>(res_, plan, "accuracy_counters");
  step_scalars_ = take<std::uint64_t>(res_, plan, "step_scalars");
  staged_scalars_.assign(static_cast<std::size_t>(step_scalars_.size()), 0);
  static_assert(kMaxLayers == 64, "the allocation plan's step_scalars holds 64 keys and one slot");
  // A streamed step synchronises between phases' copies on its own: no captured graph; its SpMMs are the own
  // kernel's row ranges.
  if (streamed != nullptr) config_.cuda_graph = CudaGraphMode::kOff;
  execution_ = std::make_unique<StepExecution>(res_, plan, config_.cuda_graph, comm_ != nullptr || stages_ > 1);

  std::vector<std::int64_t> widths = partition::aggregation_widths(spec);
  if (config_.bf16() || streamed != nullptr) widths.clear();  // own kernel only: no cuSPARSE plans
  aggregation_ = make_aggregation(res_, problem, comm_, streamed != nullptr ? SpmmAlgo::kOwn : config_.spmm, plan,
                                  widths, config_.spmm_tuning, config_.gather_chunks, config_.boundary_overlap);
  if (streamed != nullptr)
    streamed_ = std::make_unique<StreamedLayers>(res_, problem, *streamed, dims_, config_.bf16(), *aggregation_,
                                                 *params_);
  sync();
}

GcnModel::~GcnModel() = default;

void GcnModel::refuse_beyond_cap(std::int64_t peak, const std::string& streamed_note) const {
  // CPU only: there the memory model is exact (the same plan, no driver); on a GPU the allocator's cap decides.
  if (res_.context().is_cuda()) return;
  const MemoryStats now = res_.memory().stats();
  if (now.limit <= 0 || now.current + peak <= now.limit) return;
  std::string msg = "out of memory on " + res_.memory().name() + ": asked " + human_bytes(static_cast<double>(peak)) +
                    " (" + std::to_string(peak) + " bytes) for the model, the memory model's tracked peak of this " +
                    "device, refused before allocating; in use " + human_bytes(static_cast<double>(now.current)) +
                    ", limit " + human_bytes(static_cast<double>(now.limit)) +
                    " (--memory-limit; on CPU devices by default 3/4 of the host memory the process may use, shared " +
                    "by its devices)" + streamed_note;
  if (const std::string hint = res_.memory().oom_hint(); !hint.empty()) msg += ". " + hint;
  throw OutOfMemory(msg);
}

std::unique_ptr<partition::StreamedPlan> GcnModel::choose_streamed_plan(const partition::DeviceShape& shape,
                                                                       const partition::ModelSpec& spec,
                                                                       Backend backend,
                                                                       std::int64_t resident_peak,
                                                                       std::string& streamed_note) const {
  const OffloadMode mode = config_.offload;
  if (mode == OffloadMode::kOff) return nullptr;
  if (comm_ != nullptr || stages_ > 1 || !partition::streams(shape, spec)) {
    if (mode == OffloadMode::kHost)
      throw InvalidInput::parameter("--offload", "host",
                                    "the single strategy (one device holding every layer streams its rows through "
                                    "host memory; multi-device strategies keep theirs resident)");
    return nullptr;
  }
  // The device's budget: what its cap leaves, else (a GPU without --memory-limit) what the driver has free.
  const MemoryStats now = res_.memory().stats();
  std::int64_t budget = -1;
  if (now.limit > 0) {
    budget = now.limit - now.current;
  } else if (res_.context().is_cuda()) {
    // What the driver has free, less a margin for what the tracker does not see (the caching allocator's blocks of
    // other sizes, cuBLAS's own workspace, fragmentation): 3 % and 256 MiB.
    const std::int64_t free = res_.driver_free_bytes();
    budget = std::max<std::int64_t>(0, free - free / 33 - (std::int64_t{256} << 20));
  }
  if (mode == OffloadMode::kAuto && (budget < 0 || resident_peak <= budget)) return nullptr;
  if (budget < 0) budget = resident_peak;
  auto plan = std::make_unique<partition::StreamedPlan>(partition::streamed_plan(
      shape, spec, backend, budget, config_.offload_part_rows, mode == OffloadMode::kHost));
  const std::int64_t peak = partition::estimate_plan_memory(plan->device, backend).peak;
  if (peak > budget) {
    const std::string streamed = "streamed through host memory it needs " +
                                 human_bytes(static_cast<double>(peak)) + " (" + std::to_string(peak) + " bytes: " +
                                 std::to_string(plan->parts) + " parts of " + std::to_string(plan->part_rows) +
                                 " rows; the graph, the weights, the logits and one " +
                                 std::to_string(plan->operand_width) + "-wide SpMM operand stay on the device)";
    if (mode == OffloadMode::kAuto) {  // the resident refusal (or the allocator's error on a GPU) says it all
      streamed_note = "; " + streamed;
      return nullptr;
    }
    const MemoryStats now_stats = res_.memory().stats();
    std::string msg = "out of memory on " + res_.memory().name() + ": asked " +
                      human_bytes(static_cast<double>(peak)) + " (" + std::to_string(peak) +
                      " bytes) for the model with --offload host, refused before allocating (" + streamed +
                      "; resident " + human_bytes(static_cast<double>(resident_peak)) + "); in use " +
                      human_bytes(static_cast<double>(now_stats.current)) + ", limit " +
                      human_bytes(static_cast<double>(now_stats.limit > 0 ? now_stats.limit : budget)) +
                      (now_stats.limit > 0 ? " (--memory-limit)" : " (free on the device)");
    if (const std::string hint = res_.memory().oom_hint(); !hint.empty()) msg += ". " + hint;
    throw OutOfMemory(msg);
  }
  // The host keeps the host-tier matrices; a CPU device's own memory is host memory too, so there both count.
  const std::int64_t host_budget = datasets::default_max_host_bytes();
  const bool cpu = !res_.context().is_cuda();
  const std::int64_t host_need = plan->host_bytes + (cpu ? peak : 0);
  if (host_need > host_budget)
    throw OutOfMemory("out of host memory: streaming the model through host memory needs " +
                      human_bytes(static_cast<double>(host_need)) + " (" + std::to_string(host_need) +
                      " bytes) of host memory for its saved matrices" +
                      (cpu ? " and the CPU device's own " + human_bytes(static_cast<double>(peak)) : std::string()) +
                      ", refused before allocating; the host allows " + human_bytes(static_cast<double>(host_budget)) +
                      " (3/4 of the tightest of RAM, ulimit -v and the cgroup's limit)");
  return plan;
}

void GcnModel::upload_problem(const AllocationPlan& plan, bool features) {
  const LocalProblem& p = problem_;
  // Dense input features, rows widened to the stored width (zero columns) when the feature count is not a whole
  // number of vectors; bf16 rounded on the host (the float copy never reaches the device). Later pipeline stages
  // never read them.
  if (features && sparse_ == nullptr && first_ == 0) {
    const std::int64_t f = p.num_features, stored = dims_[0];
    if (config_.bf16()) {
      bf16_.features =
          upload_planned(res_, plan, "features", stored_rows<kernels::Bf16>(p.features.data(), cols_, f, stored));
    } else if (stored != f) {
      f32_.features = upload_planned(res_, plan, "features", stored_rows<float>(p.features.data(), cols_, f, stored));
    } else {
      f32_.features = upload_planned(res_, plan, "features", p.features);
    }
  }
  labels_ = upload_planned(res_, plan, "labels", p.labels);
  global_ids_ = upload_planned(res_, plan, "global_ids", p.global_ids);
  split_rows_[kTrain] = upload_planned(res_, plan, "train_rows", p.train_rows);
  split_rows_[kValid] = upload_planned(res_, plan, "valid_rows", p.valid_rows);
  split_rows_[kTest] = upload_planned(res_, plan, "test_rows", p.test_rows);
  if (partition::find_allocation(plan, "loss_slots") != nullptr)
    loss_slots_ = upload_planned(res_, plan, "loss_slots", kernels::loss_row_slots(p.train_rows, rows_));
}

template <class T>
void GcnModel::allocate_activations(Activations<T>& a, const AllocationPlan& plan) {
  // inputs[l]: layer l's (dropped-out) input, for the layers held here plus, in a pipeline, the output handed to
  // the next stage (inputs[last_]); aggregated[l] for layers that aggregate first. Widths: partition::allocation_plan.
  const int L = config_.layers;
  a.inputs.resize(static_cast<std::size_t>(L));
  a.aggregated.resize(static_cast<std::size_t>(L));
  for (int l = 0; l < L; ++l) {
    a.inputs[l] = take_if_planned<T>(res_, plan, "inputs[" + std::to_string(l) + "]");
    a.aggregated[l] = take_if_planned<T>(res_, plan, "aggregated[" + std::to_string(l) + "]");
  }
  a.intermediate = take<T>(res_, plan, "intermediate");
  a.grad_a = take<T>(res_, plan, "grad_a");
  a.grad_b = take<T>(res_, plan, "grad_b");
}

template <>
GcnModel::Activations<float>& GcnModel::activations<float>() noexcept {
  return f32_;
}
template <>
GcnModel::Activations<kernels::Bf16>& GcnModel::activations<kernels::Bf16>() noexcept {
  return bf16_;
}
template <>
float* GcnModel::float_scratch<float>() noexcept {
  return f32_.intermediate.data();
}
template <>
float* GcnModel::float_scratch<kernels::Bf16>() noexcept {
  return z32_.data();
}

void GcnModel::stage_step_scalars(int epoch, std::int64_t step) {
  for (int l = 0; l < config_.layers; ++l) staged_scalars_[static_cast<std::size_t>(l)] = dropout_key(epoch, l);
  float corrections[2] = {1.0f, 1.0f};
  if (step >= 1) kernels::adam_corrections(adam_params(), step, corrections);
  std::memcpy(&staged_scalars_[kMaxLayers], corrections, sizeof corrections);
  // A pageable source: the copy has read it when the call returns, so the host copy may change right after.
  kernels::copy_async(res_.context(), step_scalars_.data(), staged_scalars_.data(),
                      staged_scalars_.size() * sizeof(std::uint64_t));
}

void GcnModel::sync() {
  if (comm_ != nullptr) {
    comm_->synchronize(res_.context());
  } else {
    res_.synchronize();
  }
}

std::uint64_t GcnModel::dropout_key(int epoch, int layer) const {
  return rng::stream_key(config_.seed, rng::kDropout, static_cast<std::uint64_t>(epoch),
                         static_cast<std::uint64_t>(layer));
}

kernels::Dropout GcnModel::layer_dropout(int epoch, int layer, float p) const {
  kernels::Dropout d;
  d.p = p;
  d.key = dropout_key(epoch, layer);
  d.key_at = step_keys() + layer;  // the same key, staged for the epoch being trained (stage_step_scalars)
  d.global_ids = global_ids_.data();
  return d;
}

template <class T>
void GcnModel::aggregate_rows(Pass pass, const T* x, T* y, std::int64_t rows, std::int64_t width) {
  if constexpr (std::is_same_v<T, float>) {
    aggregation_->apply_async(pass, x, y, width);
  } else {
    // The SpMM stores bf16 where it can (z32_ then holds only its long rows' sums), else one rounding pass.
    if (aggregation_->apply_rounded_async(pass, x, y, z32_.data(), width)) return;
    aggregation_->apply_async(pass, x, z32_.data(), width);
    kernels::convert_to_bf16_async(res_.context(), z32_.data(), rows * width, y);
  }
}

void GcnModel::receive_stage_input(Activations<float>& a) {
  // Pipeline: the previous stage's output (relu and this layer's dropout already applied) is our input.
  comm_->recv(res_.context(), a.inputs[first_].data(), rows_ * dims_[first_], stage_ - 1);
}

void GcnModel::receive_stage_input(Activations<kernels::Bf16>&) {
  GCNPART_EXPECTS(false, "pipeline stages store float32 (partition::check_strategy refuses bf16 pipelines)");
}

void GcnModel::forward_async(bool training, int epoch) {
  if (streamed_ != nullptr) return streamed_forward_async(training, epoch);
  if (config_.bf16()) return forward_stored_async<kernels::Bf16>(training, epoch);
  forward_stored_async<float>(training, epoch);
}

void GcnModel::backward_async() {
  if (streamed_ != nullptr) return streamed_backward_async();
  if (config_.bf16()) return backward_stored_async<kernels::Bf16>();
  backward_stored_async<float>();
}

void GcnModel::streamed_forward_async(bool training, int epoch) {
  last_epoch_ = epoch;
  streamed_->forward_async(
      training, [this, epoch](int layer, float p) { return layer_dropout(epoch, layer, p); }, config_.dropout,
      logits_.data());
}

void GcnModel::streamed_backward_async() {
  if (config_.bf16()) {
    loss_gradient_async<kernels::Bf16>(static_cast<kernels::Bf16*>(streamed_->grad_logits()));
  } else {
    loss_gradient_async<float>(static_cast<float*>(streamed_->grad_logits()));
  }
  const int epoch = last_epoch_;
  streamed_->backward_async([this, epoch](int layer, float p) { return layer_dropout(epoch, layer, p); },
                            config_.dropout);
}

template <class T>
void GcnModel::forward_stored_async(bool training, int epoch) {
  constexpr bool kFloat = std::is_same_v<T, float>;
  Activations<T>& a = activations<T>();
  const Context& ctx = res_.context();
  const int L = config_.layers;
  const float p = training ? config_.dropout : 0.0f;
  last_epoch_ = epoch;
  const T* x = a.features.data();
  if (first_ > 0) {
    receive_stage_input(a);
    x = a.inputs[first_].data();
  } else if (p > 0 && sparse_ == nullptr) {
    kernels::dropout_async(ctx, kernels::make_view(x, cols_, dims_[0]), layer_dropout(epoch, 0, p),
                           kernels::make_view(a.inputs[0].data(), cols_, dims_[0]));
    x = a.inputs[0].data();
  }
  for (int l = first_; l < last_; ++l) {
    const LayerShape& ly = params_->layer(l);
    const T* w = params_->weights<T>(l);
    const bool last = l == L - 1;
    // Z: the logits; else float storage writes layer l + 1's input in place, bf16 float rows its epilogue rounds.
    float* z = last ? logits_.data() : z32_.data();
    if constexpr (kFloat)
      if (!last) z = a.inputs[l + 1].data();
    if (l == 0 && sparse_ != nullptr) {
      // Z = Â (dropout(X) W) with X sparse: dropout on the stored values, then a sparse x dense product from the
      // float master weights (bf16: rounded for the aggregation).
      float* xw = float_scratch<T>();
      sparse_->multiply_async(ctx, layer_dropout(epoch, 0, p), params_->master_weights(0), xw, ly.out);
      if constexpr (!kFloat) kernels::convert_to_bf16_async(ctx, xw, cols_ * ly.out, a.intermediate.data());
      aggregation_->forward_async(a.intermediate.data(), z, ly.out);
    } else if (ly.aggregate_first) {
      aggregate_rows<T>(Pass::kForward, x, a.aggregated[l].data(), rows_, ly.in);
      kernels::gemm_async(ctx, false, false, 1.0f, kernels::make_view(a.aggregated[l].data(), rows_, ly.in),
                          kernels::make_view(w, ly.in, ly.out), 0.0f, kernels::make_view(z, rows_, ly.out));
    } else {
      kernels::gemm_async(ctx, false, false, 1.0f, kernels::make_view(x, cols_, ly.in),
                          kernels::make_view(w, ly.in, ly.out), 0.0f,
                          kernels::make_view(a.intermediate.data(), cols_, ly.out));
      aggregation_->forward_async(a.intermediate.data(), z, ly.out);
    }
    const float* b = params_->bias(l);
    if (last) {
      // Training: the loss adds the output bias in its pass over the logits (loss_gradient_async).
      if (!training)
        kernels::bias_act_dropout_async(ctx, kernels::make_view(z, rows_, ly.out), b, false, kernels::Dropout{},
                                        kernels::make_view(z, rows_, ly.out));
    } else {
      kernels::bias_act_dropout_async(ctx, kernels::make_view(z, rows_, ly.out), b, true,
                                      layer_dropout(epoch, l + 1, p),
                                      kernels::make_view(a.inputs[l + 1].data(), rows_, ly.out),
                                      training ? positive_[l + 1].data() : nullptr);
      x = a.inputs[l + 1].data();
    }
  }
  if constexpr (kFloat)
    if (last_ < L) comm_->send(ctx, a.inputs[last_].data(), rows_ * dims_[last_], stage_ + 1);
}

template <class T>
void GcnModel::loss_gradient_async(T* g) {
  const int L = config_.layers;
  const auto n_train = static_cast<std::int64_t>(problem_.train_rows.size());
  const float scale = problem_.global_train > 0 ? 1.0f / static_cast<float>(problem_.global_train) : 0.0f;
  // The model's classes of the stored (padded) logits; the gradient's padding columns are written as zeros.
  kernels::bias_softmax_cross_entropy_async(
      res_.context(), kernels::make_view(logits_.data(), rows_, model_dims_[L], dims_[L]), params_->bias(L - 1),
      labels_.data(), split_rows_[kTrain].data(), loss_slots_.data(), n_train, scale, scalar_f_.data(),
      kernels::make_view(g, rows_, model_dims_[L], dims_[L]), params_->bias_gradient(L - 1));
}

template <class T>
void GcnModel::backward_stored_async() {
  constexpr bool kFloat = std::is_same_v<T, float>;
  Activations<T>& a = activations<T>();
  const Context& ctx = res_.context();
  const int L = config_.layers;
  T* g = a.grad_a.data();
  T* g_next = a.grad_b.data();
  if (last_ == L) {
    loss_gradient_async(g);
  } else if constexpr (kFloat) {
    // Pipeline: the next stage sends d(loss)/d(our output); undo our output's relu and dropout here.
    kernels::memset_zero_async(ctx, scalar_f_.data(), sizeof(float));  // the loss lives on the last stage
    comm_->recv(ctx, g, rows_ * dims_[last_], stage_ + 1);
    kernels::bias_act_dropout_backward_async(ctx, kernels::make_view(a.inputs[last_].data(), rows_, dims_[last_]),
                                             kernels::make_view(g, rows_, dims_[last_]), true, config_.dropout,
                                             kernels::make_view(g, rows_, dims_[last_]),
                                             params_->bias_gradient(last_ - 1), positive_[last_].data());
  }
  for (int l = last_ - 1; l >= first_; --l) {
    const LayerShape& ly = params_->layer(l);
    const T* w = params_->weights<T>(l);
    float* dw = params_->weight_gradient(l);
    // The bias gradient, the column sums of G, came with the pass that made G: the loss for the output layer, the
    // ReLU / dropout backward below it (the layer above's iteration, or the pipeline's received gradient).
    if (ly.aggregate_first) {
      // Z = (ÂX) W: dW = (ÂX)^T G; dX = Â^T (G W^T) = Â (G W^T) by symmetry.
      kernels::gemm_async(ctx, true, false, 1.0f, kernels::make_view(a.aggregated[l].data(), rows_, ly.in),
                          kernels::make_view(g, rows_, ly.out), 0.0f, kernels::make_view(dw, ly.in, ly.out));
      if (l > 0) {
        kernels::gemm_async(ctx, false, true, 1.0f, kernels::make_view(g, rows_, ly.out),
                            kernels::make_view(w, ly.in, ly.out), 0.0f,
                            kernels::make_view(a.intermediate.data(), rows_, ly.in));
        aggregate_rows<T>(Pass::kBackward, a.intermediate.data(), g_next, rows_, ly.in);
      }
    } else if (l == 0 && sparse_ != nullptr) {
      // Z = Â (X W), X sparse: dP = Â G in float rows, dW = dropout(X)^T dP.
      float* dp = float_scratch<T>();
      aggregation_->backward_async(static_cast<const T*>(g), dp, ly.out);
      sparse_->weight_gradient_async(ctx, dp, dw, ly.out);
    } else {
      // Z = Â (X W): dP = Â^T G = Â G; dW = X^T dP; dX = dP W^T.
      aggregate_rows<T>(Pass::kBackward, g, a.intermediate.data(), cols_, ly.out);
      const T* x = l == 0 ? (config_.dropout > 0 ? a.inputs[0].data() : a.features.data()) : a.inputs[l].data();
      kernels::gemm_async(ctx, true, false, 1.0f, kernels::make_view(x, cols_, ly.in),
                          kernels::make_view(a.intermediate.data(), cols_, ly.out), 0.0f,
                          kernels::make_view(dw, ly.in, ly.out));
      if (l > 0)
        kernels::gemm_async(ctx, false, true, 1.0f, kernels::make_view(a.intermediate.data(), cols_, ly.out),
                            kernels::make_view(w, ly.in, ly.out), 0.0f, kernels::make_view(g_next, cols_, ly.in));
    }
    if (l > first_) {  // and the bias gradient of layer l - 1 in the same pass
      kernels::bias_act_dropout_backward_async(ctx, kernels::make_view(a.inputs[l].data(), rows_, ly.in),
                                               kernels::make_view(g_next, rows_, ly.in), true, config_.dropout,
                                               kernels::make_view(g_next, rows_, ly.in), params_->bias_gradient(l - 1),
                                               positive_[l].data());
      std::swap(g, g_next);
    } else if (l > 0) {
      // Pipeline: hand d(loss)/d(our input) to the previous stage, which owns that activation.
      if constexpr (kFloat) comm_->send(ctx, g_next, rows_ * ly.in, stage_ - 1);
    }
  }
  // Data-parallel strategies sum the weight gradients; pipeline stages own disjoint layers.
  if (comm_ != nullptr && stages_ == 1) comm_->allreduce_sum(ctx, params_->gradients_flat(), params_->count());
}

double GcnModel::forward_backward(int epoch) {
  res_.activate();
  stage_step_scalars(epoch, step_ + 1);
  forward_async(true, epoch);
  backward_async();
  if (comm_ != nullptr) comm_->allreduce_sum(res_.context(), scalar_f_.data(), 1);
  float loss = 0;
  kernels::copy_async(res_.context(), &loss, scalar_f_.data(), sizeof(float));
  sync();
  return loss;
}

void GcnModel::enqueue_step() {
  forward_async(true, last_epoch_);
  backward_async();
  if (comm_ != nullptr) comm_->allreduce_sum(res_.context(), scalar_f_.data(), 1);
  // The step being taken (train_step counts it when it is done), with its staged corrections (a replay reads its
  // own step's).
  params_->adam_async(res_.context(), adam_params(), step_ + 1, step_corrections());
}

double GcnModel::train_step(int epoch) {
  res_.activate();
  // step_ counts completed steps: a step that throws is not counted (the Adam step takes step_ + 1).
  stage_step_scalars(epoch, step_ + 1);
  last_epoch_ = epoch;
  const bool profiled = res_.context().profiler != nullptr;  // profiled steps run eagerly (events per operation)
  const bool capture = execution_->run([this] { enqueue_step(); }, [this] { sync(); }, profiled);
  float loss = 0;
  kernels::copy_async(res_.context(), &loss, scalar_f_.data(), sizeof(float));
  sync();
  ++step_;
  if (capture) execution_->capture([this] { enqueue_step(); });  // a failed capture (on: throws) keeps the step
  return loss;
}

EvalResult GcnModel::evaluate() {
  res_.activate();
  const Context& ctx = res_.context();
  forward_async(false, 0);
  const auto logits = kernels::make_view(logits_.data(), rows_, model_dims_.back(), dims_.back());
  if (last_ == config_.layers) {
    for (int s = 0; s < 3; ++s) {
      kernels::softmax_cross_entropy_async(ctx, logits, labels_.data(), split_rows_[s].data(), split_rows_[s].size(),
                                           1.0f, scalar_f_.data() + s, kernels::MatrixView{});
      kernels::count_correct_async(ctx, logits, labels_.data(), split_rows_[s].data(), split_rows_[s].size(),
                                   scalar_i_.data() + s);
    }
  } else {  // pipeline: only the last stage has logits
    kernels::memset_zero_async(ctx, scalar_f_.data(), 3 * sizeof(float));
    kernels::memset_zero_async(ctx, scalar_i_.data(), 3 * sizeof(std::int64_t));
  }
  if (comm_ != nullptr) {
    comm_->allreduce_sum(ctx, scalar_f_.data(), 3);
    comm_->allreduce_sum(ctx, scalar_i_.data(), 3);
  }
  float losses[3];
  std::int64_t correct[3];
  kernels::copy_async(ctx, losses, scalar_f_.data(), sizeof losses);
  kernels::copy_async(ctx, correct, scalar_i_.data(), sizeof correct);
  sync();
  EvalResult r;
  for (int s = 0; s < 3; ++s) {
    r.loss_sum[s] = losses[s];
    r.correct[s] = correct[s];
  }
  return r;
}

ModelState GcnModel::state() { return params_->state(step_); }

void GcnModel::set_state(const ModelState& s) {
  params_->set_state(s);
  step_ = s.step;
}

std::vector<std::vector<float>> GcnModel::parameters() { return params_->parameters(); }

std::vector<std::vector<float>> GcnModel::gradients() { return params_->gradients(); }

void GcnModel::set_parameters(const std::vector<std::vector<float>>& params) { params_->set_parameters(params); }

std::vector<float> GcnModel::logits() {
  std::vector<float> stored(static_cast<std::size_t>(logits_.size()));
  kernels::copy_async(res_.context(), stored.data(), logits_.data(), logits_.bytes());
  sync();
  const std::int64_t classes = model_dims_.back(), ld = dims_.back();
  if (stored.empty() || classes == ld) return stored;  // a pipeline stage without the last layer holds no logits
  std::vector<float> out(static_cast<std::size_t>(rows_ * classes));
  for (std::int64_t i = 0; i < rows_; ++i)
    std::copy_n(stored.begin() + i * ld, classes, out.begin() + i * classes);
  return out;
}

}  // namespace gcnpart::engine
