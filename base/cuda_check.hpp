// Check macros for CUDA runtime, cuBLAS and cuSPARSE calls. A failed call throws gcnpart::DeviceError naming
// the library, the call text, file:line and the library's own message. The _NO_THROW variants (for
// destructors) print the same line to stderr and carry on.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusparse.h>

#include <cstdio>
#include <string>

#include "base/error.hpp"

namespace gcnpart::detail {

inline std::string where(const char* file, int line) { return std::string(file) + ":" + std::to_string(line); }

inline std::string cuda_message(cudaError_t status) {
  return std::string(cudaGetErrorName(status)) + ": " + cudaGetErrorString(status);
}
inline std::string cublas_message(cublasStatus_t status) {
  return std::string(cublasGetStatusName(status)) + ": " + cublasGetStatusString(status);
}
inline std::string cusparse_message(cusparseStatus_t status) {
  return std::string(cusparseGetErrorName(status)) + ": " + cusparseGetErrorString(status);
}

[[noreturn]] inline void throw_device_error(const char* library, const char* call, const char* file, int line,
                                            const std::string& message) {
  throw DeviceError(library, call, where(file, line), message);
}

inline void report_device_error(const char* library, const char* call, const char* file, int line,
                                const std::string& message) noexcept {
  std::fprintf(stderr, "gcnpart: %s error in %s at %s: %s (ignored: no-throw context)\n", library, call,
               where(file, line).c_str(), message.c_str());
}

}  // namespace gcnpart::detail

#define GCNPART_DETAIL_TRY(library, type, ok, message_fn, call, action)                          \
  do {                                                                                         \
    const type gcnpart_status_ = (call);                                                       \
    if (gcnpart_status_ != (ok))                                                               \
      ::gcnpart::detail::action(library, #call, __FILE__, __LINE__,                            \
                                ::gcnpart::detail::message_fn(gcnpart_status_));               \
  } while (0)

/// Throws gcnpart::DeviceError when a CUDA runtime call does not return cudaSuccess.
#define GCNPART_CUDA_TRY(call) \
  GCNPART_DETAIL_TRY("CUDA", cudaError_t, cudaSuccess, cuda_message, call, throw_device_error)
/// Throws gcnpart::DeviceError when a cuBLAS call does not return CUBLAS_STATUS_SUCCESS.
#define GCNPART_CUBLAS_TRY(call) \
  GCNPART_DETAIL_TRY("cuBLAS", cublasStatus_t, CUBLAS_STATUS_SUCCESS, cublas_message, call, throw_device_error)
/// Throws gcnpart::DeviceError when a cuSPARSE call does not return CUSPARSE_STATUS_SUCCESS.
#define GCNPART_CUSPARSE_TRY(call)                                                                    \
  GCNPART_DETAIL_TRY("cuSPARSE", cusparseStatus_t, CUSPARSE_STATUS_SUCCESS, cusparse_message, call, \
                     throw_device_error)

#define GCNPART_CUDA_TRY_NO_THROW(call) \
  GCNPART_DETAIL_TRY("CUDA", cudaError_t, cudaSuccess, cuda_message, call, report_device_error)
#define GCNPART_CUBLAS_TRY_NO_THROW(call) \
  GCNPART_DETAIL_TRY("cuBLAS", cublasStatus_t, CUBLAS_STATUS_SUCCESS, cublas_message, call, report_device_error)
#define GCNPART_CUSPARSE_TRY_NO_THROW(call)                                                           \
  GCNPART_DETAIL_TRY("cuSPARSE", cusparseStatus_t, CUSPARSE_STATUS_SUCCESS, cusparse_message, call, \
                     report_device_error)
