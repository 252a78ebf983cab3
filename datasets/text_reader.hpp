// Streaming line reader over plain or gzip text (gzip recognised by its magic bytes, inflated with zlib as it is
// read), and a cursor that parses the fields of one line with std::from_chars. Lines are string_views into a large
// internal buffer: no allocation per line, no copies, and no more decompressed text held than the buffer (a
// decompression bomb costs time, not memory; what the loaders keep is checked against their host-memory budget).
// Every parse error is an InvalidInput naming file:line:column, the token and what was expected; a truncated or
// corrupt gzip stream, or data after its end that is not another gzip member, is an InvalidInput naming the file
// and line, never a silent end. A UTF-8 byte-order mark at the start is skipped. Pipes, FIFOs and character devices
// are read as streams (their size is unknown, so size_bound() is unbounded).
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "base/error.hpp"

namespace gcnpart::datasets {

/// Reads a text file line by line. Not copyable; one pass only.
class TextReader {
 public:
  /// Our read size; zlib's own input buffer is set to a quarter of it. The fuzz build (tests/fuzz) shrinks it so
  /// that tiny inputs run every refill and line-growing path and an execution does not clear 8 MiB.
#ifdef GCNPART_TEXT_READER_BUFFER_BYTES
  static constexpr std::size_t kDefaultBufferBytes = GCNPART_TEXT_READER_BUFFER_BYTES;
#else
  static constexpr std::size_t kDefaultBufferBytes = std::size_t{8} << 20;
#endif
  /// A single line longer than this is refused (a binary file read as text, a broken file or a decompression bomb
  /// without line ends): the buffer never grows past it.
  static constexpr std::size_t kMaxLineBytes = std::size_t{64} << 20;

  /// Opens `path` (a regular file, FIFO, pipe or character device).
  /// @throws IoError when the file is missing, is a directory or cannot be opened.
  explicit TextReader(std::string path, std::size_t buffer_bytes = kDefaultBufferBytes);
  ~TextReader();
  TextReader(const TextReader&) = delete;
  TextReader& operator=(const TextReader&) = delete;

  /// The next line without its '\n' (and without a trailing '\r'); false at the end of the input.
  /// The view stays valid until the next call. @throws InvalidInput on truncated or corrupt gzip data.
  bool next_line(std::string_view& line) {
    if (pos_ < end_) {
      if (void* nl = std::memchr(pos_, '\n', static_cast<std::size_t>(end_ - pos_)); nl != nullptr) {
        emit(line, static_cast<char*>(nl));
        return true;
      }
    }
    return next_line_slow(line);
  }

  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  /// 1-based number of the line last returned by next_line (0 before the first).
  [[nodiscard]] std::int64_t line_number() const noexcept { return line_; }
  /// True when the file is gzip-compressed.
  [[nodiscard]] bool compressed() const noexcept { return compressed_; }
  /// Size of the file on disk in bytes; -1 for a pipe, FIFO or device (unknown).
  [[nodiscard]] std::int64_t file_bytes() const noexcept { return file_bytes_; }
  /// True for a regular file (its size is known).
  [[nodiscard]] bool regular() const noexcept { return file_bytes_ >= 0; }
  /// An upper bound on the decompressed size (deflate cannot exceed 1032:1); headers that claim more
  /// entries than this could hold are refused before anything is allocated.
  [[nodiscard]] std::int64_t size_bound() const noexcept;
  /// Decompressed bytes handed out so far (line contents plus line ends).
  [[nodiscard]] std::int64_t bytes_consumed() const noexcept { return consumed_; }

  /// The location of `column` (1-based) on the current line.
  [[nodiscard]] InputLocation location(std::int64_t column = 0) const { return InputLocation{path_, line_, column}; }

 private:
  void emit(std::string_view& line, char* nl) {
    const char* b = pos_;
    const char* e = nl;
    if (e > b && e[-1] == '\r') --e;
    line = std::string_view(b, static_cast<std::size_t>(e - b));
    consumed_ += nl - pos_ + 1;
    pos_ = nl + 1;
    ++line_;
  }
  bool next_line_slow(std::string_view& line);
  void refill();  // moves the partial line to the front and reads more; sets eof_
  std::size_t read_raw(unsigned char* dst, std::size_t bytes);  // read(2) until bytes or end of file
  std::size_t inflate_into(char* dst, std::size_t room);        // decompresses; 0 only at the end of the input

  std::string path_;
  int fd_ = -1;
  void* stream_ = nullptr;  // z_stream, kept opaque so zlib.h stays out of this header
  std::vector<unsigned char> in_;  // compressed input (and, for plain text, the bytes read while sniffing)
  std::size_t in_pos_ = 0, in_end_ = 0;
  bool raw_eof_ = false;        // read(2) returned 0
  std::int64_t raw_offset_ = 0;  // bytes read from the file so far
  bool bom_pending_ = true;
  std::vector<char> buffer_;
  char* pos_ = nullptr;
  char* end_ = nullptr;
  bool eof_ = false;
  bool compressed_ = false;
  std::int64_t line_ = 0;
  std::int64_t file_bytes_ = 0;
  std::int64_t consumed_ = 0;
};

/// Parses the fields of one line. Columns are 1-based byte offsets into the line.
class LineCursor {
 public:
  LineCursor(const TextReader& reader, std::string_view line) noexcept
      : reader_(&reader), begin_(line.data()), p_(line.data()), end_(line.data() + line.size()) {}

  /// Skips spaces and tabs.
  void skip_blanks() noexcept {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t')) ++p_;
  }
  /// True when nothing but blanks is left.
  [[nodiscard]] bool at_end() noexcept {
    skip_blanks();
    return p_ == end_;
  }
  [[nodiscard]] bool at_end_exact() const noexcept { return p_ == end_; }
  [[nodiscard]] char peek() const noexcept { return p_ < end_ ? *p_ : '\0'; }
  [[nodiscard]] std::int64_t column() const noexcept { return (p_ - begin_) + 1; }
  [[nodiscard]] std::string_view rest() const noexcept {
    return std::string_view(p_, static_cast<std::size_t>(end_ - p_));
  }

  /// Consumes `c` if it is next; false otherwise.
  bool consume(char c) noexcept {
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  /// Requires separator `sep` next; throws otherwise.
  void expect_separator(char sep, const char* expected) {
    if (p_ < end_ && *p_ == sep) {
      ++p_;
      return;
    }
    fail_token(p_ == end_ ? "line ends too early" : "unexpected character", expected);
  }

  /// Skips blanks, then reads a whitespace-delimited integer (decimal, optional '-').
  std::int64_t read_int(const char* expected) {
    skip_blanks();
    return read_int_here(expected, kBlank);
  }
  /// Reads an integer that starts exactly here and ends at `delim` (',', blank or end of line).
  std::int64_t read_int_here(const char* expected, char delim) {
    std::int64_t v = 0;
    const char* start = p_;
    const auto r = std::from_chars(p_, end_, v);
    if (r.ec != std::errc() || !ends_token(r.ptr, delim)) fail_token_at(start, delim, "bad integer", expected);
    p_ = r.ptr;
    return v;
  }

  /// Skips blanks, then reads a whitespace-delimited number (float, "nan", "inf" accepted: the caller checks).
  double read_double(const char* expected) {
    skip_blanks();
    return read_double_here(expected, kBlank);
  }
  double read_double_here(const char* expected, char delim) {
    double v = 0;
    const char* start = p_;
    const auto r = std::from_chars(p_, end_, v);
    // Underflow reads as 0 (a tiny weight is not malformed); overflow is refused below by the finite check.
    if (r.ec == std::errc::result_out_of_range && ends_token(r.ptr, delim)) {
      p_ = r.ptr;
      return underflow_or_overflow(start, delim);
    }
    if (r.ec != std::errc() || !ends_token(r.ptr, delim)) fail_token_at(start, delim, "bad number", expected);
    p_ = r.ptr;
    return v;
  }
  /// A float32 that starts here and ends at `delim`; out-of-float-range values throw, NaN/Inf are returned.
  float read_float_here(const char* expected, char delim) {
    float v = 0;
    const char* start = p_;
    const auto r = std::from_chars(p_, end_, v);
    if (r.ec == std::errc()) {
      if (!ends_token(r.ptr, delim)) fail_token_at(start, delim, "bad number", expected);
      p_ = r.ptr;
      return v;
    }
    p_ = start;
    const double d = read_double_here(expected, delim);
    if (std::isfinite(d) && std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max()))
      fail(start, "number out of float32 range", token_at(start, delim), expected);
    return static_cast<float>(d);
  }

  /// The token starting at the cursor, up to blank / `delim` / end (for messages).
  [[nodiscard]] std::string_view token(char delim = kBlank) const noexcept { return token_at(p_, delim); }
  /// Reads and returns the next whitespace-delimited token.
  std::string_view read_token() noexcept {
    skip_blanks();
    const std::string_view t = token_at(p_, kBlank);
    p_ += t.size();
    return t;
  }

  /// Throws InvalidInput at the cursor's column with the current token as value.
  [[noreturn]] void fail_token(const std::string& problem, const std::string& expected) const {
    fail(p_, problem, std::string(token_at(p_, kBlank)), expected);
  }
  /// Throws InvalidInput at the column of `at` (a pointer into this line).
  [[noreturn]] void fail(const char* at, const std::string& problem, std::string_view value,
                         const std::string& expected) const {
    throw InvalidInput(reader_->location((at - begin_) + 1), problem, std::string(value), expected);
  }
  [[noreturn]] void fail_at_column(std::int64_t column, const std::string& problem, std::string_view value,
                                   const std::string& expected) const {
    throw InvalidInput(reader_->location(column), problem, std::string(value), expected);
  }

  /// delim value meaning "a space or a tab ends the token".
  static constexpr char kBlank = ' ';

 private:
  [[nodiscard]] bool ends_token(const char* q, char delim) const noexcept {
    if (q == p_) return false;  // nothing parsed
    if (q == end_) return true;
    if (*q == ' ' || *q == '\t') return true;
    return delim != kBlank && *q == delim;
  }
  [[nodiscard]] std::string_view token_at(const char* q, char delim) const noexcept {
    const char* e = q;
    while (e < end_ && *e != ' ' && *e != '\t' && (delim == kBlank || *e != delim)) ++e;
    return std::string_view(q, static_cast<std::size_t>(e - q));
  }
  [[noreturn]] void fail_token_at(const char* at, char delim, const char* problem, const char* expected) const {
    const std::string_view t = token_at(at, delim);
    fail(at, t.empty() ? (at == end_ ? "missing value" : "empty field") : problem, t, expected);
  }
  double underflow_or_overflow(const char* start, char delim) const;

  const TextReader* reader_;
  const char* begin_;
  const char* p_;
  const char* end_;
};

}  // namespace gcnpart::datasets
