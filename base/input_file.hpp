// Positioned reads of a regular file in large pieces: the binary loaders (.gcsr, plan files) check every range
// against size() before reading, so nothing is allocated or read on a header's word alone.
#pragma once

#include <cstdint>
#include <string>

namespace gcnpart {

class InputFile {
 public:
  /// @throws IoError when the path cannot be opened or is not a regular file.
  explicit InputFile(const std::string& path);
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  ~InputFile();

  [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

  /// Reads exactly `bytes` at `offset` in 64 MiB pieces. @throws IoError on a failed read or a file that shrank.
  void read(void* dst, std::uint64_t bytes, std::uint64_t offset) const;

 private:
  std::string path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

}  // namespace gcnpart
