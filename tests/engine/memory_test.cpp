#include "engine/memory.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <utility>

#include "engine/resources.hpp"
#include "base/error.hpp"

#if GCNPART_HAVE_CUDA
#include <cuda_runtime_api.h>

#include "base/cuda_check.hpp"
#endif

using namespace gcnpart;
using namespace gcnpart::engine;

TEST_CASE("a host resource tracks buffers by category, whatever stream they name, and frees them at once") {
  TrackingMemoryResource r(MemorySpace::kHost, 0, "cpu:0");
  {
    Buffer<float> a(r, 1000, MemoryCategory::kActivations, nullptr);
    Buffer<std::int64_t> b(r, 10, MemoryCategory::kWorkspace, nullptr);
    const MemoryStats s = r.stats();
    CHECK(s.current == 4000 + 80);
    CHECK(s.current_by[static_cast<std::size_t>(MemoryCategory::kActivations)] == 4000);
    CHECK(s.allocations == 2);
    Buffer<float> moved = std::move(a);
    CHECK(r.stats().current == 4080);  // a move hands ownership over, no second allocation
  }
  const MemoryStats s = r.stats();
  CHECK(s.current == 0);
  CHECK(s.peak == 4080);
  CHECK(s.cached == 0);  // host memory is not cached
}

#if GCNPART_HAVE_CUDA  // the gpu suite calls the CUDA runtime itself
TEST_SUITE("gpu") {
  TEST_CASE("a device block is reused on the stream that freed it at once and on another only after that stream's work") {
    REQUIRE_MESSAGE(cuda_device_count() > 0, "no CUDA device: the gpu suite needs one");
    GCNPART_CUDA_TRY(cudaSetDevice(0));
    TrackingMemoryResource r(MemorySpace::kDevice, 0, "cuda:0");
    cudaStream_t a = nullptr, b = nullptr;
    GCNPART_CUDA_TRY(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
    GCNPART_CUDA_TRY(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
    constexpr std::size_t kBytes = std::size_t{512} << 20;

    void* p = r.allocate(kBytes, MemoryCategory::kWorkspace, a);
    r.deallocate(p, kBytes, MemoryCategory::kWorkspace, a);
    CHECK(r.stats().cached == static_cast<std::int64_t>(kBytes));
    void* same = r.allocate(kBytes, MemoryCategory::kWorkspace, a);
    CHECK(same == p);  // same stream: handed back as is
    CHECK(r.stats().cached == 0);

    // Milliseconds of writes on a, then the free; b's write into the reused block must land after all of them.
    for (int i = 0; i < 20; ++i) GCNPART_CUDA_TRY(cudaMemsetAsync(same, 0x22, kBytes, a));
    r.deallocate(same, kBytes, MemoryCategory::kWorkspace, a);
    void* other = r.allocate(kBytes, MemoryCategory::kWorkspace, b);
    CHECK(other == p);  // reused across streams, behind the free's event
    GCNPART_CUDA_TRY(cudaMemsetAsync(other, 0x11, kBytes, b));
    GCNPART_CUDA_TRY(cudaStreamSynchronize(b));
    GCNPART_CUDA_TRY(cudaStreamSynchronize(a));
    unsigned char first = 0, last = 0;
    GCNPART_CUDA_TRY(cudaMemcpy(&first, other, 1, cudaMemcpyDeviceToHost));
    GCNPART_CUDA_TRY(cudaMemcpy(&last, static_cast<char*>(other) + kBytes - 1, 1, cudaMemcpyDeviceToHost));
    CHECK(first == 0x11);
    CHECK(last == 0x11);
    r.deallocate(other, kBytes, MemoryCategory::kWorkspace, b);
    r.release_cache();
    CHECK(r.stats().cached == 0);
    GCNPART_CUDA_TRY(cudaStreamDestroy(a));
    GCNPART_CUDA_TRY(cudaStreamDestroy(b));
  }
}
#endif
