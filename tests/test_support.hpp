// Helpers shared by the test binaries.
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace gcnpart::testing {

/// The shared datasets folder: $GCNPART_DATA, else ../shared/datasets beside the repository root.
/// Throws (the test fails loudly) when it does not exist.
inline std::string data_dir() {
  std::string dir;
  if (const char* env = std::getenv("GCNPART_DATA"); env != nullptr && *env != '\0') {
    dir = env;
  } else {
    dir = std::string(GCNPART_SOURCE_DIR) + "/../shared/datasets";
  }
  if (!std::filesystem::is_directory(dir))
    throw std::runtime_error("dataset folder not found: " + dir + " (set GCNPART_DATA)");
  return dir;
}

/// Small hand-written input files checked into tests/data.
inline std::string test_data(const std::string& relative) { return std::string(GCNPART_TEST_DATA) + "/" + relative; }

/// A fresh temporary directory, removed on destruction.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = std::filesystem::temp_directory_path() /
           ("gcnpart-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  [[nodiscard]] std::string file(const std::string& name) const { return (path / name).string(); }
};

}  // namespace gcnpart::testing
