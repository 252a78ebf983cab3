#include "base/binary_format.hpp"

#include <doctest/doctest.h>

#include <array>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace gcnpart;

namespace {

// A table-driven CRC32 (IEEE, reflected, as zlib): an independent reference.
std::uint32_t crc32_reference(const unsigned char* p, std::size_t n) {
  static const auto table = [] {
    std::array<std::uint32_t, 256> t{};
    for (std::uint32_t i = 0; i < 256; ++i) {
      std::uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
      t[i] = c;
    }
    return t;
  }();
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) crc = (crc >> 8) ^ table[(crc ^ p[i]) & 0xffu];
  return crc ^ 0xFFFFFFFFu;
}

}  // namespace

TEST_CASE("binary::crc32 gives the standard check value and continues a running CRC") {
  const std::string check = "123456789";
  CHECK(binary::crc32(0, check.data(), check.size()) == 0xCBF43926u);
  CHECK(binary::crc32(0, nullptr, 0) == 0u);
  const std::uint32_t head = binary::crc32(0, check.data(), 4);
  CHECK(binary::crc32(head, check.data() + 4, check.size() - 4) == 0xCBF43926u);
}

TEST_CASE("binary::crc32 of buffers over one 8 MiB piece equals one sequential CRC, also when continued") {
  std::vector<unsigned char> bytes((std::size_t{17} << 20) + 3);
  std::mt19937 gen(5);
  for (auto& b : bytes) b = static_cast<unsigned char>(gen());
  const std::uint32_t whole = crc32_reference(bytes.data(), bytes.size());
  CHECK(binary::crc32(0, bytes.data(), bytes.size()) == whole);
  const std::size_t cut = 1000;
  CHECK(binary::crc32(binary::crc32(0, bytes.data(), cut), bytes.data() + cut, bytes.size() - cut) == whole);
}
