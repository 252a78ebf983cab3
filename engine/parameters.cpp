#include "engine/parameters.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "base/error.hpp"
#include "partition/allocation_plan.hpp"

namespace gcnpart::engine {

ModelParameters::ModelParameters(Resources& res, const AllocationPlan& plan, const ParameterLayout& layout,
                                 Communicator* comm)
    : res_(res), comm_(comm), first_(layout.first), last_(layout.last), weight_decay_(layout.weight_decay) {
  const int L = static_cast<int>(layout.dims.size()) - 1;
  GCNPART_EXPECTS(L >= 1 && layout.model_dims.size() == layout.dims.size(), "a model of at least one layer");
  layers_.resize(static_cast<std::size_t>(L));
  std::int64_t offset = 0;
  for (int l = 0; l < L; ++l) {
    LayerShape& ly = layers_[static_cast<std::size_t>(l)];
    ly.in = layout.dims[l];
    ly.out = layout.dims[l + 1];
    ly.model_in = layout.model_dims[l];
    ly.model_out = layout.model_dims[l + 1];
    ly.aggregate_first = partition::aggregates_first(layout.dims, l);
    ly.decay = layout.weight_decay > 0 && (l == 0 || layout.weight_decay_all_layers);
    if (l < first_ || l >= last_) continue;  // another pipeline stage's layer: no parameters here
    ly.w_offset = offset;
    offset += ly.in * ly.out;
    ly.b_offset = offset;
    offset += ly.out;
  }
  count_ = offset;
  initialise(plan, layout);
  grads_ = take<float>(res_, plan, "weight_gradients");
  adam_m_ = take<float>(res_, plan, "adam_m");
  adam_v_ = take<float>(res_, plan, "adam_v");
  // Zero gradients once: the sparse-input layer's dW = X^T dP writes only the dataset's feature rows of W, so
  // the padding rows must read as zero gradients from the start (every other entry is written every step).
  const kernels::Context& ctx = res_.context();
  kernels::memset_zero_async(ctx, grads_.data(), grads_.bytes());
  kernels::memset_zero_async(ctx, adam_m_.data(), adam_m_.bytes());
  kernels::memset_zero_async(ctx, adam_v_.data(), adam_v_.bytes());
  if (layout.bf16_copy) {
    bf16_ = take<kernels::Bf16>(res_, plan, "weights_bf16");
    refresh_bf16_async();
  }
}

void ModelParameters::initialise(const AllocationPlan& plan, const ParameterLayout& layout) {
  // Glorot-uniform weights from (seed, layer, index of the model's W) alone, zero biases; stored in * out, the
  // padding rows and columns zero.
  std::vector<float> init(static_cast<std::size_t>(count_), 0.0f);
  for (int l = first_; l < last_; ++l) {
    const LayerShape& ly = layer(l);
    const float limit = std::sqrt(6.0f / static_cast<float>(ly.model_in + ly.model_out));
    const std::uint64_t key = rng::stream_key(layout.seed, rng::kWeightInit, static_cast<std::uint64_t>(l));
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
}

template <>
const float* ModelParameters::weights<float>(int l) const {
  return params_.data() + layer(l).w_offset;
}

template <>
const kernels::Bf16* ModelParameters::weights<kernels::Bf16>(int l) const {
  GCNPART_EXPECTS(!bf16_.empty(), "the parameters keep a bf16 copy of the weights");
  return bf16_.data() + layer(l).w_offset;
}

void ModelParameters::refresh_bf16_async() {
  if (!bf16_.empty()) kernels::convert_to_bf16_async(res_.context(), params_.data(), count_, bf16_.data());
}

void ModelParameters::adam_async(const kernels::Context& ctx, kernels::AdamParams ap, std::int64_t step,
                                 const float* corrections_at) {
  ap.step = step;
  ap.corrections_at = corrections_at;
  for (int l = first_; l < last_; ++l) {
    const LayerShape& ly = layer(l);
    ap.weight_decay = ly.decay ? weight_decay_ : 0.0f;
    kernels::adam_step_async(ctx, params_.data() + ly.w_offset, grads_.data() + ly.w_offset,
                             adam_m_.data() + ly.w_offset, adam_v_.data() + ly.w_offset, ly.in * ly.out, ap);
    ap.weight_decay = 0.0f;
    kernels::adam_step_async(ctx, params_.data() + ly.b_offset, grads_.data() + ly.b_offset,
                             adam_m_.data() + ly.b_offset, adam_v_.data() + ly.b_offset, ly.out, ap);
  }
  refresh_bf16_async();
}

std::vector<float> ModelParameters::download(const Buffer<float>& flat_buffer) {
  std::vector<float> flat(static_cast<std::size_t>(count_));
  kernels::copy_async(res_.context(), flat.data(), flat_buffer.data(), flat_buffer.bytes());
  sync();
  return flat;
}

void ModelParameters::upload_async(Buffer<float>& flat_buffer, const std::vector<float>& values) {
  kernels::copy_async(res_.context(), flat_buffer.data(), values.data(), flat_buffer.bytes());
}

void ModelParameters::sync() {
  if (comm_ != nullptr) {
    comm_->synchronize(res_.context());
  } else {
    res_.synchronize();
  }
}

std::int64_t ModelParameters::model_count() const {
  std::int64_t n = 0;
  for (int l = first_; l < last_; ++l) n += layer(l).model_in * layer(l).model_out + layer(l).model_out;
  return n;
}

std::vector<float> ModelParameters::compact(const std::vector<float>& stored) const {
  std::vector<float> out;
  out.reserve(static_cast<std::size_t>(model_count()));
  for (int l = first_; l < last_; ++l) {
    const LayerShape& ly = layer(l);
    for (std::int64_t r = 0; r < ly.model_in; ++r) {
      const auto row = stored.begin() + ly.w_offset + r * ly.out;
      out.insert(out.end(), row, row + ly.model_out);
    }
    out.insert(out.end(), stored.begin() + ly.b_offset, stored.begin() + ly.b_offset + ly.model_out);
  }
  return out;
}

std::vector<float> ModelParameters::expand(const std::vector<float>& compacted) const {
  GCNPART_EXPECTS(static_cast<std::int64_t>(compacted.size()) == model_count(),
                  "expand takes the model's parameter count");
  std::vector<float> stored(static_cast<std::size_t>(count_), 0.0f);
  auto in = compacted.begin();
  for (int l = first_; l < last_; ++l) {
    const LayerShape& ly = layer(l);
    for (std::int64_t r = 0; r < ly.model_in; ++r, in += ly.model_out)
      std::copy(in, in + ly.model_out, stored.begin() + ly.w_offset + r * ly.out);
    std::copy(in, in + ly.model_out, stored.begin() + ly.b_offset);
    in += ly.model_out;
  }
  return stored;
}

std::vector<std::vector<float>> ModelParameters::unflatten(const Buffer<float>& flat_buffer) {
  const std::vector<float> flat = compact(download(flat_buffer));
  std::vector<std::vector<float>> out;
  auto in = flat.begin();
  for (int l = first_; l < last_; ++l) {
    const LayerShape& ly = layer(l);
    out.emplace_back(in, in + ly.model_in * ly.model_out);
    in += ly.model_in * ly.model_out;
    out.emplace_back(in, in + ly.model_out);
    in += ly.model_out;
  }
  return out;
}

ModelState ModelParameters::state(std::int64_t step) {
  // The checkpoint holds the model's parameters and moments without the stored padding (always zero), so it does
  // not depend on the precision's alignment.
  ModelState s;
  s.step = step;
  s.params = compact(download(params_));
  s.adam_m = compact(download(adam_m_));
  s.adam_v = compact(download(adam_v_));
  return s;
}

void ModelParameters::set_state(const ModelState& s) {
  const std::int64_t expected = model_count();
  for (const auto* v : {&s.params, &s.adam_m, &s.adam_v})
    if (static_cast<std::int64_t>(v->size()) != expected)
      throw InvalidInput::parameter("checkpoint", std::to_string(v->size()) + " values",
                                    std::to_string(expected) + " (the model's parameter count)");
  const std::vector<float> params = expand(s.params), m = expand(s.adam_m), v = expand(s.adam_v);
  upload_async(params_, params);
  upload_async(adam_m_, m);
  upload_async(adam_v_, v);
  refresh_bf16_async();
  sync();
}

void ModelParameters::set_parameters(const std::vector<std::vector<float>>& params) {
  const std::size_t owned = static_cast<std::size_t>(last_ - first_);
  if (params.size() != 2 * owned)
    throw InvalidInput::parameter("weights", std::to_string(params.size()) + " tensors",
                                  std::to_string(2 * owned) + " (W and b per layer held here)");
  std::vector<float> compacted;
  compacted.reserve(static_cast<std::size_t>(model_count()));
  for (int l = first_; l < last_; ++l) {
    const LayerShape& ly = layer(l);
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
  upload_async(params_, flat);
  refresh_bf16_async();
  sync();
}

}  // namespace gcnpart::engine
