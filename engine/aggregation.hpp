// How a device computes Â·X for its rows and the transpose for backward. Local: one SpMM with the device's own
// (symmetric) Â. Gather: all-gather every device's rows into a table, SpMM from the table; backward SpMMs into
// the table and reduce-scatters it back to the owners. Boundary: exchange only the rows other devices' edges
// touch, SpMM from [own | received]; backward returns the received rows' gradients to their owners.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "engine/communicator.hpp"
#include "engine/memory.hpp"
#include "engine/planned_buffer.hpp"
#include "engine/problem.hpp"
#include "engine/resources.hpp"
#include "kernels/ops.hpp"

namespace gcnpart::engine {

class Aggregation {
 public:
  virtual ~Aggregation() = default;
  /// y (rows x width) = Â x (x: rows x width, the device's rows). Asynchronous except for communication.
  virtual void forward(const float* x, float* y, std::int64_t width) = 0;
  /// dx (rows x width) = Â^T dy.
  virtual void backward(const float* dy, float* dx, std::int64_t width) = 0;
  /// forward / backward with the input stored as bf16 (fp32 accumulation and output): the --precision bf16 path.
  /// Always gcnpart's own SpMM (cuSPARSE has no bf16-input, fp32-output CSR SpMM).
  virtual void forward_bf16(const kernels::Bf16* x, float* y, std::int64_t width) = 0;
  virtual void backward_bf16(const kernels::Bf16* dy, float* dx, std::int64_t width) = 0;
  /// Whether the bf16 forward / backward can also store their output as bf16 straight from the SpMM (no float
  /// rows, no rounding pass): the local aggregation (one SpMM of the device's own rows). The others return float
  /// rows that the caller rounds.
  [[nodiscard]] virtual bool rounds_bf16_output() const { return false; }
  /// forward_bf16 / backward_bf16 with the output rounded to bf16 as the SpMM stores it; `scratch`: float rows of y's shape
  /// (the long rows' sums until they are rounded). Only where rounds_bf16_output(). @throws LogicError elsewhere.
  virtual void forward_bf16_rounded(const kernels::Bf16* x, kernels::Bf16* y, float* scratch, std::int64_t width);
  virtual void backward_bf16_rounded(const kernels::Bf16* dy, kernels::Bf16* dx, float* scratch,
                                    std::int64_t width);
  /// Which SpMM the autotuner picked per width ("own", "cusparse-alg2", ...); empty when not tuned.
  [[nodiscard]] virtual std::map<std::int64_t, std::string> spmm_choices() const { return {}; }
};

/// Most column chunks the gather strategy cuts a collective into (GcnConfig::gather_chunks).
inline constexpr int kMaxGatherChunks = 4;

/// Builds the aggregation a problem needs, its buffers allocated by name from the device's allocation plan
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
