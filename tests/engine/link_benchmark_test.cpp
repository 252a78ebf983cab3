// engine/link_benchmark.hpp: plain collectives timed on a communicator, on virtual CPU devices (in-process
// communicator) here and through NCCL in the gpu suite.
#include "engine/link_benchmark.hpp"

#include <doctest/doctest.h>

#include <exception>
#include <memory>
#include <thread>
#include <vector>

#include "engine/inprocess_communicator.hpp"
#include "base/error.hpp"

using namespace gcnpart;
using namespace gcnpart::engine;

namespace {

void check_sane(const CollectiveTiming& t, CollectiveKind kind, std::int64_t payload, int ranks) {
  INFO(collective_name(kind) << " of " << payload << " bytes on " << ranks << " ranks");
  CHECK(t.kind == kind);
  CHECK(t.payload_bytes == payload);
  CHECK(t.ranks == ranks);
  CHECK(t.repeats >= 10);
  CHECK(t.min_ms > 0.0);
  CHECK(t.min_ms <= t.median_ms);
  CHECK(t.median_ms <= t.max_ms);
  const std::int64_t ring = payload * ranks * (ranks - 1) / ranks;  // (K-1)/K of the gathered buffer
  CHECK(t.bytes_sent == (kind == CollectiveKind::kAllReduce ? 2 * (payload * (ranks - 1) / ranks) : ring));
  // A copy through shared memory: more than 1 MB/s, less than 10 TB/s.
  CHECK(t.bus_GBps() > 1e-3);
  CHECK(t.bus_GBps() < 1e4);
  CHECK(t.alg_GBps() > 0.0);
}

}  // namespace

TEST_CASE("the in-process all-gather, all-reduce and reduce-scatter benchmarks give positive, sane bandwidths") {
  constexpr int k = 2;
  constexpr std::int64_t payload = 1 << 20;
  const CollectiveKind kinds[] = {CollectiveKind::kAllGather, CollectiveKind::kAllReduce,
                                  CollectiveKind::kReduceScatter};
  auto group = std::make_shared<InProcessGroup>(k);
  std::vector<std::vector<CollectiveTiming>> results(k);
  std::vector<std::exception_ptr> errors(k);
  std::vector<std::thread> threads;
  for (int r = 0; r < k; ++r)
    threads.emplace_back([&, r] {
      try {
        InProcessCommunicator comm(group, r);
        Resources res(Device{Backend::kCpu, r});
        for (const auto kind : kinds) results[r].push_back(benchmark_collective(comm, res, kind, payload));
        CHECK(res.memory().stats().current == 0);  // its buffers are gone again
      } catch (...) {
        errors[r] = std::current_exception();
        group->abort(r);
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
  for (int r = 0; r < k; ++r)
    for (std::size_t i = 0; i < 3; ++i) check_sane(results[r][i], kinds[i], payload, k);
}

TEST_CASE("a sweep on 3 virtual devices times every kind at every size") {
  const std::vector<CollectiveKind> kinds = {CollectiveKind::kAllGather, CollectiveKind::kAllReduce};
  const std::vector<std::int64_t> sizes = {4096, 1 << 18};
  const auto results = sweep_collectives(Backend::kCpu, 3, false, kinds, sizes);
  REQUIRE(results.size() == 4);
  check_sane(results[0], CollectiveKind::kAllGather, 4096, 3);
  check_sane(results[1], CollectiveKind::kAllReduce, 4096, 3);
  check_sane(results[3], CollectiveKind::kAllReduce, 1 << 18, 3);
}

TEST_CASE("a payload that is not whole floats, or a point-to-point kind, is refused") {
  CHECK_THROWS_AS(sweep_collectives(Backend::kCpu, 2, false, {CollectiveKind::kAllGather}, {6}),
                  InvalidInput);
  CHECK_THROWS_AS(sweep_collectives(Backend::kCpu, 2, false, {CollectiveKind::kSend}, {64}), InvalidInput);
}

TEST_SUITE("gpu") {
  TEST_CASE("NCCL collectives on every visible GPU give positive bus bandwidths") {
    REQUIRE_MESSAGE(cuda_device_count() > 0, "no CUDA device: the gpu suite needs one");
    const int gpus = cuda_device_count();
    const auto results = sweep_collectives(Backend::kCuda, gpus, false,
                                           {CollectiveKind::kAllGather, CollectiveKind::kAllReduce}, {1 << 24});
    REQUIRE(results.size() == 2);
    for (const auto& t : results) {
      INFO(collective_name(t.kind) << " on " << gpus << " GPUs: " << t.bus_GBps() << " GB/s");
      CHECK(t.median_ms > 0.0);
      if (gpus > 1) CHECK(t.bus_GBps() > 1.0);
    }
  }
}
