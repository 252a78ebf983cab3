// libFuzzer target: the .gcsr reader. Random bytes rarely get past the magic and the CRCs, so the first input byte
// steers: bit 0 skips checksum verification (the reader's structural checks must hold alone), bit 1 writes the
// real file size into the header's size field at byte 56, bit 2 recomputes the header CRC after the section table,
// so that mutations reach the section table and the array contents. The rest of the input is the file.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "datasets/gcsr.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gcnpart;
  if (size < 1) return 0;
  static const std::string path = (fuzz::scratch_dir() / "input.gcsr").string();
  const std::uint8_t steer = data[0];
  std::vector<std::uint8_t> file(data + 1, data + size);
  if ((steer & 2) != 0 && file.size() >= 64) {
    const std::uint64_t bytes = file.size();
    std::memcpy(file.data() + 56, &bytes, sizeof bytes);
  }
  if ((steer & 4) != 0 && file.size() >= 64) {
    std::uint32_t sections = 0;
    std::memcpy(&sections, file.data() + 52, sizeof sections);
    const std::uint64_t table_end = 64 + 64 * std::uint64_t{sections};
    if (sections <= 4096 && file.size() >= table_end + 4) {
      const auto crc = static_cast<std::uint32_t>(crc32_z(0L, file.data(), static_cast<z_size_t>(table_end)));
      std::memcpy(file.data() + table_end, &crc, sizeof crc);
    }
  }
  fuzz::write_file(path, file.data(), file.size());
  const bool verify = (steer & 1) == 0;
  // Dataset::validate also asks that split nodes carry labels, which .gcsr does not promise; the graph must hold.
  fuzz::expect_dataset_or_invalid_input([&] { return datasets::load_gcsr(path, verify); }, false);
  return 0;
}
