// Sparse input features (GcnConfig::sparse_features_below): X (rows x F) and X^T stored as CSR on the device, so the
// first layer's X W and its weight gradient X^T dP are sparse x dense products and dropout touches stored values
// only (the same masks, bit for bit, as the dense path).
#pragma once

#include <cstdint>

#include "base/csr_view.hpp"
#include "base/host_vector.hpp"
#include "engine/planned_buffer.hpp"
#include "engine/resources.hpp"
#include "kernels/ops.hpp"

namespace gcnpart::engine {

/// The first layer's sparse input on one device: X and X^T on the device (the plan's x_* / xt_* buffers) and the
/// dropout of the last forward, which the weight gradient reuses.
class SparseInput {
 public:
  /// Uploads the non-zeros of `features` (rows x num_features, row-major) and of their transpose into the plan's
  /// buffers x_* and xt_* (and the dropped-out value copies where the plan lists them). Does not synchronise.
  SparseInput(Resources& res, const AllocationPlan& plan, const HostVector<float>& features, std::int64_t rows,
              std::int64_t num_features, const kernels::SpmmTuning& tuning);
  SparseInput(const SparseInput&) = delete;
  SparseInput& operator=(const SparseInput&) = delete;

  /// out (rows x width, float) = dropout(X) W, w: num_features x width. Remembers the dropout for the backward.
  void multiply_async(const kernels::Context& ctx, const kernels::Dropout& dropout, const float* w, float* out,
                      std::int64_t width);
  /// dw (num_features x width) = dropout(X)^T dp with the last multiply's mask; dp: rows x width, float.
  void weight_gradient_async(const kernels::Context& ctx, const float* dp, float* dw, std::int64_t width);

 private:
  /// m, or (last dropout on) m with its values dropped out into `values` (transposed: m is X^T).
  [[nodiscard]] CsrView dropped(const kernels::Context& ctx, const CsrView& m, bool transposed, float* values) const;

  kernels::SpmmTuning tuning_;
  Buffer<RowOffset> x_offsets_, xt_offsets_;
  Buffer<NodeId> x_cols_, xt_cols_;
  Buffer<float> x_vals_, xt_vals_, xd_vals_, xtd_vals_;
  CsrView x_view_{}, xt_view_{};
  kernels::Dropout last_{};  ///< the last multiply's dropout (p = 0: none)
};

}  // namespace gcnpart::engine
