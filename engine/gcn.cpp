#include "engine/gcn.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <type_traits>

#include "base/error.hpp"
#include "base/host_vector.hpp"
#include "base/philox.hpp"
#include "partition/strategy.hpp"

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
  s.graph_entries = p.gather || p.boundary ? p.gather_forward.num_edges() : p.graph.num_edges();
  std::int64_t nonzeros = 0;
#pragma omp parallel for reduction(+ : nonzeros)
  for (std::int64_t i = 0; i < static_cast<std::int64_t>(p.features.size()); ++i)
    nonzeros += p.features[i] != 0.0f ? 1 : 0;
  s.feature_nonzeros = nonzeros;
  s.split_rows = {static_cast<std::int64_t>(p.train_rows.size()), static_cast<std::int64_t>(p.valid_rows.size()),
                  static_cast<std::int64_t>(p.test_rows.size())};
  s.gather = p.gather;
  s.parts = p.parts;
  s.table_block = p.gather ? p.table_block : 0;
  s.boundary = p.boundary;
  for (const auto& rows : p.send_rows) s.send_rows += static_cast<std::int64_t>(rows.size());
  for (auto c : p.recv_counts) s.recv_rows += c;
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
  const AllocationPlan plan = partition::allocation_plan(shape, spec, ctx.is_cuda() ? Backend::kCuda : Backend::kCpu);

  // Data (the graph and its normalisation go to the aggregation, below).
  sparse_input_ = partition::uses_sparse_input(shape, spec);
  if (sparse_input_) {
    upload_sparse_features(plan);
  } else if (first_ == 0) {  // later pipeline stages never read the input features
    // Rows widened to the stored width (zero columns) when the feature count is not a whole number of vectors.
    const std::int64_t f = problem.num_features, stored = dims_[0];
    if (config_.bf16()) {  // rounded on the host: the float copy never reaches the device
      features16_ = upload_planned(res_, plan, "features",
                                   stored_rows<kernels::Bf16>(problem.features.data(), cols_, f, stored));
    } else if (stored != f) {
      features_ = upload_planned(res_, plan, "features", stored_rows<float>(problem.features.data(), cols_, f, stored));
    } else {
      features_ = upload_planned(res_, plan, "features", problem.features);
    }
  }
  labels_ = upload_planned(res_, plan, "labels", problem.labels);
  global_ids_ = upload_planned(res_, plan, "global_ids", problem.global_ids);
  split_rows_[kTrain] = upload_planned(res_, plan, "train_rows", problem.train_rows);
  split_rows_[kValid] = upload_planned(res_, plan, "valid_rows", problem.valid_rows);
  split_rows_[kTest] = upload_planned(res_, plan, "test_rows", problem.test_rows);
  if (partition::find_allocation(plan, "loss_slots") != nullptr)
    loss_slots_ = upload_planned(res_, plan, "loss_slots", kernels::loss_row_slots(problem.train_rows, rows_));

  // Parameters: Glorot-uniform weights from (seed, layer, index of the model's W) alone, zero biases; stored
  // in * out, the padding rows and columns zero (they stay zero: their gradients are zero).
  layers_.resize(static_cast<std::size_t>(L));
  std::int64_t offset = 0;
  for (int l = 0; l < L; ++l) {
    Layer& ly = layers_[l];
    ly.in = dims_[l];
    ly.out = dims_[l + 1];
    ly.model_in = model_dims_[l];
    ly.model_out = model_dims_[l + 1];
    ly.aggregate_first = partition::aggregates_first(dims_, l);
    ly.decay = config_.weight_decay > 0 && (l == 0 || config_.weight_decay_all_layers);
    if (!owns(l)) continue;  // another pipeline stage's layer: no parameters here
    ly.w_offset = offset;
    offset += ly.in * ly.out;
    ly.b_offset = offset;
    offset += ly.out;
  }
  num_params_ = offset;
  std::vector<float> init(static_cast<std::size_t>(num_params_), 0.0f);
  for (int l = first_; l < last_; ++l) {
    const Layer& ly = layers_[l];
    const float limit = std::sqrt(6.0f / static_cast<float>(ly.model_in + ly.model_out));
    const std::uint64_t key = rng::stream_key(config_.seed, rng::kWeightInit, static_cast<std::uint64_t>(l));
    const std::int64_t n = ly.model_in * ly.model_out;
    for (std::int64_t i = 0; i < n; i += 4) {
      const auto r = rng::philox4x32(key, static_cast<std::uint64_t>(i / 4), 0);
      for (std::int64_t j = 0; j < 4 && i + j < n; ++j) {
        const std::int64_t k = i + j;
        init[ly.w_offset + k / ly.model_out * ly.out + k % ly.model_out] =
            (2.0f * rng::to_unit_float(r.v[j]) - 1.0f) * limit;
      }
    }
  }
  params_ = upload_planned(res_, plan, "weights", init);
  grads_ = take<float>(res_, plan, "weight_gradients");
  adam_m_ = take<float>(res_, plan, "adam_m");
  adam_v_ = take<float>(res_, plan, "adam_v");
  // Zero gradients once: the sparse-input layer's dW = X^T dP writes only the dataset's feature rows of W, so
  // the padding rows must read as zero gradients from the start (every other entry is written every step).
  kernels::memset_zero_async(ctx, grads_.data(), grads_.bytes());
  kernels::memset_zero_async(ctx, adam_m_.data(), adam_m_.bytes());
  kernels::memset_zero_async(ctx, adam_v_.data(), adam_v_.bytes());

  if (config_.bf16()) {
    allocate_bf16_activations(plan);
  } else {
    // Activations saved for backward: inputs_[l] is layer l's (dropped-out) input, for the layers held here plus,
    // in a pipeline, the output handed to the next stage (inputs_[last_]); aggregated_[l] for layers that
    // aggregate first. Scratch: tmp_ the Â(HW) product or the backward's G W^T; backward ping-pongs dZ between
    // grad_a_ and grad_b_ (widths: partition::allocation_plan).
    inputs_.resize(static_cast<std::size_t>(L));
    aggregated_.resize(static_cast<std::size_t>(L));
    for (int l = 0; l < L; ++l) {
      inputs_[l] = take_if_planned<float>(res_, plan, "inputs[" + std::to_string(l) + "]");
      aggregated_[l] = take_if_planned<float>(res_, plan, "aggregated[" + std::to_string(l) + "]");
    }
    xd_vals_ = take_if_planned<float>(res_, plan, "x_values_dropped");
    xtd_vals_ = take_if_planned<float>(res_, plan, "xt_values_dropped");
    logits_ = take_if_planned<float>(res_, plan, "logits");
    tmp_ = take<float>(res_, plan, "intermediate");
    grad_a_ = take<float>(res_, plan, "grad_a");
    grad_b_ = take<float>(res_, plan, "grad_b");
  }
  positive_.resize(static_cast<std::size_t>(L + 1));
  for (int l = 0; l <= L; ++l)
    positive_[l] = take_if_planned<std::uint8_t>(res_, plan, "positive[" + std::to_string(l) + "]");
  scalar_f_ = take<float>(res_, plan, "loss_scalars");
  scalar_i_ = take<std::int64_t>(res_, plan, "accuracy_counters");
  step_scalars_ = take<std::uint64_t>(res_, plan, "step_scalars");
  staged_scalars_.assign(static_cast<std::size_t>(step_scalars_.size()), 0);
  static_assert(kMaxLayers == 64, "the allocation plan's step_scalars holds 64 keys and one slot");
  blas_workspace_ = take_if_planned<std::byte>(res_, plan, "cublas_graph_workspace");
  // The plan holds the workspace exactly where a step can be captured: one CUDA device, no communicator, one stage.
  const bool graph_possible = blas_workspace_.size() > 0;
  GCNPART_EXPECTS(!graph_possible || (ctx.is_cuda() && comm_ == nullptr && stages_ == 1),
                  "the allocation plan and the model agree on when a step is captured");
  if (graph_possible) {  // every GEMM of this model, eager or captured, uses it: one workspace, the same algorithms
    kernels::set_blas_workspace(ctx, blas_workspace_.data(), static_cast<std::size_t>(blas_workspace_.size()));
    blas_bound_ = true;
  }
  if (config_.cuda_graph == CudaGraphMode::kOn && !graph_possible)
    throw InvalidInput::parameter("--cuda-graph", "on",
                                  "auto or off here: a captured step covers one CUDA device without a communicator "
                                  "(the single strategy)");
  capture_pending_ = graph_possible && config_.cuda_graph != CudaGraphMode::kOff;
  graph_status_ = config_.cuda_graph == CudaGraphMode::kOff ? "off"
                  : graph_possible                          ? "pending"
                  : !ctx.is_cuda()                          ? "off: CPU device"
                  : comm_ != nullptr || stages_ > 1         ? "off: a multi-device strategy"
                                                            : "off: auto, a large step (rows x width above 2^25: "
                                                              "launches are a small part of it; --cuda-graph on)";

  std::vector<std::int64_t> widths = partition::aggregation_widths(spec);
  if (config_.bf16()) widths.clear();  // bf16 SpMMs are always the own kernel: no cuSPARSE plans
  aggregation_ = make_aggregation(res_, problem, comm_, config_.spmm, plan, widths, config_.spmm_tuning,
                                  config_.gather_chunks, config_.boundary_overlap);
  if (config_.bf16()) refresh_bf16_weights();
  sync();
}

void GcnModel::allocate_bf16_activations(const AllocationPlan& plan) {
  // bf16 storage of the layer inputs, aggregated inputs, t16_ (X W, dP or G W^T) and the gradient ping-pong; float
  // z32_ (SpMM and GEMM outputs, the sparse-input X W), logits and dropped-out sparse values.
  const int L = config_.layers;
  inputs16_.resize(static_cast<std::size_t>(L));
  aggregated16_.resize(static_cast<std::size_t>(L));
  for (int l = 0; l < L; ++l) {
    inputs16_[l] = take_if_planned<kernels::Bf16>(res_, plan, "inputs[" + std::to_string(l) + "]");
    aggregated16_[l] = take_if_planned<kernels::Bf16>(res_, plan, "aggregated[" + std::to_string(l) + "]");
  }
  xd_vals_ = take_if_planned<float>(res_, plan, "x_values_dropped");
  xtd_vals_ = take_if_planned<float>(res_, plan, "xt_values_dropped");
  logits_ = take<float>(res_, plan, "logits");
  t16_ = take<kernels::Bf16>(res_, plan, "intermediate");
  z32_ = take<float>(res_, plan, "z32");
  g16_a_ = take<kernels::Bf16>(res_, plan, "grad_a");
  g16_b_ = take<kernels::Bf16>(res_, plan, "grad_b");
  w16_ = take<kernels::Bf16>(res_, plan, "weights_bf16");
}

void GcnModel::refresh_bf16_weights() {
  kernels::convert_to_bf16_async(res_.context(), params_.data(), num_params_, w16_.data());
}

GcnModel::~GcnModel() {
  try {
    res_.synchronize();
  } catch (...) {
  }
  // Leave the shared Resources as found: its allocator (if it is still our arena) and cuBLAS's own workspace pool
  // (cublasSetStream resets it) instead of our buffer, which is freed with this model.
  if (arena_ != nullptr && res_.context().allocator == arena_.get()) res_.set_workspace_allocator(nullptr);
  if (blas_bound_) {
    try {
      kernels::reset_blas_workspace(res_.context());
    } catch (...) {
    }
  }
  graph_.reset();
  arena_.reset();
}

std::int64_t GcnModel::cuda_graph_replays() const noexcept { return graph_ ? graph_->launches() : 0; }

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

void GcnModel::sparse_input_weight_gradient_async(const float* dp, float* dw, std::int64_t width) {
  // dW = dropout(X)^T dP through the stored transpose, with the forward's mask.
  const Context& ctx = res_.context();
  CsrView xt = xt_view_;
  if (last_p_ > 0) {
    kernels::dropout_csr_values_async(ctx, xt_view_, true, layer_dropout(last_epoch_, 0, last_p_), xtd_vals_.data());
    xt.values = xtd_vals_.data();
  }
  kernels::spmm_async(ctx, xt, nullptr, nullptr, kernels::make_view(dp, xt.num_cols, width),
                      kernels::make_view(dw, xt.num_rows, width), SpmmAlgo::kOwn, config_.spmm_tuning);
}

void GcnModel::upload_sparse_features(const AllocationPlan& plan) {
  const std::int64_t n = cols_, f = problem_.num_features;
  const auto& x = problem_.features;
  std::vector<RowOffset> offsets(static_cast<std::size_t>(n) + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    RowOffset c = 0;
    for (std::int64_t j = 0; j < f; ++j) c += x[i * f + j] != 0.0f ? 1 : 0;
    offsets[i + 1] = offsets[i] + c;
  }
  const std::int64_t nnz = offsets[n];
  std::vector<NodeId> cols(static_cast<std::size_t>(nnz));
  std::vector<float> vals(static_cast<std::size_t>(nnz));
  std::vector<RowOffset> t_offsets(static_cast<std::size_t>(f) + 1, 0);
  for (std::int64_t i = 0; i < n; ++i) {
    RowOffset o = offsets[i];
    for (std::int64_t j = 0; j < f; ++j) {
      if (x[i * f + j] == 0.0f) continue;
      cols[o] = static_cast<NodeId>(j);
      vals[o] = x[i * f + j];
      ++o;
      ++t_offsets[j + 1];
    }
  }
  for (std::int64_t j = 0; j < f; ++j) t_offsets[j + 1] += t_offsets[j];
  std::vector<NodeId> t_cols(static_cast<std::size_t>(nnz));
  std::vector<float> t_vals(static_cast<std::size_t>(nnz));
  std::vector<RowOffset> cursor(t_offsets.begin(), t_offsets.end() - 1);
  for (std::int64_t i = 0; i < n; ++i)
    for (RowOffset e = offsets[i]; e < offsets[i + 1]; ++e) {
      const RowOffset o = cursor[cols[e]]++;
      t_cols[o] = static_cast<NodeId>(i);
      t_vals[o] = vals[e];
    }
  x_offsets_ = upload_planned(res_, plan, "x_offsets", offsets);
  x_cols_ = upload_planned(res_, plan, "x_columns", cols);
  x_vals_ = upload_planned(res_, plan, "x_values", vals);
  xt_offsets_ = upload_planned(res_, plan, "xt_offsets", t_offsets);
  xt_cols_ = upload_planned(res_, plan, "xt_columns", t_cols);
  xt_vals_ = upload_planned(res_, plan, "xt_values", t_vals);
  x_view_ = CsrView{n, f, x_offsets_.data(), x_cols_.data(), x_vals_.data(), nnz};
  xt_view_ = CsrView{f, n, xt_offsets_.data(), xt_cols_.data(), xt_vals_.data(), nnz};
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

void GcnModel::forward_bf16(bool training, int epoch) {
  const Context& ctx = res_.context();
  const int L = config_.layers;
  const float p = training ? config_.dropout : 0.0f;
  last_epoch_ = epoch;
  last_p_ = p;
  const kernels::Bf16* x = features16_.data();
  if (p > 0 && !sparse_input_) {
    kernels::dropout_async(ctx, kernels::make_view(features16_.data(), cols_, dims_[0]), layer_dropout(epoch, 0, p),
                           kernels::make_view(inputs16_[0].data(), cols_, dims_[0]));
    x = inputs16_[0].data();
  }
  for (int l = 0; l < L; ++l) {
    const Layer& ly = layers_[l];
    const kernels::Bf16* w = w16_.data() + ly.w_offset;
    const bool last = l == L - 1;
    float* z = last ? logits_.data() : z32_.data();
    if (l == 0 && sparse_input_) {
      // X W from the sparse float X and the float master weights, rounded to bf16 for the aggregation.
      CsrView xv = x_view_;
      if (p > 0) {
        kernels::dropout_csr_values_async(ctx, x_view_, false, layer_dropout(epoch, 0, p), xd_vals_.data());
        xv.values = xd_vals_.data();
      }
      kernels::spmm_async(ctx, xv, nullptr, nullptr,
                          kernels::make_view(params_.data() + ly.w_offset, xv.num_cols, ly.out),
                          kernels::make_view(z32_.data(), xv.num_rows, ly.out), SpmmAlgo::kOwn, config_.spmm_tuning);
      kernels::convert_to_bf16_async(ctx, z32_.data(), cols_ * ly.out, t16_.data());
      aggregation_->forward_bf16(t16_.data(), z, ly.out);
    } else if (ly.aggregate_first) {
      aggregate_rounded(false, x, aggregated16_[l].data(), rows_, ly.in);
      kernels::gemm_bf16_async(ctx, false, false, 1.0f, kernels::make_view(aggregated16_[l].data(), rows_, ly.in),
                               kernels::make_view(w, ly.in, ly.out), 0.0f, kernels::make_view(z, rows_, ly.out));
    } else {
      kernels::gemm_bf16_async(ctx, false, false, 1.0f, kernels::make_view(x, cols_, ly.in),
                               kernels::make_view(w, ly.in, ly.out), 0.0f,
                               kernels::make_view(t16_.data(), cols_, ly.out));
      aggregation_->forward_bf16(t16_.data(), z, ly.out);
    }
    const float* b = params_.data() + ly.b_offset;
    if (last) {
      // Training: the loss adds the output bias in its pass over the logits (backward_bf16_async).
      if (!training)
        kernels::bias_act_dropout_async(ctx, kernels::make_view(z, rows_, ly.out), b, false, kernels::Dropout{},
                                        kernels::make_view(z, rows_, ly.out));
    } else {
      kernels::bias_act_dropout_async(ctx, kernels::make_view(z, rows_, ly.out), b, true,
                                      layer_dropout(epoch, l + 1, p),
                                      kernels::make_view(inputs16_[l + 1].data(), rows_, ly.out),
                                      training ? positive_[l + 1].data() : nullptr);
      x = inputs16_[l + 1].data();
    }
  }
}

void GcnModel::aggregate_rounded(bool backward, const kernels::Bf16* x, kernels::Bf16* y, std::int64_t rows,
                                 std::int64_t width) {
  if (aggregation_->rounds_bf16_output()) {  // the SpMM stores bf16; z32_ holds only its long rows' sums
    if (backward) {
      aggregation_->backward_bf16_rounded(x, y, z32_.data(), width);
    } else {
      aggregation_->forward_bf16_rounded(x, y, z32_.data(), width);
    }
    return;
  }
  if (backward) {
    aggregation_->backward_bf16(x, z32_.data(), width);
  } else {
    aggregation_->forward_bf16(x, z32_.data(), width);
  }
  kernels::convert_to_bf16_async(res_.context(), z32_.data(), rows * width, y);
}

void GcnModel::backward_bf16_async() {
  const Context& ctx = res_.context();
  const int L = config_.layers;
  kernels::Bf16* g = g16_a_.data();
  kernels::Bf16* g_next = g16_b_.data();
  {
    const auto n_train = static_cast<std::int64_t>(problem_.train_rows.size());
    const float scale = problem_.global_train > 0 ? 1.0f / static_cast<float>(problem_.global_train) : 0.0f;
    // The model's classes of the stored (padded) logits; the gradient's padding columns are written as zeros. One
    // pass: the output bias (left out by the training forward), the loss, G in bf16 and the output bias gradient.
    const Layer& out = layers_[L - 1];
    kernels::bias_softmax_cross_entropy_async(
        ctx, kernels::make_view(logits_.data(), rows_, model_dims_[L], dims_[L]), params_.data() + out.b_offset,
        labels_.data(), split_rows_[kTrain].data(), loss_slots_.data(), n_train, scale, scalar_f_.data(),
        kernels::make_view(g, rows_, model_dims_[L], dims_[L]), grads_.data() + out.b_offset);
  }
  for (int l = L - 1; l >= 0; --l) {
    const Layer& ly = layers_[l];
    const kernels::Bf16* w = w16_.data() + ly.w_offset;
    float* dw = grads_.data() + ly.w_offset;
    // Bias gradients: the output layer's came with the loss, a hidden layer's with its ReLU / dropout backward
    // (the end of the layer above's iteration).
    if (ly.aggregate_first) {
      // Z = (ÂX) W: dW = (ÂX)^T G; dX = Â (G W^T).
      kernels::gemm_bf16_async(ctx, true, false, 1.0f, kernels::make_view(aggregated16_[l].data(), rows_, ly.in),
                               kernels::make_view(g, rows_, ly.out), 0.0f, kernels::make_view(dw, ly.in, ly.out));
      if (l > 0) {
        kernels::gemm_bf16_async(ctx, false, true, 1.0f, kernels::make_view(g, rows_, ly.out),
                                 kernels::make_view(w, ly.in, ly.out), 0.0f,
                                 kernels::make_view(t16_.data(), rows_, ly.in));
        aggregate_rounded(true, t16_.data(), g_next, rows_, ly.in);
      }
    } else {
      // Z = Â (X W): dP = Â G; dW = X^T dP; dX = dP W^T.
      if (l == 0 && sparse_input_) {
        aggregation_->backward_bf16(g, z32_.data(), ly.out);
        sparse_input_weight_gradient_async(z32_.data(), dw, ly.out);
      } else {
        aggregate_rounded(true, g, t16_.data(), cols_, ly.out);
        const kernels::Bf16* x =
            l == 0 ? (config_.dropout > 0 ? inputs16_[0].data() : features16_.data()) : inputs16_[l].data();
        kernels::gemm_bf16_async(ctx, true, false, 1.0f, kernels::make_view(x, cols_, ly.in),
                                 kernels::make_view(t16_.data(), cols_, ly.out), 0.0f,
                                 kernels::make_view(dw, ly.in, ly.out));
        if (l > 0)
          kernels::gemm_bf16_async(ctx, false, true, 1.0f, kernels::make_view(t16_.data(), cols_, ly.out),
                                   kernels::make_view(w, ly.in, ly.out), 0.0f,
                                   kernels::make_view(g_next, cols_, ly.in));
      }
    }
    if (l > 0) {  // and the bias gradient of layer l - 1 (the column sums of its dZ) in the same pass
      kernels::bias_act_dropout_backward_async(ctx, kernels::make_view(inputs16_[l].data(), rows_, ly.in),
                                               kernels::make_view(g_next, rows_, ly.in), true, config_.dropout,
                                               kernels::make_view(g_next, rows_, ly.in),
                                               grads_.data() + layers_[l - 1].b_offset, positive_[l].data());
      std::swap(g, g_next);
    }
  }
  if (comm_ != nullptr) comm_->allreduce_sum(ctx, grads_.data(), num_params_);
}

void GcnModel::forward(bool training, int epoch) {
  if (config_.bf16()) return forward_bf16(training, epoch);
  const Context& ctx = res_.context();
  const int L = config_.layers;
  const float p = training ? config_.dropout : 0.0f;
  auto dropout_for = [&](int layer) { return layer_dropout(epoch, layer, p); };
  last_epoch_ = epoch;
  last_p_ = p;
  const float* x = features_.data();
  if (first_ > 0) {
    // Pipeline: the previous stage's output (relu and this layer's dropout already applied) is our input.
    comm_->recv(ctx, inputs_[first_].data(), rows_ * dims_[first_], stage_ - 1);
    x = inputs_[first_].data();
  } else if (p > 0 && !sparse_input_) {
    kernels::dropout_async(ctx, kernels::make_view(features_.data(), cols_, dims_[0]), dropout_for(0),
                           kernels::make_view(inputs_[0].data(), cols_, dims_[0]));
    x = inputs_[0].data();
  }
  for (int l = first_; l < last_; ++l) {
    const Layer& ly = layers_[l];
    const float* w = params_.data() + ly.w_offset;
    const float* b = params_.data() + ly.b_offset;
    float* z = (l == L - 1) ? logits_.data() : inputs_[l + 1].data();
    if (l == 0 && sparse_input_) {
      // Z = Â (dropout(X) W) with X sparse: dropout on the stored values, then a sparse x dense product.
      CsrView xv = x_view_;
      if (p > 0) {
        kernels::dropout_csr_values_async(ctx, x_view_, false, layer_dropout(epoch, 0, p), xd_vals_.data());
        xv.values = xd_vals_.data();
      }
      kernels::spmm_async(ctx, xv, nullptr, nullptr, kernels::make_view(w, xv.num_cols, ly.out),
                          kernels::make_view(tmp_.data(), xv.num_rows, ly.out), SpmmAlgo::kOwn, config_.spmm_tuning);
      aggregation_->forward(tmp_.data(), z, ly.out);
    } else if (ly.aggregate_first) {
      aggregation_->forward(x, aggregated_[l].data(), ly.in);
      kernels::gemm_async(ctx, false, false, 1.0f, kernels::make_view(aggregated_[l].data(), rows_, ly.in),
                          kernels::make_view(w, ly.in, ly.out), 0.0f, kernels::make_view(z, rows_, ly.out));
    } else {
      kernels::gemm_async(ctx, false, false, 1.0f, kernels::make_view(x, cols_, ly.in),
                          kernels::make_view(w, ly.in, ly.out), 0.0f, kernels::make_view(tmp_.data(), cols_, ly.out));
      aggregation_->forward(tmp_.data(), z, ly.out);
    }
    const bool last = l == L - 1;
    kernels::Dropout next = last ? kernels::Dropout{} : dropout_for(l + 1);
    // Training: the loss adds the output bias in its pass over the logits (backward_async).
    if (!(last && training))
      kernels::bias_act_dropout_async(ctx, kernels::make_view(z, rows_, ly.out), b, !last, next,
                                      kernels::make_view(z, rows_, ly.out),
                                      training && !last ? positive_[l + 1].data() : nullptr);
    x = z;
  }
  if (last_ < L) comm_->send(ctx, inputs_[last_].data(), rows_ * dims_[last_], stage_ + 1);
}

double GcnModel::forward_backward(int epoch) {
  res_.activate();
  stage_step_scalars(epoch, step_ + 1);
  forward(true, epoch);
  backward_async();
  if (comm_ != nullptr) comm_->allreduce_sum(res_.context(), scalar_f_.data(), 1);
  float loss = 0;
  kernels::copy_async(res_.context(), &loss, scalar_f_.data(), sizeof(float));
  sync();
  return loss;
}

void GcnModel::enqueue_step() {
  forward(true, last_epoch_);
  backward_async();
  if (comm_ != nullptr) comm_->allreduce_sum(res_.context(), scalar_f_.data(), 1);
  adam_async();
}

void GcnModel::capture_step() {
  // The eager step just measured is done (synchronised), every workspace released: serve the same requests from
  // one block, with no parent allocation while capturing.
  std::string why;
  try {
    res_.memory().release_cache();  // the measured step's blocks: the arena takes their place
    arena_->reserve(res_.stream());
    graph_ = std::make_unique<StepGraph>();
    // Bound at construction; again here, in case another model on the same Resources bound its own since: the
    // graph keeps the address it captures.
    kernels::set_blas_workspace(res_.context(), blas_workspace_.data(), static_cast<std::size_t>(blas_workspace_.size()));
    arena_->set_fallback(false);
    why = graph_->capture(res_.stream(), [this] { enqueue_step(); });
  } catch (const std::exception& e) {
    why = e.what();
  }
  arena_->set_fallback(true);
  if (!why.empty()) {
    graph_.reset();
    res_.set_workspace_allocator(nullptr);
    arena_.reset();
    graph_status_ = "off: " + why;
    if (config_.cuda_graph == CudaGraphMode::kOn)
      throw DeviceError("CUDA", "CUDA Graph capture of the training step (--cuda-graph on)", "GcnModel::train_step",
                        why);
    return;
  }
  graph_status_ = "on (" + std::to_string(graph_->nodes()) + " nodes, workspace " +
                  std::to_string(arena_->capacity()) + " bytes)";
}

double GcnModel::train_step(int epoch) {
  res_.activate();
  // step_ counts completed steps: a step that throws is not counted (adam_async takes step_ + 1).
  stage_step_scalars(epoch, step_ + 1);
  last_epoch_ = epoch;
  const bool profiled = res_.context().profiler != nullptr;  // profiled steps run eagerly (events per operation)
  // The second step (the first tuned the SpMMs and built their plans) runs eagerly, measured, then is captured.
  const bool capture = capture_pending_ && !profiled && ++graph_calls_ == 2;
  if (graph_ != nullptr && !profiled) {
    graph_->launch(res_.stream());
  } else if (capture) {
    capture_pending_ = false;
    arena_ = std::make_unique<StackArena>(res_.memory());
    res_.set_workspace_allocator(arena_.get());
    try {
      enqueue_step();
      sync();
    } catch (const std::exception& e) {
      res_.set_workspace_allocator(nullptr);
      arena_.reset();
      graph_status_ = std::string("off: the step before the capture failed: ") + e.what();
      throw;
    }
  } else {
    enqueue_step();
  }
  float loss = 0;
  kernels::copy_async(res_.context(), &loss, scalar_f_.data(), sizeof(float));
  sync();
  ++step_;
  if (capture) capture_step();  // after the step is done and counted: a failed capture (on: throws) keeps it
  return loss;
}

void GcnModel::backward_async() {
  if (config_.bf16()) return backward_bf16_async();
  const Context& ctx = res_.context();
  const int L = config_.layers;
  float* g = grad_a_.data();
  float* g_next = grad_b_.data();
  if (last_ == L) {
    const auto n_train = static_cast<std::int64_t>(problem_.train_rows.size());
    const float scale = problem_.global_train > 0 ? 1.0f / static_cast<float>(problem_.global_train) : 0.0f;
    // One pass: the output bias (left out by the training forward), the loss, G and the output bias gradient.
    const Layer& out = layers_[L - 1];
    kernels::bias_softmax_cross_entropy_async(
        ctx, kernels::make_view(logits_.data(), rows_, model_dims_[L], dims_[L]), params_.data() + out.b_offset,
        labels_.data(), split_rows_[kTrain].data(), loss_slots_.data(), n_train, scale, scalar_f_.data(),
        kernels::make_view(g, rows_, model_dims_[L], dims_[L]), grads_.data() + out.b_offset);
  } else {
    // Pipeline: the next stage sends d(loss)/d(our output); undo our output's relu and dropout here.
    kernels::memset_zero_async(ctx, scalar_f_.data(), sizeof(float));  // the loss lives on the last stage
    comm_->recv(ctx, g, rows_ * dims_[last_], stage_ + 1);
    kernels::bias_act_dropout_backward_async(ctx, kernels::make_view(inputs_[last_].data(), rows_, dims_[last_]),
                                             kernels::make_view(g, rows_, dims_[last_]), true, config_.dropout,
                                             kernels::make_view(g, rows_, dims_[last_]),
                                             grads_.data() + layers_[last_ - 1].b_offset, positive_[last_].data());
  }
  for (int l = last_ - 1; l >= first_; --l) {
    const Layer& ly = layers_[l];
    const float* w = params_.data() + ly.w_offset;
    float* dw = grads_.data() + ly.w_offset;
    const float* x = (l == 0) ? (config_.dropout > 0 ? inputs_[0].data() : features_.data()) : inputs_[l].data();
    // The bias gradient, the column sums of G, came with the pass that made G: the loss for the output layer, the
    // ReLU / dropout backward below it (the layer above's iteration, or the pipeline's received gradient).
    if (ly.aggregate_first) {
      // Z = (ÂX) W: dW = (ÂX)^T G; dX = Â^T (G W^T) = Â (G W^T) by symmetry.
      kernels::gemm_async(ctx, true, false, 1.0f, kernels::make_view(aggregated_[l].data(), rows_, ly.in),
                          kernels::make_view(g, rows_, ly.out), 0.0f, kernels::make_view(dw, ly.in, ly.out));
      if (l > 0) {
        kernels::gemm_async(ctx, false, true, 1.0f, kernels::make_view(g, rows_, ly.out),
                            kernels::make_view(w, ly.in, ly.out), 0.0f, kernels::make_view(tmp_.data(), rows_, ly.in));
        aggregation_->backward(tmp_.data(), g_next, ly.in);
      }
    } else {
      // Z = Â (X W): dP = Â^T G = Â G; dW = X^T dP; dX = dP W^T.
      aggregation_->backward(g, tmp_.data(), ly.out);
      if (l == 0 && sparse_input_) {
        sparse_input_weight_gradient_async(tmp_.data(), dw, ly.out);
      } else {
        kernels::gemm_async(ctx, true, false, 1.0f, kernels::make_view(x, cols_, ly.in),
                            kernels::make_view(tmp_.data(), cols_, ly.out), 0.0f,
                            kernels::make_view(dw, ly.in, ly.out));
      }
      if (l > 0)
        kernels::gemm_async(ctx, false, true, 1.0f, kernels::make_view(tmp_.data(), cols_, ly.out),
                            kernels::make_view(w, ly.in, ly.out), 0.0f, kernels::make_view(g_next, cols_, ly.in));
    }
    if (l > first_) {  // and the bias gradient of layer l - 1 in the same pass
      kernels::bias_act_dropout_backward_async(ctx, kernels::make_view(inputs_[l].data(), rows_, ly.in),
                                               kernels::make_view(g_next, rows_, ly.in), true, config_.dropout,
                                               kernels::make_view(g_next, rows_, ly.in),
                                               grads_.data() + layers_[l - 1].b_offset, positive_[l].data());
      std::swap(g, g_next);
    } else if (l > 0) {
      // Pipeline: hand d(loss)/d(our input) to the previous stage, which owns that activation.
      comm_->send(ctx, g_next, rows_ * ly.in, stage_ - 1);
    }
  }
  // Data-parallel strategies sum the weight gradients; pipeline stages own disjoint layers.
  if (comm_ != nullptr && stages_ == 1) comm_->allreduce_sum(ctx, grads_.data(), num_params_);
}

void GcnModel::adam_async() {
  const Context& ctx = res_.context();
  for (int l = first_; l < last_; ++l) {
    const Layer& ly = layers_[l];
    kernels::AdamParams ap = adam_params();
    ap.step = step_ + 1;                     // the step being taken (train_step counts it when it is done)
    ap.corrections_at = step_corrections();  // staged for it (a replay reads its own step's)
    ap.weight_decay = ly.decay ? config_.weight_decay : 0.0f;
    kernels::adam_step_async(ctx, params_.data() + ly.w_offset, grads_.data() + ly.w_offset,
                             adam_m_.data() + ly.w_offset, adam_v_.data() + ly.w_offset, ly.in * ly.out, ap);
    ap.weight_decay = 0.0f;
    kernels::adam_step_async(ctx, params_.data() + ly.b_offset, grads_.data() + ly.b_offset,
                             adam_m_.data() + ly.b_offset, adam_v_.data() + ly.b_offset, ly.out, ap);
  }
  if (config_.bf16()) refresh_bf16_weights();
}

EvalResult GcnModel::evaluate() {
  res_.activate();
  const Context& ctx = res_.context();
  forward(false, 0);
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

std::vector<float> GcnModel::download_flat(const Buffer<float>& flat_buffer) {
  std::vector<float> flat(static_cast<std::size_t>(num_params_));
  kernels::copy_async(res_.context(), flat.data(), flat_buffer.data(), flat_buffer.bytes());
  sync();
  return flat;
}

std::int64_t GcnModel::model_parameter_count() const {
  std::int64_t n = 0;
  for (int l = first_; l < last_; ++l) n += layers_[l].model_in * layers_[l].model_out + layers_[l].model_out;
  return n;
}

std::vector<float> GcnModel::compact(const std::vector<float>& stored) const {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(model_parameter_count()));
  for (int l = first_; l < last_; ++l) {
    const Layer& ly = layers_[l];
    for (std::int64_t r = 0; r < ly.model_in; ++r) {
      const auto row = stored.begin() + ly.w_offset + r * ly.out;
      out.insert(out.end(), row, row + ly.model_out);
    }
    out.insert(out.end(), stored.begin() + ly.b_offset, stored.begin() + ly.b_offset + ly.model_out);
  }
  return out;
}

std::vector<float> GcnModel::expand(const std::vector<float>& compacted) const {
  GCNPART_EXPECTS(static_cast<std::int64_t>(compacted.size()) == model_parameter_count(),
                  "expand takes the model's parameter count");
  std::vector<float> stored(static_cast<std::size_t>(num_params_), 0.0f);
  auto in = compacted.begin();
  for (int l = first_; l < last_; ++l) {
    const Layer& ly = layers_[l];
    for (std::int64_t r = 0; r < ly.model_in; ++r, in += ly.model_out)
      std::copy(in, in + ly.model_out, stored.begin() + ly.w_offset + r * ly.out);
    std::copy(in, in + ly.model_out, stored.begin() + ly.b_offset);
    in += ly.model_out;
  }
  return stored;
}

std::vector<std::vector<float>> GcnModel::unflatten(const Buffer<float>& flat_buffer) {
  const std::vector<float> flat = compact(download_flat(flat_buffer));
  std::vector<std::vector<float>> out;
  auto in = flat.begin();
  for (int l = first_; l < last_; ++l) {
    const Layer& ly = layers_[l];
    out.emplace_back(in, in + ly.model_in * ly.model_out);
    in += ly.model_in * ly.model_out;
    out.emplace_back(in, in + ly.model_out);
    in += ly.model_out;
  }
  return out;
}

ModelState GcnModel::state() {
  // The checkpoint holds the model's parameters and moments without the stored padding (always zero), so it does
  // not depend on the precision's alignment.
  ModelState s;
  s.step = step_;
  s.params = compact(download_flat(params_));
  s.adam_m = compact(download_flat(adam_m_));
  s.adam_v = compact(download_flat(adam_v_));
  return s;
}

void GcnModel::set_state(const ModelState& s) {
  const std::int64_t expected = model_parameter_count();
  for (const auto* v : {&s.params, &s.adam_m, &s.adam_v})
    if (static_cast<std::int64_t>(v->size()) != expected)
      throw InvalidInput::parameter("checkpoint", std::to_string(v->size()) + " values",
                                    std::to_string(expected) + " (the model's parameter count)");
  step_ = s.step;
  const std::vector<float> params = expand(s.params), m = expand(s.adam_m), v = expand(s.adam_v);
  kernels::copy_async(res_.context(), params_.data(), params.data(), params_.bytes());
  kernels::copy_async(res_.context(), adam_m_.data(), m.data(), adam_m_.bytes());
  kernels::copy_async(res_.context(), adam_v_.data(), v.data(), adam_v_.bytes());
  if (config_.bf16()) refresh_bf16_weights();
  sync();
}

std::vector<std::vector<float>> GcnModel::parameters() { return unflatten(params_); }

std::vector<std::vector<float>> GcnModel::gradients() { return unflatten(grads_); }

void GcnModel::set_parameters(const std::vector<std::vector<float>>& params) {
  const std::size_t owned = static_cast<std::size_t>(last_ - first_);
  if (params.size() != 2 * owned)
    throw InvalidInput::parameter("weights", std::to_string(params.size()) + " tensors",
                                  std::to_string(2 * owned) + " (W and b per layer held here)");
  std::vector<float> compacted;
  compacted.reserve(static_cast<std::size_t>(model_parameter_count()));
  for (int l = first_; l < last_; ++l) {
    const Layer& ly = layers_[l];
    const std::size_t t = 2 * static_cast<std::size_t>(l - first_);
    if (static_cast<std::int64_t>(params[t].size()) != ly.model_in * ly.model_out ||
        static_cast<std::int64_t>(params[t + 1].size()) != ly.model_out)
      throw InvalidInput::parameter("weights", "layer " + std::to_string(l) + " of " +
                                                   std::to_string(params[t].size()) + " weights",
                                    std::to_string(ly.model_in) + " x " + std::to_string(ly.model_out));
    compacted.insert(compacted.end(), params[t].begin(), params[t].end());
    compacted.insert(compacted.end(), params[t + 1].begin(), params[t + 1].end());
  }
  const std::vector<float> flat = expand(compacted);
  kernels::copy_async(res_.context(), params_.data(), flat.data(), params_.bytes());
  if (config_.bf16()) refresh_bf16_weights();
  sync();
}

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
