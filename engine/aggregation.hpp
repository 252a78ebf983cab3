// How a device computes Â·X for its rows and the transpose for backward. Local: one SpMM with the device's own
// (symmetric) Â. Gather: all-gather every device's rows into a table, SpMM from the table; backward SpMMs into
// the table and reduce-scatters it back to the owners. Boundary: exchange only the rows other devices' edges
// touch, SpMM from [own | received]; backward returns the received rows' gradients to their owners.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <variant>

#include "engine/communicator.hpp"
#include "engine/memory.hpp"
#include "engine/planned_buffer.hpp"
#include "engine/problem.hpp"
#include "engine/resources.hpp"
#include "kernels/ops.hpp"

namespace gcnpart::engine {

/// Which product an aggregation computes: Â x (forward) or Â^T x (backward).
enum class Pass { kForward, kBackward };

/// The rows an aggregation reads, in the precision's storage type (float32, or bf16 read and widened by the own
/// SpMM: cuSPARSE has no bf16-input, fp32-output CSR SpMM).
using StoredRows = std::variant<const float*, const kernels::Bf16*>;

class Aggregation {
 public:
  virtual ~Aggregation() = default;
  /// y (the device's rows x width, float32) = Â x (Pass::kForward; x: rows x width, the device's rows) or Â^T x
  /// (Pass::kBackward), on the device's stream. Does not synchronise, except where a CPU communicator's collective
  /// does (gather, boundary); the autotuner's first call at a width times candidates and synchronises.
  virtual void apply_async(Pass pass, StoredRows x, float* y, std::int64_t width) = 0;
  /// apply_async() of bf16 rows with the output rounded to bf16 as the SpMM stores it (no float rows, no rounding pass);
  /// `scratch`: float rows of y's shape (the long rows' sums until they are rounded). Returns false, doing nothing,
  /// where the aggregation returns float rows only (gather and boundary: the caller rounds them); true for the local
  /// aggregation (one SpMM of the device's own rows).
  virtual bool apply_rounded_async(Pass pass, const kernels::Bf16* x, kernels::Bf16* y, float* scratch, std::int64_t width);
  /// Rows [begin, end) of apply_async(): y holds end - begin rows of width `width`, x all of the device's columns
  /// (the streamed executor's parts, engine/streamed_layers.hpp). Always the own kernel; the row range's entries and
  /// scales are its own, so each row's sum is the one the whole product computes (up to the order in which a long
  /// row's segments are added). Only the local aggregation (one device's own Â) has row ranges.
  /// @throws a contract error for other aggregations or a range outside the rows.
  virtual void apply_rows_async(Pass pass, StoredRows x, float* y, std::int64_t width, std::int64_t begin,
                                std::int64_t end);
  /// apply_rows_async() of bf16 rows with the output rounded to bf16 as the SpMM stores it; scratch: float rows of
  /// y's shape.
  virtual void apply_rows_rounded_async(Pass pass, const kernels::Bf16* x, kernels::Bf16* y, float* scratch,
                                        std::int64_t width, std::int64_t begin, std::int64_t end);
  /// Which SpMM the autotuner picked per width ("own", "cusparse-alg2", ...); empty when not tuned.
  [[nodiscard]] virtual std::map<std::int64_t, std::string> spmm_choices() const { return {}; }

  /// apply_async(Pass::kForward / kBackward, ...) for rows of either storage type.
  template <class T>
  void forward_async(const T* x, float* y, std::int64_t width) {
    apply_async(Pass::kForward, StoredRows{x}, y, width);
  }
  template <class T>
  void backward_async(const T* dy, float* dx, std::int64_t width) {
    apply_async(Pass::kBackward, StoredRows{dy}, dx, width);
  }
};

/// Most column chunks the gather strategy cuts a collective into (GcnConfig::gather_chunks).
inline constexpr int kMaxGatherChunks = 4;

/// Builds the aggregation a problem's structure needs (LocalProblem::structure, visited: OwnGraph -> local,
/// GatherTable -> gather, BoundaryExchange -> boundary), its buffers allocated by name from the device's allocation plan
/// (partition::allocation_plan: the graph, its normalisation, the gather table and staging or the boundary
/// exchange buffers, sized to the widest aggregation; bf16 staging when the plan lists it: the gather table and
/// boundary rows then travel as bf16 in forward).
/// spmm_widths: the widths for which a cuSPARSE plan is prepared when algo == kCusparse.
/// tuning: passed to every own-kernel SpMM. gather_chunks: column chunks per collective of the gather strategy on
/// CUDA devices (1..kMaxGatherChunks; 1 = no overlap). boundary_overlap: the boundary strategy aggregates its
/// interior rows while the boundary rows travel (on a second stream on CUDA); false: exchange, then one SpMM.
/// @throws InvalidInput for a chunk count out of range.
std::unique_ptr<Aggregation> make_aggregation(Resources& res, const LocalProblem& problem, Communicator* comm,
                                              SpmmAlgo algo, const AllocationPlan& plan,
                                              const std::vector<std::int64_t>& spmm_widths,
                                              const kernels::SpmmTuning& tuning = {}, int gather_chunks = 1,
                                              bool boundary_overlap = true);

}  // namespace gcnpart::engine
