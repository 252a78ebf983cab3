// The CPU-only build (configured without nvcc, or with -DGCNPART_CUDA=OFF): CUDA requests fail with NoCudaBuild.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "kernels/context.hpp"
#include "base/error.hpp"
#include "kernels/cuda_event.hpp"
#include "kernels/ops.hpp"

using namespace gcnpart;

TEST_CASE("NoCudaBuild names the request, says the build has no CUDA and maps to exit code 3") {
  const NoCudaBuild e("--device cuda:1");
  const std::string what = e.what();
  CHECK(what.rfind("--device cuda:1: ", 0) == 0);
  CHECK(what.find("this build has no CUDA") != std::string::npos);
  CHECK(what.find("--device cpu") != std::string::npos);
  CHECK(e.exit_code() == ExitCode::kInvalidInput);
}

TEST_CASE("kHaveCuda says whether the CUDA backend was compiled in") {
  CHECK(kernels::kHaveCuda == (GCNPART_HAVE_CUDA != 0));
}

#if !GCNPART_HAVE_CUDA
TEST_CASE("a CPU-only build refuses a CUDA context in every kernel call and CUDA events") {
  kernels::Context ctx;
  ctx.backend = Backend::kCuda;
  std::vector<float> x(4, 1.0f), y(4, 0.0f);
  CHECK_THROWS_AS(kernels::copy_async(ctx, y.data(), x.data(), 4 * sizeof(float)), NoCudaBuild);
  CHECK_THROWS_WITH_AS(kernels::synchronize(ctx), doctest::Contains("this build has no CUDA"), NoCudaBuild);
  CHECK_THROWS_AS(kernels::CudaEvent{}, NoCudaBuild);
  // The same calls on the CPU still run.
  ctx.backend = Backend::kCpu;
  kernels::copy_async(ctx, y.data(), x.data(), 4 * sizeof(float));
  CHECK(y[3] == 1.0f);
}
#endif
