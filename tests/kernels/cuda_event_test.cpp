#include "kernels/cuda_event.hpp"

#include <doctest/doctest.h>

#include <utility>
#include <vector>

#include "kernels/device_fixture.hpp"
#include "kernels/ops.hpp"

using namespace gcnpart;
using namespace gcnpart::kernels;
using gcnpart::testing::DeviceBuffer;
using gcnpart::testing::DeviceFixture;

TEST_SUITE("gpu") {

TEST_CASE("CudaEvent times work on a stream, moves its event and orders a second stream") {
  DeviceFixture f;
  DeviceBuffer<float> x(std::size_t{1} << 24);
  CudaEvent start, stop;
  start.record(f.ctx.stream);
  for (int i = 0; i < 8; ++i) memset_zero_async(f.ctx, x.data(), x.size() * sizeof(float));
  stop.record(f.ctx.stream);
  const double ms = elapsed_ms(start, stop);  // waits for stop itself
  CHECK(ms > 0.0);
  CHECK(ms < 10000.0);

  CudaEvent moved(std::move(stop));
  CHECK(stop.get() == nullptr);  // NOLINT(bugprone-use-after-move): the moved-from event is empty
  CHECK(moved.get() != nullptr);
  CHECK(elapsed_ms(start, moved) == doctest::Approx(ms));
  CudaEvent other;
  other = std::move(moved);  // the target's own event is destroyed, not leaked
  CHECK(moved.get() == nullptr);  // NOLINT(bugprone-use-after-move)

  CudaEvent order(CudaEvent::Kind::kOrdering);
  cudaStream_t second = nullptr;
  GCNPART_CUDA_TRY(cudaStreamCreateWithFlags(&second, cudaStreamNonBlocking));
  order.record(f.ctx.stream);
  order.make_wait(second);
  order.synchronize();
  CHECK(cudaStreamQuery(second) == cudaSuccess);
  GCNPART_CUDA_TRY(cudaStreamDestroy(second));
  CHECK_THROWS_AS(elapsed_ms(order, start), DeviceError);  // an ordering event carries no time
  (void)cudaGetLastError();
}

}  // TEST_SUITE("gpu")
