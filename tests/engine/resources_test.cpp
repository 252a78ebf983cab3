#include "engine/resources.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "base/error.hpp"
#include "base/stats.hpp"
#include "engine/trainer.hpp"

using namespace gcnpart;
using namespace gcnpart::engine;

TEST_CASE("a device spec parses as cpu, cpu:N, cuda or cuda:N and anything else names --device") {
  CHECK(Device::parse("cpu:2").name() == "cpu:2");
  CHECK(Device::parse("cuda").is_cuda());
  CHECK_THROWS_WITH_AS(Device::parse("tpu"), doctest::Contains("--device"), InvalidInput);
}

TEST_CASE("--device cuda fails with a typed error when no CUDA device can serve it") {
#if GCNPART_HAVE_CUDA
  const int n = cuda_device_count();
  if (n > 0) {  // a GPU machine: one device past the last
    CHECK_THROWS_WITH_AS(Resources(Device{Backend::kCuda, n}), doctest::Contains("cuda:0..cuda:"), InvalidInput);
  } else {
    CHECK_THROWS_WITH_AS(Resources(Device::parse("cuda:0")), doctest::Contains("none is visible"), InvalidInput);
  }
#else
  CHECK_THROWS_WITH_AS(Resources(Device::parse("cuda:0")),
                       doctest::Contains("--device cuda:0: this build has no CUDA"), NoCudaBuild);
  CHECK(cuda_device_name(0).empty());
  // Host resources still work.
  Resources cpu(Device::parse("cpu"));
  CHECK_FALSE(cpu.context().is_cuda());
  CHECK(cpu.driver_used_bytes() == 0);
#endif
}

TEST_CASE("timed epochs leave out the warm-up epoch (unless it is the only one) and come sorted") {
  using gcnpart::engine::timed_epochs;
  CHECK(timed_epochs({}).empty());
  CHECK(timed_epochs({0.9}) == std::vector<double>{0.9});
  CHECK(timed_epochs({0.9, 0.3, 0.1, 0.2}) == std::vector<double>{0.1, 0.2, 0.3});
  CHECK(gcnpart::median(timed_epochs({0.9, 0.4, 0.1, 0.2, 0.3})) == doctest::Approx(0.25));
}
