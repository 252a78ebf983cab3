// Crash-safe output: write to a temporary file beside the target, fsync, rename over the target, fsync the
// directory. A reader sees the old complete file or the new complete one, never a truncated one. While it writes,
// an AtomicFile holds an advisory lock on `<path>.lock`, so a second writer of the same target is refused rather
// than interleaved.
// What the path names is respected: a symbolic link is followed (the file it points to is replaced, the link stays),
// an existing character device, FIFO or socket (/dev/null, a pipe) is written in place, never replaced by a regular
// file, and /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N write to that descriptor. A directory is refused.
// Temporaries of a writer killed by SIGKILL (`<path>.tmp.<pid>` of a dead pid) are removed by the next writer of the
// same target; for SIGINT / SIGTERM, remove_pending_temporaries() is what a signal handler calls.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace gcnpart {

/// This process's exclusive use of a folder while the object lives: an open-file-description lock on
/// DIR/.gcnpart.lock (recording the holder's pid), so a second process that claims the same folder is refused at
/// once, naming the holder, instead of both writing into it. The lock goes with the file descriptor: a process that
/// dies releases it. On a file system without locks the claim is silently a no-op (as AtomicFile's lock).
/// @throws IoError naming the folder and `what` it holds when another process holds it or the lock file cannot be made.
class FolderClaim {
 public:
  FolderClaim(const std::string& dir, const std::string& what);
  ~FolderClaim();
  FolderClaim(const FolderClaim&) = delete;
  FolderClaim& operator=(const FolderClaim&) = delete;

 private:
  std::string lock_path_;
  int fd_ = -1;
};

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
  /// True when the target is written in place (a device, FIFO, socket or inherited descriptor): no temporary, no
  /// rename, no lock.
  [[nodiscard]] bool in_place() const noexcept { return in_place_; }

 private:
  void unlock() noexcept;

  std::string path_, real_path_, tmp_path_, lock_path_;
  int lock_fd_ = -1;
  int slot_ = -1;  // in the registry of pending temporaries
  bool in_place_ = false;
  std::FILE* file_ = nullptr;
  std::size_t written_ = 0;
  bool committed_ = false;
};

/// Writes a whole text file atomically.
void write_file_atomic(const std::string& path, std::string_view contents);

/// Checks, before any work is done, that an AtomicFile could write `path` (named by option `parameter`, e.g.
/// "--json"): "-" is always fine; a directory is refused; an existing device or FIFO is fine; otherwise the folder
/// the file (after following symbolic links) goes in must exist and be writable.
/// @throws IoError naming the parameter, the path and the reason.
void check_output_path(const std::string& path, const std::string& parameter);
/// The same for a folder that will be created if missing (--checkpoint): an existing non-folder is refused, an
/// existing folder must be writable, a missing one needs a writable existing ancestor.
void check_output_folder(const std::string& path, const std::string& parameter);

/// Unlinks the temporary and lock file of every AtomicFile not yet committed or destroyed. Async-signal-safe (only
/// unlink(2) on paths stored in a fixed table): what a SIGINT / SIGTERM handler calls before it exits.
void remove_pending_temporaries() noexcept;

}  // namespace gcnpart
