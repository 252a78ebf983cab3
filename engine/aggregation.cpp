#include "engine/aggregation.hpp"

#include <cuda_runtime_api.h>

#include <string>

#include "kernels/core/error.hpp"

namespace gcnpart::engine {

namespace {


struct DeviceCsr {
  Buffer<RowOffset> offsets;
  Buffer<NodeId> cols;
  CsrView view{};
  DeviceCsr(Resources& res, const datasets::Csr& g, std::int64_t num_cols) {
    offsets = upload(res, g.row_offsets, MemoryCategory::kGraph);
    cols = upload(res, g.col_ids, MemoryCategory::kGraph);
    view = CsrView{g.num_nodes, num_cols, offsets.data(), cols.data(), nullptr};
  }
};

/// Single device, drop and halo: Â is the device's own symmetric matrix, so the transpose is Â again.
/// With SpmmAlgo::kAuto on a GPU, the first call at each width times the own kernel against cuSPARSE (CSR ALG2 and
/// ALG3) on the real operands and keeps the fastest for the rest of the run (the choice is reported).
class LocalAggregation final : public Aggregation {
 public:
  LocalAggregation(Resources& res, const LocalProblem& p, kernels::SpmmAlgo algo,
                   const std::vector<std::int64_t>& widths)
      : res_(res), graph_(res, p.graph, p.num_cols), algo_(algo) {
    dinv_row_ = upload(res, p.dinv_row, MemoryCategory::kGraph);
    dinv_col_ = upload(res, p.dinv_col, MemoryCategory::kGraph);
    if (algo == kernels::SpmmAlgo::kCusparse && res.context().is_cuda())
      for (auto w : widths)
        if (cusparse_.count(w) == 0)
          cusparse_[w] = std::make_unique<kernels::CusparseSpmm>(res.context(), graph_.view, dinv_row_.data(),
                                                                 dinv_col_.data(), w);
  }
  void forward(const float* x, float* y, std::int64_t width) override { run(x, y, width); }
  void backward(const float* dy, float* dx, std::int64_t width) override { run(dy, dx, width); }
  void forward_bf16(const kernels::Bf16* x, float* y, std::int64_t width) override { run_bf16(x, y, width); }
  void backward_bf16(const kernels::Bf16* dy, float* dx, std::int64_t width) override { run_bf16(dy, dx, width); }

 private:
  void run_bf16(const kernels::Bf16* x, float* y, std::int64_t width) {
    kernels::spmm_bf16_async(res_.context(), graph_.view, dinv_row_.data(), dinv_col_.data(), x, width, y, width,
                             width);
    if (algo_ == kernels::SpmmAlgo::kAuto) tuned_[width] = "own-bf16";
  }

  void run(const float* x, float* y, std::int64_t width) {
    if (algo_ == kernels::SpmmAlgo::kAuto && res_.context().is_cuda() && tuned_.count(width) == 0) tune(x, y, width);
    if (auto it = cusparse_.find(width); it != cusparse_.end()) {
      it->second->run_async(x, y);
      return;
    }
    kernels::spmm_async(res_.context(), graph_.view, dinv_row_.data(), dinv_col_.data(), x, width, y, width, width,
                        kernels::SpmmAlgo::kOwn);
  }

  /// Times each candidate on (x, y) and keeps the fastest. Synchronises; runs once per width.
  void tune(const float* x, float* y, std::int64_t width) {
    const auto& ctx = res_.context();
    constexpr int kRepeats = 3;
    cudaEvent_t start, stop;
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    auto time = [&](const auto& call) {
      call();  // warm-up
      cudaEventRecord(start, ctx.stream);
      for (int i = 0; i < kRepeats; ++i) call();
      cudaEventRecord(stop, ctx.stream);
      cudaEventSynchronize(stop);
      float ms = 0;
      cudaEventElapsedTime(&ms, start, stop);
      return ms / kRepeats;
    };
    float best = time([&] {
      kernels::spmm_async(ctx, graph_.view, dinv_row_.data(), dinv_col_.data(), x, width, y, width, width,
                          kernels::SpmmAlgo::kOwn);
    });
    std::string choice = "own";
    for (int alg : {2, 3}) {
      try {
        auto plan = std::make_unique<kernels::CusparseSpmm>(ctx, graph_.view, dinv_row_.data(), dinv_col_.data(),
                                                            width, alg);
        const float ms = time([&] { plan->run_async(x, y); });
        if (ms < best) {
          best = ms;
          choice = "cusparse-alg" + std::to_string(alg);
          cusparse_[width] = std::move(plan);
        }
      } catch (const DeviceError&) {
        // An algorithm cuSPARSE does not support for this shape is simply not a candidate.
      }
    }
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    tuned_[width] = choice;
  }

  Resources& res_;
  DeviceCsr graph_;
  Buffer<float> dinv_row_, dinv_col_;
  kernels::SpmmAlgo algo_;
  std::map<std::int64_t, std::unique_ptr<kernels::CusparseSpmm>> cusparse_;
  std::map<std::int64_t, std::string> tuned_;


 public:
  [[nodiscard]] std::map<std::int64_t, std::string> spmm_choices() const override { return tuned_; }
};

/// Gather: forward all-gathers the rows into the table and aggregates from it; backward aggregates into the
/// table with the transposed matrix and reduce-scatters each block back to its owner.
class GatherAggregation final : public Aggregation {
 public:
  GatherAggregation(Resources& res, const LocalProblem& p, Communicator* comm, kernels::SpmmAlgo algo,
                    std::int64_t max_width, bool bf16)
      : res_(res),
        comm_(comm),
        rows_(p.num_rows),
        block_(p.table_block),
        parts_(p.parts),
        forward_(res, p.gather_forward, p.table_block * p.parts),
        backward_(res, p.gather_backward, p.num_rows),
        algo_(algo == kernels::SpmmAlgo::kCusparse ? kernels::SpmmAlgo::kOwn : algo) {
    GCNPART_EXPECTS(comm != nullptr && comm->size() == p.parts, "the gather strategy needs a communicator of its parts");
    dinv_own_ = upload(res, p.dinv_row, MemoryCategory::kGraph);
    table_dinv_ = upload(res, p.table_dinv, MemoryCategory::kGraph);
    staging_ = Buffer<float>(res.memory(), block_ * max_width, MemoryCategory::kCommunication);
    table_ = Buffer<float>(res.memory(), block_ * parts_ * max_width, MemoryCategory::kCommunication);
    kernels::memset_zero_async(res.context(), staging_.data(), staging_.bytes());
    if (bf16) {
      // Forward's table travels as bf16: half the bytes of the all-gather. The float table (backward's
      // reduce-scatter) stays; the bf16 one is carved out of it when the widths allow, else its own buffer.
      staging16_ = Buffer<kernels::Bf16>(res.memory(), block_ * max_width + 2, MemoryCategory::kCommunication);
      kernels::memset_zero_async(res.context(), staging16_.data(), staging16_.bytes());
    }
  }

  void forward(const float* x, float* y, std::int64_t width) override {
    const auto& ctx = res_.context();
    kernels::copy_async(ctx, staging_.data(), x, static_cast<std::size_t>(rows_ * width) * sizeof(float));
    comm_->all_gather(ctx, staging_.data(), block_ * width, table_.data());
    kernels::spmm_async(ctx, forward_.view, dinv_own_.data(), table_dinv_.data(), table_.data(), width, y, width,
                        width, algo_);
  }

  void backward(const float* dy, float* dx, std::int64_t width) override {
    const auto& ctx = res_.context();
    kernels::spmm_async(ctx, backward_.view, table_dinv_.data(), dinv_own_.data(), dy, width, table_.data(), width,
                        width, algo_);
    reduce_table(dx, width);
  }

  /// The all-gather moves bf16 pairs as float words (NCCL copies bytes): an odd block * width element count gets
  /// one padding element, which every block then carries.
  void forward_bf16(const kernels::Bf16* x, float* y, std::int64_t width) override {
    GCNPART_EXPECTS(!staging16_.empty(), "GatherAggregation was built without bf16 buffers");
    const auto& ctx = res_.context();
    const std::int64_t words = (block_ * width + 1) / 2;
    kernels::copy_async(ctx, staging16_.data(), x, static_cast<std::size_t>(rows_ * width) * sizeof(kernels::Bf16));
    // The table: parts blocks of 2 * words bf16 each, laid out in the float table's memory.
    auto* table16 = reinterpret_cast<kernels::Bf16*>(table_.data());
    comm_->all_gather(ctx, reinterpret_cast<float*>(staging16_.data()), words, table_.data());
    if (2 * words == block_ * width) {
      kernels::spmm_bf16_async(ctx, forward_.view, dinv_own_.data(), table_dinv_.data(), table16, width, y, width,
                               width);
      return;
    }
    // Odd element count per block: the padding breaks the row layout; widen block by block into a float table
    // of the plain layout (behind the bf16 one in the same buffer would overlap, so use staging_ per block).
    widen_padded_table(table16, words, width);
    kernels::spmm_async(ctx, forward_.view, dinv_own_.data(), table_dinv_.data(), table_.data(), width, y, width,
                        width, algo_);
  }

  void backward_bf16(const kernels::Bf16* dy, float* dx, std::int64_t width) override {
    const auto& ctx = res_.context();
    kernels::spmm_bf16_async(ctx, backward_.view, table_dinv_.data(), dinv_own_.data(), dy, width, table_.data(),
                             width, width);
    reduce_table(dx, width);
  }

 private:
  void reduce_table(float* dx, std::int64_t width) {
    const auto& ctx = res_.context();
    comm_->reduce_scatter_sum(ctx, table_.data(), block_ * width, staging_.data());
    kernels::copy_async(ctx, dx, staging_.data(), static_cast<std::size_t>(rows_ * width) * sizeof(float));
  }

  /// table16 holds parts blocks of 2 * words bf16; rewrite table_ as parts blocks of block * width floats. Walks
  /// the blocks from the last: block p's floats start at p * block * width * 4 bytes, at or after its bf16 start
  /// (p * words * 4 bytes) and ending past it, so copy each bf16 block out to staging first.
  void widen_padded_table(const kernels::Bf16* table16, std::int64_t words, std::int64_t width) {
    const auto& ctx = res_.context();
    const std::int64_t n = block_ * width;
    for (int p = parts_ - 1; p >= 0; --p) {
      kernels::copy_async(ctx, staging16_.data(), table16 + static_cast<std::int64_t>(p) * 2 * words,
                          static_cast<std::size_t>(n) * sizeof(kernels::Bf16));
      kernels::convert_from_bf16_async(ctx, staging16_.data(), n, table_.data() + static_cast<std::int64_t>(p) * n);
    }
  }

  Resources& res_;
  Communicator* comm_;
  std::int64_t rows_, block_;
  int parts_;
  DeviceCsr forward_, backward_;
  kernels::SpmmAlgo algo_;
  Buffer<float> dinv_own_, table_dinv_, staging_, table_;
  Buffer<kernels::Bf16> staging16_;
};

}  // namespace

std::unique_ptr<Aggregation> make_aggregation(Resources& res, const LocalProblem& problem, Communicator* comm,
                                              kernels::SpmmAlgo algo, std::int64_t max_width,
                                              const std::vector<std::int64_t>& spmm_widths, bool bf16) {
  if (problem.gather) return std::make_unique<GatherAggregation>(res, problem, comm, algo, max_width, bf16);
  return std::make_unique<LocalAggregation>(res, problem, algo, spmm_widths);
}

}  // namespace gcnpart::engine
