#include "engine/resources.hpp"

#if GCNPART_HAVE_CUDA
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>

#include "base/cuda_check.hpp"
#endif

#include <charconv>

#include "base/error.hpp"

namespace gcnpart::engine {

Device Device::parse(const std::string& spec, const std::string& parameter) {
  Device d;
  std::string kind = spec, index;
  if (const auto colon = spec.find(':'); colon != std::string::npos) {
    kind = spec.substr(0, colon);
    index = spec.substr(colon + 1);
  }
  if (kind == "cpu") {
    d.backend = Backend::kCpu;
  } else if (kind == "cuda" || kind == "gpu") {
    d.backend = Backend::kCuda;
  } else {
    throw InvalidInput::parameter(parameter, spec, "cpu, cpu:N, cuda or cuda:N");
  }
  if (!index.empty()) {
    const auto r = std::from_chars(index.data(), index.data() + index.size(), d.index);
    if (r.ec != std::errc() || r.ptr != index.data() + index.size() || d.index < 0)
      throw InvalidInput::parameter(parameter, spec, "a non-negative device number after ':'");
  }
  return d;
}

std::string Device::name() const { return std::string(is_cuda() ? "cuda:" : "cpu:") + std::to_string(index); }

#if GCNPART_HAVE_CUDA
int cuda_device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

std::string cuda_device_name(int device) {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
    (void)cudaGetLastError();
    return {};
  }
  return prop.name;
}

Resources::Resources(Device device, std::int64_t memory_limit) : device_(device) {
  if (device_.is_cuda()) {
    const int n = cuda_device_count();
    if (device_.index >= n)
      throw InvalidInput::parameter("--device", device_.name(),
                                    n == 0 ? std::string("a CUDA device, but none is visible (no GPU or driver): use "
                                                         "--device cpu")
                                           : "cuda:0..cuda:" + std::to_string(n - 1));
  }
  memory_ = std::make_unique<TrackingMemoryResource>(device_.is_cuda() ? MemorySpace::kDevice : MemorySpace::kHost,
                                                     device_.index, device_.name(), memory_limit);
  ctx_.backend = device_.backend;
  ctx_.device = device_.is_cuda() ? device_.index : -1;
  ctx_.allocator = memory_.get();
  if (device_.is_cuda()) {
    activate();
    GCNPART_CUDA_TRY(cudaFree(nullptr));  // creates the context if nothing did yet
    used_at_construction_ = driver_used_bytes();
  }
}

Resources::~Resources() {
  if (handles_ready_) {
    cudaSetDevice(device_.index);
    cudaStreamSynchronize(ctx_.stream);
    cusparseDestroy(ctx_.cusparse);
    cublasDestroy(ctx_.cublas);
    cudaStreamDestroy(ctx_.stream);
  }
}

const kernels::Context& Resources::context() {
  if (device_.is_cuda() && !handles_ready_) {
    activate();
    const std::int64_t before = driver_used_bytes();
    GCNPART_CUDA_TRY(cudaStreamCreateWithFlags(&ctx_.stream, cudaStreamNonBlocking));
    GCNPART_CUBLAS_TRY(cublasCreate(&ctx_.cublas));
    GCNPART_CUBLAS_TRY(cublasSetStream(ctx_.cublas, ctx_.stream));
    GCNPART_CUSPARSE_TRY(cusparseCreate(&ctx_.cusparse));
    GCNPART_CUSPARSE_TRY(cusparseSetStream(ctx_.cusparse, ctx_.stream));
    library_bytes_ = driver_used_bytes() - before;
    handles_ready_ = true;
  }
  return ctx_;
}

void Resources::activate() const {
  if (device_.is_cuda()) GCNPART_CUDA_TRY(cudaSetDevice(device_.index));
}

void Resources::synchronize() { kernels::synchronize(context()); }

std::int64_t Resources::driver_used_bytes() const {
  if (!device_.is_cuda()) return 0;
  std::size_t free_b = 0, total_b = 0;
  activate();
  GCNPART_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  return static_cast<std::int64_t>(total_b - free_b);
}

std::int64_t Resources::driver_free_bytes() const {
  if (!device_.is_cuda()) return 0;
  std::size_t free_b = 0, total_b = 0;
  activate();
  GCNPART_CUDA_TRY(cudaMemGetInfo(&free_b, &total_b));
  return static_cast<std::int64_t>(free_b);
}

#else  // a CPU-only build: no CUDA device exists, and Resources refuses to stand for one

int cuda_device_count() noexcept { return 0; }
std::string cuda_device_name(int) { return {}; }

Resources::Resources(Device device, std::int64_t memory_limit) : device_(device) {
  if (device_.is_cuda()) throw NoCudaBuild("--device " + device_.name());
  memory_ = std::make_unique<TrackingMemoryResource>(MemorySpace::kHost, device_.index, device_.name(), memory_limit);
  ctx_.backend = device_.backend;
  ctx_.allocator = memory_.get();
}
Resources::~Resources() = default;
const kernels::Context& Resources::context() { return ctx_; }
void Resources::activate() const {}
void Resources::synchronize() { kernels::synchronize(context()); }
std::int64_t Resources::driver_used_bytes() const { return 0; }
std::int64_t Resources::driver_free_bytes() const { return 0; }

#endif

}  // namespace gcnpart::engine
