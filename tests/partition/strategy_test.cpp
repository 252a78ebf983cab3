#include "partition/strategy.hpp"

#include <doctest/doctest.h>

#include <string>

#include "base/error.hpp"

using namespace gcnpart;
using namespace gcnpart::partition;

TEST_CASE("every strategy name parses back to its strategy and an unknown name lists all of them") {
  for (const auto& row : kStrategies) {
    CHECK(&traits(row.value) == &row);
    CHECK(std::string(to_string(row.value)) == row.name);
    CHECK(from_string<Strategy>(row.name, "--strategy") == row.value);
  }
  try {
    (void)from_string<Strategy>("halos", "--strategy");
    FAIL("an unknown strategy was accepted");
  } catch (const InvalidInput& e) {
    CHECK(std::string(e.what()).find("--strategy") != std::string::npos);
    CHECK(e.expected() == "single, drop, halo, gather, pipeline or boundary");
  }
}

TEST_CASE("the strategy table says which strategies are exact, split the nodes and how they communicate") {
  CHECK(!traits(Strategy::kDrop).exact);
  for (Strategy s : {Strategy::kSingle, Strategy::kHalo, Strategy::kGather, Strategy::kPipeline, Strategy::kBoundary})
    CHECK(traits(s).exact);
  CHECK(traits(Strategy::kHalo).splits_nodes);
  CHECK(traits(Strategy::kBoundary).splits_nodes);
  CHECK(!traits(Strategy::kPipeline).splits_nodes);
  CHECK(traits(Strategy::kSingle).communication == Communication::kNone);
  CHECK(traits(Strategy::kHalo).communication == Communication::kAllReduce);
  CHECK(traits(Strategy::kGather).communication == Communication::kAllGatherTable);
  CHECK(traits(Strategy::kPipeline).communication == Communication::kPointToPoint);
  CHECK(traits(Strategy::kBoundary).communication == Communication::kAllToAll);
  CHECK(traits(Strategy::kBoundary).memory_model);
  CHECK(!traits(Strategy::kPipeline).memory_model);
  for (const auto& row : kStrategies) CHECK(std::string(row.description).size() > 10);
  const std::string help = strategies_help();
  for (const auto& row : kStrategies) CHECK(help.find(std::string(row.name) + ": ") != std::string::npos);
}

TEST_CASE("pipeline refuses bf16 and more stages than layers; single refuses more than one device") {
  CHECK(!strategy_refusal(Strategy::kPipeline, 2, 2, Precision::kFp32));
  CHECK(!strategy_refusal(Strategy::kPipeline, 2, 3, Precision::kTf32));
  const auto stages = strategy_refusal(Strategy::kPipeline, 3, 2, Precision::kFp32);
  REQUIRE(stages);
  CHECK(stages->kind == StrategyRefusal::Kind::kParts);
  CHECK(stages->parameter == "--parts");
  CHECK(stages->expected == "at most the number of layers (2) pipeline stages");
  const auto bf16 = strategy_refusal(Strategy::kPipeline, 2, 2, Precision::kBf16);
  REQUIRE(bf16);
  CHECK(bf16->kind == StrategyRefusal::Kind::kPrecision);
  CHECK(bf16->expected == "fp32 or tf32 with pipeline stages (bf16 pipeline stages are not implemented)");
  CHECK(bf16->reason == "bf16 pipeline stages are not implemented");
  CHECK_THROWS_AS(check_strategy(Strategy::kPipeline, 2, 2, Precision::kBf16), InvalidInput);
  CHECK_THROWS_AS(check_strategy(Strategy::kPipeline, 3, 2, Precision::kFp32), InvalidInput);
  CHECK_THROWS_AS(check_strategy(Strategy::kSingle, 2, 2, Precision::kFp32), InvalidInput);
  CHECK_THROWS_AS(check_strategy(Strategy::kHalo, 0, 2, Precision::kFp32), InvalidInput);
  for (Strategy s : {Strategy::kDrop, Strategy::kHalo, Strategy::kGather, Strategy::kBoundary}) {
    CHECK_NOTHROW(check_strategy(s, 8, 2, Precision::kBf16));  // any K, any precision
    CHECK(!strategy_refusal(s, 8, 2, Precision::kBf16));
  }
  CHECK_NOTHROW(check_strategy(Strategy::kSingle, 1, 2, Precision::kBf16));
}
