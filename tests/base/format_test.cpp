#include "base/format.hpp"

#include <doctest/doctest.h>

#include <clocale>
#include <cmath>
#include <limits>
#include <string>

using namespace gcnpart;

TEST_CASE("format_fixed writes a '.' and the asked decimals, rounding as printf does") {
  CHECK(format_fixed(560.0, 1) == "560.0");
  CHECK(format_fixed(0.125, 2) == "0.12");  // ties to even on the binary value, as "%.2f"
  CHECK(format_fixed(-3.14159, 3) == "-3.142");
  CHECK(format_fixed(2.5, 0) == "2");
  CHECK(format_fixed(1e12, 2) == "1000000000000.00");
  CHECK(format_fixed(std::numeric_limits<double>::infinity(), 2) == "inf");
  CHECK(format_fixed(std::numeric_limits<double>::max(), 1).size() == 311);  // 309 digits, '.', one decimal
  CHECK(format_shortest(0.01) == "0.01");
  CHECK(format_shortest(1e30) == "1e+30");
  CHECK(format_shortest(1e30f) == "1e+30");  // the float's shortest digits, not its double's
  CHECK(format_shortest(0.01f) == "0.01");
  CHECK(human_bytes(1536) == "1.50 KiB");
}

TEST_CASE("numbers in files keep their '.' when the host program sets a decimal-comma locale") {
  // A Python session that called locale.setlocale(LC_ALL, "de_DE.UTF-8") before writing a report: printf would write
  // "560,0". Where no such locale is installed (a bare CI image), the C locale stands in and the checks still hold.
  const char* previous = std::setlocale(LC_NUMERIC, nullptr);
  const std::string saved = previous != nullptr ? previous : "C";
  bool comma = false;
  for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8", "nl_NL.UTF-8"})
    if (std::setlocale(LC_NUMERIC, name) != nullptr) {
      comma = true;
      break;
    }
  MESSAGE((comma ? "a decimal-comma locale is set" : "no decimal-comma locale installed: the C locale stands in"));
  CHECK(format_fixed(560.0, 1) == "560.0");
  CHECK(format_shortest(0.5) == "0.5");
  CHECK(human_bytes(3.0 * 1024 * 1024) == "3.00 MiB");
  std::setlocale(LC_NUMERIC, saved.c_str());
}
