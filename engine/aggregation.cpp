#include "engine/aggregation.hpp"

#include "engine/cuda_handles.hpp"

#if GCNPART_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "base/cuda_check.hpp"
#endif

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "base/error.hpp"
#include "base/spmm_layout.hpp"
#include "kernels/cuda_event.hpp"
#include "kernels/long_rows.hpp"

namespace gcnpart::engine {

namespace {

// The CUDA runtime calls of the overlapping aggregations (reached only for CUDA contexts, which a CPU-only build
// never makes: Resources refuses them).
#if GCNPART_HAVE_CUDA
/// `rows` rows of `row_bytes` from src (rows `src_pitch` bytes apart) to dst (`dst_pitch` apart), device to device.
void copy_rows_async(void* dst, std::size_t dst_pitch, const void* src, std::size_t src_pitch, std::size_t row_bytes,
                     std::int64_t rows, cudaStream_t stream) {
  GCNPART_CUDA_TRY(cudaMemcpy2DAsync(dst, dst_pitch, src, src_pitch, row_bytes, static_cast<std::size_t>(rows),
                                     cudaMemcpyDeviceToDevice, stream));
}
#else
void copy_rows_async(void*, std::size_t, const void*, std::size_t, std::size_t, std::int64_t, cudaStream_t) {
  throw NoCudaBuild("a CUDA copy");
}
#endif

/// Copies `list` (the long rows of the rows-row matrix whose device offsets are `offsets`) to the device buffers
/// ids[0, count) and prefix[0, count], which must have room for it (`ids_room`, `prefix_room`), and returns its view.
/// The view's host_prefix is list.prefix: `list` must stay where it is while the view is used.
LongRowsView upload_long_rows(Resources& res, const kernels::LongRows& list, const RowOffset* offsets, std::int64_t rows,
                              NodeId* ids, std::int64_t ids_room, std::int64_t* prefix, std::int64_t prefix_room) {
  const auto count = static_cast<std::int64_t>(list.rows.size());
  GCNPART_EXPECTS(count <= ids_room && count + 1 <= prefix_room, "the long-row list fits the planned capacity");
  if (count > 0)
    kernels::copy_async(res.context(), ids, list.rows.data(), static_cast<std::size_t>(count) * sizeof(NodeId));
  kernels::copy_async(res.context(), prefix, list.prefix.data(),
                      static_cast<std::size_t>(count + 1) * sizeof(std::int64_t));
  return LongRowsView{offsets, rows, list.floor, count, ids, prefix, list.prefix.data()};
}

/// One SpMM of rows in either storage type into float rows: float rows by `algo` (own kernel or cuSPARSE), bf16
/// rows always by the own kernel (cuSPARSE has no bf16-input, fp32-output CSR SpMM).
void spmm_rows(const kernels::Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
               kernels::ConstMatrixView x, kernels::MatrixView y, SpmmAlgo algo, const kernels::SpmmTuning& tuning) {
  kernels::spmm_async(ctx, a, row_scale, col_scale, x, y, algo, tuning);
}
void spmm_rows(const kernels::Context& ctx, const CsrView& a, const float* row_scale, const float* col_scale,
               kernels::ConstBf16MatrixView x, kernels::MatrixView y, SpmmAlgo, const kernels::SpmmTuning& tuning) {
  kernels::spmm_bf16_async(ctx, a, row_scale, col_scale, x, y, tuning);
}

struct DeviceCsr {
  Buffer<RowOffset> offsets;
  Buffer<NodeId> cols;
  /// The long rows (kernels/long_rows.hpp), where the plan lists their buffers: the host list (its prefix sums are
  /// the view's host_prefix), the device copies (the plan's capacity, the list at the front) and their view.
  kernels::LongRows long_rows;
  Buffer<NodeId> long_row_ids;
  Buffer<std::int64_t> long_row_prefix;
  LongRowsView long_view{};
  CsrView view{};
  /// The plan's buffers `offsets_name` and `cols_name` holding g; with `long_rows_name`, also the plan's buffers
  /// `<long_rows_name>_rows` and `<long_rows_name>_prefix` (when it lists them) holding g's long rows.
  DeviceCsr(Resources& res, const AllocationPlan& plan, const char* offsets_name, const char* cols_name,
            const datasets::Csr& g, std::int64_t num_cols, const char* long_rows_name = nullptr) {
    offsets = upload_planned(res, plan, offsets_name, g.row_offsets);
    cols = upload_planned(res, plan, cols_name, g.col_ids);
    view = CsrView{g.num_nodes, num_cols, offsets.data(), cols.data(), nullptr, g.num_edges()};
    if (long_rows_name == nullptr) return;
    const std::string rows_name = std::string(long_rows_name) + "_rows";
    const std::string prefix_name = std::string(long_rows_name) + "_prefix";
    if (partition::find_allocation(plan, rows_name) == nullptr) return;
    long_rows = kernels::list_long_rows(g.row_offsets.data(), g.num_nodes, kernels::spmm_long_rows_floor(g.num_edges()));
    long_row_ids = take<NodeId>(res, plan, rows_name);
    long_row_prefix = take<std::int64_t>(res, plan, prefix_name);
    long_view = upload_long_rows(res, long_rows, offsets.data(), g.num_nodes, long_row_ids.data(), long_row_ids.size(),
                                 long_row_prefix.data(), long_row_prefix.size());
    view.long_rows = &long_view;
  }
  // The view points at long_view: the object stays where it was built.
  DeviceCsr(const DeviceCsr&) = delete;
  DeviceCsr& operator=(const DeviceCsr&) = delete;
};

/// The row ranges of one device matrix that the boundary strategy's products run on, with their exact entry counts
/// (a range's product sizes its threshold and its long rows' work per warp by them, not by the whole matrix's) and,
/// where the plan lists the buffers, their long-row lists: range [begin, end) gets list_long_rows over its own
/// offsets with the whole matrix's floor, so its view is the list the own SpMM expects of the range's CsrView
/// (offsets + begin, end - begin rows), and the lists of disjoint ranges together hold at most the matrix's listed
/// rows: they share the plan's buffers `<name>_rows` (the matrix's capacity) and `<name>_prefix` (the capacity plus
/// one sum per range). A range whose product picks a threshold below that floor (a small range at a narrow width)
/// lists its long rows per product, as a bare view does.
class RangeLongRows {
 public:
  static constexpr int kMaxRanges = 2;

  RangeLongRows(Resources& res, const AllocationPlan& plan, const char* name, const DeviceCsr& m,
                const datasets::Csr& g, const std::vector<std::pair<std::int64_t, std::int64_t>>& spans) {
    GCNPART_EXPECTS(spans.size() <= static_cast<std::size_t>(kMaxRanges), "at most kMaxRanges row ranges");
    ranges_.reserve(spans.size());  // the views point into ranges_: no reallocation after this
    for (const auto& [begin, end] : spans) {
      GCNPART_EXPECTS(0 <= begin && begin <= end && end <= g.num_nodes, "a row range within the matrix");
      Range& r = ranges_.emplace_back();
      r.begin = begin;
      r.end = end;
      r.entries = g.row_offsets[static_cast<std::size_t>(end)] - g.row_offsets[static_cast<std::size_t>(begin)];
    }
    const std::string rows_name = std::string(name) + "_rows";
    const std::string prefix_name = std::string(name) + "_prefix";
    if (partition::find_allocation(plan, rows_name) == nullptr) return;
    ids_ = take<NodeId>(res, plan, rows_name);
    prefix_ = take<std::int64_t>(res, plan, prefix_name);
    const std::int64_t floor = kernels::spmm_long_rows_floor(g.num_edges());
    std::int64_t used_ids = 0, used_prefix = 0;  // the ranges' lists one after another in the shared buffers
    for (Range& r : ranges_) {
      r.host = kernels::list_long_rows(g.row_offsets.data() + r.begin, r.end - r.begin, floor);
      r.view = upload_long_rows(res, r.host, m.offsets.data() + r.begin, r.end - r.begin, ids_.data() + used_ids,
                                ids_.size() - used_ids, prefix_.data() + used_prefix, prefix_.size() - used_prefix);
      r.listed = true;
      used_ids += r.view.count;
      used_prefix += r.view.count + 1;
    }
  }

  /// Rows [begin, end) of `m` (this matrix's device view) as a matrix of their own: offsets stay absolute into the
  /// columns; the range's exact entries and its list where it was built with one, else m's bound and no list.
  [[nodiscard]] CsrView rows_of(const CsrView& m, std::int64_t begin, std::int64_t end, std::int64_t cols = -1) const {
    CsrView v{end - begin, cols >= 0 ? cols : m.num_cols, m.row_offsets + begin, m.col_ids, nullptr, m.entries_bound};
    for (const Range& r : ranges_) {
      if (r.begin != begin || r.end != end) continue;
      v.entries_bound = r.entries;
      if (r.listed) v.long_rows = &r.view;
      break;
    }
    return v;
  }

  RangeLongRows(const RangeLongRows&) = delete;
  RangeLongRows& operator=(const RangeLongRows&) = delete;

 private:
  struct Range {
    std::int64_t begin = 0, end = 0, entries = 0;
    bool listed = false;
    kernels::LongRows host;
    LongRowsView view{};
  };
  std::vector<Range> ranges_;
  Buffer<NodeId> ids_;
  Buffer<std::int64_t> prefix_;
};

/// apply_async() of an aggregation whose forward and backward are member templates over the rows' storage type
/// (Derived::forward_rows<T>, Derived::backward_rows<T>, T = float or kernels::Bf16).
template <class Derived>
class ByStorageType : public Aggregation {
 public:
  void apply_async(Pass pass, StoredRows x, float* y, std::int64_t width) final {
    auto& self = static_cast<Derived&>(*this);
    std::visit(
        [&](auto rows) {
          if (pass == Pass::kForward) {
            self.forward_rows(rows, y, width);
          } else {
            self.backward_rows(rows, y, width);
          }
        },
        x);
  }
};

/// Single device, drop and halo: Â is the device's own symmetric matrix, so the transpose is Â again.
/// With SpmmAlgo::kAuto on a GPU, the first call at each width times the own kernel against cuSPARSE (CSR ALG2 and
/// ALG3) on the real operands and keeps the fastest for the rest of the run (the choice is reported).
class LocalAggregation final : public Aggregation {
 public:
  LocalAggregation(Resources& res, const OwnGraph& g, std::int64_t num_cols, SpmmAlgo algo, const AllocationPlan& plan,
                   const std::vector<std::int64_t>& widths, const kernels::SpmmTuning& tuning)
      : res_(res), graph_(res, plan, "graph_offsets", "graph_columns", g.graph, num_cols, "graph_long"), algo_(algo),
        tuning_(tuning), host_offsets_(g.graph.row_offsets.data()) {
    dinv_row_ = upload_planned(res, plan, "dinv_rows", g.dinv_row);
    dinv_col_ = upload_planned(res, plan, "dinv_cols", g.dinv_col);
    if (algo == SpmmAlgo::kCusparse && res.context().is_cuda())
      for (auto w : widths)
        if (cusparse_.count(w) == 0)
          cusparse_[w] = std::make_unique<kernels::CusparseSpmm>(res.context(), graph_.view, dinv_row_.data(),
                                                                 dinv_col_.data(), w);
  }
  // Â is symmetric: forward and backward are the same product.
  void apply_async(Pass, StoredRows x, float* y, std::int64_t width) override {
    std::visit([&](auto rows) { run(rows, y, width); }, x);
  }
  bool apply_rounded_async(Pass, const kernels::Bf16* x, kernels::Bf16* y, float* scratch,
                           std::int64_t width) override {
    run_bf16_out(x, y, scratch, width);
    return true;
  }

  void apply_rows_async(Pass, StoredRows x, float* y, std::int64_t width, std::int64_t begin,
                        std::int64_t end) override {
    const CsrView a = rows_of(begin, end);
    std::visit(
        [&](auto rows) {
          using Elem = std::remove_const_t<std::remove_pointer_t<decltype(rows)>>;
          if constexpr (std::is_same_v<Elem, float>) {
            kernels::spmm_async(res_.context(), a, dinv_row_.data() + begin, dinv_col_.data(),
                                kernels::make_view(rows, graph_.view.num_cols, width),
                                kernels::make_view(y, end - begin, width), SpmmAlgo::kOwn, tuning_);
          } else {
            kernels::spmm_bf16_async(res_.context(), a, dinv_row_.data() + begin, dinv_col_.data(),
                                     kernels::make_view(rows, graph_.view.num_cols, width),
                                     kernels::make_view(y, end - begin, width), tuning_);
          }
        },
        x);
  }
  void apply_rows_rounded_async(Pass, const kernels::Bf16* x, kernels::Bf16* y, float* scratch, std::int64_t width,
                                std::int64_t begin, std::int64_t end) override {
    kernels::spmm_bf16_async(res_.context(), rows_of(begin, end), dinv_row_.data() + begin, dinv_col_.data(),
                             kernels::make_view(x, graph_.view.num_cols, width),
                             kernels::make_view(y, end - begin, width),
                             kernels::make_view(scratch, end - begin, width), tuning_);
  }

 private:
  /// Rows [begin, end) as a matrix of their own: offsets stay absolute into the columns, the exact entry count from
  /// the host's offsets, no long-row list (the own SpMM lists the range's long rows per product).
  [[nodiscard]] CsrView rows_of(std::int64_t begin, std::int64_t end) const {
    GCNPART_EXPECTS(0 <= begin && begin <= end && end <= graph_.view.num_rows, "a row range within the matrix");
    return CsrView{end - begin, graph_.view.num_cols, graph_.view.row_offsets + begin, graph_.view.col_ids, nullptr,
                   host_offsets_[end] - host_offsets_[begin]};
  }

  void run(const kernels::Bf16* x, float* y, std::int64_t width) {
    kernels::spmm_bf16_async(res_.context(), graph_.view, dinv_row_.data(), dinv_col_.data(),
                             kernels::make_view(x, graph_.view.num_cols, width),
                             kernels::make_view(y, graph_.view.num_rows, width), tuning_);
    if (algo_ == SpmmAlgo::kAuto && tuned_.count(width) == 0) tuned_[width] = "own-bf16";  // reported
  }
  void run_bf16_out(const kernels::Bf16* x, kernels::Bf16* y, float* scratch, std::int64_t width) {
    kernels::spmm_bf16_async(res_.context(), graph_.view, dinv_row_.data(), dinv_col_.data(),
                             kernels::make_view(x, graph_.view.num_cols, width),
                             kernels::make_view(y, graph_.view.num_rows, width),
                             kernels::make_view(scratch, graph_.view.num_rows, width), tuning_);
    if (algo_ == SpmmAlgo::kAuto && tuned_.count(width) == 0) tuned_[width] = "own-bf16";  // reported
  }

  void run(const float* x, float* y, std::int64_t width) {
    if (algo_ == SpmmAlgo::kAuto && res_.context().is_cuda() && tuned_.count(width) == 0) tune(x, y, width);
    if (auto it = cusparse_.find(width); it != cusparse_.end()) {
      it->second->run_async(kernels::make_view(x, graph_.view.num_cols, width),
                            kernels::make_view(y, graph_.view.num_rows, width));
      return;
    }
    kernels::spmm_async(res_.context(), graph_.view, dinv_row_.data(), dinv_col_.data(),
                        kernels::make_view(x, graph_.view.num_cols, width),
                        kernels::make_view(y, graph_.view.num_rows, width), SpmmAlgo::kOwn, tuning_);
  }

  /// Times each candidate on (x, y) and keeps the fastest. Synchronises; runs once per width.
  void tune(const float* x, float* y, std::int64_t width) {
    const auto& ctx = res_.context();
    constexpr int kRepeats = 3;
    kernels::CudaEvent start, stop;
    auto time = [&](const auto& call) {
      call();  // warm-up
      start.record(ctx.stream);
      for (int i = 0; i < kRepeats; ++i) call();
      stop.record(ctx.stream);
      stop.synchronize();
      return static_cast<float>(kernels::elapsed_ms(start, stop)) / kRepeats;
    };
    float best = time([&] {
      kernels::spmm_async(ctx, graph_.view, dinv_row_.data(), dinv_col_.data(),
                          kernels::make_view(x, graph_.view.num_cols, width),
                          kernels::make_view(y, graph_.view.num_rows, width), SpmmAlgo::kOwn, tuning_);
    });
    std::string choice = "own";
    for (int alg : {2, 3}) {
      try {
        auto plan = std::make_unique<kernels::CusparseSpmm>(ctx, graph_.view, dinv_row_.data(), dinv_col_.data(),
                                                            width, alg);
        const float ms = time([&] {
          plan->run_async(kernels::make_view(x, graph_.view.num_cols, width),
                          kernels::make_view(y, graph_.view.num_rows, width));
        });
        if (ms < best) {
          best = ms;
          choice = "cusparse-alg" + std::to_string(alg);
          cusparse_[width] = std::move(plan);
        }
      } catch (const DeviceError&) {
        // An algorithm cuSPARSE does not support for this shape is simply not a candidate.
      }
    }
    tuned_[width] = choice;
  }

  Resources& res_;
  DeviceCsr graph_;
  Buffer<float> dinv_row_, dinv_col_;
  SpmmAlgo algo_;
  kernels::SpmmTuning tuning_;
  const RowOffset* host_offsets_;  ///< the graph's offsets on the host (the problem outlives the aggregation)
  std::map<std::int64_t, std::unique_ptr<kernels::CusparseSpmm>> cusparse_;
  std::map<std::int64_t, std::string> tuned_;


 public:
  [[nodiscard]] std::map<std::int64_t, std::string> spmm_choices() const override { return tuned_; }
};

/// Gather: forward all-gathers the rows into the table and aggregates from it; backward aggregates into the
/// table with the transposed matrix and reduce-scatters each block back to its owner. On CUDA both matrices carry
/// their long-row lists (plan buffers gather_long_* / gather_t_long_*), so each product is the own SpMM's one launch.
///
/// Overlap (CUDA, opt-in: GcnConfig::gather_chunks = 2..4, see chunks()). The width is cut into column chunks (each
/// a multiple of 8 columns) with a table
/// and staging slice each; collectives run on a communication stream of their own and events order the two
/// streams, so forward's SpMM of chunk c runs while chunk c + 1 is being all-gathered, and backward's
/// reduce-scatter of chunk c while chunk c + 1 is being aggregated. No host synchronisation. On CPU devices the
/// calls are synchronous anyway: one chunk.
class GatherAggregation final : public ByStorageType<GatherAggregation> {
 public:
  GatherAggregation(Resources& res, const GatherTable& p, std::int64_t rows, Communicator* comm, SpmmAlgo algo,
                    const AllocationPlan& plan, const kernels::SpmmTuning& tuning, int chunks)
      : res_(res),
        comm_(comm),
        rows_(rows),
        block_(p.table_block),
        parts_(p.parts),
        forward_(res, plan, "gather_offsets", "gather_columns", p.forward, p.table_block * p.parts, "gather_long"),
        backward_(res, plan, "gather_t_offsets", "gather_t_columns", p.backward, rows, "gather_t_long"),
        algo_(algo == SpmmAlgo::kCusparse ? SpmmAlgo::kOwn : algo),
        tuning_(tuning),
        wanted_chunks_(chunks) {
    GCNPART_EXPECTS(comm != nullptr && comm->size() == p.parts, "the gather strategy needs a communicator of its parts");
    if (chunks < 1 || chunks > kMaxChunks)
      throw InvalidInput::parameter("--gather-chunks", std::to_string(chunks), "1.." + std::to_string(kMaxChunks));
    dinv_own_ = upload_planned(res, plan, "dinv_own", p.dinv_own);
    table_dinv_ = upload_planned(res, plan, "table_dinv", p.table_dinv);
    // Staging block and table, as wide as the widest aggregation.
    staging_ = take<float>(res, plan, "gather_staging");
    table_ = take<float>(res, plan, "gather_table");
    kernels::memset_zero_async(res.context(), staging_.data(), staging_.bytes());
    // bf16 models: forward's table travels as bf16 (half the all-gather's bytes), laid out in table_'s memory;
    // backward's reduce-scatter stays float32 (it sums).
    staging16_ = take_if_planned<kernels::Bf16>(res, plan, "gather_staging_bf16");
    if (!staging16_.empty()) kernels::memset_zero_async(res.context(), staging16_.data(), staging16_.bytes());
    if (res.context().is_cuda()) {
      res.activate();
      // Highest priority: NCCL's blocks are scheduled ahead of the SpMM's as SMs free up, so a collective is not held
      // back (with its peer GPU waiting) by the kernel it overlaps.
      comm_stream_ = create_stream(true);
      for (int i = 0; i <= kMaxChunks; ++i) events_.emplace_back(kernels::CudaEvent::Kind::kOrdering);
      comm_ctx_ = res.context();
      comm_ctx_.stream = comm_stream_.get();
    }
  }

  GatherAggregation(const GatherAggregation&) = delete;
  GatherAggregation& operator=(const GatherAggregation&) = delete;

 private:
  friend ByStorageType<GatherAggregation>;
  /// The table's rows in storage type T: float, or bf16 laid out in table_'s memory (forward's table travels as
  /// bf16: half the all-gather's bytes); the staging block likewise.
  template <class T>
  T* table_of() {
    if constexpr (std::is_same_v<T, float>) {
      return table_.data();
    } else {
      return reinterpret_cast<T*>(table_.data());
    }
  }
  template <class T>
  T* staging_of() {
    if constexpr (std::is_same_v<T, float>) {
      return staging_.data();
    } else {
      GCNPART_EXPECTS(!staging16_.empty(), "GatherAggregation was built without bf16 buffers");
      return staging16_.data();
    }
  }

  template <class T>
  void forward_rows(const T* x, float* y, std::int64_t width) {
    if constexpr (std::is_same_v<T, kernels::Bf16>) {
      if ((block_ * width) % 2 != 0) return forward_odd_bf16(x, y, width);
    }
    gather_and_aggregate(x, staging_of<T>(), table_of<T>(), y, width,
                         [&](const T* t, std::int64_t ld, float* out, std::int64_t w) {
                           spmm_rows(res_.context(), forward_.view, dinv_own_.data(), table_dinv_.data(),
                                     kernels::make_view(t, forward_.view.num_cols, w, ld),
                                     kernels::make_view(out, forward_.view.num_rows, w, width), algo_, tuning_);
                         });
  }

  template <class T>
  void backward_rows(const T* dy, float* dx, std::int64_t width) {
    aggregate_and_reduce(dx, width, [&](std::int64_t c0, float* t, std::int64_t w) {
      spmm_rows(res_.context(), backward_.view, table_dinv_.data(), dinv_own_.data(),
                kernels::make_view(dy + c0, backward_.view.num_cols, w, width),
                kernels::make_view(t, backward_.view.num_rows, w), algo_, tuning_);
    });
  }

  void forward_odd_bf16(const kernels::Bf16* x, float* y, std::int64_t width) {
    GCNPART_EXPECTS(!staging16_.empty(), "GatherAggregation was built without bf16 buffers");
    auto* table16 = table_of<kernels::Bf16>();
    // An odd element count per block: NCCL moves whole float words, so every block carries one padding element,
    // which breaks the row layout: widen block by block into a float table of the plain layout.
    const auto& ctx = res_.context();
    const std::int64_t words = (block_ * width + 1) / 2;
    kernels::copy_async(ctx, staging16_.data(), x, static_cast<std::size_t>(rows_ * width) * sizeof(kernels::Bf16));
    comm_->all_gather(ctx, reinterpret_cast<float*>(staging16_.data()), words, table_.data());
    widen_padded_table(table16, words, width);
    kernels::spmm_async(ctx, forward_.view, dinv_own_.data(), table_dinv_.data(),
                        kernels::make_view(table_.data(), forward_.view.num_cols, width),
                        kernels::make_view(y, forward_.view.num_rows, width), algo_, tuning_);
  }

  /// Column chunks per collective on CUDA when GcnConfig::gather_chunks asks for them (2..kMaxChunks). Off by default:
  /// on 2 H200s (NVLink, RMAT scale 21, hidden 256) 2 and 4 chunks made the gather epoch 1.5x and 2x slower than
  /// one (60.1 and 80.9 ms against 40.5), high-priority communication stream or not: the collectives' time grew
  /// more than the SpMM time they hid (bench/results/h200x2-2026-11-29b).
  static constexpr int kMaxChunks = kMaxGatherChunks;
  static constexpr std::int64_t kChunkAlign = 8;    ///< chunk widths: multiples of 8 columns (16-byte bf16 loads)
  static constexpr std::int64_t kMinChunkWidth = 32;

  /// Column chunks [c0, c0 + w) of a width: one on CPU devices or for narrow widths.
  [[nodiscard]] std::vector<std::pair<std::int64_t, std::int64_t>> chunks(std::int64_t width) const {
    const int wanted = wanted_chunks_;
    std::vector<std::pair<std::int64_t, std::int64_t>> out;
    if (comm_stream_ == nullptr || wanted == 1 || width < kMinChunkWidth) {
      out.emplace_back(0, width);
      return out;
    }
    const std::int64_t step = ((width + wanted - 1) / wanted + kChunkAlign - 1) / kChunkAlign * kChunkAlign;
    for (std::int64_t c0 = 0; c0 < width; c0 += step) out.emplace_back(c0, std::min(step, width - c0));
    return out;
  }

  /// Element type T of the gathered rows (float, or bf16 moved as float words: block * width is even here).
  template <class T, class Aggregate>
  void gather_and_aggregate(const T* x, T* staging, T* table, float* y, std::int64_t width, Aggregate&& aggregate) {
    const auto& ctx = res_.context();
    const auto parts = chunks(width);
    auto words = [&](std::int64_t w) { return block_ * w * static_cast<std::int64_t>(sizeof(T)) / 4; };
    if (parts.size() == 1) {
      kernels::copy_async(ctx, staging, x, static_cast<std::size_t>(rows_ * width) * sizeof(T));
      comm_->all_gather(ctx, reinterpret_cast<const float*>(staging), words(width), reinterpret_cast<float*>(table));
      aggregate(table, width, y, width);
      return;
    }
    // Chunk c: staging rows of w_c columns at staging + block * c0, its table at table + parts * block * c0.
    for (const auto& [c0, w] : parts)
      copy_rows_async(staging + block_ * c0, w * sizeof(T), x + c0, width * sizeof(T), w * sizeof(T), rows_,
                      ctx.stream);
    events_[0].record(ctx.stream);
    events_[0].make_wait(comm_stream_.get());
    for (std::size_t c = 0; c < parts.size(); ++c) {
      const auto [c0, w] = parts[c];
      comm_->all_gather(comm_ctx_, reinterpret_cast<const float*>(staging + block_ * c0), words(w),
                        reinterpret_cast<float*>(table + parts_ * block_ * c0));
      events_[c + 1].record(comm_stream_.get());
    }
    for (std::size_t c = 0; c < parts.size(); ++c) {
      const auto [c0, w] = parts[c];
      events_[c + 1].make_wait(ctx.stream);
      aggregate(table + parts_ * block_ * c0, w, y + c0, w);
    }
  }

  /// aggregate(c0, t, w): the SpMM of columns [c0, c0 + w) into the table slice t (ld w).
  template <class Aggregate>
  void aggregate_and_reduce(float* dx, std::int64_t width, Aggregate&& aggregate) {
    const auto& ctx = res_.context();
    const auto parts = chunks(width);
    if (parts.size() == 1) {
      aggregate(0, table_.data(), width);
      comm_->reduce_scatter_sum(ctx, table_.data(), block_ * width, staging_.data());
      kernels::copy_async(ctx, dx, staging_.data(), static_cast<std::size_t>(rows_ * width) * sizeof(float));
      return;
    }
    for (std::size_t c = 0; c < parts.size(); ++c) {
      const auto [c0, w] = parts[c];
      aggregate(c0, table_.data() + parts_ * block_ * c0, w);
      events_[c + 1].record(ctx.stream);
      events_[c + 1].make_wait(comm_stream_.get());
      comm_->reduce_scatter_sum(comm_ctx_, table_.data() + parts_ * block_ * c0, block_ * w,
                                staging_.data() + block_ * c0);
    }
    events_[0].record(comm_stream_.get());
    events_[0].make_wait(ctx.stream);
    for (const auto& [c0, w] : parts)
      copy_rows_async(dx + c0, width * sizeof(float), staging_.data() + block_ * c0, w * sizeof(float),
                      w * sizeof(float), rows_, ctx.stream);
  }

  /// table16 holds parts blocks of 2 * words bf16; rewrite table_ as parts blocks of block * width floats. Block p's
  /// floats start at or after its bf16 start and end past it, so go from the last block down and copy each bf16
  /// block out to staging16_ first.
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
  SpmmAlgo algo_;
  kernels::SpmmTuning tuning_;
  int wanted_chunks_;
  Buffer<float> dinv_own_, table_dinv_, staging_, table_;
  Buffer<kernels::Bf16> staging16_;
  OwnedStream comm_stream_;
  kernels::Context comm_ctx_{};
  std::vector<kernels::CudaEvent> events_;  ///< kMaxChunks + 1 ordering events (CUDA only)
};

/// Boundary: forward packs the own rows that other devices' edges touch, exchanges them (one all-to-all of
/// per-device blocks) and aggregates from [own rows | received rows]; backward aggregates into [own | received]
/// with the transposed matrix, sends the received rows' gradients back to their owners and adds them into the own
/// rows. Messages are the precision's rows (bf16 when the forward reads bf16 rows); backward's are float32 (they are
/// summed).
///
/// Own rows are ordered [interior | boundary]: interior rows read own columns only, so they are aggregated from x
/// itself while the rows travel, and only the boundary rows wait for the exchange. On CUDA the exchange runs on a
/// high-priority second stream ordered by events (no host synchronisation); on CPU devices the calls run in order.
/// Row ranges of a matrix are views with shifted offsets, so every SpMM is gcnpart's own kernel. On CUDA each range
/// carries its own long-row list (RangeLongRows; plan buffers boundary_long_* / boundary_t_long_*).
class BoundaryAggregation final : public ByStorageType<BoundaryAggregation> {
 public:
  BoundaryAggregation(Resources& res, const BoundaryExchange& p, std::int64_t rows, Communicator* comm,
                      const AllocationPlan& plan, const kernels::SpmmTuning& tuning, bool overlap)
      : res_(res),
        comm_(comm),
        own_(rows),
        interior_(p.interior_rows),
        local_(p.backward.num_nodes),
        recv_counts_(p.recv_counts),
        forward_(res, plan, "boundary_offsets", "boundary_columns", p.forward, p.backward.num_nodes),
        backward_(res, plan, "boundary_t_offsets", "boundary_t_columns", p.backward, rows),
        // The ranges the products run on (exchange_and_aggregate, aggregate_and_return).
        forward_lists_(res, plan, "boundary_long", forward_, p.forward,
                       overlap ? std::vector<std::pair<std::int64_t, std::int64_t>>{{0, p.interior_rows},
                                                                                    {p.interior_rows, rows}}
                               : std::vector<std::pair<std::int64_t, std::int64_t>>{{0, rows}}),
        backward_lists_(res, plan, "boundary_t_long", backward_, p.backward,
                        {{rows, p.backward.num_nodes}, {0, rows}}),
        tuning_(tuning),
        overlap_(overlap) {
    GCNPART_EXPECTS(comm != nullptr && comm->size() == p.parts,
                    "the boundary strategy needs a communicator of its parts");
    GCNPART_EXPECTS(static_cast<int>(p.send_rows.size()) == p.parts && static_cast<int>(p.recv_counts.size()) == p.parts,
                    "a boundary problem lists send rows and receive counts per device");
    GCNPART_EXPECTS(interior_ >= 0 && interior_ <= own_, "interior rows within the own rows");
    std::int64_t received = own_;
    for (auto c : recv_counts_) received += c;
    GCNPART_EXPECTS(received == local_, "own rows + received rows = the local matrix's columns");
    std::vector<NodeId> flat;
    for (const auto& rows : p.send_rows) {
      send_counts_.push_back(static_cast<std::int64_t>(rows.size()));
      flat.insert(flat.end(), rows.begin(), rows.end());
    }
    sent_rows_ = static_cast<std::int64_t>(flat.size());
    send_index_ = upload_planned(res, plan, "send_rows", flat);
    dinv_own_ = upload_planned(res, plan, "dinv_own", p.dinv_own);
    dinv_local_ = upload_planned(res, plan, "dinv_local", p.dinv_local);
    // Source rows and outbox as wide as the widest aggregation; bf16 ones when the model stores bf16.
    source_ = take<float>(res, plan, "boundary_source");
    outbox_ = take<float>(res, plan, "boundary_outbox");
    source16_ = take_if_planned<kernels::Bf16>(res, plan, "boundary_source_bf16");
    outbox16_ = take_if_planned<kernels::Bf16>(res, plan, "boundary_outbox_bf16");
    comm_ctx_ = res.context();
    if (res.context().is_cuda() && overlap_) {
      res.activate();
      // Highest priority: NCCL's blocks are scheduled ahead of the SpMM's as SMs free up, so a collective is not held
      // back (with its peer GPU waiting) by the kernel it overlaps.
      comm_stream_ = create_stream(true);
      for (int i = 0; i < 2; ++i) events_.emplace_back(kernels::CudaEvent::Kind::kOrdering);
      comm_ctx_.stream = comm_stream_.get();
    }
  }

  BoundaryAggregation(const BoundaryAggregation&) = delete;
  BoundaryAggregation& operator=(const BoundaryAggregation&) = delete;

 private:
  friend ByStorageType<BoundaryAggregation>;
  /// Messages travel in the rows' storage type: bf16 source and outbox rows for bf16 input.
  template <class T>
  void forward_rows(const T* x, float* y, std::int64_t width) {
    T* source = nullptr;
    T* outbox = nullptr;
    if constexpr (std::is_same_v<T, float>) {
      source = source_.data();
      outbox = outbox_.data();
    } else {
      GCNPART_EXPECTS(!source16_.empty() || local_ * width == 0, "BoundaryAggregation was built without bf16 buffers");
      source = source16_.data();
      outbox = outbox16_.data();
    }
    exchange_and_aggregate(x, source, outbox, y, width,
                           [&](const CsrView& a, const float* row_scale, const T* in, float* out) {
                             spmm_rows(res_.context(), a, row_scale, dinv_local_.data(),
                                       kernels::make_view(in, a.num_cols, width),
                                       kernels::make_view(out, a.num_rows, width), SpmmAlgo::kOwn, tuning_);
                           });
  }

  template <class T>
  void backward_rows(const T* dy, float* dx, std::int64_t width) {
    aggregate_and_return(dx, width, [&](const CsrView& a, const float* row_scale, float* out) {
      spmm_rows(res_.context(), a, row_scale, dinv_own_.data(), kernels::make_view(dy, a.num_cols, width),
                kernels::make_view(out, a.num_rows, width), SpmmAlgo::kOwn, tuning_);
    });
  }

  /// Blocks of `rows` rows of `row_bytes` each, per device.
  void exchange(const kernels::Context& ctx, const void* send, const std::vector<std::int64_t>& send_rows,
                void* recv, const std::vector<std::int64_t>& recv_rows, std::int64_t row_bytes) {
    std::vector<std::int64_t> send_bytes(send_rows.size()), recv_bytes(recv_rows.size());
    for (std::size_t q = 0; q < send_rows.size(); ++q) {
      send_bytes[q] = send_rows[q] * row_bytes;
      recv_bytes[q] = recv_rows[q] * row_bytes;
    }
    comm_->all_to_all_v(ctx, send, send_bytes, recv, recv_bytes);
  }

  /// Makes `stream` wait for the work queued so far on `after`, through events_[event] (CUDA; CPU calls are in
  /// order anyway).
  void order(cudaStream_t after, cudaStream_t stream, std::size_t event) {
    if (comm_stream_ == nullptr) return;
    events_[event].record(after);
    events_[event].make_wait(stream);
  }

  /// T: the element type of x and of the messages. aggregate(a, row_scale, in, out): out = a in (ld width).
  template <class T, class Aggregate>
  void exchange_and_aggregate(const T* x, T* source, T* outbox, float* y, std::int64_t width, Aggregate&& aggregate) {
    const auto& ctx = res_.context();
    kernels::gather_rows_async(ctx, kernels::make_view(x, own_, width), send_index_.data(),
                               kernels::make_view(outbox, sent_rows_, width));
    order(ctx.stream, comm_stream_.get(), 0);
    exchange(comm_ctx_, outbox, send_counts_, source + own_ * width, recv_counts_,
             width * static_cast<std::int64_t>(sizeof(T)));
    // While the boundary rows travel: the interior rows, straight from x (without overlap: all rows after it).
    const std::int64_t first = overlap_ ? interior_ : 0;
    // Interior rows reference own columns only: their matrix has the own rows as its columns.
    if (overlap_) aggregate(forward_lists_.rows_of(forward_.view, 0, interior_, own_), dinv_own_.data(), x, y);
    kernels::copy_async(ctx, source, x, static_cast<std::size_t>(own_ * width) * sizeof(T));
    order(comm_stream_.get(), ctx.stream, 1);
    aggregate(forward_lists_.rows_of(forward_.view, first, own_), dinv_own_.data() + first, source,
              y + first * width);
  }

  /// aggregate(a, row_scale, out): out = a dy (ld width) for a row range a of the transposed matrix.
  template <class Aggregate>
  void aggregate_and_return(float* dx, std::int64_t width, Aggregate&& aggregate) {
    const auto& ctx = res_.context();
    // The received rows' gradients first, so that they travel while the own rows are aggregated.
    float* returned = source_.data() + own_ * width;
    aggregate(backward_lists_.rows_of(backward_.view, own_, local_), dinv_local_.data() + own_, returned);
    order(ctx.stream, comm_stream_.get(), 0);
    exchange(comm_ctx_, returned, recv_counts_, outbox_.data(), send_counts_,
             width * static_cast<std::int64_t>(sizeof(float)));
    aggregate(backward_lists_.rows_of(backward_.view, 0, own_), dinv_local_.data(), dx);
    order(comm_stream_.get(), ctx.stream, 1);
    kernels::scatter_add_rows_async(ctx, kernels::make_view<const float>(outbox_.data(), sent_rows_, width),
                                    send_index_.data(), kernels::make_view(dx, own_, width));
  }

  Resources& res_;
  Communicator* comm_;
  std::int64_t own_, interior_, local_, sent_rows_ = 0;
  std::vector<std::int64_t> send_counts_, recv_counts_;
  DeviceCsr forward_, backward_;
  RangeLongRows forward_lists_, backward_lists_;
  kernels::SpmmTuning tuning_;
  bool overlap_ = true;
  Buffer<NodeId> send_index_;
  Buffer<float> dinv_own_, dinv_local_, source_, outbox_;
  Buffer<kernels::Bf16> source16_, outbox16_;
  OwnedStream comm_stream_;
  kernels::Context comm_ctx_{};
  std::vector<kernels::CudaEvent> events_;  ///< 2 ordering events (CUDA only)
};

}  // namespace

bool Aggregation::apply_rounded_async(Pass, const kernels::Bf16*, kernels::Bf16*, float*, std::int64_t) {
  return false;
}

void Aggregation::apply_rows_async(Pass, StoredRows, float*, std::int64_t, std::int64_t, std::int64_t) {
  GCNPART_EXPECTS(false, "row ranges of an aggregation are computed only on one device's own graph");
}

void Aggregation::apply_rows_rounded_async(Pass, const kernels::Bf16*, kernels::Bf16*, float*, std::int64_t,
                                           std::int64_t, std::int64_t) {
  GCNPART_EXPECTS(false, "row ranges of an aggregation are computed only on one device's own graph");
}

std::unique_ptr<Aggregation> make_aggregation(Resources& res, const LocalProblem& problem, Communicator* comm,
                                              SpmmAlgo algo, const AllocationPlan& plan,
                                              const std::vector<std::int64_t>& spmm_widths,
                                              const kernels::SpmmTuning& tuning, int gather_chunks,
                                              bool boundary_overlap) {
  const std::int64_t rows = problem.num_rows;
  return std::visit(
      [&](const auto& structure) -> std::unique_ptr<Aggregation> {
        using S = std::decay_t<decltype(structure)>;
        if constexpr (std::is_same_v<S, GatherTable>) {
          return std::make_unique<GatherAggregation>(res, structure, rows, comm, algo, plan, tuning, gather_chunks);
        } else if constexpr (std::is_same_v<S, BoundaryExchange>) {
          return std::make_unique<BoundaryAggregation>(res, structure, rows, comm, plan, tuning, boundary_overlap);
        } else {
          return std::make_unique<LocalAggregation>(res, structure, problem.num_cols, algo, plan, spmm_widths, tuning);
        }
      },
      problem.structure);
}

}  // namespace gcnpart::engine
