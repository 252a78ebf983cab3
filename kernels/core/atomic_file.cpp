#include "kernels/core/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "kernels/core/error.hpp"

namespace gcnpart {

namespace {
std::string errno_text() { return std::strerror(errno); }
}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  tmp_path_ = path_ + ".tmp." + std::to_string(::getpid());
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (file_ == nullptr) throw IoError(path_, "cannot create temporary file " + tmp_path_ + ": " + errno_text());
  std::setvbuf(file_, nullptr, _IOFBF, 1 << 20);
}

AtomicFile::~AtomicFile() {
  if (file_ != nullptr) std::fclose(file_);
  if (!committed_) std::remove(tmp_path_.c_str());
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
}

void write_file_atomic(const std::string& path, std::string_view contents) {
  AtomicFile f(path);
  f.write(contents);
  f.commit();
}

}  // namespace gcnpart
