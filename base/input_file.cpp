#include "base/input_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/error.hpp"

namespace gcnpart {

InputFile::InputFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw IoError(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  const bool stat_ok = ::fstat(fd_, &st) == 0;
  if (!stat_ok || !S_ISREG(st.st_mode)) {
    const std::string why = stat_ok ? "not a regular file" : std::string("cannot stat: ") + std::strerror(errno);
    ::close(fd_);
    throw IoError(path, why);
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
  ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
}

InputFile::~InputFile() { ::close(fd_); }

void InputFile::read(void* dst, std::uint64_t bytes, std::uint64_t offset) const {
  auto* p = static_cast<unsigned char*>(dst);
  while (bytes > 0) {
    const std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, 64ull << 20));
    const ssize_t got = ::pread(fd_, p, want, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw IoError(path_, "read failed at byte " + std::to_string(offset) + ": " + std::strerror(errno));
    if (got == 0) throw IoError(path_, "file shrank while being read (at byte " + std::to_string(offset) + ")");
    p += got;
    bytes -= static_cast<std::uint64_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}

}  // namespace gcnpart
