#include "base/binary_format.hpp"

#include <zlib.h>

#include <algorithm>
#include <vector>

namespace gcnpart::binary {

std::uint32_t crc32(std::uint32_t crc, const void* data, std::uint64_t bytes) {
  constexpr std::uint64_t kPiece = 8ull << 20;
  const auto* p = static_cast<const unsigned char*>(data);
  if (bytes <= kPiece) return static_cast<std::uint32_t>(crc32_z(crc, p, static_cast<z_size_t>(bytes)));
  const auto pieces = static_cast<std::int64_t>((bytes + kPiece - 1) / kPiece);
  std::vector<uLong> part(static_cast<std::size_t>(pieces));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < pieces; ++i) {
    const std::uint64_t begin = static_cast<std::uint64_t>(i) * kPiece;
    part[static_cast<std::size_t>(i)] =
        crc32_z(0L, p + begin, static_cast<z_size_t>(std::min(kPiece, bytes - begin)));
  }
  uLong total = crc;
  for (std::int64_t i = 0; i < pieces; ++i) {
    const std::uint64_t begin = static_cast<std::uint64_t>(i) * kPiece;
    total = crc32_combine(total, part[static_cast<std::size_t>(i)],
                          static_cast<z_off_t>(std::min(kPiece, bytes - begin)));
  }
  return static_cast<std::uint32_t>(total);
}

}  // namespace gcnpart::binary
