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

 private:
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
                    std::int64_t max_width)
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
    comm_->reduce_scatter_sum(ctx, table_.data(), block_ * width, staging_.data());
    kernels::copy_async(ctx, dx, staging_.data(), static_cast<std::size_t>(rows_ * width) * sizeof(float));
  }

 private:
  Resources& res_;
  Communicator* comm_;
  std::int64_t rows_, block_;
  int parts_;
  DeviceCsr forward_, backward_;
  kernels::SpmmAlgo algo_;
  Buffer<float> dinv_own_, table_dinv_, staging_, table_;
};

}  // namespace

std::unique_ptr<Aggregation> make_aggregation(Resources& res, const LocalProblem& problem, Communicator* comm,
                                              kernels::SpmmAlgo algo, std::int64_t max_width,
                                              const std::vector<std::int64_t>& spmm_widths) {
  if (problem.gather) return std::make_unique<GatherAggregation>(res, problem, comm, algo, max_width);
  return std::make_unique<LocalAggregation>(res, problem, algo, spmm_widths);
}

}  // namespace gcnpart::engine
