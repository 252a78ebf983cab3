// Where an epoch's time goes, by kind of kernel: every kernels:: operation a Context with a profiler runs is timed
// (CUDA events on the context's stream around the operation, or the host clock on CPU) and attributed to its class
// from its name (spmm*, gemm*, everything else). Nested calls count once, in the outermost operation. For one
// profiled epoch: attach, run, detach, synchronise, read summary(). Operations outside kernels:: (cuSPARSE plans
// run by the engine, communication) are not attributed; their time shows as the gap to the epoch's total.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

typedef struct CUstream_st* cudaStream_t;

namespace gcnpart::kernels {

enum class OpClass { kSpmm, kGemm, kOther };
inline constexpr std::array<const char*, 3> kOpClassNames{"spmm", "gemm", "other"};

/// The class of an operation from its backend function's name: "spmm..." -> kSpmm, "gemm..." -> kGemm.
[[nodiscard]] constexpr OpClass op_class(std::string_view call) noexcept {
  if (call.substr(0, 4) == "spmm") return OpClass::kSpmm;
  if (call.substr(0, 4) == "gemm") return OpClass::kGemm;
  return OpClass::kOther;
}

struct OpProfile {
  std::array<double, 3> ms{};           ///< time inside operations of each class
  std::array<std::int64_t, 3> calls{};  ///< operations of each class
  [[nodiscard]] double total_ms() const noexcept { return ms[0] + ms[1] + ms[2]; }
};

class OpProfiler {
 public:
  OpProfiler();
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  /// Called by kernels:: operations (through ProfileScope): the outermost begin/end pair is timed.
  void begin(OpClass c, bool cuda, cudaStream_t stream);
  void end(bool cuda, cudaStream_t stream);
  /// The sums since construction or reset(). CUDA: the stream must have finished the profiled work (synchronise
  /// first). @throws DeviceError.
  [[nodiscard]] OpProfile summary() const;
  void reset();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  int depth_ = 0;
};

}  // namespace gcnpart::kernels
