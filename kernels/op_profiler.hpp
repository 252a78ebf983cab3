// Where an epoch's time goes, by kind of kernel: every kernels:: operation a Context with a profiler runs is timed
// (CUDA events on the context's stream around the operation, or the host clock on CPU) and attributed to its class
// from its name (spmm*, gemm*, everything else). Nested calls count once, in the outermost operation. For one
// profiled epoch: attach, run, detach, synchronise, read summary(). Operations outside kernels:: (cuSPARSE plans
// run by the engine, communication) are not attributed; their time shows as the gap to the epoch's total.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
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

/// The name of an operation from its backend call's text: "spmm_bf16(ctx, a, ...)" -> "spmm_bf16".
[[nodiscard]] constexpr std::string_view op_name(std::string_view call) noexcept {
  const auto paren = call.find('(');
  return paren == std::string_view::npos ? call : call.substr(0, paren);
}

/// Time and calls of one operation name (the backend function, e.g. "relu_dropout_backward_bf16").
struct OpTime {
  std::string name;
  OpClass op = OpClass::kOther;
  double ms = 0;
  std::int64_t calls = 0;
};

struct OpProfile {
  std::array<double, 3> ms{};           ///< time inside operations of each class
  std::array<std::int64_t, 3> calls{};  ///< operations of each class
  std::vector<OpTime> ops;              ///< by operation name, slowest first
  [[nodiscard]] double total_ms() const noexcept { return ms[0] + ms[1] + ms[2]; }
};

class OpProfiler {
 public:
  OpProfiler();
  ~OpProfiler();
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  /// Called by kernels:: operations (through ProfileScope): the outermost begin/end pair is timed.
  /// `call`: the backend call's text (a string literal: it is kept, not copied); its name and class are derived.
  void begin(std::string_view call, bool cuda, cudaStream_t stream);
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
