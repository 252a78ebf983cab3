// Rules about the source tree itself, checked on the files (GCNPART_SOURCE_DIR).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// "folder/file.cpp:12" for every line of the library folders that calls getenv.
std::vector<std::string> getenv_lines(const fs::path& root, int* files_read) {
  const std::set<std::string> extensions{".cpp", ".hpp", ".cu", ".cuh", ".h", ".in"};
  std::vector<std::string> out;
  for (const char* folder : {"base", "kernels", "engine", "partition", "datasets"}) {
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      if (!entry.is_regular_file() || extensions.count(entry.path().extension().string()) == 0) continue;
      std::ifstream in(entry.path());
      REQUIRE(in.good());
      ++*files_read;
      std::string line;
      for (int number = 1; std::getline(in, line); ++number)
        if (line.find("getenv") != std::string::npos)
          out.push_back(fs::relative(entry.path(), root).generic_string() + ":" + std::to_string(number) + ": " +
                        line);
    }
  }
  return out;
}

}  // namespace

TEST_CASE("the libraries read no environment variable except the MPI launcher detection") {
  int files_read = 0;
  const auto lines = getenv_lines(fs::path(GCNPART_SOURCE_DIR), &files_read);
  CHECK(files_read > 50);  // the walk found the tree
  int launcher = 0;
  for (const auto& l : lines) {
    if (l.rfind("engine/mpi_communicator.cpp:", 0) == 0) {
      ++launcher;
      continue;
    }
    FAIL_CHECK("getenv outside engine/mpi_communicator.cpp (settings arrive as config structs): " << l);
  }
  CHECK(launcher >= 1);  // the one documented place is still seen, so the scan reads what it should
}
