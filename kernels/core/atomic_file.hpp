// Crash-safe output: write to a temporary file beside the target, fsync, rename over the target, fsync the
// directory. A reader sees the old complete file or the new complete one, never a truncated one. While it writes,
// an AtomicFile holds an advisory lock on `<path>.lock`, so a second writer of the same target is refused rather
// than interleaved.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace gcnpart {

class AtomicFile {
 public:
  /// Locks `<path>.lock` (an open-file-description lock: exclusive even against another AtomicFile of this process;
  /// the lock file records our pid), then opens `<path>.tmp.<pid>` for writing.
  /// @throws IoError if the directory is not writable, or, without waiting, if another writer holds the lock.
  explicit AtomicFile(std::string path);
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  /// Removes the temporary file unless commit() ran; removes the lock file and releases the lock.
  ~AtomicFile();

  /// Appends bytes. @throws IoError on a short write (disk full).
  void write(const void* data, std::size_t bytes);
  void write(std::string_view s) { write(s.data(), s.size()); }
  /// Bytes written so far.
  [[nodiscard]] std::size_t size() const noexcept { return written_; }
  /// fsync, rename over the target, fsync the directory, then remove the lock file and release the lock.
  /// @throws IoError.
  void commit();
  [[nodiscard]] const std::string& path() const noexcept { return path_; }

 private:
  void unlock() noexcept;

  std::string path_, tmp_path_, lock_path_;
  int lock_fd_ = -1;
  std::FILE* file_ = nullptr;
  std::size_t written_ = 0;
  bool committed_ = false;
};

/// Writes a whole text file atomically.
void write_file_atomic(const std::string& path, std::string_view contents);

}  // namespace gcnpart
