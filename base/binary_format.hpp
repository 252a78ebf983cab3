// Small pieces shared by the checksummed binary formats (.gcsr, plan files): their one CRC32, little-endian field
// access in a byte buffer and the one error shape for a bad byte ("<path>: <problem> at byte <offset>: got '<v>', expected <e>").
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "base/error.hpp"

namespace gcnpart::binary {

/// zlib's CRC32 of `bytes` bytes at `data`, continuing from `crc` (0 to start): crc32(crc32(0, a), b) is the CRC of
/// a followed by b. Large buffers are summed in 8 MiB pieces on OpenMP threads and joined with crc32_combine, which
/// gives exactly the value of one sequential call.
[[nodiscard]] std::uint32_t crc32(std::uint32_t crc, const void* data, std::uint64_t bytes);

template <class T>
void put(unsigned char* buf, std::uint64_t offset, T value) {
  std::memcpy(buf + offset, &value, sizeof(T));
}
template <class T>
T get(const unsigned char* buf, std::uint64_t offset) {
  T value;
  std::memcpy(&value, buf + offset, sizeof(T));
  return value;
}

inline std::string hex32(std::uint32_t x) {
  char s[16];
  std::snprintf(s, sizeof s, "0x%08x", x);
  return s;
}

/// Throws InvalidInput naming the file and the byte (also as the 1-based "column").
[[noreturn]] inline void fail_at_byte(const std::string& path, std::uint64_t byte, const std::string& problem,
                                      const std::string& value, const std::string& expected) {
  throw InvalidInput(InputLocation{path, 0, static_cast<std::int64_t>(byte) + 1},
                     problem + " at byte " + std::to_string(byte), value, expected);
}

/// The file must be exactly as long as the size field at byte `field` of its header says.
inline void expect_declared_size(const std::string& path, std::uint64_t size, std::uint64_t declared, int field,
                                 const char* last_part) {
  const std::string expected = std::to_string(declared) + " bytes (as the header says at byte " + std::to_string(field) + ")";
  if (size < declared) fail_at_byte(path, size, "file truncated", std::to_string(size) + " bytes", expected);
  if (size > declared)
    fail_at_byte(path, declared, std::string("trailing bytes after the last ") + last_part,
                 std::to_string(size) + " bytes", expected);
}

}  // namespace gcnpart::binary
