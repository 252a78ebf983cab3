// The GCN model of Kipf & Welling (ICLR 2017) on one device: H' = act(Â H W + b), dropout on every layer's
// input, softmax cross-entropy on the training rows, Adam with L2 weight decay.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/aggregation.hpp"
#include "engine/communicator.hpp"
#include "engine/memory.hpp"
#include "engine/planned_buffer.hpp"
#include "engine/problem.hpp"
#include "engine/resources.hpp"
#include "engine/step_graph.hpp"
#include "kernels/ops.hpp"

namespace gcnpart::engine {

/// Whether GcnModel::train_step replays a captured CUDA Graph (`--cuda-graph`). kAuto: on one CUDA device without
/// a communicator (the single strategy) when the step is small (partition::captures_step: rows x widest width up to
/// 2^25, where launches are a measurable part of a step), capturing the second step and replaying it from the
/// third; a capture that fails leaves the steps eager and says why (GcnModel::cuda_graph_status). kOn: whatever the
/// size, and a failed capture or a configuration it cannot cover is an error. kOff: every step eager. Names (to_string,
/// from_string): base/enums.hpp.
using gcnpart::CudaGraphMode;

/// Model and optimiser configuration. Defaults reproduce the paper.
struct GcnConfig {
  int layers = 2;
  std::int64_t hidden = 16;
  float dropout = 0.5f;
  float lr = 0.01f;
  float weight_decay = 5e-4f;
  bool weight_decay_all_layers = false;  ///< false: first layer's weights only (as in the paper)
  std::uint64_t seed = 1;
  SpmmAlgo spmm = SpmmAlgo::kAuto;
  /// kTf32: float GEMMs may use TF32 tensor cores. kBf16: bf16 storage of features, activations and their
  /// gradients (and a bf16 copy of the weights for the GEMMs); float32 accumulation everywhere, float32 logits,
  /// loss, master weights, gradients of weights and Adam state. GEMMs run on bf16 tensor cores, SpMMs read bf16
  /// rows (own kernel). Which strategies support it: partition::traits(strategy).bf16.
  Precision precision = Precision::kFp32;
  kernels::SpmmTuning spmm_tuning{};  ///< the own SpMM's tuning (`--spmm-long-row`, `--spmm-segment`, `--spmm-lanes`)
  /// Gather strategy on GPUs: column chunks per collective, overlapping communication with the SpMM (1..4;
  /// 1 = no overlap, the default: see GatherAggregation). `--gather-chunks`.
  int gather_chunks = 1;
  /// Boundary strategy: aggregate the interior rows while the boundary rows travel (`--boundary-overlap`).
  bool boundary_overlap = true;
  /// Keep the input features as a sparse matrix (and its transpose) when at most this fraction is non-zero and
  /// the first layer multiplies before it aggregates; dropout then touches the stored values only. 0 = never.
  double sparse_features_below = 0.1;
  /// Pipeline (layer-wise) split over this many stages: stage r = the communicator's rank holds layers
  /// [r L / K, (r + 1) L / K), receives its input from stage r - 1 and sends its output to stage r + 1 (and the
  /// gradients back). 1 = every device holds every layer (data-parallel strategies and single).
  int pipeline_stages = 1;
  /// Captured training steps (engine/step_graph.hpp).
  CudaGraphMode cuda_graph = CudaGraphMode::kAuto;

  /// bf16 storage (Precision::kBf16).
  [[nodiscard]] bool bf16() const noexcept { return traits(precision).bf16_storage; }
  /// Layer widths: features, hidden x (layers-1), classes.
  [[nodiscard]] std::vector<std::int64_t> dims(std::int64_t features, std::int64_t classes) const;
  /// The widths the engine stores and computes with: dims() rounded up to whole 16-byte vectors
  /// (partition::stored_width; the padding stays zero, results equal the unpadded model's).
  [[nodiscard]] std::vector<std::int64_t> stored_dims(std::int64_t features, std::int64_t classes) const;
  /// @throws InvalidInput naming the parameter when out of range.
  void validate() const;
};

/// The device's shape as the allocation plan sees it (partition::DeviceShape), counted exactly from the problem:
/// rows, matrix entries, feature non-zeros, split rows, gather table.
partition::DeviceShape device_shape(const LocalProblem& problem);
/// The model as the allocation plan sees it (partition::ModelSpec); stage: this device's pipeline stage.
/// communicator: the device trains with others (a strategy's communicator, even of one device): no captured step.
partition::ModelSpec model_spec(const LocalProblem& problem, const GcnConfig& config, int stage = 0,
                                bool communicator = false);

/// Everything that changes while training: the optimiser step and the flat parameter and Adam buffers.
struct ModelState {
  std::int64_t step = 0;
  std::vector<float> params, adam_m, adam_v;
};

/// Losses and accuracies of one evaluation, summed over all devices.
struct EvalResult {
  double loss_sum[3] = {0, 0, 0};       ///< train, valid, test: summed cross-entropy
  std::int64_t correct[3] = {0, 0, 0};  ///< train, valid, test
};

class GcnModel {
 public:
  /// Uploads the problem and allocates weights, optimiser state and activations through the device's tracked
  /// memory. Weights are initialised (Glorot uniform) from the seed alone, so every device starts equal.
  /// comm: the group of devices this one trains with (null for a single device); gradients, losses and
  /// accuracy counts are summed over it, and the gather strategy communicates through it.
  GcnModel(Resources& res, const LocalProblem& problem, const GcnConfig& config, Communicator* comm = nullptr);
  ~GcnModel();
  GcnModel(const GcnModel&) = delete;
  GcnModel& operator=(const GcnModel&) = delete;

  /// One training step: forward with dropout, loss, backward, gradient all-reduce (if comm), Adam.
  /// Returns the training loss summed over the training rows of all devices (divide by global_train for the
  /// mean). Synchronises.
  double train_step(int epoch);

  /// Forward (dropout as in training for `epoch`) and backward without the optimiser step; the gradients are
  /// then available from gradients(). Returns the summed training loss. Synchronises.
  double forward_backward(int epoch);
  /// Gradients of the last forward_backward / train_step, shaped like parameters().
  [[nodiscard]] std::vector<std::vector<float>> gradients();

  /// Forward without dropout; loss sums and correct counts on this device's train / valid / test rows.
  EvalResult evaluate();

  /// Parameters as host vectors (W0, b0, W1, b1, ...) of the layers held here (all but in a pipeline).
  [[nodiscard]] std::vector<std::vector<float>> parameters();
  /// Replaces the parameters (same shapes). @throws InvalidInput on a shape mismatch.
  void set_parameters(const std::vector<std::vector<float>>& params);
  /// The model's widths: features, hidden x (layers - 1), classes (parameters(), logits() and saved weights have
  /// these shapes; the device stores them padded, see stored_dims()).
  [[nodiscard]] const std::vector<std::int64_t>& dims() const noexcept { return model_dims_; }
  /// The widths every buffer and kernel uses (partition::ModelSpec::stored_dims: rounded up to whole 16-byte
  /// vectors). Padding columns hold zeros and their weights stay zero, so results equal the unpadded model's.
  [[nodiscard]] const std::vector<std::int64_t>& stored_dims() const noexcept { return dims_; }
  /// The layers this device holds: [first, last).
  [[nodiscard]] std::pair<int, int> layer_range() const noexcept { return {first_, last_}; }
  /// A copy of the training state (for checkpoints) and its restoration (same model shape). Synchronise.
  [[nodiscard]] ModelState state();
  void set_state(const ModelState& s);
  /// The SpMM chosen per width by the autotuner (GPU, SpmmAlgo::kAuto).
  [[nodiscard]] std::map<std::int64_t, std::string> spmm_choices() const { return aggregation_->spmm_choices(); }
  /// Host copy of the logits of the last forward (rows x classes).
  [[nodiscard]] std::vector<float> logits();
  /// Whether train_step replays a CUDA Graph: "on (N nodes, workspace B bytes)", "pending" (before the capture),
  /// "off" (not asked for), "off: CPU device", "off: a multi-device strategy" or "off: <why the capture failed>".
  [[nodiscard]] const std::string& cuda_graph_status() const noexcept { return graph_status_; }
  /// Steps replayed from the captured graph so far.
  [[nodiscard]] std::int64_t cuda_graph_replays() const noexcept;

 private:
  struct Layer {
    std::int64_t in = 0, out = 0;              ///< stored widths (stored_dims)
    std::int64_t model_in = 0, model_out = 0;  ///< the model's widths (dims): W is model_in x model_out of in x out
    std::int64_t w_offset = 0, b_offset = 0;  ///< into the flat parameter / gradient / moment buffers
    bool aggregate_first = false;             ///< (ÂH)W when in <= out, else Â(HW): the narrower SpMM
    bool decay = false;                       ///< L2 weight decay on W
  };
  void forward(bool training, int epoch);
  /// Writes the dropout keys of `epoch` and Adam's corrections of `step` into the device's step scalars, which the
  /// kernels read as they run (Dropout::key_at, AdamParams::corrections_at): a captured step stays right every epoch.
  void stage_step_scalars(int epoch, std::int64_t step);
  /// The step's device work: forward with dropout, loss, backward, gradient all-reduce, Adam (no host sync).
  void enqueue_step();
  /// After an eager step measured by arena_: capture enqueue_step() into graph_, or record why not.
  void capture_step();
  [[nodiscard]] const std::uint64_t* step_keys() const noexcept { return step_scalars_.data(); }
  [[nodiscard]] const float* step_corrections() const noexcept {
    return reinterpret_cast<const float*>(step_scalars_.data() + kMaxLayers);
  }
  void forward_bf16(bool training, int epoch);
  void backward_bf16_async();
  /// Â x (backward: Â^T x) of bf16 rows into bf16 y (rows x width): rounded by the SpMM where the aggregation can,
  /// else float rows in z32_ and one rounding pass.
  void aggregate_rounded(bool backward, const kernels::Bf16* x, kernels::Bf16* y, std::int64_t rows,
                         std::int64_t width);
  void refresh_bf16_weights();
  void allocate_bf16_activations(const AllocationPlan& plan);
  /// The dropout of layer `layer`'s input (layer 0: the input features) in `epoch`.
  [[nodiscard]] kernels::Dropout layer_dropout(int epoch, int layer, float p) const;
  [[nodiscard]] std::uint64_t dropout_key(int epoch, int layer) const;
  void sync();
  void upload_sparse_features(const AllocationPlan& plan);
  /// dW of the sparse-input first layer from dP (rows x width, float): dropout(X)^T dP with the last forward's mask.
  void sparse_input_weight_gradient_async(const float* dp, float* dw, std::int64_t width);
  void backward_async();
  void adam_async();
  /// Adam's settings (learning rate; betas and epsilon at their defaults), shared by the step and its staged corrections.
  [[nodiscard]] kernels::AdamParams adam_params() const {
    kernels::AdamParams ap;
    ap.lr = config_.lr;
    return ap;
  }
  std::vector<std::vector<float>> unflatten(const Buffer<float>& flat);
  /// Host copies of a flat stored parameter-shaped buffer, as the model's tensors (W0, b0, W1, b1, ...) or
  /// concatenated (the checkpoint layout, independent of the padding), and back.
  std::vector<float> download_flat(const Buffer<float>& flat);
  [[nodiscard]] std::vector<float> compact(const std::vector<float>& stored) const;
  [[nodiscard]] std::vector<float> expand(const std::vector<float>& compacted) const;
  [[nodiscard]] std::int64_t model_parameter_count() const;

  Resources& res_;
  const LocalProblem& problem_;
  Communicator* comm_;
  std::unique_ptr<Aggregation> aggregation_;
  GcnConfig config_;
  std::vector<std::int64_t> model_dims_;  ///< the model's widths (dims())
  std::vector<std::int64_t> dims_;        ///< stored widths: every buffer and kernel call
  std::int64_t rows_, cols_;
  int first_ = 0, last_ = 0;  ///< the layers this device holds: [first_, last_) (all unless pipelined)
  int stage_ = 0, stages_ = 1;
  [[nodiscard]] bool owns(int l) const noexcept { return l >= first_ && l < last_; }
  std::int64_t step_ = 0;
  // Data on the device (the graph lives in aggregation_).
  Buffer<float> features_;  ///< dense input features (empty when the sparse path is used)
  // Sparse input features X (cols x F) and X^T (F x cols), stored values and their dropped-out copies.
  bool sparse_input_ = false;
  Buffer<RowOffset> x_offsets_, xt_offsets_;
  Buffer<NodeId> x_cols_, xt_cols_;
  Buffer<float> x_vals_, xt_vals_, xd_vals_, xtd_vals_;
  CsrView x_view_{}, xt_view_{};
  int last_epoch_ = 0;
  float last_p_ = 0.0f;
  Buffer<std::int32_t> labels_;
  Buffer<NodeId> global_ids_;
  Buffer<NodeId> split_rows_[3];
  /// positive_[l]: the positive mask of layer l's input (a hidden output), for the ReLU / dropout backward
  std::vector<Buffer<std::uint8_t>> positive_;
  /// row -> its position in the training rows, -1 for other rows (the fused loss; only where the loss is computed)
  Buffer<std::int32_t> loss_slots_;
  // Parameters, gradients, Adam state: one flat buffer each, so the gradient all-reduce is one call.
  std::vector<Layer> layers_;
  std::int64_t num_params_ = 0;
  Buffer<float> params_, grads_, adam_m_, adam_v_;
  // Activations: inputs_[l] = dropped-out input of layer l (inputs_[0] aliases features when p = 0).
  std::vector<Buffer<float>> inputs_;
  std::vector<Buffer<float>> aggregated_;  ///< Â·input, saved when layer l aggregates before its GEMM
  Buffer<float> logits_, tmp_, grad_a_, grad_b_;
  Buffer<float> scalar_f_;
  // bf16 mode (config_.bf16()): features, layer inputs and aggregated inputs as bf16; t16_ bf16 scratch (X W,
  // dP, G W^T), z32_ float scratch (SpMM and GEMM outputs); g16_a_/g16_b_ the gradient ping-pong;
  // w16_ the bf16 copy of params_ refreshed after every optimiser step.
  Buffer<kernels::Bf16> features16_, w16_, t16_, g16_a_, g16_b_;
  std::vector<Buffer<kernels::Bf16>> inputs16_, aggregated16_;
  Buffer<float> z32_;
  Buffer<std::int64_t> scalar_i_;
  // Step scalars (device): the dropout key of every layer (kMaxLayers), then Adam's two corrections (one slot).
  static constexpr int kMaxLayers = 64;
  Buffer<std::uint64_t> step_scalars_;
  Buffer<std::byte> blas_workspace_;  ///< the GEMMs' cuBLAS workspace (planned: single CUDA device, graph on)
  bool blas_bound_ = false;           ///< this model bound blas_workspace_ to the shared cuBLAS handle
  std::vector<std::uint64_t> staged_scalars_;  ///< their host copy
  // CUDA Graph of train_step (single device): calls counts train_step calls (capture on the second).
  std::unique_ptr<StackArena> arena_;
  std::unique_ptr<StepGraph> graph_;
  std::string graph_status_;
  bool capture_pending_ = false;  ///< the step is still to be captured (on its second call)
  int graph_calls_ = 0;
};

}  // namespace gcnpart::engine
