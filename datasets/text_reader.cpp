#include "datasets/text_reader.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <filesystem>

namespace gcnpart::datasets {

namespace {
gzFile as_gz(void* f) { return static_cast<gzFile>(f); }
// zlib's documented worst case for deflate is 1032:1.
constexpr std::int64_t kMaxDeflateRatio = 1032;
}  // namespace

TextReader::TextReader(std::string path, std::size_t buffer_bytes) : path_(std::move(path)) {
  std::error_code ec;
  const auto status = std::filesystem::status(path_, ec);
  if (ec || !std::filesystem::exists(status)) throw IoError(path_, "no such file");
  if (std::filesystem::is_directory(status)) throw IoError(path_, "is a directory, expected a file");
  file_bytes_ = static_cast<std::int64_t>(std::filesystem::file_size(path_, ec));
  if (ec) throw IoError(path_, "cannot read the file size: " + ec.message());

  errno = 0;
  gzFile f = gzopen(path_.c_str(), "rb");
  if (f == nullptr) throw IoError(path_, std::string("cannot open: ") + (errno != 0 ? std::strerror(errno) : "zlib"));
  file_ = f;
  buffer_bytes = std::max<std::size_t>(buffer_bytes, 4096);
  // zlib's own input buffer; the decompressed output goes straight into ours.
  gzbuffer(f, static_cast<unsigned>(std::max<std::size_t>(buffer_bytes / 4, 8192)));
  compressed_ = gzdirect(f) == 0;
  buffer_.resize(buffer_bytes);
  pos_ = end_ = buffer_.data();
}

TextReader::~TextReader() {
  if (file_ != nullptr) gzclose_r(as_gz(file_));
}

std::int64_t TextReader::size_bound() const noexcept {
  if (!compressed_) return file_bytes_;
  if (file_bytes_ > std::numeric_limits<std::int64_t>::max() / kMaxDeflateRatio)
    return std::numeric_limits<std::int64_t>::max();
  return file_bytes_ * kMaxDeflateRatio;
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
    buffer_.resize(buffer_.size() * 2);
  }
  pos_ = buffer_.data();
  end_ = pos_ + keep;
  const std::size_t room = buffer_.size() - keep;
  const unsigned want = static_cast<unsigned>(std::min<std::size_t>(room, std::size_t{1} << 30));
  const int got = gzread(as_gz(file_), end_, want);
  int errnum = Z_OK;
  const char* msg = gzerror(as_gz(file_), &errnum);
  if (got < 0) {
    if (errnum == Z_ERRNO) throw IoError(path_, std::string("read failed: ") + std::strerror(errno));
    throw InvalidInput(InputLocation{path_, line_ + 1, 0}, "corrupt compressed data", msg != nullptr ? msg : "",
                       "a valid gzip stream");
  }
  if (got == 0) {
    // zlib flags a stream that stops mid-member with Z_BUF_ERROR and only reports it here, at the end:
    // the data before the cut came back normally, so without this check a truncated file would look complete.
    if (errnum == Z_BUF_ERROR)
      throw InvalidInput(InputLocation{path_, line_ + 1, 0}, "unexpected end of compressed data",
                         msg != nullptr ? msg : "", "a complete gzip stream (is the file truncated?)");
    if (errnum != Z_OK)
      throw InvalidInput(InputLocation{path_, line_ + 1, 0}, "corrupt compressed data", msg != nullptr ? msg : "",
                         "a valid gzip stream");
    eof_ = true;
    return;
  }
  end_ += got;
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
