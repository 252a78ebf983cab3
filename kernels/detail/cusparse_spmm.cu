// CusparseSpmm: the cuSPARSE peer of gcnpart's SpMM, with Â's values materialised once
// (row_scale[i] * a_ij * col_scale[j]), descriptors and workspace kept across calls.
//
// Index types: cuSPARSE's CSR SpMM takes one index type for offsets and column ids alike (32I or 64I; mixed
// int64 offsets with int32 columns is not among the documented combinations). So when nnz < 2^31 the offsets
// are converted to int32 (columns used as they are); otherwise the columns are widened to int64.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>

#include "kernels/detail/backends.hpp"
#include "kernels/detail/cuda_common.cuh"
#include "kernels/detail/workspace.hpp"

namespace gcnpart::kernels {
namespace {

constexpr int kWarp = 32;

/// One warp per row: out[e] = row_scale[i] * a_ij * col_scale[j].
__global__ void materialise_values_kernel(std::int64_t num_rows, const RowOffset* offsets, const NodeId* cols,
                                          const float* values, const float* row_scale, const float* col_scale,
                                          float* out) {
  const int lane = static_cast<int>(threadIdx.x) % kWarp;
  const std::int64_t warps = detail::cuda::grid_stride() / kWarp;
  for (std::int64_t r = detail::cuda::global_thread() / kWarp; r < num_rows; r += warps) {
    const float rs = row_scale != nullptr ? row_scale[r] : 1.0f;
    for (std::int64_t e = offsets[r] + lane; e < offsets[r + 1]; e += kWarp) {
      float v = rs * (values != nullptr ? values[e] : 1.0f);
      if (col_scale != nullptr) v *= col_scale[cols[e]];
      out[e] = v;
    }
  }
}

template <class From, class To>
__global__ void convert_kernel(const From* in, std::int64_t n, To* out) {
  for (std::int64_t i = detail::cuda::global_thread(); i < n; i += detail::cuda::grid_stride())
    out[i] = static_cast<To>(in[i]);
}

cusparseSpMMAlg_t spmm_algorithm(int algorithm) {
  switch (algorithm) {
    case 0: return CUSPARSE_SPMM_ALG_DEFAULT;
    case 1: return CUSPARSE_SPMM_CSR_ALG1;
    case 2: return CUSPARSE_SPMM_CSR_ALG2;
    case 3: return CUSPARSE_SPMM_CSR_ALG3;
    default:
      throw InvalidInput::parameter("cusparse algorithm", std::to_string(algorithm),
                                    "0 (default), 1, 2 or 3 (CSR_ALG1..3)");
  }
}

}  // namespace

namespace detail::cuda {

/// Everything CusparseSpmm keeps, usable with any leading dimensions (cusparse_spmm_once uses it directly).
struct CusparsePlan {
  Context ctx;
  std::int64_t rows = 0, cols = 0, nnz = 0, width = 0, ldx = 0, ldy = 0;
  cusparseSpMMAlg_t algorithm = CUSPARSE_SPMM_CSR_ALG2;
  detail::Workspace values, indices, buffer;
  cusparseSpMatDescr_t mat = nullptr;
  cusparseDnMatDescr_t x_desc = nullptr, y_desc = nullptr;
  bool preprocessed = false;

  CusparsePlan(const Context& c, const CsrView& a, const float* row_scale, const float* col_scale, std::int64_t w,
       std::int64_t ld_x, std::int64_t ld_y, int alg)
      : ctx(c), rows(a.num_rows), cols(a.num_cols), width(w), ldx(ld_x), ldy(ld_y), algorithm(spmm_algorithm(alg)) {
    GCNPART_EXPECTS(ctx.is_cuda(), "CusparseSpmm needs a CUDA context (the CPU backend has no cuSPARSE)");
    GCNPART_EXPECTS(ctx.allocator != nullptr && ctx.cusparse != nullptr,
                    "CusparseSpmm needs an allocator and a cuSPARSE handle");
    GCNPART_EXPECTS(rows >= 0 && cols >= 0 && width >= 0 && ldx >= width && ldy >= width,
                    "CusparseSpmm needs non-negative sizes and leading dimensions of at least the width");
    if (rows == 0 || width == 0) return;
    GCNPART_EXPECTS(a.row_offsets != nullptr, "CusparseSpmm needs row offsets");

    RowOffset entries = 0;
    GCNPART_CUDA_TRY(
        cudaMemcpyAsync(&entries, a.row_offsets + rows, sizeof(RowOffset), cudaMemcpyDeviceToHost, ctx.stream));
    GCNPART_CUDA_TRY(cudaStreamSynchronize(ctx.stream));
    nnz = entries;
    if (nnz == 0) return;

    values = detail::Workspace(ctx, static_cast<std::size_t>(nnz) * sizeof(float), MemoryCategory::kGraph);
    materialise_values_kernel<<<detail::cuda::elementwise_blocks(rows * kWarp), detail::cuda::kElementwiseThreads, 0,
                                ctx.stream>>>(rows, a.row_offsets, a.col_ids, a.values, row_scale, col_scale,
                                              values.as<float>());
    GCNPART_CUDA_TRY(cudaGetLastError());

    const bool narrow = nnz <= std::numeric_limits<std::int32_t>::max();
    void* offsets = nullptr;
    void* columns = nullptr;
    if (narrow) {
      indices = detail::Workspace(ctx, static_cast<std::size_t>(rows + 1) * sizeof(std::int32_t),
                                  MemoryCategory::kGraph);
      convert_kernel<<<detail::cuda::elementwise_blocks(rows + 1), detail::cuda::kElementwiseThreads, 0,
                       ctx.stream>>>(a.row_offsets, rows + 1, indices.as<std::int32_t>());
      GCNPART_CUDA_TRY(cudaGetLastError());
      offsets = indices.get();
      columns = const_cast<NodeId*>(a.col_ids);
    } else {
      indices = detail::Workspace(ctx, static_cast<std::size_t>(nnz) * sizeof(std::int64_t), MemoryCategory::kGraph);
      convert_kernel<<<detail::cuda::elementwise_blocks(nnz), detail::cuda::kElementwiseThreads, 0, ctx.stream>>>(
          a.col_ids, nnz, indices.as<std::int64_t>());
      GCNPART_CUDA_TRY(cudaGetLastError());
      offsets = const_cast<RowOffset*>(a.row_offsets);
      columns = indices.get();
    }
    const cusparseIndexType_t index_type = narrow ? CUSPARSE_INDEX_32I : CUSPARSE_INDEX_64I;

    GCNPART_CUSPARSE_TRY(cusparseSetStream(ctx.cusparse, ctx.stream));
    GCNPART_CUSPARSE_TRY(cusparseCreateCsr(&mat, rows, cols, nnz, offsets, columns, values.get(), index_type,
                                           index_type, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_32F));
    // The buffer size query reads no dense data: any valid device pointer stands in for X and Y until run_async.
    void* stand_in = values.get();
    GCNPART_CUSPARSE_TRY(cusparseCreateDnMat(&x_desc, cols, width, ldx, stand_in, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    GCNPART_CUSPARSE_TRY(cusparseCreateDnMat(&y_desc, rows, width, ldy, stand_in, CUDA_R_32F, CUSPARSE_ORDER_ROW));
    const float alpha = 1.0f, beta = 0.0f;
    std::size_t bytes = 0;
    GCNPART_CUSPARSE_TRY(cusparseSpMM_bufferSize(ctx.cusparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                 CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, x_desc, &beta, y_desc,
                                                 CUDA_R_32F, algorithm, &bytes));
    buffer = detail::Workspace(ctx, std::max<std::size_t>(bytes, 1));
    GCNPART_CUDA_TRY(cudaStreamSynchronize(ctx.stream));
  }

  CusparsePlan(const CusparsePlan&) = delete;
  CusparsePlan& operator=(const CusparsePlan&) = delete;

  ~CusparsePlan() {
    if (x_desc != nullptr) GCNPART_CUSPARSE_TRY_NO_THROW(cusparseDestroyDnMat(x_desc));
    if (y_desc != nullptr) GCNPART_CUSPARSE_TRY_NO_THROW(cusparseDestroyDnMat(y_desc));
    if (mat != nullptr) GCNPART_CUSPARSE_TRY_NO_THROW(cusparseDestroySpMat(mat));
  }

  void run(const float* x, float* y) {
    if (rows == 0 || width == 0) return;
    if (nnz == 0) {
      GCNPART_CUDA_TRY(cudaMemset2DAsync(y, static_cast<std::size_t>(ldy) * sizeof(float), 0,
                                         static_cast<std::size_t>(width) * sizeof(float),
                                         static_cast<std::size_t>(rows), ctx.stream));
      return;
    }
    GCNPART_CUSPARSE_TRY(cusparseSetStream(ctx.cusparse, ctx.stream));
    GCNPART_CUSPARSE_TRY(cusparseDnMatSetValues(x_desc, const_cast<float*>(x)));
    GCNPART_CUSPARSE_TRY(cusparseDnMatSetValues(y_desc, y));
    const float alpha = 1.0f, beta = 0.0f;
    if (!preprocessed && (algorithm == CUSPARSE_SPMM_CSR_ALG1 || algorithm == CUSPARSE_SPMM_CSR_ALG3)) {
      // Analysis of A's pattern, kept in `buffer` for every later call.
      GCNPART_CUSPARSE_TRY(cusparseSpMM_preprocess(ctx.cusparse, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                   CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, mat, x_desc, &beta,
                                                   y_desc, CUDA_R_32F, algorithm, buffer.get()));
      preprocessed = true;
    }
    GCNPART_CUSPARSE_TRY(cusparseSpMM(ctx.cusparse, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                      &alpha, mat, x_desc, &beta, y_desc, CUDA_R_32F, algorithm, buffer.get()));
  }
};

void cusparse_spmm_once(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
                        const float* x, std::int64_t ldx, float* y, std::int64_t ldy, std::int64_t width,
                        int algorithm) {
  CusparsePlan plan(ctx, a, row_scale, col_scale, width, ldx, ldy, algorithm);
  plan.run(x, y);
  // The plan's memory goes back to the allocator when it leaves scope: let the product finish first.
  GCNPART_CUDA_TRY(cudaStreamSynchronize(ctx.stream));
}

}  // namespace detail::cuda

struct CusparseSpmm::Impl : detail::cuda::CusparsePlan {
  using CusparsePlan::CusparsePlan;
};

CusparseSpmm::CusparseSpmm(const Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
                           std::int64_t width, int algorithm) {
  auto impl = std::make_unique<Impl>(ctx, a, row_scale, col_scale, width, width, width, algorithm);
  ctx_ = &ctx;
  buffer_bytes_ = impl->buffer.bytes();
  rows_ = a.num_rows;
  cols_ = a.num_cols;
  width_ = width;
  impl_ = impl.release();
}

CusparseSpmm::~CusparseSpmm() { delete impl_; }

void CusparseSpmm::run_unchecked_async(const float* x, float* y) { impl_->run(x, y); }

}  // namespace gcnpart::kernels
