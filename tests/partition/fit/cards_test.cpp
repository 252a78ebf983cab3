#include "partition/fit/cards.hpp"

#include <doctest/doctest.h>

#include <fstream>
#include <set>

#include "base/error.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using namespace gcnpart::partition;

namespace {

std::string error_of(const std::string& file) {
  try {
    (void)load_cards(file);
  } catch (const InvalidInput& e) {
    return e.what();
  }
  return "";
}

void write(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

}  // namespace

TEST_CASE("built-in card catalogue lists every card of the issue with its figures and a source") {
  const CardCatalogue cat = builtin_cards();
  const std::set<std::string> wanted{"rtx3060", "rtx3070", "rtx3080", "rtx3080-12gb", "rtx3080ti", "rtx3090",
                                     "rtx3090ti", "rtx4070ti", "rtx4080", "rtx4090", "a4000", "a5000", "a6000", "a40",
                                     "l4", "l40s", "v100-16gb", "v100-32gb", "a100-40gb", "a100-80gb", "h100-pcie",
                                     "h100-sxm", "h200"};
  std::set<std::string> ids;
  for (const auto& c : cat.cards) {
    ids.insert(c.id);
    INFO(c.id);
    CHECK(c.memory_bytes > 0);
    CHECK(c.memory_bandwidth_gbs > 0);
    CHECK(c.fp32_tflops > 0);
    CHECK(c.pcie_gbs > 0);
    CHECK(c.board_power_w > 0);
    CHECK(c.fixed_overhead_bytes > 0);
    CHECK_FALSE(c.source.empty());
    if (!c.launch_price_usd) CHECK_FALSE(c.note.empty());  // a missing price is explained
  }
  CHECK(ids == wanted);
  CHECK(cat.find("rtx3090").memory_bytes == 24ll << 30);
  CHECK(cat.find("rtx3080").memory_bytes == 10ll << 30);
  CHECK(cat.find("rtx3090").nvlink_gbs > 0);
  CHECK_FALSE(cat.find("h200").launch_price_usd.has_value());
  CHECK(cat.find("h200").fixed_overhead_measured);
}

TEST_CASE("a user card file overrides fields by id and adds new cards") {
  testing::TempDir dir;
  const std::string file = dir.file("cards.json");
  write(file, R"({"cards": [
    {"id": "rtx3090", "launch_price_usd": 900, "interconnect": {"pcie_generation": 3}},
    {"id": "mycard", "name": "My Card", "family": "hopper", "memory_bytes": 1000000000, "memory_bandwidth_gbs": 100,
     "fp32_tflops": 1, "tf32_tflops": 0, "bf16_tflops": 0,
     "interconnect": {"pcie_generation": 4, "pcie_gbs": 32, "nvlink_gbs": 0, "nvlink_max_gpus": 0},
     "board_power_w": 50, "launch_price_usd": null, "source": "my lab", "fixed_overhead_mib": 100}]})");
  const CardCatalogue cat = load_cards(file);
  const auto& c = cat.find("rtx3090");
  CHECK(*c.launch_price_usd == 900);
  CHECK(c.pcie_generation == 3);
  CHECK(c.pcie_gbs == 32);  // untouched fields of the interconnect stay
  CHECK(c.memory_bytes == 24ll << 30);
  CHECK(cat.find("mycard").fixed_overhead_bytes == 100ll << 20);
  CHECK(cat.origins.size() == 2);
}

TEST_CASE("card file errors name the file, the card and the field") {
  testing::TempDir dir;
  const std::string file = dir.file("bad.json");
  write(file, R"({"cards": [{"id": "newcard", "name": "N", "family": "hopper"}]})");
  std::string msg = error_of(file);
  CHECK(msg.find(file) != std::string::npos);
  CHECK(msg.find("card 'newcard'") != std::string::npos);
  CHECK(msg.find("memory_bytes") != std::string::npos);

  write(file, R"({"cards": [{"id": "rtx3080", "memory_bandwidth_gbs": -5}]})");
  msg = error_of(file);
  CHECK(msg.find("memory_bandwidth_gbs") != std::string::npos);
  CHECK(msg.find("-5") != std::string::npos);

  write(file, R"({"cards": [{"id": "rtx3080", "launch_price_usd": "cheap"}]})");
  CHECK(error_of(file).find("launch_price_usd") != std::string::npos);

  write(file, R"({"cards": [{"id": "rtx3080", "family": "nosuchfamily"}]})");
  CHECK(error_of(file).find("nosuchfamily") != std::string::npos);

  write(file, "{\"cards\": [");
  msg = error_of(file);
  CHECK(msg.find("not valid JSON") != std::string::npos);

  CHECK_THROWS_AS(load_cards(dir.file("missing.json")), IoError);
  try {
    (void)builtin_cards().find("rtx9999");
    FAIL("expected InvalidInput");
  } catch (const InvalidInput& e) {
    CHECK(std::string(e.what()).find("rtx3090") != std::string::npos);  // lists the known ids
  }
}
