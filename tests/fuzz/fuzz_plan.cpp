// libFuzzer target: plan files (partition::load_plan). Every record and the header carry a CRC32, so the first input
// byte steers fix-ups that let mutations reach the contents checks: bit 0 recomputes every record's CRC (walking
// the records as far as their headers make sense), bit 1 writes the real file size into the header at byte 48,
// bit 2 recomputes the header CRC at byte 60. The rest of the input is the file.
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_support.hpp"
#include "partition/plan.hpp"

namespace {

template <class T>
T get(const std::vector<std::uint8_t>& b, std::size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}
template <class T>
void put(std::vector<std::uint8_t>& b, std::size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof v);
}

// Record: u32 dtype, u32 CRC32 of (dtype, count, data), u64 count, then the data (plan_io.cpp).
void fix_record_crcs(std::vector<std::uint8_t>& b) {
  std::size_t at = 64;
  while (at + 16 <= b.size()) {
    const auto dtype = get<std::uint32_t>(b, at);
    const auto count = get<std::uint64_t>(b, at + 8);
    const std::uint64_t width = dtype == 1 || dtype == 3 ? 4 : dtype == 2 || dtype == 4 ? 8 : 0;
    if (width == 0 || count > (b.size() - at - 16) / width) return;
    const std::size_t bytes = static_cast<std::size_t>(count * width);
    std::uint8_t head[12];
    std::memcpy(head, &dtype, 4);
    std::memcpy(head + 4, &count, 8);
    uLong crc = crc32_z(0L, head, sizeof head);
    crc = crc32_z(crc, b.data() + at + 16, bytes);
    put(b, at + 4, static_cast<std::uint32_t>(crc));
    at += 16 + bytes;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gcnpart;
  if (size < 1) return 0;
  static const std::string path = (fuzz::scratch_dir() / "input.gplan").string();
  const std::uint8_t steer = data[0];
  std::vector<std::uint8_t> file(data + 1, data + size);
  if (file.size() >= 64) {
    if ((steer & 1) != 0) fix_record_crcs(file);
    if ((steer & 2) != 0) put<std::uint64_t>(file, 48, file.size());
    if ((steer & 4) != 0) put(file, 60, static_cast<std::uint32_t>(crc32_z(0L, file.data(), 60)));
  }
  fuzz::write_file(path, file.data(), file.size());
  try {
    const partition::Plan plan = partition::load_plan(path);
    if (plan.parts < 1 || static_cast<int>(plan.devices.size()) != plan.parts)
      fuzz::bug("loaded plan with " + std::to_string(plan.devices.size()) + " devices for " +
                std::to_string(plan.parts) + " parts");
    for (const auto& d : plan.devices)
      if (!d.local_graph.row_offsets.empty()) d.local_graph.validate("fuzzed plan local graph");
  } catch (const InvalidInput&) {
    // The expected way to refuse a malformed file.
  } catch (const std::exception& e) {
    fuzz::bug(std::string("unexpected exception ") + typeid(e).name() + ": " + e.what());
  }
  return 0;
}
