// The primitives of GCN training. Each has a CPU implementation (OpenMP, the reference) and a CUDA one;
// `ctx.backend` picks. Dense matrices are passed as views (base/dense_view.hpp: data, rows, cols, leading
// dimension; float32 or bf16); the entry points check their shapes against each other. CUDA calls are asynchronous
// on ctx.stream (hence the `_async`).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/context.hpp"
#include "base/csr_view.hpp"
#include "base/dense_view.hpp"

namespace gcnpart::kernels {

// ---------------------------------------------------------------------------------------------------------
// Sparse x dense

/// Tuning of gcnpart's own CUDA SpMM (the CPU reference and cuSPARSE ignore it). The defaults are the measured
/// best on H200 (bench/README.md); a caller changes them for experiments (`--spmm-long-row`, `--spmm-segment`).
struct SpmmTuning {
  /// A row with more stored entries than this is not left to one lane group: it is cut into segments of
  /// `segment` entries that warps all over the grid take in turn, adding their partial sums with atomics. Rows at
  /// or below it cost one group at most this many iterations, so this bounds the tail of power-law graphs.
  /// 0 (the default): by the product, kernels::spmm_auto_long_row (about half the entries each of the lane groups
  /// the GPU holds at once gets, at least 128; below 64 entries 8 x that, within 32..128, where the long rows run in
  /// the row kernel's launch, else twice that, at least 32; twice that above 4096;
  /// bench/README.md). A row split into segments costs atomics; a row
  /// left whole costs one lane group its whole length.
  std::int64_t long_row = 0;
  /// Entries per segment of a long row; 0 (the default): by the product, kernels::spmm_auto_segment (64, 256 or 512).
  std::int64_t segment = 0;
  /// Columns per slab: the product is computed slab by slab over all rows, so that one slab of X (rows x slab)
  /// stays in L2 while every row gathers from it. 0: the whole width at once. Rounded to the vector width.
  std::int64_t slab = 0;
  /// X whose rows do not start on a vector boundary (ld not a multiple of 4 floats / 4 bf16, e.g. a class count
  /// of 41) is first copied into a padded workspace (x.rows x padded width) so that every lane loads whole vectors.
  bool pad = true;
  /// Lanes per row where X loads whole vectors of 4. 32: the lane group is sized to the row (the smallest power of
  /// two covering its vectors, up to 32, one vector each; 12 vectors of a 48-wide row take 16 lanes, 4 idle).
  /// 4: rows of 5..16 vectors get four lanes with 2..4 vectors each (no idle lane at 48 columns), so each lane keeps
  /// more loads in flight and a warp serves eight rows. 0 (the default): four lanes for rows of 9..12 vectors (widths
  /// 33..48: the stored widths of class counts such as 40, 41, 47), else sized to the row. H200, degree order, own
  /// kernel at widths 40 / 44 / 48 against the row-sized layout in the same run: 1.08-1.24x faster on the
  /// products-sized RMAT graph (fp32 and bf16 X), 1.05-1.14x on the reddit-sized one with bf16 X and 0.96-1.08x
  /// with fp32 X (slower only at 44, which float32 training no longer stores: partition::stored_width); at 64
  /// columns four lanes were slower (bench/README.md, sixth session). `gcnpart fit` prices the default (its
  /// calibration times the SpMM with it).
  int lanes = 0;
  /// @throws InvalidInput naming `--spmm-long-row` / `--spmm-segment` / `--spmm-slab` / `--spmm-lanes` for values
  /// out of range.
  void validate() const;
};

/// Y = diag(row_scale) * A * diag(col_scale) * X, with A's entries = values (or 1 when values is null).
/// A: a.num_rows x a.num_cols; X: a.num_cols x width; Y: a.num_rows x width (width = x.cols = y.cols; either may
/// have a leading dimension above its width). row_scale / col_scale may be null (= ones). For GCN, A holds the
/// graph plus self loops and both scales are D^-1/2, so Y = Â X without an Â value array. Empty rows give zero rows.
/// @throws InvalidInput when x.rows != a.num_cols, y.rows != a.num_rows, x.cols != y.cols, for negative sizes,
/// ld < cols or missing buffers, and (own CUDA kernel) for X rows of 2 GiB or more (x.ld x element size >= 2^31
/// bytes). Does not synchronise.
/// The own CUDA kernel may read X's leading-dimension padding (never writes it): a view must lie in an allocation
/// of x.rows x x.ld elements.
void spmm_async(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale, ConstMatrixView x,
                MatrixView y, SpmmAlgo algo = SpmmAlgo::kAuto, const SpmmTuning& tuning = {});

/// spmm_async with X stored as bfloat16 and Y in float32: each X element is widened exactly and every product and
/// sum is float32, so the result equals the fp32 SpMM of the bf16-rounded X up to summation order. Halves the
/// dominant traffic (the gathered X rows). Own kernel only. Fastest when the width and both leading dimensions are
/// multiples of 8 and x, y are 16-byte aligned (16-byte loads of 8 values).
/// @throws InvalidInput as spmm_async. Does not synchronise.
void spmm_bf16_async(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
                     ConstBf16MatrixView x, MatrixView y, const SpmmTuning& tuning = {});

/// spmm_bf16_async with Y stored as bf16: each float32 sum rounded once (nearest even) as it is stored, so no float
/// Y and no rounding pass over it. `scratch` (float32, at least y's rows and columns, not aliasing x or y) holds
/// the sums of the rows the kernel splits over the grid (long rows) until they are rounded; pass the buffer a float
/// Y would have used. The values equal spmm_bf16_async's rounded (long rows: up to their varying summation order).
void spmm_bf16_async(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
                     ConstBf16MatrixView x, Bf16MatrixView y, MatrixView scratch, const SpmmTuning& tuning = {});

/// out[i] = bf16(x[i]) for i < n, rounded to nearest, ties to even (overflow gives infinity, NaN stays NaN).
/// out may not alias x. Does not synchronise.
void convert_to_bf16_async(const Context& ctx, const float* x, std::int64_t n, Bf16* out);

/// out[i] = float(x[i]) for i < n (exact). Does not synchronise.
void convert_from_bf16_async(const Context& ctx, const Bf16* x, std::int64_t n, float* out);

/// cuSPARSE SpMM with its descriptors, materialised values (row_scale[i] * a_ij * col_scale[j]) and buffer
/// kept across calls; all memory from ctx.allocator. Construction synchronises; run() does not. `ctx` must outlive
/// the plan: a profiler set on it later (ctx.profiler) times each run as "spmm_cusparse" (class spmm).
class CusparseSpmm {
 public:
  /// algorithm: 0 = CUSPARSE_SPMM_ALG_DEFAULT, 1..3 = CUSPARSE_SPMM_CSR_ALG1..3.
  CusparseSpmm(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
               std::int64_t width, int algorithm = 2);
  ~CusparseSpmm();
  CusparseSpmm(const CusparseSpmm&) = delete;
  CusparseSpmm& operator=(const CusparseSpmm&) = delete;
  /// Y = Â X for the width given at construction: x is a.num_cols x width, y a.num_rows x width, both contiguous.
  /// @throws InvalidInput for other shapes. Does not synchronise.
  void run_async(ConstMatrixView x, MatrixView y);
  [[nodiscard]] std::size_t workspace_bytes() const noexcept { return buffer_bytes_; }

 private:
  void run_unchecked_async(const float* x, float* y);
  struct Impl;
  Impl* impl_ = nullptr;
  const Context* ctx_ = nullptr;  ///< the caller's context, read at each run for its profiler
  std::size_t buffer_bytes_ = 0;
  std::int64_t rows_ = 0, cols_ = 0, width_ = 0;  ///< the shapes run_async accepts
};

// ---------------------------------------------------------------------------------------------------------
// Dense

/// C = alpha * op(A) * op(B) + beta * C, row-major; op(A) is m x k, op(B) is k x n, C is m x n (m = c.rows,
/// n = c.cols). trans_a: A is stored k x m and used transposed; likewise trans_b. Any leading dimensions >= cols.
/// cuBLAS on CUDA (TF32 when traits(ctx.precision).tf32_gemm), a blocked OpenMP loop on CPU.
/// @throws InvalidInput when the shapes of op(A), op(B) and C do not match. Does not synchronise.
void gemm_async(const Context& ctx, bool trans_a, bool trans_b, float alpha, ConstMatrixView a, ConstMatrixView b,
                float beta, MatrixView c);

/// out[j] = sum_i x(i, j) (bias gradient) over the x.rows rows of a contiguous x (ld == cols). Overwrites out
/// (x.cols entries).
void column_sum_async(const Context& ctx, ConstMatrixView x, float* out);

// ---------------------------------------------------------------------------------------------------------
// Fused epilogues. Dropout masks come from Philox keyed by (key, global node id, column): the same node draws
// the same mask on every device and backend. key = rng::stream_key(seed, rng::kDropout, epoch, layer).

/// Parameters of the keep mask: keep with probability 1 - p, scale kept values by 1 / (1 - p).
struct Dropout {
  float p = 0.0f;               ///< 0 disables
  std::uint64_t key = 0;        ///< stream key
  /// When set, the key is read from here when the kernel runs (device memory on CUDA) instead of `key`: a CUDA
  /// Graph captured once replays every epoch with that epoch's key (engine::GcnModel's step scalars).
  const std::uint64_t* key_at = nullptr;
  const NodeId* global_ids = nullptr;  ///< row -> global node id (null: row + global_offset)
  std::int64_t global_offset = 0;
};

/// Whether (global node, column) is kept under `d` (host helper, matches the device kernels bit for bit; d.key_at,
/// when set, must be host memory).
bool dropout_keep(const Dropout& d, std::int64_t global_node, std::int64_t column);

/// A positive mask: whether each stored output of bias_act_dropout_async is > 0 (the ReLU and dropout backward's
/// whole test), one byte per row and block of 4 columns: bit u of byte [r * positive_mask_blocks(cols) + b] is
/// column 4 b + u of row r (bits past the width are 0). 1/16 of the float output's bytes, 1/8 of bf16's.
constexpr std::int64_t positive_mask_blocks(std::int64_t cols) { return (cols + 3) / 4; }
constexpr std::int64_t positive_mask_bytes(std::int64_t rows, std::int64_t cols) {
  return rows * positive_mask_blocks(cols);
}

/// out = dropout(relu(z + bias)) if relu else dropout(z + bias); bias (z.cols entries) may be null. z and out:
/// the same shape, contiguous (ld == cols). out may alias z. positive (optional, positive_mask_bytes of out's
/// shape): also the positive mask of the stored out, for the backward, which then need not read out.
/// @throws InvalidInput for mismatched shapes, a strided view or a dropout p outside [0, 1). Does not synchronise.
void bias_act_dropout_async(const Context& ctx, ConstMatrixView z, const float* bias, bool relu, const Dropout& dropout,
                            MatrixView out, std::uint8_t* positive = nullptr);

/// Backward of bias_act_dropout with relu: dz = (h > 0) ? dh / (1 - p) : 0, from the saved output h alone.
/// Without relu and dropout (p = 0), dz = dh and h is not read (it may be an empty view). Contiguous views of one
/// shape; dz may alias dh.
/// dz_column_sums (optional, dz.cols entries): also the column sums of dz, the layer's bias gradient, in the same
/// pass over dz (bit for bit what column_sum_async of dz would give, on either backend). Overwritten.
/// positive (optional, with relu and dz_column_sums): h's positive mask from bias_act_dropout_async, read instead
/// of h (h still gives the shape; its data is not read): the same dz and sums from 1/16 (float) or 1/8 (bf16) of
/// h's bytes.
void bias_act_dropout_backward_async(const Context& ctx, ConstMatrixView h, ConstMatrixView dh, bool relu, float p,
                                     MatrixView dz, float* dz_column_sums = nullptr,
                                     const std::uint8_t* positive = nullptr);

/// Dropout on the stored values of a sparse matrix whose rows (or, with `transposed`, columns) are nodes and whose
/// other index is the feature column: out[e] = keep(node, feature) ? a.values[e] / (1 - p) : 0, with the mask of
/// the dense dropout bit for bit. For sparse input features (bag-of-words) this replaces a dense N x F dropout.
/// d.global_ids maps the local node index (row, or column id when transposed) to the global node.
void dropout_csr_values_async(const Context& ctx, const CsrView& a, bool transposed, const Dropout& dropout,
                              float* out);

/// out = dropout(x) (input-feature dropout); contiguous views of one shape, out may alias x.
void dropout_async(const Context& ctx, ConstMatrixView x, const Dropout& dropout, MatrixView out);

// ---------------------------------------------------------------------------------------------------------
// bf16 storage (the --precision bf16 training path): tensors held as bfloat16 bits, every product and sum in
// float32, each result rounded to bf16 once where it is stored as bf16. The CPU versions widen to float, call the
// float reference and round: the CUDA kernels match them up to summation order.

/// C = alpha * op(A) * op(B) + beta * C with A and B in bf16 and float32 accumulation (cuBLAS bf16 tensor cores on
/// CUDA); C in float32. Shapes and transposes as gemm_async. Does not synchronise.
void gemm_bf16_async(const Context& ctx, bool trans_a, bool trans_b, float alpha, ConstBf16MatrixView a,
                     ConstBf16MatrixView b, float beta, MatrixView c);
/// The same with C stored as bf16 (rounded once from the float32 result). beta must be 0.
void gemm_bf16_async(const Context& ctx, bool trans_a, bool trans_b, float alpha, ConstBf16MatrixView a,
                     ConstBf16MatrixView b, float beta, Bf16MatrixView c);

/// gemm_async by storage type: the bf16 products under gemm_async's name, so code generic over the precision's
/// storage type (engine/gcn.cpp) names one function. Same as gemm_bf16_async.
inline void gemm_async(const Context& ctx, bool trans_a, bool trans_b, float alpha, ConstBf16MatrixView a,
                       ConstBf16MatrixView b, float beta, MatrixView c) {
  gemm_bf16_async(ctx, trans_a, trans_b, alpha, a, b, beta, c);
}
inline void gemm_async(const Context& ctx, bool trans_a, bool trans_b, float alpha, ConstBf16MatrixView a,
                       ConstBf16MatrixView b, float beta, Bf16MatrixView c) {
  gemm_bf16_async(ctx, trans_a, trans_b, alpha, a, b, beta, c);
}

/// column_sum_async over bf16 x, summed in float32 (bias gradient). Overwrites out.
void column_sum_async(const Context& ctx, ConstBf16MatrixView x, float* out);

/// bias_act_dropout_async with the result stored as bf16 (z and bias float32). out may not alias z. The positive
/// mask (optional) is that of the stored, rounded values.
void bias_act_dropout_async(const Context& ctx, ConstMatrixView z, const float* bias, bool relu, const Dropout& dropout,
                            Bf16MatrixView out, std::uint8_t* positive = nullptr);

/// dropout_async on bf16 values (the mask of the float version bit for bit). out may alias x.
void dropout_async(const Context& ctx, ConstBf16MatrixView x, const Dropout& dropout, Bf16MatrixView out);

/// bias_act_dropout_backward_async on bf16 h, dh and dz (dz may alias dh); the optional column sums are those of
/// the stored (rounded) dz, summed in float32 as column_sum_async of dz would.
void bias_act_dropout_backward_async(const Context& ctx, ConstBf16MatrixView h, ConstBf16MatrixView dh, bool relu,
                                     float p, Bf16MatrixView dz, float* dz_column_sums = nullptr,
                                     const std::uint8_t* positive = nullptr);

/// gather_rows_async on bf16 rows (a copy: bit-exact): dst[i, :] = src[idx[i], :] for i < count. Does not
/// synchronise.
void gather_rows_async(const Context& ctx, ConstBf16MatrixView src, const NodeId* idx, Bf16MatrixView dst);

// ---------------------------------------------------------------------------------------------------------
// Loss, accuracy, optimiser, normalisation, row movement

/// Softmax cross-entropy over the rows listed in `rows` (count entries, local row indices) of logits
/// (num_rows x classes, leading dimension logits.ld >= classes: a padded layout's extra columns are not classes and
/// are never read) with int32 labels indexed by the same local rows. Writes the loss summed over those rows into
/// *loss_sum (one float, device memory on CUDA) and, when grad.data is non-null, grad = (softmax - onehot) *
/// grad_scale for the listed rows and 0 for every other row (grad: logits' shape and leading dimension). The whole
/// of grad's allocation (num_rows x ld) is written: its padding columns are set to zero, so that a padded model's
/// extra columns get no gradient. grad_scale is typically 1 / (global number of training nodes).
void softmax_cross_entropy_async(const Context& ctx, ConstMatrixView logits, const std::int32_t* labels,
                                 const NodeId* rows, std::int64_t count, float grad_scale, float* loss_sum,
                                 MatrixView grad);

/// The output layer's training loss in one pass over every row, replacing bias_act_dropout_async of the logits,
/// softmax_cross_entropy_async, a conversion of the gradient and column_sum_async of it:
///  - logits = z + bias over all logits.ld stored columns of every row, in place (logits holds z on entry; bias has
///    logits.ld entries; null: no bias, z is left as it is);
///  - the softmax cross-entropy of the listed rows, summed into *loss_sum exactly as softmax_cross_entropy_async
///    sums it (the same per-row losses in the same order);
///  - grad = (softmax - onehot) * grad_scale on the listed rows, 0 on every other row and padding column, stored
///    as float or (the bf16 overload) rounded once to bf16;
///  - grad_column_sums (logits.ld entries, overwritten): the column sums of the float gradient, the output bias's
///    gradient (a fixed summation order for a given row count: deterministic, not bit for bit column_sum_async).
/// row_slots and labels (num_rows entries each, device memory on CUDA): row_slots[rows[t]] = t, -1 for unlisted rows
/// (loss_row_slots); every row's label is read, an unlisted row's unused. logits and grad: one shape and leading
/// dimension, contiguous rows of ld elements.
void bias_softmax_cross_entropy_async(const Context& ctx, MatrixView logits, const float* bias,
                                      const std::int32_t* labels, const NodeId* rows, const std::int32_t* row_slots,
                                      std::int64_t count, float grad_scale, float* loss_sum, MatrixView grad,
                                      float* grad_column_sums);
void bias_softmax_cross_entropy_async(const Context& ctx, MatrixView logits, const float* bias,
                                      const std::int32_t* labels, const NodeId* rows, const std::int32_t* row_slots,
                                      std::int64_t count, float grad_scale, float* loss_sum, Bf16MatrixView grad,
                                      float* grad_column_sums);

/// The row_slots of bias_softmax_cross_entropy_async (host): slots[rows[t]] = t, -1 elsewhere, num_rows entries.
/// @throws InvalidInput for a row outside [0, num_rows) or listed twice, or more than 2^31 - 1 rows.
std::vector<std::int32_t> loss_row_slots(const std::vector<NodeId>& rows, std::int64_t num_rows);

/// Number of listed rows whose argmax over logits' columns (the classes; ld may exceed them) equals the label,
/// written into *correct (one int64, device on CUDA).
void count_correct_async(const Context& ctx, ConstMatrixView logits, const std::int32_t* labels, const NodeId* rows,
                         std::int64_t count, std::int64_t* correct);

/// Adam (Kingma & Ba) with L2 weight decay added to the gradient: g' = g + wd * w;
/// m = b1 m + (1-b1) g'; v = b2 v + (1-b2) g'^2; w -= lr * m_hat / (sqrt(v_hat) + eps), step counted from 1.
struct AdamParams {
  float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f, weight_decay = 0.0f;
  std::int64_t step = 1;
  /// When set, the bias corrections {1 - beta1^step, 1 - beta2^step} (two floats, device memory on CUDA; see
  /// adam_corrections) are read from here when the kernel runs instead of being computed from `step`: a CUDA Graph
  /// captured once replays every step with that step's corrections.
  const float* corrections_at = nullptr;
};

/// Adam's bias corrections for `step` as AdamParams::corrections_at holds them: 1 - beta1^step, 1 - beta2^step,
/// computed in double and rounded to float once (what adam_step_async uses when corrections_at is null).
void adam_corrections(const AdamParams& params, std::int64_t step, float out[2]);
void adam_step_async(const Context& ctx, float* w, const float* g, float* m, float* v, std::int64_t n,
                     const AdamParams& params);

/// dinv[i] = 1 / sqrt(row_offsets[i+1] - row_offsets[i] + extra) (0 for a zero degree), for n rows.
void inv_sqrt_degree_async(const Context& ctx, const RowOffset* row_offsets, std::int64_t n, float extra,
                           float* dinv);

/// dst(i, :) = src(idx[i], :) for i < dst.rows; contiguous views with src.cols == dst.cols.
void gather_rows_async(const Context& ctx, ConstMatrixView src, const NodeId* idx, MatrixView dst);
/// dst(idx[i], :) += src(i, :) for i < src.rows (idx may repeat; atomics on CUDA); contiguous views, equal cols.
void scatter_add_rows_async(const Context& ctx, ConstMatrixView src, const NodeId* idx, MatrixView dst);

/// out = sum of x[0..n) (one float; device memory on CUDA).
void sum_async(const Context& ctx, const float* x, std::int64_t n, float* out);
/// out = sum of x[i]^2 (one float) - for the L2 term of the reported loss.
void sum_squares_async(const Context& ctx, const float* x, std::int64_t n, float* out);

}  // namespace gcnpart::kernels
