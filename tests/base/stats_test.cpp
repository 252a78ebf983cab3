#include "base/stats.hpp"

#include <doctest/doctest.h>

#include <vector>

TEST_CASE("the median is the middle value, or the mean of the two middle ones, whatever the order") {
  CHECK(gcnpart::median({}) == 0.0);
  CHECK(gcnpart::median({5.0}) == 5.0);
  CHECK(gcnpart::median({3.0, 1.0, 2.0}) == 2.0);
  CHECK(gcnpart::median({4.0, 1.0, 3.0, 2.0}) == 2.5);  // not the upper middle (3) nor the lower (2)
}
