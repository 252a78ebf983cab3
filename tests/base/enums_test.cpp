#include "base/enums.hpp"

#include <doctest/doctest.h>

#include "enum_round_trip.hpp"

#include <string>

using namespace gcnpart;

namespace {

using gcnpart::testing::check_round_trip;

}  // namespace

TEST_CASE("every precision, backend and SpMM name parses back to its enumerator and unknown names list the valid ones") {
  check_round_trip<Precision>("--precision");
  check_round_trip<Backend>("--device");
  check_round_trip<SpmmAlgo>("--spmm");
}

TEST_CASE("the CLI's names of precisions and SpMM choices are the ones it always accepted") {
  CHECK(enum_names<Precision>() == std::vector<std::string>{"fp32", "tf32", "bf16"});
  CHECK(enum_names<SpmmAlgo>() == std::vector<std::string>{"auto", "own", "cusparse"});
  CHECK(enum_names<Backend>() == std::vector<std::string>{"cpu", "cuda"});
  CHECK(or_list({"a", "b", "c"}) == "a, b or c");
  CHECK(or_list({"a"}) == "a");
}

TEST_CASE("precision traits give storage bytes and GEMM math") {
  CHECK(traits(Precision::kFp32).storage_bytes == 4);
  CHECK(traits(Precision::kTf32).storage_bytes == 4);
  CHECK(traits(Precision::kBf16).storage_bytes == 2);
  CHECK(!traits(Precision::kFp32).tf32_gemm);
  CHECK(traits(Precision::kTf32).tf32_gemm);
  CHECK(!traits(Precision::kBf16).tf32_gemm);
  CHECK(traits(Precision::kBf16).bf16_storage);
  CHECK(!traits(Precision::kTf32).bf16_storage);
  for (const auto& row : kPrecisions) CHECK(&traits(row.value) == &row);
  CHECK(precisions_help().find("tf32 (") != std::string::npos);
}
