#include "datasets/text_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <new>

namespace gcnpart::datasets {

namespace {
z_stream* as_z(void* s) { return static_cast<z_stream*>(s); }
// zlib's documented worst case for deflate is 1032:1.
constexpr std::int64_t kMaxDeflateRatio = 1032;
constexpr unsigned char kGzip0 = 0x1f, kGzip1 = 0x8b;
}  // namespace

TextReader::TextReader(std::string path, std::size_t buffer_bytes) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) {
    const int err = errno;
    if (err == ENOENT) throw IoError(path_, "no such file");
    throw IoError(path_, std::string("cannot open: ") + std::strerror(err));
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int err = errno;
    ::close(fd_);
    throw IoError(path_, std::string("cannot stat: ") + std::strerror(err));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd_);
    throw IoError(path_, "is a directory, expected a file");
  }
  file_bytes_ = S_ISREG(st.st_mode) ? static_cast<std::int64_t>(st.st_size) : -1;
  if (S_ISREG(st.st_mode)) ::posix_fadvise(fd_, 0, 0, POSIX_FADV_SEQUENTIAL);
  buffer_bytes = std::max<std::size_t>(buffer_bytes, 4096);
  in_.resize(std::max<std::size_t>(buffer_bytes / 4, 8192));
  // Sniff: gzip by its two magic bytes, anything else is plain text (what gzopen's transparent mode did).
  in_end_ = read_raw(in_.data(), 2);
  compressed_ = in_end_ == 2 && in_[0] == kGzip0 && in_[1] == kGzip1;
  if (compressed_) {
    auto* z = new z_stream{};
    if (inflateInit2(z, 16 + MAX_WBITS) != Z_OK) {
      delete z;
      ::close(fd_);
      throw std::bad_alloc();
    }
    stream_ = z;
  }
  buffer_.resize(buffer_bytes);
  pos_ = end_ = buffer_.data();
}

TextReader::~TextReader() {
  if (stream_ != nullptr) {
    inflateEnd(as_z(stream_));
    delete as_z(stream_);
  }
  if (fd_ >= 0) ::close(fd_);
}

std::int64_t TextReader::size_bound() const noexcept {
  if (file_bytes_ < 0) return std::numeric_limits<std::int64_t>::max();  // a stream: unknown
  if (!compressed_) return file_bytes_;
  if (file_bytes_ > std::numeric_limits<std::int64_t>::max() / kMaxDeflateRatio)
    return std::numeric_limits<std::int64_t>::max();
  return file_bytes_ * kMaxDeflateRatio;
}

std::size_t TextReader::read_raw(unsigned char* dst, std::size_t bytes) {
  std::size_t got = 0;
  while (got < bytes && !raw_eof_) {
    const ssize_t n = ::read(fd_, dst + got, bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw IoError(path_, std::string("read failed: ") + std::strerror(errno));
    if (n == 0) raw_eof_ = true;
    got += static_cast<std::size_t>(n);
    raw_offset_ += n;
  }
  return got;
}

std::size_t TextReader::inflate_into(char* dst, std::size_t room) {
  z_stream* z = as_z(stream_);
  auto location = [&] { return InputLocation{path_, line_ + 1, 0}; };
  for (;;) {
    if (in_pos_ == in_end_ && !raw_eof_) {
      in_pos_ = 0;
      in_end_ = read_raw(in_.data(), in_.size());
    }
    z->next_in = in_.data() + in_pos_;
    z->avail_in = static_cast<uInt>(in_end_ - in_pos_);
    z->next_out = reinterpret_cast<Bytef*>(dst);
    z->avail_out = static_cast<uInt>(std::min<std::size_t>(room, std::size_t{1} << 30));
    const uInt out_before = z->avail_out;
    const int ret = inflate(z, Z_NO_FLUSH);
    in_pos_ = in_end_ - z->avail_in;
    const std::size_t produced = out_before - z->avail_out;
    if (ret == Z_MEM_ERROR) throw std::bad_alloc();
    if (ret == Z_DATA_ERROR || ret == Z_NEED_DICT || ret == Z_STREAM_ERROR)
      throw InvalidInput(location(), "corrupt compressed data", z->msg != nullptr ? z->msg : "",
                         "a valid gzip stream");
    if (ret == Z_STREAM_END) {
      // The member ended: what follows must be another gzip member (concatenated .gz files are valid) or nothing.
      if (in_end_ - in_pos_ < 2 && !raw_eof_) {
        std::memmove(in_.data(), in_.data() + in_pos_, in_end_ - in_pos_);
        in_end_ -= in_pos_;
        in_pos_ = 0;
        in_end_ += read_raw(in_.data() + in_end_, in_.size() - in_end_);
      }
      const std::size_t left = in_end_ - in_pos_;
      if (left == 0 && raw_eof_) {
        inflateEnd(z);
        delete z;
        stream_ = nullptr;
        if (produced > 0) return produced;
        return 0;
      }
      if (left < 2 || in_[in_pos_] != kGzip0 || in_[in_pos_ + 1] != kGzip1) {
        const std::int64_t at = raw_offset_ - static_cast<std::int64_t>(left);
        std::string head(reinterpret_cast<const char*>(in_.data() + in_pos_), std::min<std::size_t>(left, 8));
        throw InvalidInput(location(), "data after the end of the gzip stream at byte " + std::to_string(at), head,
                           "the end of the file, or another gzip member (trailing garbage is refused, not "
                           "ignored: the file may be damaged)");
      }
      inflateReset(z);
      if (produced > 0) return produced;
      continue;
    }
    if (produced > 0) return produced;
    if (in_pos_ == in_end_ && raw_eof_)
      throw InvalidInput(location(), "unexpected end of compressed data", z->msg != nullptr ? z->msg : "",
                         "a complete gzip stream (is the file truncated?)");
  }
}

void TextReader::refill() {
  // Keep the partial line, grow the buffer when it already fills it.
  const std::size_t keep = static_cast<std::size_t>(end_ - pos_);
  if (keep > 0 && pos_ != buffer_.data()) std::memmove(buffer_.data(), pos_, keep);
  if (keep == buffer_.size()) {
    if (buffer_.size() >= kMaxLineBytes)
      throw InvalidInput(InputLocation{path_, line_ + 1, 0}, "line too long",
                         std::to_string(keep) + " bytes without a line end",
                         "lines shorter than " + std::to_string(kMaxLineBytes) + " bytes (is this a text file?)");
    buffer_.resize(std::min(buffer_.size() * 2, kMaxLineBytes));
  }
  pos_ = buffer_.data();
  end_ = pos_ + keep;
  const std::size_t room = buffer_.size() - keep;
  std::size_t got = 0;
  if (compressed_) {
    got = stream_ != nullptr ? inflate_into(end_, room) : 0;
  } else {
    // The bytes read while sniffing the format first, then the file.
    if (in_pos_ < in_end_) {
      got = std::min(room, in_end_ - in_pos_);
      std::memcpy(end_, in_.data() + in_pos_, got);
      in_pos_ += got;
    } else {
      const std::size_t want = std::min<std::size_t>(room, std::size_t{1} << 30);
      // A pipe returns what is there; one read(2) per refill keeps a terminal or slow writer responsive.
      for (;;) {
        const ssize_t n = raw_eof_ ? 0 : ::read(fd_, end_, want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw IoError(path_, std::string("read failed: ") + std::strerror(errno));
        if (n == 0) raw_eof_ = true;
        got = static_cast<std::size_t>(n);
        raw_offset_ += n;
        break;
      }
    }
  }
  if (got == 0) {
    eof_ = true;
  } else {
    end_ += got;
  }
  if (bom_pending_ && (end_ - pos_ >= 3 || eof_)) {
    bom_pending_ = false;
    if (line_ == 0 && consumed_ == 0 && end_ - pos_ >= 3 && std::memcmp(pos_, "\xEF\xBB\xBF", 3) == 0) {
      pos_ += 3;  // a UTF-8 byte-order mark: not part of the first line
      consumed_ += 3;
    }
  }
}

bool TextReader::next_line_slow(std::string_view& line) {
  for (;;) {
    // Search only the bytes not yet scanned would be a micro-gain; lines are short next to the buffer.
    if (pos_ < end_) {
      if (void* nl = std::memchr(pos_, '\n', static_cast<std::size_t>(end_ - pos_)); nl != nullptr) {
        emit(line, static_cast<char*>(nl));
        return true;
      }
    }
    if (eof_) {
      if (pos_ == end_) return false;
      // Last line without a final '\n': give it a terminator in the spare byte so emit() sees a normal line.
      if (end_ == buffer_.data() + buffer_.size()) {
        const std::size_t off = static_cast<std::size_t>(pos_ - buffer_.data());
        const std::size_t len = static_cast<std::size_t>(end_ - pos_);
        buffer_.resize(buffer_.size() + 1);
        pos_ = buffer_.data() + off;
        end_ = pos_ + len;
      }
      *end_ = '\n';
      emit(line, end_);
      --consumed_;  // the terminator was ours
      end_ = pos_;
      return true;
    }
    refill();
  }
}

double LineCursor::underflow_or_overflow(const char* start, char delim) const {
  const std::string text(token_at(start, delim));
  errno = 0;
  const double d = std::strtod(text.c_str(), nullptr);
  // strtod gives +-HUGE_VAL on overflow and a value of magnitude <= DBL_MIN on underflow.
  if (std::isinf(d)) fail(start, "number out of range", text, "a finite number");
  return d;
}

}  // namespace gcnpart::datasets
