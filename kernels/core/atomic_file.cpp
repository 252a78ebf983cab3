#include "kernels/core/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include "kernels/core/error.hpp"

namespace gcnpart {

namespace {
std::string errno_text() { return std::strerror(errno); }

/// "pid N" from a lock file, or "pid unknown" while its holder has not written it yet.
std::string holder_of(int fd) {
  char text[32] = {};
  const ssize_t got = ::pread(fd, text, sizeof text - 1, 0);
  long pid = 0;
  if (got > 0 && std::from_chars(text, text + got, pid).ec == std::errc() && pid > 0)
    return "pid " + std::to_string(pid);
  return "pid unknown";
}

/// Takes the exclusive lock on `lock_path` without waiting and records our pid in it; returns the descriptor.
/// OFD locks (not flock or classic fcntl locks) so that a second AtomicFile of the same process conflicts too.
int acquire_lock(const std::string& target, const std::string& lock_path) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    const int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) throw IoError(target, "cannot create lock file " + lock_path + ": " + errno_text());
    struct flock lock {};
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    if (::fcntl(fd, F_OFD_SETLK, &lock) != 0) {
      const int err = errno;
      if (err == EAGAIN || err == EACCES) {
        const std::string holder = holder_of(fd);
        ::close(fd);
        throw IoError(target, "is being written by another gcnpart process (" + holder + ", lock file " + lock_path +
                                  "); wait for it to finish or write elsewhere");
      }
      // A file system without locks (some network and FUSE mounts): write unlocked rather than not at all.
      if (err == ENOLCK || err == EINVAL || err == EOPNOTSUPP) return fd;
      ::close(fd);
      throw IoError(target, "cannot lock " + lock_path + ": " + std::strerror(err));
    }
    // The previous holder removes the lock file before it releases the lock: if it did so between our open and our
    // lock, we hold a lock on a file no longer named lock_path and must start again on the new one.
    struct stat held {}, named {};
    if (::fstat(fd, &held) == 0 && ::stat(lock_path.c_str(), &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      const std::string pid = std::to_string(::getpid()) + "\n";
      const bool recorded =
          ::ftruncate(fd, 0) == 0 && ::pwrite(fd, pid.data(), pid.size(), 0) == static_cast<ssize_t>(pid.size());
      (void)recorded;  // if not, only a refused second writer's message lacks the pid; the lock holds
      return fd;
    }
    ::close(fd);
  }
  throw IoError(target, "cannot lock " + lock_path + ": it keeps being removed and recreated");
}
}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  lock_path_ = path_ + ".lock";
  lock_fd_ = acquire_lock(path_, lock_path_);
  tmp_path_ = path_ + ".tmp." + std::to_string(::getpid());
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (file_ == nullptr) {
    const std::string why = errno_text();
    unlock();
    throw IoError(path_, "cannot create temporary file " + tmp_path_ + ": " + why);
  }
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) std::remove(tmp_path_.c_str());
  unlock();
}

void AtomicFile::unlock() noexcept {
  if (lock_fd_ < 0) return;
  // Remove the file while still holding the lock (acquire_lock's inode check relies on that order).
  ::unlink(lock_path_.c_str());
  ::close(lock_fd_);
  lock_fd_ = -1;
}

void AtomicFile::write(const void* data, std::size_t bytes) {
  if (bytes == 0) return;
  if (std::fwrite(data, 1, bytes, file_) != bytes)
    throw IoError(path_, "write failed after " + std::to_string(written_) + " bytes: " + errno_text());
  written_ += bytes;
}

void AtomicFile::commit() {
  if (std::fflush(file_) != 0) throw IoError(path_, "flush failed: " + errno_text());
  if (::fsync(::fileno(file_)) != 0) throw IoError(path_, "fsync failed: " + errno_text());
  if (std::fclose(file_) != 0) {
    file_ = nullptr;
    throw IoError(path_, "close failed: " + errno_text());
  }
  file_ = nullptr;
  if (std::rename(tmp_path_.c_str(), path_.c_str()) != 0)
    throw IoError(path_, "cannot rename " + tmp_path_ + " over it: " + errno_text());
  committed_ = true;
  std::filesystem::path dir = std::filesystem::path(path_).parent_path();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);  // best effort: some file systems refuse fsync on directories
    ::close(fd);
  }
  unlock();
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  AtomicFile f(path);
  f.write(contents);
  f.commit();
}

}  // namespace gcnpart
