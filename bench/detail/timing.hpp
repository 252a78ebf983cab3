// What the benchmarks share behind bench/bench.hpp: CUDA-event timing, the report stamp, tracked scratch.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/memory.hpp"
#include "kernels/cuda_event.hpp"

namespace gcnpart::bench::detail {

/// The one CUDA event type of the project (kernels/cuda_event.hpp).
using Event = kernels::CudaEvent;
using kernels::elapsed_ms;

/// Times `call` on `stream`: `warmup` untimed calls, then `repeats` calls each between two events (the L2 flush,
/// when given, is written before each start event and is not timed). Returns milliseconds per call.
std::vector<double> time_calls(cudaStream_t stream, int warmup, int repeats, engine::Buffer<std::uint8_t>* flush,
                               const std::function<void()>& call);

/// cudaMemsetAsync, cudaMemcpyAsync (any direction) and cudaStreamSynchronize for the harnesses. @throws DeviceError,
/// or NoCudaBuild in a CPU-only build (where no benchmark gets this far: cuda_device() refuses first).
void fill_bytes_async(void* p, int value, std::size_t bytes, cudaStream_t stream);
void copy_bytes_async(void* dst, const void* src, std::size_t bytes, cudaStream_t stream);
void synchronize_stream(cudaStream_t stream);
/// Clears a non-sticky CUDA error so that the next call starts clean.
void clear_cuda_error() noexcept;

/// The current UTC time as "2026-11-29T18:40:00Z" and the commit gcnpart was built from.
std::string now_iso();
std::string commit();
/// "1,234,567"
std::string commas(std::int64_t v);

}  // namespace gcnpart::bench::detail
