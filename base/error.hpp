// Typed errors of gcnpart. Library code throws; only main() turns an exception into a message and an exit code.
#pragma once

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace gcnpart {

/// Exit codes of the `gcnpart` CLI, one per error class (documented in README.md).
enum class ExitCode : int {
  kOk = 0,
  kInternal = 1,     ///< a bug: an unexpected exception
  kUsage = 2,        ///< bad command line (CLI11)
  kInvalidInput = 3, ///< malformed data or an out-of-range parameter
  kIo = 4,           ///< a file is missing, unreadable or unwritable
  kOutOfMemory = 5,  ///< a device (real or emulated by --memory-limit) ran out of memory
  kDevice = 6,       ///< CUDA / cuBLAS / cuSPARSE / NCCL / MPI failure
};

/// Base of every gcnpart exception.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
  [[nodiscard]] virtual ExitCode exit_code() const noexcept { return ExitCode::kInternal; }
};

/// `text` made safe to echo in a message or on a terminal: control bytes (NUL, ESC, DEL, C1 controls), bytes that
/// are not valid UTF-8 and the invisible byte-order mark U+FEFF become \xHH escapes (one per byte, lower-case hex);
/// printable ASCII and valid UTF-8 pass through. The one function every message that echoes a value from an input
/// file or the command line goes through (InvalidInput and IoError apply it themselves).
[[nodiscard]] inline std::string escape_text(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  auto escape = [&](unsigned char b) {
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 15];
  };
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  for (std::size_t i = 0; i < n;) {
    const unsigned char b = p[i];
    if (b >= 0x20 && b < 0x7f) {
      out += static_cast<char>(b);
      ++i;
      continue;
    }
    // A UTF-8 sequence: its length from the lead byte, continuation bytes 10xxxxxx, no overlong 2-byte forms.
    std::size_t len = b >= 0xc2 && b <= 0xdf ? 2 : (b & 0xf0) == 0xe0 ? 3 : b >= 0xf0 && b <= 0xf4 ? 4 : 0;
    bool valid = len > 0 && i + len <= n;
    for (std::size_t k = 1; valid && k < len; ++k) valid = (p[i + k] & 0xc0) == 0x80;
    if (valid && len == 3 && b == 0xe0 && p[i + 1] < 0xa0) valid = false;  // overlong
    if (valid && len == 4 && b == 0xf0 && p[i + 1] < 0x90) valid = false;  // overlong
    const bool c1_control = valid && len == 2 && b == 0xc2 && p[i + 1] < 0xa0;
    const bool bom = valid && len == 3 && b == 0xef && p[i + 1] == 0xbb && p[i + 2] == 0xbf;
    if (valid && !c1_control && !bom) {
      out.append(text.substr(i, len));
      i += len;
    } else {
      for (std::size_t k = 0; k < (valid ? len : 1); ++k) escape(p[i + k]);
      i += valid ? len : 1;
    }
  }
  return out;
}

/// Where in an input a problem sits. line/column are 1-based; 0 means "not applicable".
struct InputLocation {
  std::string file;
  std::int64_t line = 0;
  std::int64_t column = 0;

  [[nodiscard]] std::string to_string() const {
    std::string s = file.empty() ? std::string("<input>") : escape_text(file);
    if (line > 0) s += ":" + std::to_string(line);
    if (line > 0 && column > 0) s += ":" + std::to_string(column);
    return s;
  }
};

/// Bad input: a malformed file, an id out of range, a parameter outside its domain.
/// The message always reads "<where>: <problem>: got '<value>', expected <expected>".
class InvalidInput : public Error {
 public:
  InvalidInput(InputLocation where, std::string problem, std::string value, std::string expected)
      : Error(format(where, problem, value, expected)),
        where_(std::move(where)),
        problem_(std::move(problem)),
        value_(std::move(value)),
        expected_(std::move(expected)) {}

  /// A bad parameter (command-line option or API argument).
  static InvalidInput parameter(const std::string& name, const std::string& value, const std::string& expected) {
    return InvalidInput(InputLocation{"parameter " + name, 0, 0}, "invalid value", value, expected);
  }

  [[nodiscard]] const InputLocation& where() const noexcept { return where_; }
  [[nodiscard]] const std::string& problem() const noexcept { return problem_; }
  [[nodiscard]] const std::string& value() const noexcept { return value_; }
  [[nodiscard]] const std::string& expected() const noexcept { return expected_; }
  [[nodiscard]] ExitCode exit_code() const noexcept override { return ExitCode::kInvalidInput; }

 private:
  static std::string format(const InputLocation& w, const std::string& p, const std::string& v, const std::string& e) {
    std::string s = w.to_string() + ": " + p;
    const std::string shown = escape_text(v);
    s += ": got '" + (shown.size() > 80 ? shown.substr(0, 77) + "..." : shown) + "'";
    if (!e.empty()) s += ", expected " + e;
    return s;
  }
  InputLocation where_;
  std::string problem_, value_, expected_;
};

/// A file that cannot be opened, read, written or renamed.
class IoError : public Error {
 public:
  IoError(std::string path, const std::string& what)
      : Error(escape_text(path) + ": " + escape_text(what)), path_(std::move(path)) {}
  [[nodiscard]] const std::string& path() const noexcept { return path_; }
  [[nodiscard]] ExitCode exit_code() const noexcept override { return ExitCode::kIo; }

 private:
  std::string path_;
};

/// A device (or an emulated memory cap) cannot satisfy an allocation.
class OutOfMemory : public Error {
 public:
  explicit OutOfMemory(const std::string& what) : Error(what) {}
  [[nodiscard]] ExitCode exit_code() const noexcept override { return ExitCode::kOutOfMemory; }
};

/// A CUDA runtime, cuBLAS, cuSPARSE, NCCL or MPI call failed.
class DeviceError : public Error {
 public:
  DeviceError(std::string library, std::string call, std::string where, std::string message)
      : Error(library + " error in " + call + " at " + where + ": " + message),
        library_(std::move(library)), call_(std::move(call)) {}
  [[nodiscard]] const std::string& library() const noexcept { return library_; }
  [[nodiscard]] const std::string& call() const noexcept { return call_; }
  [[nodiscard]] ExitCode exit_code() const noexcept override { return ExitCode::kDevice; }

 private:
  std::string library_, call_;
};

/// A CUDA device, stream or library asked of a gcnpart built without CUDA (configured where no nvcc was found, or
/// with -DGCNPART_CUDA=OFF). `what_asked` names the request ("--device cuda:0", "a CUDA event"). Exit code 3, as
/// for a CUDA device that is not there.
class NoCudaBuild : public Error {
 public:
  explicit NoCudaBuild(const std::string& what_asked)
      : Error(what_asked + ": this build has no CUDA (configured without nvcc or with -DGCNPART_CUDA=OFF): use "
                           "--device cpu, or install the CUDA toolkit and rebuild") {}
  [[nodiscard]] ExitCode exit_code() const noexcept override { return ExitCode::kInvalidInput; }
};

/// A violated precondition of a public entry point (a programming error by the caller).
class LogicError : public Error {
 public:
  explicit LogicError(const std::string& what) : Error(what) {}
};

namespace detail {
[[noreturn]] inline void throw_expects(const char* cond, const char* msg, const char* file, int line) {
  throw LogicError(std::string(file) + ":" + std::to_string(line) + ": precondition failed (" + cond + "): " + msg);
}
}  // namespace detail

}  // namespace gcnpart

/// Check a precondition at a public entry point; throws gcnpart::LogicError naming the condition.
#define GCNPART_EXPECTS(cond, msg)                                                  \
  do {                                                                              \
    if (!(cond)) ::gcnpart::detail::throw_expects(#cond, (msg), __FILE__, __LINE__); \
  } while (0)
