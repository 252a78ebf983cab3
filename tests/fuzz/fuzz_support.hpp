// Shared pieces of the libFuzzer targets: a scratch folder, writing the input to a file (the loaders read paths),
// and the property every target checks: a loader either returns a dataset that satisfies its invariants or throws
// gcnpart::InvalidInput. Anything else (another exception, a crash, a sanitizer report, an allocation beyond
// libFuzzer's -malloc_limit_mb) is a bug and aborts so that libFuzzer records the input.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <typeinfo>

#include "datasets/dataset.hpp"
#include "base/error.hpp"

namespace gcnpart::fuzz {

/// A private folder for this process, in /dev/shm when it exists (no disk writes per execution). libFuzzer often
/// ends with _Exit, which skips atexit: each start also removes the folders of fuzzers no longer running.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::filesystem::path base = std::filesystem::is_directory("/dev/shm") ? std::filesystem::path("/dev/shm")
                                                                           : std::filesystem::temp_directory_path();
    const std::string prefix = "gcnpart-fuzz-";
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(base, ec)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind(prefix, 0) != 0) continue;
      const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
      if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) std::filesystem::remove_all(entry, ec);
    }
    std::filesystem::path d = base / (prefix + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return d;
  }();
  return dir;
}

[[noreturn]] inline void bug(const std::string& what) {
  std::fprintf(stderr, "gcnpart fuzz: BUG: %s\n", what.c_str());
  std::fflush(stderr);
  std::abort();
}

/// Writes bytes to `path` (truncating), with plain POSIX calls: no fsync, nothing cached between executions.
inline void write_file(const std::filesystem::path& path, const std::uint8_t* data, std::size_t size) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) bug("cannot create " + path.string());
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n <= 0) bug("cannot write " + path.string());
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  ::close(fd);
}
inline void write_file(const std::filesystem::path& path, const std::string& text) {
  write_file(path, reinterpret_cast<const std::uint8_t*>(text.data()), text.size());
}

/// A returned dataset must satisfy what the rest of gcnpart relies on.
inline void check_loaded(const datasets::Dataset& ds, bool full_validate) {
  try {
    if (ds.graph.num_nodes < 1) bug("loaded a dataset without nodes");
    ds.graph.validate("fuzzed graph");
    if (full_validate) ds.validate();
  } catch (const std::exception& e) {
    bug(std::string("loaded dataset breaks its invariants: ") + e.what());
  }
}

/// Runs `load` (returning a Dataset); InvalidInput is the only acceptable failure.
template <class Load>
void expect_dataset_or_invalid_input(Load&& load, bool full_validate = true) {
  try {
    const datasets::Dataset ds = load();
    check_loaded(ds, full_validate);
  } catch (const InvalidInput&) {
    // The expected way to refuse a malformed file.
  } catch (const std::exception& e) {
    bug(std::string("unexpected exception ") + typeid(e).name() + ": " + e.what());
  }
}

}  // namespace gcnpart::fuzz
