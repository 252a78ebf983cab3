// Plain collectives timed on a communicator: the peer the training's communication is compared with in the same
// run (same communicator, same bytes per call, same timing method), and `gcnpart bench nccl`.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/communicator.hpp"
#include "engine/resources.hpp"

namespace gcnpart::engine {

/// One plain collective of one size, timed `repeats` times after `warmup` untimed calls.
struct CollectiveTiming {
  CollectiveKind kind = CollectiveKind::kAllGather;
  std::int64_t payload_bytes = 0;  ///< per call and rank, as CommTally::payload_bytes
  int ranks = 1;
  std::int64_t bytes_sent = 0;  ///< per call and rank, as Communicator::bytes_sent() counts them (ring bytes)
  int repeats = 0;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  /// Bus bandwidth (nccl-tests' busbw): bytes_sent / median time, GB/s (1e9 bytes).
  [[nodiscard]] double bus_GBps() const noexcept;
  /// Algorithm bandwidth (nccl-tests' algbw): the gathered / reduced buffer over the median time, GB/s.
  [[nodiscard]] double alg_GBps() const noexcept;
};

inline constexpr int kLinkWarmup = 3;
inline constexpr int kLinkRepeats = 11;  ///< median of >= 10 timed calls

/// Times `kind` (all-gather, all-reduce or reduce-scatter of floats) with `payload_bytes` per rank on `comm`,
/// using the communicator's own per-call timing (CUDA events for NCCL, wall time for the CPU communicators),
/// with a barrier before each call so that every rank starts together. Buffers come from res's tracked memory.
/// Collective: every rank calls it with the same arguments. Synchronises.
/// @throws InvalidInput for a payload that is not a positive multiple of 4 bytes, or a point-to-point kind.
CollectiveTiming benchmark_collective(Communicator& comm, Resources& res, CollectiveKind kind,
                                      std::int64_t payload_bytes, int warmup = kLinkWarmup,
                                      int repeats = kLinkRepeats);

/// `gcnpart bench nccl`: every kind at every size on `devices` devices of `backend` (one thread each, or this
/// process as one rank of an mpirun job when `mpi`). Per (kind, size), the slowest rank's median (a collective
/// ends when its last rank does). @throws the first rank's error; InvalidInput for too few CUDA devices.
std::vector<CollectiveTiming> sweep_collectives(Backend backend, int devices, bool mpi,
                                                const std::vector<CollectiveKind>& kinds,
                                                const std::vector<std::int64_t>& payload_bytes,
                                                int warmup = kLinkWarmup, int repeats = kLinkRepeats);

}  // namespace gcnpart::engine
