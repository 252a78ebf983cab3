// The round trip every enum name table must pass (base/enum_names.hpp): shared by the tests of base/ and of the
// front-ends' option table.
#pragma once

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "base/enum_names.hpp"
#include "base/error.hpp"

namespace gcnpart::testing {

/// Every row's name and value map to each other, names are distinct, and an unknown name is refused naming
/// `parameter`, the value and every valid name.
template <class Enum>
void check_round_trip(const char* parameter) {
  const auto names = enum_names<Enum>();
  REQUIRE(!names.empty());
  const std::set<std::string> distinct(names.begin(), names.end());
  CHECK(distinct.size() == names.size());
  for (const auto& row : EnumNames<Enum>::table) {
    CHECK(std::string(to_string(row.value)) == row.name);
    CHECK(from_string<Enum>(row.name, parameter) == row.value);
  }
  try {
    (void)from_string<Enum>("no-such-name", parameter);
    FAIL("from_string accepted an unknown name");
  } catch (const InvalidInput& e) {
    const std::string what = e.what();
    CHECK(what.find(parameter) != std::string::npos);
    CHECK(what.find("no-such-name") != std::string::npos);
    CHECK(e.expected() == or_list(names));  // every valid name is listed
  }
}

}  // namespace gcnpart::testing
