#include "kernels/core/atomic_file.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/core/error.hpp"
#include "test_support.hpp"

using namespace gcnpart;

namespace {
std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("an AtomicFile that is not committed leaves the old file intact and no temporary behind") {
  testing::TempDir dir;
  const auto target = dir.file("out.txt");
  write_file_atomic(target, "old");
  {
    AtomicFile f(target);
    f.write("new but abandoned");
  }
  CHECK(slurp(target) == "old");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    (void)entry;
    ++files;
  }
  CHECK(files == 1);
}

TEST_CASE("a committed AtomicFile replaces the target") {
  testing::TempDir dir;
  const auto target = dir.file("out.txt");
  write_file_atomic(target, "old");
  write_file_atomic(target, "new");
  CHECK(slurp(target) == "new");
}

TEST_CASE("AtomicFile in a missing directory throws IoError naming the path") {
  CHECK_THROWS_AS(AtomicFile("/nonexistent-dir-gcnpart/x.txt"), IoError);
}
