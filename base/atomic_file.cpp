#include "base/atomic_file.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>

#include "base/error.hpp"

namespace gcnpart {

namespace {
std::string errno_text() { return std::strerror(errno); }

// ---------------------------------------------------------------- pending temporaries (read by signal handlers)
constexpr int kSlots = 64;
constexpr std::size_t kSlotPath = PATH_MAX + 32;
struct PendingSlot {
  std::atomic<int> state{0};  // 0 free, 1 being filled, 2 registered
  char tmp[kSlotPath];
  char lock[kSlotPath];
};
PendingSlot g_pending[kSlots];

int register_pending(const std::string& tmp, const std::string& lock) {
  if (tmp.size() >= kSlotPath || lock.size() >= kSlotPath) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_pending[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_pending[i].tmp, tmp.c_str(), tmp.size() + 1);
    std::memcpy(g_pending[i].lock, lock.c_str(), lock.size() + 1);
    g_pending[i].state.store(2);
    return i;
  }
  return -1;  // more concurrent writers than slots: those are only cleaned by the next writer
}

void unregister_pending(int slot) noexcept {
  if (slot >= 0) g_pending[slot].state.store(0);
}

// ---------------------------------------------------------------- what an output path names

/// The descriptor a path names directly (/dev/stdout, /dev/fd/1, /proc/self/fd/1), if it is one of those.
std::optional<int> descriptor_path(const std::string& p) {
  if (p == "/dev/stdout") return 1;
  if (p == "/dev/stderr") return 2;
  const std::string own = "/proc/" + std::to_string(::getpid()) + "/fd/";
  for (const std::string& prefix : {std::string("/dev/fd/"), std::string("/proc/self/fd/"), own}) {
    if (p.size() <= prefix.size() || p.compare(0, prefix.size(), prefix) != 0) continue;
    int fd = -1;
    const char* b = p.data() + prefix.size();
    const auto r = std::from_chars(b, p.data() + p.size(), fd);
    if (r.ec == std::errc() && r.ptr == p.data() + p.size() && fd >= 0) return fd;
  }
  return std::nullopt;
}

/// Where writing `path` lands: a descriptor, or the path at the end of its chain of symbolic links.
struct OutputTarget {
  std::optional<int> fd;
  std::string path;
};

OutputTarget resolve_output(const std::string& path) {
  std::filesystem::path p(path);
  for (int hop = 0; hop < 40; ++hop) {
    if (auto fd = descriptor_path(p.string())) return {fd, p.string()};
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return {std::nullopt, p.string()};
    char link[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), link, sizeof link - 1);
    if (n < 0) throw IoError(path, "cannot read the symbolic link " + p.string() + ": " + errno_text());
    const std::filesystem::path to(std::string(link, static_cast<std::size_t>(n)));
    p = to.is_absolute() ? to : p.parent_path() / to;
  }
  throw IoError(path, "too many levels of symbolic links");
}

/// The name the lock and temporary files beside `target` start with: its file name, or, where that name plus the
/// longest suffix (".tmp.<pid>", 16 bytes) would pass the file system's 255-byte limit on a name, "." and a
/// 64-bit hash of it (FNV-1a, hex), so that every legal output name can be written atomically.
std::string sibling_stem(const std::string& target) {
  const std::string name = std::filesystem::path(target).filename().string();
  constexpr std::size_t kNameMax = 255, kLongestSuffix = 16;
  if (name.size() + kLongestSuffix <= kNameMax) return name;
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : name) h = (h ^ ch) * 1099511628211ull;
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return std::string(".") + hex;
}

/// `target`'s sibling named stem + suffix.
std::string sibling(const std::string& target, const std::string& suffix) {
  const std::filesystem::path t(target);
  return (t.parent_path() / (sibling_stem(target) + suffix)).string();
}

/// Removes `<name>.tmp.<pid>` files beside `target` left by writers that died (SIGKILL, power loss): pid not alive.
void remove_stale_temporaries(const std::string& target) {
  const std::filesystem::path t(target);
  std::filesystem::path dir = t.parent_path();
  if (dir.empty()) dir = ".";
  const std::string prefix = sibling_stem(target) + ".tmp.";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return;
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name(e->d_name);
    if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) continue;
    long pid = 0;
    const char* b = name.data() + prefix.size();
    const auto r = std::from_chars(b, name.data() + name.size(), pid);
    if (r.ec != std::errc() || r.ptr != name.data() + name.size() || pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive (or not ours to judge)
    ::unlink((dir / std::string(name)).c_str());
  }
  ::closedir(d);
}

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
  const OutputTarget target = resolve_output(path_);
  int fd = -1;
  if (target.fd) {
    fd = ::fcntl(*target.fd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) throw IoError(path_, "cannot write to descriptor " + std::to_string(*target.fd) + ": " + errno_text());
  } else {
    struct stat st {};
    if (::stat(target.path.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode)) throw IoError(path_, "is a directory, expected a file to write");
      if (!S_ISREG(st.st_mode)) {  // a device, FIFO or socket: write into it, never replace it with a file
        fd = ::open(target.path.c_str(), O_WRONLY | O_CLOEXEC);
        if (fd < 0) throw IoError(path_, "cannot open for writing: " + errno_text());
      }
    }
  }
  if (fd >= 0) {
    in_place_ = true;
    file_ = ::fdopen(fd, "wb");
    if (file_ == nullptr) {
      ::close(fd);
      throw IoError(path_, "cannot open for writing: " + errno_text());
    }
    return;
  }
  const std::string& real = target.path;  // the file at the end of any symbolic links
  lock_path_ = sibling(real, ".lock");
  lock_fd_ = acquire_lock(path_, lock_path_);
  remove_stale_temporaries(real);
  tmp_path_ = sibling(real, ".tmp." + std::to_string(::getpid()));
  slot_ = register_pending(tmp_path_, lock_path_);
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (file_ == nullptr) {
    const std::string why = errno_text();
    unlock();
    throw IoError(path_, "cannot create temporary file " + tmp_path_ + ": " + why);
  }
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
  real_path_ = real;
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_ && !in_place_) std::remove(tmp_path_.c_str());
  unlock();
}

void AtomicFile::unlock() noexcept {
  unregister_pending(slot_);
  slot_ = -1;
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
  if (std::fflush(file_) != 0) throw IoError(path_, "write failed: " + errno_text());
  if (in_place_) {
    // Devices, pipes and terminals cannot be fsynced (EINVAL, EROFS); a regular file behind a descriptor can.
    if (::fsync(::fileno(file_)) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP)
      throw IoError(path_, "fsync failed: " + errno_text());
    const int closed = std::fclose(file_);
    file_ = nullptr;
    if (closed != 0) throw IoError(path_, "close failed: " + errno_text());
    committed_ = true;
    return;
  }
  if (::fsync(::fileno(file_)) != 0) throw IoError(path_, "fsync failed: " + errno_text());
  if (std::fclose(file_) != 0) {
    file_ = nullptr;
    throw IoError(path_, "close failed: " + errno_text());
  }
  file_ = nullptr;
  if (std::rename(tmp_path_.c_str(), real_path_.c_str()) != 0)
    throw IoError(path_, "cannot rename " + tmp_path_ + " over it: " + errno_text());
  committed_ = true;
  std::filesystem::path dir = std::filesystem::path(real_path_).parent_path();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);  // best effort: some file systems refuse fsync on directories
    ::close(fd);
  }
  unlock();
}

FolderClaim::FolderClaim(const std::string& dir, const std::string& what)
    : lock_path_((std::filesystem::path(dir) / ".gcnpart.lock").string()) {
  try {
    fd_ = acquire_lock(dir, lock_path_);
  } catch (const IoError& e) {
    throw IoError(dir, std::string("cannot claim the folder for ") + what + ": " + e.what());
  }
}

FolderClaim::~FolderClaim() {
  if (fd_ < 0) return;
  ::unlink(lock_path_.c_str());  // before the lock goes: a waiting claimer then starts on a new file (acquire_lock)
  ::close(fd_);
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  AtomicFile f(path);
  f.write(contents);
  f.commit();
}

void remove_pending_temporaries() noexcept {
  for (auto& slot : g_pending) {
    if (slot.state.load() != 2) continue;
    ::unlink(slot.tmp);
    ::unlink(slot.lock);
  }
}

void check_output_path(const std::string& path, const std::string& parameter) {
  if (path == "-") return;
  const std::string who = parameter + " " + path;
  if (path.empty()) throw IoError(parameter, "an empty path, expected a file to write (or - for stdout)");
  const OutputTarget target = resolve_output(path);
  if (target.fd) return;
  struct stat st {};
  if (::stat(target.path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw IoError(who, "is a directory, expected a file to write");
    if (!S_ISREG(st.st_mode)) return;  // written in place
    if (::access(target.path.c_str(), W_OK) != 0 && errno == EROFS)
      throw IoError(who, "cannot write: " + errno_text());
  }
  std::filesystem::path dir = std::filesystem::path(target.path).parent_path();
  if (dir.empty()) dir = ".";
  struct stat ds {};
  if (::stat(dir.c_str(), &ds) != 0)
    throw IoError(who, "cannot write: the folder " + dir.string() + " does not exist (" + errno_text() + ")");
  if (!S_ISDIR(ds.st_mode)) throw IoError(who, "cannot write: " + dir.string() + " is not a folder");
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw IoError(who, "cannot write in the folder " + dir.string() + ": " + errno_text());
}

void check_output_folder(const std::string& path, const std::string& parameter) {
  const std::string who = parameter + " " + path;
  if (path.empty()) throw IoError(parameter, "an empty path, expected a folder");
  std::filesystem::path p(path);
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) {
    if (!S_ISDIR(st.st_mode)) throw IoError(who, "exists and is not a folder");
    if (::access(p.c_str(), W_OK | X_OK) != 0) throw IoError(who, "cannot write in the folder: " + errno_text());
    return;
  }
  // Missing: the nearest existing ancestor must be a writable folder (create_directories makes the rest).
  for (std::filesystem::path a = p.parent_path();; a = a.parent_path()) {
    const std::filesystem::path at = a.empty() ? std::filesystem::path(".") : a;
    if (::stat(at.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode)) throw IoError(who, "cannot create the folder: " + at.string() + " is not a folder");
      if (::access(at.c_str(), W_OK | X_OK) != 0)
        throw IoError(who, "cannot create the folder in " + at.string() + ": " + errno_text());
      return;
    }
    if (a.empty() || a == a.parent_path()) return;
  }
}

}  // namespace gcnpart
