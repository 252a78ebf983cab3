#include "partition/allocation_plan.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "base/error.hpp"
#include "base/spmm_layout.hpp"

namespace gcnpart::partition {

namespace {

// Sizes of what the engine uploads (base/csr_view.hpp types).
constexpr int kOffsetBytes = 8;  // RowOffset
constexpr int kIndexBytes = 4;   // NodeId, int32 labels
constexpr int kFloatBytes = 4;
constexpr int kBf16Bytes = 2;
constexpr int kCounterBytes = 8;  // std::int64_t accuracy counters

// CPU GEMM (kernels/detail/gemm_cpu.cpp): op(A) = A^T with fewer than kSplitKMaxM columns and at least
// 2 * kSplitKRows rows sums private partial products of kSplitKRows rows each; op(B) = B^T is packed first.
constexpr std::int64_t kSplitKRows = 4096;
constexpr std::int64_t kSplitKMaxM = 64;

// CUDA scratch (kernels/detail/dense.cu): column sums over slabs of at least kColumnSumSlabRows rows and at most
// kMaxGridY slabs; CUB reductions need 1 byte up to one tile, then a few KiB of per-block partials (an upper
// estimate). The cuSPARSE CSR ALG2 buffer was nnz / 6 bytes (+ a few) on the H200 for Cora and CiteSeer.
constexpr std::int64_t kColumnSumSlabRows = 1024;
constexpr std::int64_t kMaxGridY = 65535;
constexpr std::int64_t kCubSingleTile = 4096;
constexpr std::int64_t kCubMultiTileBytes = 32 << 10;
constexpr double kCusparseBufferPerEntry = 1.0 / 6.0;
constexpr std::int64_t kCusparseBufferBase = 8;
// The fused training loss (kernels/detail/dense.cu): classes stored up to this wide, 8-lane groups (32 above 64
// columns) of 256-thread blocks, kFusedLossRowsPerGroup rows each.
constexpr std::int64_t kFusedLossMaxWidth = 512;
constexpr std::int64_t kFusedLossRowsPerGroup = 16;

std::int64_t align256(std::int64_t b) { return (b + 255) / 256 * 256; }
std::int64_t cub_temp(std::int64_t n) { return n <= kCubSingleTile ? 1 : kCubMultiTileBytes; }
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

void expect_count(const char* what, std::int64_t v) {
  if (v < 0) throw InvalidInput::parameter(what, std::to_string(v), ">= 0");
}

std::string indexed(const char* name, std::int64_t i) { return std::string(name) + "[" + std::to_string(i) + "]"; }

}  // namespace

std::vector<std::int64_t> ModelSpec::dims() const {
  std::vector<std::int64_t> d{features};
  for (int l = 0; l + 1 < layers; ++l) d.push_back(hidden);
  d.push_back(classes);
  return d;
}

std::int64_t stored_width(std::int64_t width, Precision precision) {
  const std::int64_t vector = 16 / traits(precision).storage_bytes;
  // 4-byte rows of 33..47 columns as 48: the own SpMM's four-lane layout then has no idle slot (see the header).
  if (vector == 4 && width > 32 && width < 48) return 48;
  return (width + vector - 1) / vector * vector;
}

std::vector<std::int64_t> stored_widths(std::vector<std::int64_t> dims, Precision precision) {
  for (auto& w : dims) w = stored_width(w, precision);
  return dims;
}

std::vector<std::int64_t> ModelSpec::stored_dims() const { return stored_widths(dims(), precision); }

namespace {
std::int64_t parameter_count(const std::vector<std::int64_t>& d) {
  std::int64_t p = 0;
  for (std::size_t l = 0; l + 1 < d.size(); ++l) p += d[l] * d[l + 1] + d[l + 1];
  return p;
}
}  // namespace

std::int64_t ModelSpec::parameters() const { return parameter_count(dims()); }

std::int64_t ModelSpec::stored_parameters() const { return parameter_count(stored_dims()); }

void ModelSpec::validate() const {
  if (layers < 1 || layers > 64) throw InvalidInput::parameter("--layers", std::to_string(layers), "1..64");
  if (hidden < 1) throw InvalidInput::parameter("--hidden", std::to_string(hidden), ">= 1");
  if (features < 1) throw InvalidInput::parameter("--features", std::to_string(features), ">= 1");
  if (classes < 1) throw InvalidInput::parameter("--classes", std::to_string(classes), ">= 1");
  if (!(sparse_features_below >= 0 && sparse_features_below <= 1))
    throw InvalidInput::parameter("sparse_features_below", std::to_string(sparse_features_below), "in [0, 1]");
  if (stages < 1 || stages > layers)
    throw InvalidInput::parameter("--pipeline-stages", std::to_string(stages), "1.." + std::to_string(layers));
  if (stage < 0 || stage >= stages)
    throw InvalidInput::parameter("stage", std::to_string(stage), "0.." + std::to_string(stages - 1));
}

std::int64_t DeviceShape::nonzeros(std::int64_t features) const {
  if (feature_nonzeros >= 0) return feature_nonzeros;
  return static_cast<std::int64_t>(std::llround(feature_density * static_cast<double>(rows) *
                                                static_cast<double>(features)));
}

bool uses_sparse_input(const DeviceShape& s, const ModelSpec& m) {
  const auto dims = m.stored_dims();
  const double cells = static_cast<double>(s.rows) * static_cast<double>(m.features);
  // GcnModel: density of the local feature values (1 when there are none), sparse when <= the threshold and the
  // first layer narrows (so it multiplies before it aggregates).
  const double density = cells == 0 ? 1.0 : static_cast<double>(s.nonzeros(m.features)) / cells;
  return m.first_layer() == 0 && density <= m.sparse_features_below && dims[0] > dims[1];
}

bool aggregates_first(const std::vector<std::int64_t>& dims, int layer) { return dims[layer] <= dims[layer + 1]; }

std::vector<std::int64_t> aggregation_widths(const ModelSpec& m) {
  const auto d = m.stored_dims();
  std::vector<std::int64_t> widths;
  for (int l = m.first_layer(); l < m.last_layer(); ++l) widths.push_back(aggregates_first(d, l) ? d[l] : d[l + 1]);
  return widths;
}

const Allocation* find_allocation(const std::vector<Allocation>& plan, std::string_view name) {
  for (const Allocation& a : plan)
    if (a.name == name) return &a;
  return nullptr;
}

bool captures_step(const DeviceShape& s, const ModelSpec& m, Backend backend) {
  if (backend != Backend::kCuda || s.parts > 1 || m.stages != 1 || m.cuda_graph == CudaGraphMode::kOff) return false;
  if (m.cuda_graph == CudaGraphMode::kOn) return true;
  const auto d = m.stored_dims();
  const std::int64_t widest = d.empty() ? 0 : *std::max_element(d.begin(), d.end());
  return s.rows * widest <= kCudaGraphAutoElements;
}

std::vector<Allocation> allocation_plan(const DeviceShape& s, const ModelSpec& m, Backend backend) {
  m.validate();
  expect_count("rows", s.rows);
  expect_count("graph_entries", s.graph_entries);
  for (auto c : s.split_rows) expect_count("split_rows", c);
  expect_count("send_rows", s.send_rows);
  expect_count("recv_rows", s.recv_rows);
  if (s.gather && (s.parts < 1 || s.table_block < s.rows))
    throw InvalidInput::parameter("table_block", std::to_string(s.table_block),
                                  ">= the device's own rows (" + std::to_string(s.rows) + ")");
  // Every dense width as stored (ModelSpec::stored_dims: rounded up to whole 16-byte vectors); the sparse
  // features keep the dataset's feature count.
  const auto d = m.stored_dims();
  const int L = m.layers, first = m.first_layer(), last = m.last_layer();
  const std::int64_t r = s.rows, f = m.features, nnz = s.nonzeros(f), f_stored = d[0];
  const int act = traits(m.precision).storage_bytes;
  const bool bf16 = m.precision == Precision::kBf16;
  const bool sparse = uses_sparse_input(s, m);
  std::vector<Allocation> plan;
  using C = MemoryCategory;
  auto add = [&](std::string name, std::string what, C c, std::int64_t elements, int element_bytes) {
    plan.push_back({std::move(name), std::move(what), c, elements, element_bytes, Lifetime::kPersistent, true});
  };
  // The own SpMM's long-row list(s) of a matrix of `rows` rows and the graph's entries (kernels/long_rows.hpp;
  // engine/aggregation.cpp takes `<name>_rows` and `<name>_prefix`), at its capacity: at most 2 x 327,680 rows of 12
  // bytes (7.9 MB), whatever the graph's size (kernels::spmm_long_rows_capacity). `ranges` lists of disjoint row
  // ranges with the matrix's floor share it, with one more entry sum each.
  auto add_long_rows = [&](const std::string& name, const std::string& what, std::int64_t rows, std::int64_t ranges) {
    const std::int64_t capacity = kernels::spmm_long_rows_capacity(rows, s.graph_entries);
    add(name + "_rows", what + " long-row list", C::kGraph, capacity, kIndexBytes);
    add(name + "_prefix", what + " long-row entry sums", C::kGraph, capacity + ranges, kOffsetBytes);
  };

  // Data (GcnModel's constructor with ModelParameters, SparseInput and GcnModel::Activations<T>, by name). Later
  // pipeline stages never read the input features.
  // bf16 (GcnModel::Activations<kernels::Bf16>): sparse feature values, logits, the SpMM outputs (z32) and
  // everything of the weights stay float32; features, layer inputs, aggregated inputs, the X W / dP scratch
  // and the activation gradients are bf16.
  if (sparse) {
    add("x_offsets", "feature CSR offsets", C::kFeatures, r + 1, kOffsetBytes);
    add("x_columns", "feature CSR columns", C::kFeatures, nnz, kIndexBytes);
    add("x_values", "feature CSR values", C::kFeatures, nnz, kFloatBytes);
    add("xt_offsets", "feature CSR^T offsets", C::kFeatures, f + 1, kOffsetBytes);
    add("xt_columns", "feature CSR^T columns", C::kFeatures, nnz, kIndexBytes);
    add("xt_values", "feature CSR^T values", C::kFeatures, nnz, kFloatBytes);
  } else if (first == 0) {
    add("features", "features", C::kFeatures, r * f_stored, act);
  }
  add("labels", "labels", C::kFeatures, r, kIndexBytes);
  add("global_ids", "global ids", C::kGraph, r, kIndexBytes);
  const char* split_keys[3] = {"train_rows", "valid_rows", "test_rows"};
  const char* split_names[3] = {"train rows", "valid rows", "test rows"};
  for (int i = 0; i < 3; ++i) add(split_keys[i], split_names[i], C::kFeatures, s.split_rows[i], kIndexBytes);
  // Where the loss is computed: each row's position among the training rows (the fused loss pass).
  if (last == L) add("loss_slots", "training row slots of the loss", C::kFeatures, r, kIndexBytes);

  // Parameters of the layers held here, gradients and Adam moments: one flat fp32 buffer each.
  std::int64_t params = 0;
  for (int l = first; l < last; ++l) params += d[l] * d[l + 1] + d[l + 1];
  add("weights", "weights", C::kWeights, params, kFloatBytes);
  if (bf16) add("weights_bf16", "weights (bf16 copy)", C::kWeights, params, kBf16Bytes);
  add("weight_gradients", "weight gradients", C::kGradients, params, kFloatBytes);
  add("adam_m", "Adam first moment", C::kOptimizer, params, kFloatBytes);
  add("adam_v", "Adam second moment", C::kOptimizer, params, kFloatBytes);

  // Activations saved for backward: inputs[l] is layer l's (dropped-out) input, for the layers held here plus, in a
  // pipeline, the output handed to the next stage (inputs[last]).
  if (first == 0 && m.dropout && !sparse) add("inputs[0]", "dropped-out input features", C::kActivations, r * f_stored, act);
  if (first == 0 && m.dropout && sparse) {
    add("x_values_dropped", "dropped-out feature values", C::kActivations, nnz, kFloatBytes);
    add("xt_values_dropped", "dropped-out feature values (transpose)", C::kActivations, nnz, kFloatBytes);
  }
  for (int l = std::max(1, first); l <= std::min(last, L - 1); ++l)
    add(indexed("inputs", l), "input of layer " + std::to_string(l), C::kActivations, r * d[l], act);
  // The hidden outputs' positive masks (kernels::positive_mask_bytes: one byte per 4 columns), written by this
  // stage's forward epilogues and read by the ReLU / dropout backward instead of inputs[l].
  for (int l = first + 1; l <= std::min(last, L - 1); ++l)
    add(indexed("positive", l), "positive mask of layer " + std::to_string(l) + "'s input", C::kActivations,
        r * ((d[l] + 3) / 4), 1);
  for (int l = first; l < last; ++l)
    if (aggregates_first(d, l))
      add(indexed("aggregated", l), "aggregated input of layer " + std::to_string(l), C::kActivations, r * d[l], act);
  if (last == L) add("logits", "logits", C::kActivations, r * d[L], kFloatBytes);
  // Scratch sized to what it holds: the Â(HW) product (out wide) or, for layers that aggregate first, the
  // backward's G W^T (in wide, l > 0); dZ ping-pongs between two buffers, A holding widths d[last], d[last-2], ...
  // and B d[last-1], d[last-3], ... (layer 0 produces no input gradient). bf16: the float z32 scratch holds the
  // SpMM and GEMM outputs (out, or in for layers that aggregate first; the output layer's backward products are
  // classes wide) and the sparse-input X W.
  std::int64_t tmp_width = 0, width_a = 0, width_b = 0, z_width = d[L];
  for (int l = first; l < last; ++l) {
    const bool agg = aggregates_first(d, l);
    tmp_width = std::max(tmp_width, agg ? (l > 0 ? d[l] : 0) : d[l + 1]);
    z_width = std::max({z_width, d[l + 1], agg ? d[l] : 0});
  }
  for (int i = last; i >= std::max(1, first); --i) {
    std::int64_t& w = (last - i) % 2 == 0 ? width_a : width_b;
    w = std::max(w, d[i]);
  }
  add("intermediate", "intermediate (Â(HW) / backward scratch)", C::kWorkspace, r * tmp_width, act);
  if (bf16) add("z32", "float SpMM / GEMM outputs (bf16 mode)", C::kWorkspace, r * z_width, kFloatBytes);
  add("grad_a", "activation gradient A", C::kGradients, r * width_a, act);
  add("grad_b", "activation gradient B", C::kGradients, r * width_b, act);
  add("loss_scalars", "loss scalars", C::kWorkspace, 4, kFloatBytes);
  add("accuracy_counters", "accuracy counters", C::kWorkspace, 4, kCounterBytes);
  // engine::GcnModel's step scalars: 64 dropout keys (the layer limit) and Adam's two corrections in one slot.
  add("step_scalars", "dropout keys and Adam corrections of a step", C::kWorkspace, 65, 8);
  if (captures_step(s, m, backend))
    add("cublas_graph_workspace", "cuBLAS workspace of the captured step's GEMMs", C::kWorkspace,
        kCudaGraphBlasWorkspace, 1);

  // Aggregation (engine/aggregation.cpp).
  const auto widths = aggregation_widths(m);
  const std::int64_t agg_width = *std::max_element(widths.begin(), widths.end());
  std::vector<Allocation> transients;
  auto transient = [&](std::string name, std::string what, std::int64_t bytes) {
    transients.push_back({std::move(name), std::move(what), C::kWorkspace, bytes, 1, Lifetime::kTransient, false});
  };
  if (s.gather) {
    const std::int64_t table_rows = s.table_block * s.parts;
    add("gather_offsets", "gather matrix offsets", C::kGraph, r + 1, kOffsetBytes);
    add("gather_columns", "gather matrix columns", C::kGraph, s.graph_entries, kIndexBytes);
    add("gather_t_offsets", "gather^T matrix offsets", C::kGraph, table_rows + 1, kOffsetBytes);
    add("gather_t_columns", "gather^T matrix columns", C::kGraph, s.graph_entries, kIndexBytes);
    if (backend == Backend::kCuda) {  // both matrices' lists (gather always runs the own kernel)
      add_long_rows("gather_long", "gather SpMM", r, 1);
      add_long_rows("gather_t_long", "gather^T SpMM", table_rows, 1);
    }
    add("dinv_own", "D^-1/2 of own rows", C::kGraph, r, kFloatBytes);
    add("table_dinv", "D^-1/2 of table slots", C::kGraph, table_rows, kFloatBytes);
    // The float table and staging serve backward's reduce-scatter in bf16 mode too; forward's bf16 table lives in
    // the float table's memory, its staging block apart (+ 2: an odd block travels padded to whole float words).
    add("gather_staging", "gather staging block", C::kCommunication, s.table_block * agg_width, kFloatBytes);
    add("gather_table", "gather table", C::kCommunication, table_rows * agg_width, kFloatBytes);
    if (bf16)
      add("gather_staging_bf16", "gather staging block (bf16)", C::kCommunication, s.table_block * agg_width + 2,
          kBf16Bytes);
  } else if (s.boundary) {
    // Own rows | received rows (local): the forward matrix own x local, its transpose, the rows sent to the other
    // devices, and the exchange's source rows and outbox, float32 (backward sums) plus bf16 ones for forward.
    const std::int64_t local = r + s.recv_rows;
    add("boundary_offsets", "boundary matrix offsets", C::kGraph, r + 1, kOffsetBytes);
    add("boundary_columns", "boundary matrix columns", C::kGraph, s.graph_entries, kIndexBytes);
    add("boundary_t_offsets", "boundary^T matrix offsets", C::kGraph, local + 1, kOffsetBytes);
    add("boundary_t_columns", "boundary^T matrix columns", C::kGraph, s.graph_entries, kIndexBytes);
    if (backend == Backend::kCuda) {  // the lists of the two row ranges each matrix's products run on
      add_long_rows("boundary_long", "boundary SpMM", r, 2);
      add_long_rows("boundary_t_long", "boundary^T SpMM", local, 2);
    }
    add("send_rows", "rows to send", C::kGraph, s.send_rows, kIndexBytes);
    add("dinv_own", "D^-1/2 of own rows", C::kGraph, r, kFloatBytes);
    add("dinv_local", "D^-1/2 of own and received rows", C::kGraph, local, kFloatBytes);
    add("boundary_source", "boundary source rows", C::kCommunication, local * agg_width, kFloatBytes);
    add("boundary_outbox", "boundary outbox", C::kCommunication, s.send_rows * agg_width, kFloatBytes);
    if (bf16) {
      add("boundary_source_bf16", "boundary source rows (bf16)", C::kCommunication, local * agg_width, kBf16Bytes);
      add("boundary_outbox_bf16", "boundary outbox (bf16)", C::kCommunication, s.send_rows * agg_width, kBf16Bytes);
    }
  } else {
    add("graph_offsets", "graph offsets", C::kGraph, r + 1, kOffsetBytes);
    add("graph_columns", "graph columns", C::kGraph, s.graph_entries, kIndexBytes);
    add("dinv_rows", "D^-1/2 (rows)", C::kGraph, r, kFloatBytes);
    add("dinv_cols", "D^-1/2 (columns)", C::kGraph, r, kFloatBytes);
    if (backend == Backend::kCuda && m.spmm != SpmmAlgo::kCusparse) add_long_rows("graph_long", "SpMM", r, 1);
    if (backend == Backend::kCuda && m.spmm != SpmmAlgo::kOwn && !bf16 && r > 0 && s.graph_entries > 0) {
      // One cuSPARSE plan per distinct width: materialised values, 32-bit offsets (or 64-bit columns past 2^31
      // entries) and the SpMM buffer. kAuto: kept at every width but ModelSpec::auto_own_widths.
      const bool narrow = s.graph_entries <= std::numeric_limits<std::int32_t>::max();
      const std::int64_t indices = narrow ? (r + 1) * 4 : s.graph_entries * 8;
      const std::int64_t buffer = static_cast<std::int64_t>(static_cast<double>(s.graph_entries) *
                                                            kCusparseBufferPerEntry) + kCusparseBufferBase;
      const std::set<std::int64_t> distinct(widths.begin(), widths.end());
      for (auto w : distinct) {
        if (m.spmm == SpmmAlgo::kAuto &&
            std::find(m.auto_own_widths.begin(), m.auto_own_widths.end(), w) != m.auto_own_widths.end())
          continue;  // the own kernel is predicted to win here: no plan kept
        const std::string at = "(width " + std::to_string(w) + ")";
        plan.push_back({indexed("cusparse_values", w), "cuSPARSE values " + at, C::kGraph, s.graph_entries,
                        kFloatBytes, Lifetime::kPersistent, false});
        plan.push_back({indexed("cusparse_indices", w), "cuSPARSE indices " + at, C::kGraph, indices, 1,
                        Lifetime::kPersistent, false});
        plan.push_back({indexed("cusparse_buffer", w), "cuSPARSE buffer " + at, C::kWorkspace, buffer, 1,
                        Lifetime::kPersistent, false});
      }
      if (m.spmm == SpmmAlgo::kAuto)
        transient("cusparse_candidate", "cuSPARSE candidate plan while autotuning",
                  s.graph_entries * kFloatBytes + indices + buffer);
    }
  }

  // The own CUDA SpMM's padded copy of an X whose rows do not start on a vector (a class count such as 41), per
  // aggregation width; X has the rows of the matrix's columns: the table (gather), own and received rows
  // (boundary), or the local graph. Backward's X (own rows) is never larger.
  if (backend == Backend::kCuda && m.spmm != SpmmAlgo::kCusparse) {
    const std::int64_t x_rows = s.gather ? s.table_block * s.parts : s.boundary ? r + s.recv_rows : r;
    const std::set<std::int64_t> distinct(widths.begin(), widths.end());
    for (auto w : distinct) {
      const std::int64_t bytes = kernels::spmm_padding_bytes(x_rows, w, w, bf16 ? 2 : 4, m.spmm_pad);
      if (bytes > 0) transient(indexed("spmm_padding", w), "SpMM padded input (width " + std::to_string(w) + ")", bytes);
    }
    // Sparse input features: X W (X = W, f rows) and X^T dP (X = dP, r rows), float32, width d[1].
    const std::int64_t sparse_bytes = sparse && first == 0
                                          ? kernels::spmm_padding_bytes(std::max(f, r), d[1], d[1], 4, m.spmm_pad)
                                          : 0;
    if (sparse_bytes > 0) transient("spmm_padding_sparse_input", "SpMM padded input (sparse features)", sparse_bytes);
  }

  // Per-call workspaces of one training step and the evaluation (the largest one sets the peak).
  if (backend == Backend::kCpu) {
    for (int l = last - 1; l >= first; --l) {
      const std::int64_t in = d[l], out = d[l + 1];
      const bool dense_dw = !(l == 0 && sparse);  // dW = X^T dP or (ÂX)^T G by GEMM, not by the sparse X^T
      if (dense_dw && r > 0 && in < kSplitKMaxM && r >= 2 * kSplitKRows)
        transient(indexed("split_k", l), "split-k partials of dW, layer " + std::to_string(l),
                  ceil_div(r, kSplitKRows) * in * out * kFloatBytes);
      if (l > 0 && r > 0) transient(indexed("packed_wt", l), "packed W^T, layer " + std::to_string(l), out * in * kFloatBytes);
    }
  } else {
    auto loss_scratch = [&](std::string name, const char* what, std::int64_t count) {
      if (count > 0) transient(std::move(name), what, align256(count * kFloatBytes) + cub_temp(count));
    };
    // The training loss (kernels::bias_softmax_cross_entropy_async, the loss layer only): per-row losses and their
    // reduction, with the per-block partial column sums alive at once; classes stored wider than the fused kernel's
    // registers (kFusedLossMaxWidth) take the separate passes instead: a column sum like a hidden layer's and, for
    // bf16, a float gradient.
    const std::int64_t classes = d[L];
    const bool fused_loss = classes <= kFusedLossMaxWidth;
    if (last == L && r > 0) {
      if (fused_loss) {
        const std::int64_t rows_per_block = (classes <= 64 ? 256 / 8 : 256 / 32) * kFusedLossRowsPerGroup;
        const std::int64_t count = s.split_rows[0];
        transient("loss_scratch", "loss scratch (train rows, partial bias gradients)",
                  align256(std::max<std::int64_t>(count, 1) * kFloatBytes) + (count > 0 ? cub_temp(count) : 0) +
                      align256(ceil_div(r, rows_per_block) * classes * kFloatBytes));
      } else {
        loss_scratch("loss_scratch", "loss scratch (train rows)", s.split_rows[0]);
        if (bf16) transient("loss_gradient_float", "float loss gradient (classes past the fused loss)", r * classes * kFloatBytes);
      }
    }
    if (r > 0)
      for (int l = first; l < last; ++l) {
        if (l == L - 1 && fused_loss) continue;  // the loss layer's bias gradient comes with the fused loss
        const std::int64_t slab_rows = std::max(kColumnSumSlabRows, ceil_div(r, kMaxGridY));
        transient(indexed("bias_partials", l), "bias-gradient partials, layer " + std::to_string(l),
                  ceil_div(r, slab_rows) * d[l + 1] * kFloatBytes);
      }
    const char* eval_keys[3] = {"eval_loss_scratch[train]", "eval_loss_scratch[valid]", "eval_loss_scratch[test]"};
    const char* accuracy_keys[3] = {"accuracy_reduction[train]", "accuracy_reduction[valid]",
                                    "accuracy_reduction[test]"};
    const char* eval_names[3] = {"loss scratch (evaluation, train)", "loss scratch (evaluation, valid)",
                                 "loss scratch (evaluation, test)"};
    for (int i = 0; i < 3; ++i) {
      loss_scratch(eval_keys[i], eval_names[i], s.split_rows[i]);
      if (s.split_rows[i] > 0)
        transient(accuracy_keys[i], "accuracy reduction", std::max<std::int64_t>(cub_temp(s.split_rows[i]), 1));
    }
  }
  plan.insert(plan.end(), transients.begin(), transients.end());
  return plan;
}

}  // namespace gcnpart::partition
