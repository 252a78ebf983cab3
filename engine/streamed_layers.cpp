#include "engine/streamed_layers.hpp"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "base/error.hpp"
#include "base/format.hpp"

namespace gcnpart::engine {

namespace {

std::string indexed(const char* name, std::int64_t i) { return std::string(name) + "[" + std::to_string(i) + "]"; }
std::int64_t mask_width(std::int64_t w) { return kernels::positive_mask_blocks(w); }

/// The plan's device allocation `name` as raw bytes, in its category.
Buffer<std::uint8_t> take_bytes(Resources& res, const AllocationPlan& plan, const std::string& name) {
  const partition::Allocation* a = partition::find_allocation(plan, name);
  GCNPART_EXPECTS(a != nullptr && a->lifetime == partition::Lifetime::kPersistent,
                  ("the streamed plan lists " + name).c_str());
  return Buffer<std::uint8_t>(res.memory(), a->bytes(), a->category, res.stream());
}

template <class T>
T* as(std::uint8_t* p) {
  return reinterpret_cast<T*>(p);
}
template <class T>
const T* as(const std::uint8_t* p) {
  return reinterpret_cast<const T*>(p);
}

}  // namespace

/// A saved matrix in its tier: device memory from the tracked resource, or host memory (page-locked on CUDA).
struct StreamedLayers::Saved {
  std::string name;
  partition::Tier tier = partition::Tier::kDevice;
  Buffer<std::uint8_t> device;
  PinnedAllocation pinned;
  std::unique_ptr<std::uint8_t[]> host;
  std::uint8_t* data = nullptr;
  [[nodiscard]] bool on_host() const noexcept { return tier == partition::Tier::kHost; }
};

StreamedLayers::StreamedLayers(Resources& res, const LocalProblem& problem, const partition::StreamedPlan& plan,
                               const std::vector<std::int64_t>& dims, bool bf16, Aggregation& aggregation,
                               ModelParameters& params)
    : res_(res),
      plan_(plan),
      dims_(dims),
      bf16_(bf16),
      aggregation_(aggregation),
      params_(params),
      rows_(problem.num_rows) {
  const kernels::Context& ctx = res_.context();
  const bool cuda = ctx.is_cuda();
  const int act = bf16_ ? 2 : 4;
  for (const partition::StreamedMatrix& m : plan_.matrices) {
    auto s = std::make_unique<Saved>();
    s->name = m.name;
    s->tier = m.tier;
    if (m.tier == partition::Tier::kDevice) {
      s->device = take_bytes(res_, plan_.device, m.name);
      s->data = s->device.data();
    } else if (m.bytes() > 0) {
      if (cuda) {
        s->pinned = allocate_pinned(static_cast<std::size_t>(m.bytes()));
        s->data = static_cast<std::uint8_t*>(s->pinned.get());
      } else {
        try {
          s->host.reset(new std::uint8_t[static_cast<std::size_t>(m.bytes())]);
        } catch (const std::bad_alloc&) {
          throw OutOfMemory("out of host memory: asked " + human_bytes(static_cast<double>(m.bytes())) + " (" +
                            std::to_string(m.bytes()) + " bytes) for the host copy of " + m.what +
                            " (--offload host keeps it in host memory)");
        }
        s->data = s->host.get();
      }
    }
    saved_.push_back(std::move(s));
  }
  {
    auto s = std::make_unique<Saved>();
    s->name = "grad_logits";
    s->device = take_bytes(res_, plan_.device, "grad_logits");
    s->data = s->device.data();
    saved_.push_back(std::move(s));
  }
  for (int k = 0; k < 2; ++k)
    if (plan_.operand_widths[k] > 0) operand_[k] = take_bytes(res_, plan_.device, indexed("stream_operand", k));
  part_float_ = take_bytes(res_, plan_.device, "part_float");
  for (int i = 0; i < 2; ++i) part_scratch_[i] = take_bytes(res_, plan_.device, indexed("part_scratch", i));
  for (int slot = 0; slot < 3; ++slot)
    for (int b = 0; b < 2; ++b) {
      stage_in_[slot][b] = take_bytes(res_, plan_.device, "stage_in" + std::to_string(slot) + "[" + std::to_string(b) + "]");
      stage_out_[slot][b] =
          take_bytes(res_, plan_.device, "stage_out" + std::to_string(slot) + "[" + std::to_string(b) + "]");
    }
  bias_partial_ = take_bytes(res_, plan_.device, "bias_partial");
  const std::int64_t widest = *std::max_element(dims_.begin(), dims_.end());
  {  // the one after the partial sums: the GEMM that adds them
    static const float kOne = 1.0f;
    kernels::copy_async(ctx, as<float>(bias_partial_.data()) + widest, &kOne, sizeof kOne);
  }

  // The features in their tier: rows widened to the stored width, bf16 rounded on the host.
  Saved& x = saved("features");
  const std::int64_t f = problem.num_features, stored = dims_[0];
  std::vector<std::uint8_t> staging;
  std::uint8_t* dst = x.data;
  if (!x.on_host()) {
    staging.resize(static_cast<std::size_t>(rows_ * stored * act));
    dst = staging.data();
  }
#pragma omp parallel for schedule(static) if (rows_ * stored > (std::int64_t{1} << 16))
  for (std::int64_t i = 0; i < rows_; ++i) {
    const float* src = problem.features.data() + i * f;
    if (bf16_) {
      kernels::Bf16* row = as<kernels::Bf16>(dst) + i * stored;
      kernels::convert_to_bf16_async(kernels::Context{}, src, f, row);
      std::fill(row + f, row + stored, kernels::Bf16{});
    } else {
      float* row = as<float>(dst) + i * stored;
      std::copy_n(src, f, row);
      std::fill(row + f, row + stored, 0.0f);
    }
  }
  if (!x.on_host() && !staging.empty()) kernels::copy_async(ctx, x.data, staging.data(), staging.size());

  up_ctx_ = ctx;
  down_ctx_ = ctx;
  if (cuda) {
    up_stream_ = create_stream(false);
    down_stream_ = create_stream(false);
    up_ctx_.stream = up_stream_.get();
    down_ctx_.stream = down_stream_.get();
    for (int b = 0; b < 2; ++b) {
      uploaded_.emplace_back(kernels::CudaEvent::Kind::kOrdering);
      computed_.emplace_back(kernels::CudaEvent::Kind::kOrdering);
      downloaded_.emplace_back(kernels::CudaEvent::Kind::kOrdering);
    }
    phase_done_ = std::make_unique<kernels::CudaEvent>(kernels::CudaEvent::Kind::kOrdering);
    operand_free_ = std::make_unique<kernels::CudaEvent>(kernels::CudaEvent::Kind::kOrdering);
  }
  res_.synchronize();  // the staged features and the one are on the device before their host copies go
}

StreamedLayers::~StreamedLayers() {
  // Copies in flight read or write the host matrices and slots: they finish before those are freed.
  try {
    if (res_.context().is_cuda()) {
      res_.synchronize();
      if (phase_done_) {
        phase_done_->record(up_stream_.get());
        phase_done_->synchronize();
        phase_done_->record(down_stream_.get());
        phase_done_->synchronize();
      }
    }
  } catch (...) {  // a destructor never throws; the device error was reported where it happened
  }
}

void* StreamedLayers::grad_logits() { return saved("grad_logits").data; }

StreamedLayers::Saved& StreamedLayers::saved(const std::string& name) {
  for (auto& s : saved_)
    if (s->name == name) return *s;
  GCNPART_EXPECTS(false, ("the streamed plan saves " + name).c_str());
  return *saved_.front();
}

kernels::Dropout StreamedLayers::part_dropout(const DropoutOf& dropout, int layer, float p, std::int64_t begin) const {
  kernels::Dropout d = dropout(layer, p);
  if (d.global_ids != nullptr) {
    d.global_ids += begin;
  } else {
    d.global_offset += begin;
  }
  return d;
}

void StreamedLayers::for_each_part(const std::vector<Source>& in, const std::vector<Sink>& out, const PartBody& body) {
  GCNPART_EXPECTS(in.size() <= 3 && out.size() <= 3, "at most three sources and sinks per part");
  const kernels::Context& ctx = res_.context();
  const bool cuda = ctx.is_cuda();
  const std::int64_t r = plan_.part_rows, parts = plan_.parts;
  auto upload = [&](std::int64_t p) {
    const int b = static_cast<int>(p % 2);
    const std::int64_t begin = p * r, end = std::min(rows_, begin + r);
    bool any = false;
    for (std::size_t i = 0; i < in.size(); ++i) {
      if (!in[i].saved->on_host() || skip_copies_) continue;
      if (!any && cuda) computed_[b].make_wait(up_ctx_.stream);  // the slot's last reader is done
      any = true;
      const auto bytes = static_cast<std::size_t>((end - begin) * in[i].row_bytes);
      kernels::copy_async(up_ctx_, stage_in_[i][b].data(), in[i].saved->data + begin * in[i].row_bytes, bytes);
      stats_.h2d_bytes += static_cast<std::int64_t>(bytes);
    }
    if (any && cuda) uploaded_[b].record(up_ctx_.stream);
    return any;
  };
  bool pending[2] = {false, false};
  if (parts > 0) pending[0] = upload(0);
  bool downloads = false;
  for (const Sink& s : out) downloads = downloads || (s.saved->on_host() && !skip_copies_);
  for (std::int64_t p = 0; p < parts; ++p) {
    const int b = static_cast<int>(p % 2);
    const std::int64_t begin = p * r, end = std::min(rows_, begin + r);
    if (p + 1 < parts) pending[(p + 1) % 2] = upload(p + 1);
    if (cuda && pending[b]) uploaded_[b].make_wait(ctx.stream);
    if (cuda && downloads) downloaded_[b].make_wait(ctx.stream);  // the slot's last download is done
    std::uint8_t* in_rows[3] = {nullptr, nullptr, nullptr};
    std::uint8_t* out_rows[3] = {nullptr, nullptr, nullptr};
    for (std::size_t i = 0; i < in.size(); ++i)
      in_rows[i] = in[i].saved->on_host() ? stage_in_[i][b].data() : in[i].saved->data + begin * in[i].row_bytes;
    for (std::size_t i = 0; i < out.size(); ++i)
      out_rows[i] = out[i].saved->on_host() ? stage_out_[i][b].data() : out[i].saved->data + begin * out[i].row_bytes;
    body(begin, end, in_rows, out_rows);
    if (cuda) computed_[b].record(ctx.stream);
    if (!downloads) continue;
    if (cuda) computed_[b].make_wait(down_ctx_.stream);
    for (std::size_t i = 0; i < out.size(); ++i) {
      if (!out[i].saved->on_host()) continue;
      const auto bytes = static_cast<std::size_t>((end - begin) * out[i].row_bytes);
      kernels::copy_async(down_ctx_, out[i].saved->data + begin * out[i].row_bytes, stage_out_[i][b].data(), bytes);
      stats_.d2h_bytes += static_cast<std::int64_t>(bytes);
    }
    if (cuda) downloaded_[b].record(down_ctx_.stream);
  }
  if (cuda) {  // the next phase's uploads and kernels see this phase's downloads in the host matrices
    phase_done_->record(down_ctx_.stream);
    phase_done_->make_wait(up_ctx_.stream);
    phase_done_->make_wait(ctx.stream);
  }
}

const std::uint8_t* StreamedLayers::whole_on_device(const Saved& s, std::int64_t row_bytes, int layer) {
  if (!s.on_host()) return s.data;
  std::uint8_t* target = operand(layer);
  if (skip_copies_) return target;
  const kernels::Context& ctx = res_.context();
  const bool cuda = ctx.is_cuda();
  if (cuda) {  // the operand's last readers are done before it is overwritten
    operand_free_->record(ctx.stream);
    operand_free_->make_wait(up_ctx_.stream);
  }
  const auto bytes = static_cast<std::size_t>(rows_ * row_bytes);
  kernels::copy_async(up_ctx_, target, s.data, bytes);
  stats_.h2d_bytes += static_cast<std::int64_t>(bytes);
  if (cuda) {
    operand_free_->record(up_ctx_.stream);
    operand_free_->make_wait(ctx.stream);
  }
  return target;
}

template <class T>
void StreamedLayers::aggregate_part(Pass pass, const T* x, T* y, std::int64_t width, std::int64_t begin,
                                    std::int64_t end) {
  if constexpr (std::is_same_v<T, float>) {
    aggregation_.apply_rows_async(pass, StoredRows{x}, y, width, begin, end);
  } else {
    aggregation_.apply_rows_rounded_async(pass, x, y, as<float>(part_float_.data()), width, begin, end);
  }
}

void StreamedLayers::add_bias_partial(float* bias_gradient, std::int64_t width, bool first) {
  const kernels::Context& ctx = res_.context();
  const float* partial = as<float>(bias_partial_.data());
  const std::int64_t widest = *std::max_element(dims_.begin(), dims_.end());
  if (first) {
    kernels::copy_async(ctx, bias_gradient, partial, static_cast<std::size_t>(width) * sizeof(float));
    return;
  }
  // bias += 1 x partial (a 1 x 1 by 1 x width product added to the 1 x width gradient)
  kernels::gemm_async(ctx, false, false, 1.0f, kernels::make_view(partial + widest, 1, 1),
                      kernels::make_view(partial, 1, width), 1.0f, kernels::make_view(bias_gradient, 1, width));
}

void StreamedLayers::forward_async(bool training, const DropoutOf& dropout, float dropout_p, float* logits) {
  if (training) step_start_ = stats_;
  if (bf16_) return forward_stored_async<kernels::Bf16>(training, dropout, training ? dropout_p : 0.0f, logits);
  forward_stored_async<float>(training, dropout, training ? dropout_p : 0.0f, logits);
}

void StreamedLayers::backward_async(const DropoutOf& dropout, float dropout_p) {
  if (bf16_) {
    backward_stored_async<kernels::Bf16>(dropout, dropout_p);
  } else {
    backward_stored_async<float>(dropout, dropout_p);
  }
  stats_.step_h2d_bytes = stats_.h2d_bytes - step_start_.h2d_bytes;
  stats_.step_d2h_bytes = stats_.d2h_bytes - step_start_.d2h_bytes;
}

std::pair<double, double> StreamedLayers::measure_copy_bandwidth() {
  const kernels::Context& ctx = res_.context();
  if (!ctx.is_cuda()) return {0.0, 0.0};
  res_.synchronize();
  const auto bytes = static_cast<std::size_t>(stage_in_[0][0].size());
  if (bytes == 0) return {0.0, 0.0};
  PinnedAllocation host = allocate_pinned(bytes);
  std::memset(host.get(), 0, bytes);
  auto time = [&](bool up) {
    constexpr int kRepeats = 5;
    std::vector<double> ms;
    kernels::CudaEvent start, stop;
    for (int i = 0; i <= kRepeats; ++i) {
      start.record(ctx.stream);
      if (up) {
        kernels::copy_async(ctx, stage_in_[0][0].data(), host.get(), bytes);
      } else {
        kernels::copy_async(ctx, host.get(), stage_in_[0][0].data(), bytes);
      }
      stop.record(ctx.stream);
      stop.synchronize();
      if (i > 0) ms.push_back(kernels::elapsed_ms(start, stop));  // the first is the warm-up
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms[ms.size() / 2];
    return median > 0 ? static_cast<double>(bytes) / (median * 1e-3) / 1e9 : 0.0;
  };
  const double h2d = time(true);
  const double d2h = time(false);
  return {h2d, d2h};
}

template <class T>
void StreamedLayers::forward_stored_async(bool training, const DropoutOf& dropout, float p, float* logits) {
  const kernels::Context& ctx = res_.context();
  const partition::StreamedFlow& flow = plan_.flow;
  const int L = static_cast<int>(dims_.size()) - 1;
  for (int l = 0; l < L; ++l) {
    const LayerShape& ly = params_.layer(l);
    const std::int64_t in = dims_[l], out = dims_[l + 1];
    const bool last = l == L - 1;
    const T* w = params_.weights<T>(l);
    const float* bias = params_.bias(l);
    T* own = as<T>(operand(l));
    const auto in_bytes = static_cast<std::int64_t>(in * sizeof(T));
    // Sinks of the epilogue: the aggregated input (training, layers that aggregate first), the next layer's input
    // (unless it goes straight into the next layer's operand) and, in training, its positive mask.
    std::vector<Sink> sinks;
    const bool save_aggregated = training && ly.aggregate_first;
    if (save_aggregated) sinks.push_back({&saved(indexed("aggregated", l)), in_bytes});
    const bool direct_next = !last && flow.direct_input[l + 1];
    const std::size_t next_at = sinks.size();
    if (!last && !direct_next)
      sinks.push_back({&saved(indexed("inputs", l + 1)), static_cast<std::int64_t>(out * sizeof(T))});
    const std::size_t positive_at = sinks.size();
    if (!last && training) sinks.push_back({&saved(indexed("positive", l + 1)), mask_width(out)});
    auto epilogue = [&](std::int64_t begin, std::int64_t end, float* z, std::uint8_t* const* out_rows) {
      const std::int64_t rows = end - begin;
      if (last) {
        if (!training)  // training: the loss adds the output bias
          kernels::bias_act_dropout_async(ctx, kernels::make_view(z, rows, out), bias, false, kernels::Dropout{},
                                          kernels::make_view(z, rows, out));
        return;
      }
      T* next = direct_next ? as<T>(operand(l + 1)) + begin * out : as<T>(out_rows[next_at]);
      kernels::bias_act_dropout_async(ctx, kernels::make_view(z, rows, out), bias, true,
                                      part_dropout(dropout, l + 1, p, begin), kernels::make_view(next, rows, out),
                                      training ? out_rows[positive_at] : nullptr);
    };
    if (!ly.aggregate_first) {
      // X W by parts into the operand, then Â (X W) by parts.
      Saved& src = l == 0 ? saved("features") : saved(indexed("inputs", l));
      for_each_part({Source{&src, in_bytes}}, {}, [&](std::int64_t begin, std::int64_t end, std::uint8_t* const* in_rows,
                                                      std::uint8_t* const*) {
        const std::int64_t rows = end - begin;
        const T* h = as<T>(static_cast<const std::uint8_t*>(in_rows[0]));
        if (l == 0 && p > 0) {
          T* dropped = as<T>(part_scratch_[0].data());
          kernels::dropout_async(ctx, kernels::make_view(h, rows, in), part_dropout(dropout, 0, p, begin),
                                 kernels::make_view(dropped, rows, in));
          h = dropped;
        }
        kernels::gemm_async(ctx, false, false, 1.0f, kernels::make_view(h, rows, in), kernels::make_view(w, in, out),
                            0.0f, kernels::make_view(own + begin * out, rows, out));
      });
      for_each_part({}, sinks, [&](std::int64_t begin, std::int64_t end, std::uint8_t* const*,
                                   std::uint8_t* const* out_rows) {
        float* z = last ? logits + begin * out : as<float>(part_float_.data());
        aggregation_.apply_rows_async(Pass::kForward, StoredRows{static_cast<const T*>(own)}, z, out, begin, end);
        epilogue(begin, end, z, out_rows);
      });
      continue;
    }
    // Â H whole on the device (the dropped-out features, the layer's input as the previous epilogue wrote it, or
    // uploaded), then by parts Â H, (Â H) W and the epilogue.
    const T* aggregated_from = own;
    if (l == 0 && p > 0) {
      for_each_part({Source{&saved("features"), in_bytes}}, {}, [&](std::int64_t begin, std::int64_t end,
                                                                    std::uint8_t* const* in_rows, std::uint8_t* const*) {
        const std::int64_t rows = end - begin;
        kernels::dropout_async(ctx, kernels::make_view(as<T>(static_cast<const std::uint8_t*>(in_rows[0])), rows, in),
                               part_dropout(dropout, 0, p, begin), kernels::make_view(own + begin * in, rows, in));
      });
    } else if (l == 0 || !flow.direct_input[l]) {
      aggregated_from = as<T>(whole_on_device(l == 0 ? saved("features") : saved(indexed("inputs", l)), in_bytes, l));
    }
    for_each_part({}, sinks, [&](std::int64_t begin, std::int64_t end, std::uint8_t* const*,
                                 std::uint8_t* const* out_rows) {
      const std::int64_t rows = end - begin;
      T* a = save_aggregated ? as<T>(out_rows[0]) : as<T>(part_scratch_[0].data());
      aggregate_part<T>(Pass::kForward, aggregated_from, a, in, begin, end);
      float* z = last ? logits + begin * out : as<float>(part_float_.data());
      kernels::gemm_async(ctx, false, false, 1.0f, kernels::make_view(static_cast<const T*>(a), rows, in),
                          kernels::make_view(w, in, out), 0.0f, kernels::make_view(z, rows, out));
      epilogue(begin, end, z, out_rows);
    });
  }
}

template <class T>
void StreamedLayers::backward_stored_async(const DropoutOf& dropout, float p) {
  const kernels::Context& ctx = res_.context();
  const partition::StreamedFlow& flow = plan_.flow;
  const int L = static_cast<int>(dims_.size()) - 1;
  // Layer j's first backward pass on a part: dW_j (+)= (Â X)^T G; for j > 0, G W_j^T into its operand's rows.
  auto first_pass = [&](int j, std::int64_t begin, std::int64_t end, const T* g, const T* a) {
    const std::int64_t rows = end - begin, in = dims_[j], out = dims_[j + 1];
    kernels::gemm_async(ctx, true, false, 1.0f, kernels::make_view(a, rows, in), kernels::make_view(g, rows, out),
                        begin == 0 ? 0.0f : 1.0f, kernels::make_view(params_.weight_gradient(j), in, out));
    if (j > 0)
      kernels::gemm_async(ctx, false, true, 1.0f, kernels::make_view(g, rows, out),
                          kernels::make_view(params_.weights<T>(j), in, out), 0.0f,
                          kernels::make_view(as<T>(operand(j)) + begin * in, rows, in));
  };
  bool first_pass_done = false;  // layer l's first pass ran in layer l + 1's loop (a fused gradient)
  for (int l = L - 1; l >= 0; --l) {
    const LayerShape& ly = params_.layer(l);
    const std::int64_t in = dims_[l], out = dims_[l + 1];
    const T* w = params_.weights<T>(l);
    float* dw = params_.weight_gradient(l);
    const auto in_bytes = static_cast<std::int64_t>(in * sizeof(T));
    const auto out_bytes = static_cast<std::int64_t>(out * sizeof(T));
    // The gradient of layer l's input: stored for layer l - 1, or handed to its first pass on the same part.
    const bool fuse = l > 0 && flow.fused_gradient[l];
    std::vector<Sink> sinks;
    if (l > 0 && !fuse) sinks.push_back({&saved(indexed("grad", (L - 1 - l) % 2)), in_bytes});
    auto gradient_rows = [&](std::uint8_t* const* out_rows) {
      return fuse ? as<T>(part_scratch_[0].data()) : as<T>(out_rows[0]);
    };
    // dZ of layer l - 1 from d(its output): ReLU and dropout backward from the positive mask, in place, with the
    // part's column sums added to layer l - 1's bias gradient.
    auto relu_backward = [&](std::int64_t begin, std::int64_t end, T* g_next, const std::uint8_t* positive) {
      const std::int64_t rows = end - begin;
      const auto view = kernels::make_view(g_next, rows, in);
      kernels::bias_act_dropout_backward_async(ctx, kernels::make_view(static_cast<const T*>(g_next), rows, in),
                                               kernels::make_view(static_cast<const T*>(g_next), rows, in), true, p,
                                               view, as<float>(bias_partial_.data()), positive);
      add_bias_partial(params_.bias_gradient(l - 1), in, begin == 0);
    };
    Saved* aggregated_below = fuse ? &saved(indexed("aggregated", l - 1)) : nullptr;
    if (!ly.aggregate_first) {
      // Z = Â (X W): dP = Â G (G whole on the device); dW = X^T dP; dX = dP W^T.
      const T* g = l == L - 1 ? as<T>(static_cast<const std::uint8_t*>(saved("grad_logits").data))
                              : as<T>(whole_on_device(saved(indexed("grad", (L - 2 - l) % 2)), out_bytes, l));
      Saved& h_saved = l == 0 ? saved("features") : saved(indexed("inputs", l));
      // Sources: the layer's input, the aggregated input of layer l - 1 (fused), its positive mask (the mask-sized
      // slot last).
      std::vector<Source> sources{{&h_saved, in_bytes}};
      if (fuse) sources.push_back({aggregated_below, static_cast<std::int64_t>(dims_[l - 1] * sizeof(T))});
      const std::size_t positive_at = sources.size();
      if (l > 0) sources.push_back({&saved(indexed("positive", l)), mask_width(in)});
      for_each_part(sources, sinks, [&](std::int64_t begin, std::int64_t end, std::uint8_t* const* in_rows,
                                        std::uint8_t* const* out_rows) {
        const std::int64_t rows = end - begin;
        T* dp = as<T>(part_scratch_[1].data());
        aggregate_part<T>(Pass::kBackward, g, dp, out, begin, end);
        const T* h = as<T>(static_cast<const std::uint8_t*>(in_rows[0]));
        if (l == 0 && p > 0) {  // the dropped-out features again (the same mask)
          T* dropped = as<T>(part_scratch_[0].data());
          kernels::dropout_async(ctx, kernels::make_view(h, rows, in), part_dropout(dropout, 0, p, begin),
                                 kernels::make_view(dropped, rows, in));
          h = dropped;
        }
        kernels::gemm_async(ctx, true, false, 1.0f, kernels::make_view(h, rows, in),
                            kernels::make_view(static_cast<const T*>(dp), rows, out), begin == 0 ? 0.0f : 1.0f,
                            kernels::make_view(dw, in, out));
        if (l == 0) return;
        T* g_next = gradient_rows(out_rows);
        kernels::gemm_async(ctx, false, true, 1.0f, kernels::make_view(static_cast<const T*>(dp), rows, out),
                            kernels::make_view(w, in, out), 0.0f, kernels::make_view(g_next, rows, in));
        relu_backward(begin, end, g_next, in_rows[positive_at]);
        if (fuse) first_pass(l - 1, begin, end, g_next, as<T>(static_cast<const std::uint8_t*>(in_rows[1])));
      });
      first_pass_done = fuse;
      continue;
    }
    // Z = (Â X) W: dW = (Â X)^T G by parts; dX = Â (G W^T), G W^T whole in the operand.
    if (!first_pass_done) {
      Saved& g_saved = l == L - 1 ? saved("grad_logits") : saved(indexed("grad", (L - 2 - l) % 2));
      for_each_part({Source{&g_saved, out_bytes}, Source{&saved(indexed("aggregated", l)), in_bytes}}, {},
                    [&](std::int64_t begin, std::int64_t end, std::uint8_t* const* in_rows, std::uint8_t* const*) {
                      first_pass(l, begin, end, as<T>(static_cast<const std::uint8_t*>(in_rows[0])),
                                 as<T>(static_cast<const std::uint8_t*>(in_rows[1])));
                    });
    }
    first_pass_done = false;
    if (l == 0) continue;
    std::vector<Source> sources{{&saved(indexed("positive", l)), mask_width(in)}};
    if (fuse) sources.push_back({aggregated_below, static_cast<std::int64_t>(dims_[l - 1] * sizeof(T))});
    const T* u = as<T>(operand(l));
    for_each_part(sources, sinks, [&](std::int64_t begin, std::int64_t end, std::uint8_t* const* in_rows,
                                      std::uint8_t* const* out_rows) {
      T* g_next = gradient_rows(out_rows);
      aggregate_part<T>(Pass::kBackward, u, g_next, in, begin, end);
      relu_backward(begin, end, g_next, in_rows[0]);
      if (fuse) first_pass(l - 1, begin, end, g_next, as<T>(static_cast<const std::uint8_t*>(in_rows[1])));
    });
    first_pass_done = fuse;
  }
}

template void StreamedLayers::forward_stored_async<float>(bool, const DropoutOf&, float, float*);
template void StreamedLayers::forward_stored_async<kernels::Bf16>(bool, const DropoutOf&, float, float*);
template void StreamedLayers::backward_stored_async<float>(const DropoutOf&, float);
template void StreamedLayers::backward_stored_async<kernels::Bf16>(const DropoutOf&, float);

}  // namespace gcnpart::engine
