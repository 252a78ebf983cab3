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
#include "engine/parameters.hpp"
#include "engine/problem.hpp"
#include "engine/resources.hpp"
#include "engine/sparse_input.hpp"
#include "engine/step_execution.hpp"
#include "engine/streamed_layers.hpp"
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
  /// Streaming through host memory (`--offload`, engine/streamed_layers.hpp): kAuto when the resident plan does not
  /// fit the device's memory (its --memory-limit, or on a GPU its free memory), kHost always, kOff never. One device
  /// holding every layer only (the single strategy).
  OffloadMode offload = OffloadMode::kAuto;
  /// Rows per streamed part (`--offload-part-rows`); 0: chosen by the plan (partition::streamed_plan).
  std::int64_t offload_part_rows = 0;

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

/// Losses and accuracies of one evaluation, summed over all devices.
struct EvalResult {
  double loss_sum[3] = {0, 0, 0};       ///< train, valid, test: summed cross-entropy
  std::int64_t correct[3] = {0, 0, 0};  ///< train, valid, test
};

/// One device's GCN: its problem's rows on the device, the parameters (ModelParameters), activations in the
/// precision's storage type (Activations<T>), the aggregation, and how steps run (StepExecution). Not thread-safe;
/// one per device and thread.
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
  [[nodiscard]] const std::string& cuda_graph_status() const noexcept { return execution_->status(); }
  /// The streamed plan this model trains under (null: resident), with the bytes its steps moved.
  [[nodiscard]] const StreamedLayers* streamed() const noexcept { return streamed_.get(); }
  [[nodiscard]] StreamedLayers* streamed() noexcept { return streamed_.get(); }
  /// Steps replayed from the captured graph so far.
  [[nodiscard]] std::int64_t cuda_graph_replays() const noexcept { return execution_->replays(); }

 private:
  /// The buffers of a model whose features, activations and their gradients are stored as T (float, or kernels::Bf16
  /// for Precision::kBf16; partition::allocation_plan names them the same in both).
  template <class T>
  struct Activations {
    Buffer<T> features;                 ///< dense input features (empty with sparse input or on later stages)
    std::vector<Buffer<T>> inputs;      ///< inputs[l]: layer l's dropped-out input (and layer l-1's stored output)
    std::vector<Buffer<T>> aggregated;  ///< Â·input of the layers that aggregate before their GEMM
    Buffer<T> intermediate;             ///< X W, dP or G W^T
    Buffer<T> grad_a, grad_b;           ///< backward's ping-pong of dZ
  };
  template <class T>
  void allocate_activations(Activations<T>& a, const AllocationPlan& plan);
  template <class T>
  [[nodiscard]] Activations<T>& activations() noexcept;
  /// The precision's forward (dropout as in training for `epoch` when `training`) and backward (loss, gradients,
  /// their all-reduce), one template for every storage type. No host synchronisation.
  template <class T>
  void forward_stored_async(bool training, int epoch);
  template <class T>
  void backward_stored_async();
  /// Â x (Pass::kBackward: Â^T x) of T rows into T rows y (rows x width): float straight from the aggregation;
  /// bf16 rounded by the SpMM where the aggregation can, else float rows in z32_ and one rounding pass.
  template <class T>
  void aggregate_rows(Pass pass, const T* x, T* y, std::int64_t rows, std::int64_t width);
  /// Float rows of cols x widest width for the sparse input's X W or dP: the intermediate buffer (float), z32_ (bf16).
  template <class T>
  [[nodiscard]] float* float_scratch() noexcept;
  /// Pipeline stages (float storage only): layer first_'s input from the previous stage, the last held layer's
  /// output to the next; backward's gradients the other way.
  void receive_stage_input(Activations<float>& a);
  void receive_stage_input(Activations<kernels::Bf16>& a);
  /// The precision's forward / backward (forward_stored_async<float> or <kernels::Bf16>); no host synchronisation.
  void forward_async(bool training, int epoch);
  void backward_async();
  /// The loss pass: the output bias, the training rows' softmax cross-entropy into scalar_f_, dZ of the logits as T
  /// (zeros in other rows and padding columns) and the output bias gradient.
  template <class T>
  void loss_gradient_async(T* g);
  /// Writes the dropout keys of `epoch` and Adam's corrections of `step` into the device's step scalars, which the
  /// kernels read as they run (Dropout::key_at, AdamParams::corrections_at): a captured step stays right every epoch.
  void stage_step_scalars(int epoch, std::int64_t step);
  /// The step's device work: forward with dropout, loss, backward, gradient all-reduce, Adam (no host sync).
  void enqueue_step();
  [[nodiscard]] const std::uint64_t* step_keys() const noexcept { return step_scalars_.data(); }
  [[nodiscard]] const float* step_corrections() const noexcept {
    return reinterpret_cast<const float*>(step_scalars_.data() + kMaxLayers);
  }
  /// The dropout of layer `layer`'s input (layer 0: the input features) in `epoch`.
  [[nodiscard]] kernels::Dropout layer_dropout(int epoch, int layer, float p) const;
  [[nodiscard]] std::uint64_t dropout_key(int epoch, int layer) const;
  void sync();
  /// features: also the dense features (not when they stream).
  void upload_problem(const AllocationPlan& plan, bool features);
  /// Refuses a model whose predicted tracked peak (partition::estimate_device_memory, exact on the CPU) does not fit a
  /// CPU device's cap beside what is in use, before anything is allocated. @throws OutOfMemory with the bytes, the cap
  /// and the hint; `streamed_note` (what streaming would have needed) is added to the message.
  void refuse_beyond_cap(std::int64_t peak, const std::string& streamed_note) const;
  /// Whether this model streams (config offload, the resident peak against the cap) and, if so, its plan. When auto
  /// finds the streamed plan too large as well, it returns null and says what it would need in `streamed_note`.
  /// @throws OutOfMemory when --offload host does not fit, or the host lacks the memory, with the bytes.
  [[nodiscard]] std::unique_ptr<partition::StreamedPlan> choose_streamed_plan(const partition::DeviceShape& shape,
                                                                             const partition::ModelSpec& spec,
                                                                             Backend backend,
                                                                             std::int64_t resident_peak,
                                                                             std::string& streamed_note) const;
  /// The streamed forward and backward (training: the loss in between). No host synchronisation.
  void streamed_forward_async(bool training, int epoch);
  void streamed_backward_async();
  /// Adam's settings (learning rate; betas and epsilon at their defaults), shared by the step and its staged corrections.
  [[nodiscard]] kernels::AdamParams adam_params() const {
    kernels::AdamParams ap;
    ap.lr = config_.lr;
    return ap;
  }
  [[nodiscard]] bool owns(int l) const noexcept { return l >= first_ && l < last_; }

  Resources& res_;
  const LocalProblem& problem_;
  Communicator* comm_;
  GcnConfig config_;
  std::vector<std::int64_t> model_dims_;  ///< the model's widths (dims())
  std::vector<std::int64_t> dims_;        ///< stored widths: every buffer and kernel call
  std::int64_t rows_, cols_;
  int first_ = 0, last_ = 0;  ///< the layers this device holds: [first_, last_) (all unless pipelined)
  int stage_ = 0, stages_ = 1;
  std::int64_t step_ = 0;
  int last_epoch_ = 0;
  // The problem's rows on the device (the graph lives in aggregation_).
  Buffer<std::int32_t> labels_;
  Buffer<NodeId> global_ids_;
  Buffer<NodeId> split_rows_[3];
  /// row -> its position in the training rows, -1 for other rows (the fused loss; only where the loss is computed)
  Buffer<std::int32_t> loss_slots_;
  std::unique_ptr<SparseInput> sparse_;  ///< sparse input features (null: dense, in the activations)
  std::unique_ptr<ModelParameters> params_;
  // Activations in the precision's storage type (only one of the two is allocated); float logits; z32_ the float
  // SpMM and GEMM outputs of bf16 storage; positive_[l] the positive mask of layer l's input (a hidden output) for
  // the ReLU / dropout backward.
  Activations<float> f32_;
  Activations<kernels::Bf16> bf16_;
  Buffer<float> logits_, z32_;
  std::vector<Buffer<std::uint8_t>> positive_;
  Buffer<float> scalar_f_;
  Buffer<std::int64_t> scalar_i_;
  // Step scalars (device): the dropout key of every layer (kMaxLayers), then Adam's two corrections (one slot).
  static constexpr int kMaxLayers = 64;
  Buffer<std::uint64_t> step_scalars_;
  std::vector<std::uint64_t> staged_scalars_;  ///< their host copy
  std::unique_ptr<Aggregation> aggregation_;
  std::unique_ptr<StreamedLayers> streamed_;  ///< set: activations stream through host memory by row parts
  std::unique_ptr<StepExecution> execution_;  ///< last: destroyed first (it synchronises before buffers go)
};

}  // namespace gcnpart::engine
