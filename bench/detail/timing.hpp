// What the benchmarks share behind bench/bench.hpp: CUDA-event timing, the report stamp, tracked scratch.
#pragma once

#include <cuda_runtime_api.h>

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

/// The current UTC time as "2026-11-29T18:40:00Z" and the commit gcnpart was built from.
std::string now_iso();
std::string commit();
/// "1,234,567"
std::string commas(std::int64_t v);

}  // namespace gcnpart::bench::detail
