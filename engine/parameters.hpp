// A GCN's parameters on one device: the layers' shapes, the weights and biases, their gradients and Adam's moments
// (one flat buffer each, so the gradient all-reduce is one call), and, with bf16 storage, the bf16 copy of the
// weights that the GEMMs read. Host copies drop the stored padding (engine/gcn.hpp, "stored widths").
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "base/philox.hpp"
#include "engine/communicator.hpp"
#include "engine/memory.hpp"
#include "engine/planned_buffer.hpp"
#include "engine/resources.hpp"
#include "kernels/ops.hpp"

namespace gcnpart::engine {

/// One layer's shapes and where its W and b sit in the flat buffers.
struct LayerShape {
  std::int64_t in = 0, out = 0;              ///< stored widths (stored_dims)
  std::int64_t model_in = 0, model_out = 0;  ///< the model's widths (dims): W is model_in x model_out of in x out
  std::int64_t w_offset = 0, b_offset = 0;   ///< into the flat parameter / gradient / moment buffers
  bool aggregate_first = false;              ///< (ÂH)W when in <= out, else Â(HW): the narrower SpMM
  bool decay = false;                        ///< L2 weight decay on W
};

/// Everything that changes while training: the optimiser step and the flat parameter and Adam buffers.
struct ModelState {
  std::int64_t step = 0;
  std::vector<float> params, adam_m, adam_v;
};

/// What ModelParameters needs to know of the model: widths, which layers this device holds, initialisation and
/// the optimiser's settings.
struct ParameterLayout {
  std::vector<std::int64_t> dims;        ///< stored widths
  std::vector<std::int64_t> model_dims;  ///< the model's widths
  int first = 0, last = 0;               ///< layers held here: [first, last)
  std::uint64_t seed = 1;
  float weight_decay = 0;
  bool weight_decay_all_layers = false;
  bool bf16_copy = false;  ///< keep a bf16 copy of the weights for the GEMMs (bf16 storage)
};

class ModelParameters {
 public:
  /// Allocates the plan's `weights`, `weight_gradients`, `adam_m`, `adam_v` (and `weights_bf16`) buffers and
  /// initialises them: Glorot-uniform weights from (seed, layer, index of the model's W) alone, so every device
  /// starts equal; zero biases, gradients and moments; the padding rows and columns zero (their gradients are zero,
  /// so they stay zero). Does not synchronise.
  /// comm: the devices it trains with (its synchronisation watches them), or null.
  ModelParameters(Resources& res, const AllocationPlan& plan, const ParameterLayout& layout, Communicator* comm);

  ModelParameters(const ModelParameters&) = delete;
  ModelParameters& operator=(const ModelParameters&) = delete;

  /// Shapes and offsets of layer l (every layer of the model, held here or not).
  [[nodiscard]] const LayerShape& layer(int l) const { return layers_[static_cast<std::size_t>(l)]; }
  [[nodiscard]] std::int64_t count() const noexcept { return count_; }  ///< stored values held here
  /// W of layer l as the GEMMs read it: float, or the bf16 copy (T = kernels::Bf16; only with bf16_copy).
  template <class T>
  [[nodiscard]] const T* weights(int l) const;
  /// b of layer l (float in every precision).
  [[nodiscard]] const float* bias(int l) const { return params_.data() + layer(l).b_offset; }
  /// dW and db of layer l in the flat gradient buffer (float).
  [[nodiscard]] float* weight_gradient(int l) { return grads_.data() + layer(l).w_offset; }
  [[nodiscard]] float* bias_gradient(int l) { return grads_.data() + layer(l).b_offset; }
  [[nodiscard]] float* gradients_flat() { return grads_.data(); }  ///< count() values: the all-reduce's buffer
  /// Float master weights of layer l (the sparse-input product reads them in every precision).
  [[nodiscard]] const float* master_weights(int l) const { return params_.data() + layer(l).w_offset; }

  /// One Adam step of every layer held here; `step` is the step being taken, `corrections_at` its staged bias
  /// corrections (kernels::AdamParams). Refreshes the bf16 copy. Does not synchronise.
  void adam_async(const kernels::Context& ctx, kernels::AdamParams params, std::int64_t step,
                  const float* corrections_at);

  /// Host copies, as the model's tensors (W0, b0, W1, b1, ... of the layers held here, without the padding).
  /// Synchronise (through the communicator when there is one). @throws DeviceError.
  [[nodiscard]] std::vector<std::vector<float>> parameters() { return unflatten(params_); }
  [[nodiscard]] std::vector<std::vector<float>> gradients() { return unflatten(grads_); }
  /// @throws InvalidInput on a shape mismatch.
  void set_parameters(const std::vector<std::vector<float>>& params);
  /// Parameters and moments without the padding (the checkpoint layout), and back. @throws InvalidInput when the
  /// sizes are not the model's.
  [[nodiscard]] ModelState state(std::int64_t step);
  void set_state(const ModelState& s);

 private:
  void initialise(const AllocationPlan& plan, const ParameterLayout& layout);
  void sync();
  void refresh_bf16_async();  ///< on the resources' stream, as every call here
  [[nodiscard]] std::vector<std::vector<float>> unflatten(const Buffer<float>& flat);
  [[nodiscard]] std::vector<float> download(const Buffer<float>& flat);
  void upload_async(Buffer<float>& flat, const std::vector<float>& values);
  [[nodiscard]] std::vector<float> compact(const std::vector<float>& stored) const;
  [[nodiscard]] std::vector<float> expand(const std::vector<float>& compacted) const;
  [[nodiscard]] std::int64_t model_count() const;

  Resources& res_;
  Communicator* comm_;
  std::vector<LayerShape> layers_;
  int first_ = 0, last_ = 0;
  float weight_decay_ = 0;
  std::int64_t count_ = 0;
  Buffer<float> params_, grads_, adam_m_, adam_v_;
  Buffer<kernels::Bf16> bf16_;  ///< the bf16 copy of params_ (bf16 storage), refreshed after every change
};

template <>
const float* ModelParameters::weights<float>(int l) const;
template <>
const kernels::Bf16* ModelParameters::weights<kernels::Bf16>(int l) const;

}  // namespace gcnpart::engine
