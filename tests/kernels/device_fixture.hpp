// Test-only CUDA set-up: a cudaMalloc allocator that counts bytes, RAII device buffers, and a Context with its own
// stream and cuBLAS / cuSPARSE handles. Without a usable GPU the fixture throws, so every gpu test fails loudly.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/context.hpp"
#include "base/cuda_check.hpp"
#include "base/error.hpp"

namespace gcnpart::testing {

/// cudaMalloc / cudaFree with a running count of bytes in use (to catch leaked workspaces).
class CudaTestAllocator final : public Allocator {
 public:
  void* allocate(std::size_t bytes, MemoryCategory, cudaStream_t) override {
    void* p = nullptr;
    if (cudaMalloc(&p, bytes) != cudaSuccess) {
      cudaGetLastError();
      throw OutOfMemory("test allocator: cudaMalloc of " + std::to_string(bytes) + " bytes failed");
    }
    in_use_ += bytes;
    peak_ = std::max(peak_, in_use_);
    return p;
  }
  void deallocate(void* p, std::size_t bytes, MemoryCategory, cudaStream_t) noexcept override {
    GCNPART_CUDA_TRY_NO_THROW(cudaFree(p));
    in_use_ -= bytes;
  }
  [[nodiscard]] MemorySpace space() const noexcept override { return MemorySpace::kDevice; }
  [[nodiscard]] std::size_t in_use() const noexcept { return in_use_; }
  /// The most bytes in use at once since construction or reset_peak().
  [[nodiscard]] std::size_t peak() const noexcept { return peak_; }
  void reset_peak() noexcept { peak_ = in_use_; }

 private:
  std::size_t in_use_ = 0, peak_ = 0;
};

/// Device 0 with a stream and library handles bound to it.
class DeviceFixture {
 public:
  DeviceFixture() {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess || count == 0)
      throw std::runtime_error(std::string("gpu test needs a CUDA device, found none (") +
                               cudaGetErrorString(status) + ")");
    GCNPART_CUDA_TRY(cudaSetDevice(0));
    GCNPART_CUDA_TRY(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    GCNPART_CUBLAS_TRY(cublasCreate(&cublas_));
    GCNPART_CUBLAS_TRY(cublasSetStream(cublas_, stream_));
    GCNPART_CUSPARSE_TRY(cusparseCreate(&cusparse_));
    GCNPART_CUSPARSE_TRY(cusparseSetStream(cusparse_, stream_));
    ctx.backend = Backend::kCuda;
    ctx.device = 0;
    ctx.stream = stream_;
    ctx.cublas = cublas_;
    ctx.cusparse = cusparse_;
    ctx.allocator = &allocator;
  }
  ~DeviceFixture() {
    if (cusparse_ != nullptr) GCNPART_CUSPARSE_TRY_NO_THROW(cusparseDestroy(cusparse_));
    if (cublas_ != nullptr) GCNPART_CUBLAS_TRY_NO_THROW(cublasDestroy(cublas_));
    if (stream_ != nullptr) GCNPART_CUDA_TRY_NO_THROW(cudaStreamDestroy(stream_));
  }
  DeviceFixture(const DeviceFixture&) = delete;
  DeviceFixture& operator=(const DeviceFixture&) = delete;

  CudaTestAllocator allocator;
  kernels::Context ctx;

 private:
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cusparseHandle_t cusparse_ = nullptr;
};

/// An owning device array (cudaMalloc'd directly, outside the counted allocator).
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n_ > 0) GCNPART_CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&p_), n_ * sizeof(T)));
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    if (n_ > 0) GCNPART_CUDA_TRY(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice));
    // A pageable host-to-device cudaMemcpy may return before its DMA has landed, and the kernels under test run on a
    // non-blocking stream that does not wait for the legacy stream: wait here.
    GCNPART_CUDA_TRY(cudaDeviceSynchronize());
  }
  ~DeviceBuffer() {
    if (p_ != nullptr) GCNPART_CUDA_TRY_NO_THROW(cudaFree(p_));
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr; o.n_ = 0; }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (p_ != nullptr) GCNPART_CUDA_TRY_NO_THROW(cudaFree(p_));
      p_ = o.p_;
      n_ = o.n_;
      o.p_ = nullptr;
      o.n_ = 0;
    }
    return *this;
  }

  [[nodiscard]] T* data() const noexcept { return p_; }
  [[nodiscard]] std::size_t size() const noexcept { return n_; }
  /// Synchronises the device, then copies back.
  [[nodiscard]] std::vector<T> to_host() const {
    std::vector<T> host(n_);
    GCNPART_CUDA_TRY(cudaDeviceSynchronize());
    if (n_ > 0) GCNPART_CUDA_TRY(cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace gcnpart::testing
