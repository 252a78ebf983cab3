// engine/communicator.hpp through the in-process communicator: what every call moves is counted and timed, by
// kind and payload size, identically on every backend.
#include "engine/communicator.hpp"

#include <doctest/doctest.h>

#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/inprocess_communicator.hpp"
#include "base/error.hpp"

using namespace gcnpart;
using namespace gcnpart::engine;

namespace {

/// Runs body(comm) on `k` in-process ranks, one thread each; rethrows the first rank's error.
template <typename Body>
void on_ranks(int k, Body body) {
  auto group = std::make_shared<InProcessGroup>(k);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(k));
  std::vector<std::thread> threads;
  for (int r = 0; r < k; ++r)
    threads.emplace_back([&, r] {
      try {
        InProcessCommunicator comm(group, r);
        body(comm);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        group->abort(r);
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

const CommTally* find(const std::vector<CommTally>& v, CollectiveKind kind, std::int64_t payload) {
  for (const auto& t : v)
    if (t.kind == kind && t.payload_bytes == payload) return &t;
  return nullptr;
}

}  // namespace

TEST_CASE("every call is tallied by kind and payload size with ring bytes and a non-negative time") {
  constexpr int k = 2;
  std::vector<std::vector<CommTally>> tallies(k);
  std::vector<std::int64_t> sent(k);
  on_ranks(k, [&](Communicator& comm) {
    const kernels::Context ctx;  // CPU
    std::vector<float> a(100, 1.0f), gathered(100 * k), b(10, 2.0f), scattered(50);
    std::vector<std::int64_t> counts(3, 1);
    comm.all_gather(ctx, a.data(), 100, gathered.data());
    comm.allreduce_sum(ctx, b.data(), 10);
    comm.allreduce_sum(ctx, b.data(), 10);
    comm.allreduce_sum(ctx, counts.data(), 3);
    comm.reduce_scatter_sum(ctx, a.data(), 50, scattered.data());
    if (comm.rank() == 0) {
      comm.send(ctx, b.data(), 10, 1);
    } else {
      comm.recv(ctx, b.data(), 10, 0);
    }
    comm.barrier(ctx);  // neither counted nor timed
    const auto r = static_cast<std::size_t>(comm.rank());
    tallies[r] = comm.take_tallies();
    sent[r] = comm.bytes_sent();
    CHECK(comm.take_tallies().empty());  // a take starts a new count
    CHECK(gathered[150] == 1.0f);
    CHECK(b[0] == 8.0f);  // 2 summed twice over 2 ranks (rank 1 then receives rank 0's identical values)
  });
  for (int r = 0; r < k; ++r) {
    INFO("rank " << r);
    const auto& t = tallies[static_cast<std::size_t>(r)];
    const CommTally* gather = find(t, CollectiveKind::kAllGather, 400);
    const CommTally* reduce = find(t, CollectiveKind::kAllReduce, 40);
    const CommTally* reduce_int = find(t, CollectiveKind::kAllReduce, 24);
    const CommTally* scatter = find(t, CollectiveKind::kReduceScatter, 200);
    REQUIRE(gather != nullptr);
    REQUIRE(reduce != nullptr);
    REQUIRE(reduce_int != nullptr);
    REQUIRE(scatter != nullptr);
    CHECK(gather->calls == 1);
    CHECK(gather->bytes_sent == 400);  // (K-1)/K of the gathered 800 bytes
    CHECK(reduce->calls == 2);
    CHECK(reduce->bytes_sent == 2 * 40);  // 2 (K-1)/K of 40 bytes, twice
    CHECK(reduce_int->bytes_sent == 24);
    CHECK(scatter->bytes_sent == 200);
    const CommTally* p2p = find(t, r == 0 ? CollectiveKind::kSend : CollectiveKind::kRecv, 40);
    REQUIRE(p2p != nullptr);
    CHECK(p2p->bytes_sent == (r == 0 ? 40 : 0));
    std::int64_t total = 0;
    for (const auto& x : t) {
      CHECK(x.ms >= 0.0);
      total += x.bytes_sent;
    }
    CHECK(total == sent[static_cast<std::size_t>(r)]);
    CHECK(Communicator::total_ms(t) >= 0.0);
  }
}

TEST_CASE("a collective's time includes waiting for a slower rank") {
  std::vector<double> ms(2);
  on_ranks(2, [&](Communicator& comm) {
    const kernels::Context ctx;
    std::vector<float> x(4, 1.0f);
    if (comm.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    comm.allreduce_sum(ctx, x.data(), 4);
    ms[static_cast<std::size_t>(comm.rank())] = Communicator::total_ms(comm.take_tallies());
  });
  CHECK(ms[0] >= 20.0);  // rank 0 waited in the call for rank 1
  CHECK(ms[1] < ms[0]);
}

TEST_CASE("collective names are the JSON report's") {
  CHECK(std::string(collective_name(CollectiveKind::kAllGather)) == "all_gather");
  CHECK(std::string(collective_name(CollectiveKind::kAllReduce)) == "all_reduce");
  CHECK(std::string(collective_name(CollectiveKind::kReduceScatter)) == "reduce_scatter");
}

TEST_CASE("all_to_all_v delivers block r of rank q to rank r at q's offset, counting only what leaves the rank") {
  constexpr int k = 3;
  // Rank r sends (r + q) % 3 + 1 floats to rank q (itself included), valued 100 r + 10 q + i.
  auto count = [](int from, int to) { return static_cast<std::int64_t>((from + to) % 3 + 1); };
  std::vector<std::vector<CommTally>> tallies(k);
  on_ranks(k, [&](Communicator& comm) {
    const int r = comm.rank();
    const kernels::Context ctx;  // CPU
    std::vector<float> send;
    std::vector<std::int64_t> send_bytes(k), recv_bytes(k);
    for (int q = 0; q < k; ++q) {
      for (std::int64_t i = 0; i < count(r, q); ++i) send.push_back(static_cast<float>(100 * r + 10 * q + i));
      send_bytes[q] = count(r, q) * 4;
      recv_bytes[q] = count(q, r) * 4;
    }
    std::vector<float> recv(12, -1.0f);
    comm.all_to_all_v(ctx, send.data(), send_bytes, recv.data(), recv_bytes);
    std::size_t at = 0;
    for (int q = 0; q < k; ++q)
      for (std::int64_t i = 0; i < count(q, r); ++i) CHECK(recv[at++] == static_cast<float>(100 * q + 10 * r + i));
    CHECK(recv[at] == -1.0f);  // nothing past the last block
    std::vector<std::int64_t> wrong = send_bytes;
    wrong[static_cast<std::size_t>(r)] += 4;  // sends itself more than it receives from itself: refused on every rank
    CHECK_THROWS_AS(comm.all_to_all_v(ctx, send.data(), wrong, recv.data(), recv_bytes), InvalidInput);
    tallies[static_cast<std::size_t>(r)] = comm.take_tallies();
  });
  for (int r = 0; r < k; ++r) {
    std::int64_t to_others = 0;
    for (int q = 0; q < k; ++q)
      if (q != r) to_others += count(r, q) * 4;
    const CommTally* t = find(tallies[static_cast<std::size_t>(r)], CollectiveKind::kAllToAll, to_others);
    REQUIRE(t != nullptr);
    CHECK(t->calls == 1);
    CHECK(t->bytes_sent == to_others);
  }
  CHECK(std::string(collective_name(CollectiveKind::kAllToAll)) == "all_to_all");
}
