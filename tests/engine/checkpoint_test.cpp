// engine/checkpoint.hpp: the version-2 weights and checkpoint files carry a CRC32 per part, so a flipped byte is
// refused naming the file and the part; a NaN is refused even with a correct checksum; version-1 files (no
// checksums) still load.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "base/binary_format.hpp"
#include "base/error.hpp"
#include "engine/checkpoint.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using namespace gcnpart::engine;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

template <class T>
void append(std::string& s, const T& value) {
  s.append(reinterpret_cast<const char*>(&value), sizeof value);
}

/// The 3-4-2 model's parameters: W0 (12), b0 (4), W1 (8), b1 (2), with distinct values.
std::vector<std::vector<float>> small_params() {
  std::vector<std::vector<float>> p{std::vector<float>(12), std::vector<float>(4), std::vector<float>(8),
                                    std::vector<float>(2)};
  float x = 0.125f;
  for (auto& t : p)
    for (auto& v : t) v = (x += 0.25f);
  return p;
}
const std::vector<std::int64_t> kDims{3, 4, 2};

// Byte layout of the 3-4-2 weights file, version 2: header 0..39 + CRC 40; W0's count at 44, its floats at 52..99,
// CRC at 100; b0's count at 104, floats 112..127, CRC 128; W1 132 / 140..171 / 172; b1 176 / 184..191 / 192; 196 bytes.
constexpr std::size_t kW0Data = 52, kW0Crc = 100, kW1Data = 140, kWeightsBytes = 196;

Checkpoint small_checkpoint() {
  Checkpoint c;
  c.dims = kDims;
  c.seed = 42;
  c.next_epoch = 3;
  c.since_best = 1;
  c.model.step = 3;
  for (const auto& t : small_params()) c.model.params.insert(c.model.params.end(), t.begin(), t.end());
  c.model.adam_m.assign(c.model.params.size(), 0.01f);
  c.model.adam_v.assign(c.model.params.size(), 0.02f);
  c.train_loss = {1.0, 0.9, 0.8};
  c.valid_loss = {1.1, 1.0, 0.95};
  c.best_valid = 0.95;
  return c;
}

}  // namespace

TEST_CASE("weights and checkpoints of version 2 round-trip bit for bit and start with their version-2 magic") {
  testing::TempDir dir;
  save_weights(dir.file("w.bin"), kDims, small_params());
  const std::string bytes = read_bytes(dir.file("w.bin"));
  CHECK(bytes.substr(0, 8) == "GCNPWTS2");
  CHECK(bytes.size() == kWeightsBytes);
  CHECK(load_weights(dir.file("w.bin"), kDims) == small_params());

  const Checkpoint c = small_checkpoint();
  save_checkpoint(dir.file("c.gckpt"), c);
  CHECK(read_bytes(dir.file("c.gckpt")).substr(0, 8) == "GCNPCKP2");
  const Checkpoint back = load_checkpoint(dir.file("c.gckpt"));
  CHECK(back.dims == c.dims);
  CHECK(back.seed == c.seed);
  CHECK(back.next_epoch == c.next_epoch);
  CHECK(back.since_best == c.since_best);
  CHECK(back.model.step == c.model.step);
  CHECK(back.model.params == c.model.params);
  CHECK(back.model.adam_m == c.model.adam_m);
  CHECK(back.model.adam_v == c.model.adam_v);
  CHECK(back.train_loss == c.train_loss);
  CHECK(back.valid_loss == c.valid_loss);
  CHECK(back.best_valid == c.best_valid);
}

TEST_CASE("one flipped byte in a saved tensor is refused with a checksum mismatch naming the file, tensor and byte") {
  testing::TempDir dir;
  save_weights(dir.file("w.bin"), kDims, small_params());
  std::string bytes = read_bytes(dir.file("w.bin"));
  bytes[kW1Data + 5] = static_cast<char>(bytes[kW1Data + 5] ^ 0x01);  // a mantissa bit: still finite
  write_bytes(dir.file("flip.bin"), bytes);
  try {
    (void)load_weights(dir.file("flip.bin"), kDims);
    FAIL("a flipped byte loaded");
  } catch (const InvalidInput& e) {
    const std::string msg = e.what();
    CHECK(msg.find("flip.bin: checksum mismatch in the weights of layer 1 at byte 132") != std::string::npos);
    CHECK(msg.find("(stored at byte 172; the file is damaged or was edited)") != std::string::npos);
  }

  // A flipped width in the header is a checksum mismatch too, not a "widths do not match" that blames the model.
  bytes = read_bytes(dir.file("w.bin"));
  bytes[24] = 5;
  write_bytes(dir.file("header.bin"), bytes);
  CHECK_THROWS_WITH_AS(load_weights(dir.file("header.bin"), kDims),
                       doctest::Contains("checksum mismatch in the header (layer widths) at byte 0"), InvalidInput);

  // Trailing bytes after the last tensor: damaged or foreign.
  write_bytes(dir.file("long.bin"), read_bytes(dir.file("w.bin")) + "xx");
  CHECK_THROWS_WITH_AS(load_weights(dir.file("long.bin"), kDims),
                       doctest::Contains("trailing bytes after the last tensor at byte 196"), InvalidInput);

  const Checkpoint c = small_checkpoint();
  save_checkpoint(dir.file("c.gckpt"), c);
  std::string ck = read_bytes(dir.file("c.gckpt"));
  // Header part 48 bytes + CRC, widths 8 + 24 + CRC (52..87), parameters 8 + 104 + CRC (88..203), Adam m from 204.
  ck[204 + 8 + 10] = static_cast<char>(ck[204 + 8 + 10] ^ 0x40);
  write_bytes(dir.file("flip.gckpt"), ck);
  CHECK_THROWS_WITH_AS(load_checkpoint(dir.file("flip.gckpt")),
                       doctest::Contains("flip.gckpt: checksum mismatch in the Adam first moments at byte 204"),
                       InvalidInput);
}

TEST_CASE("a NaN written into a weights file with a correct checksum is refused as non-finite") {
  testing::TempDir dir;
  save_weights(dir.file("w.bin"), kDims, small_params());
  std::string bytes = read_bytes(dir.file("w.bin"));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(bytes.data() + kW0Data + 4 * 7, &nan, sizeof nan);
  // Recompute W0's CRC (its count and floats) as an editor that knows the format would.
  const std::uint32_t crc = binary::crc32(0, bytes.data() + kW0Data - 8, 8 + 48);
  std::memcpy(bytes.data() + kW0Crc, &crc, sizeof crc);
  write_bytes(dir.file("nan.bin"), bytes);
  CHECK_THROWS_WITH_AS(load_weights(dir.file("nan.bin"), kDims),
                       doctest::Contains("nan.bin: non-finite value in the weights of layer 0: got 'nan at index 7'"),
                       InvalidInput);

  Checkpoint c = small_checkpoint();
  c.model.adam_v[5] = std::numeric_limits<float>::infinity();
  save_checkpoint(dir.file("inf.gckpt"), c);  // the checksum is right; the value is not
  CHECK_THROWS_WITH_AS(load_checkpoint(dir.file("inf.gckpt")),
                       doctest::Contains("non-finite value in the Adam second moments: got 'inf at index 5'"),
                       InvalidInput);
}

TEST_CASE("version-1 weights and checkpoints (no checksums) still load, and are still checked for finiteness") {
  testing::TempDir dir;
  const auto params = small_params();
  std::string v1 = "GCNPWTS1";
  append(v1, std::int64_t{3});
  for (auto d : kDims) append(v1, d);
  for (const auto& t : params) {
    append(v1, static_cast<std::int64_t>(t.size()));
    for (float v : t) append(v1, v);
  }
  write_bytes(dir.file("v1.bin"), v1);
  CHECK(load_weights(dir.file("v1.bin"), kDims) == params);
  std::memcpy(v1.data() + 8 + 8 + 24 + 8 + 4 * 2, "\xff\xff\xff\x7f", 4);  // W0[2] = NaN
  write_bytes(dir.file("v1nan.bin"), v1);
  CHECK_THROWS_WITH_AS(load_weights(dir.file("v1nan.bin"), kDims),
                       doctest::Contains("non-finite value in the weights of layer 0"), InvalidInput);

  const Checkpoint c = small_checkpoint();
  std::string ck = "GCNPCKP1";
  append(ck, c.seed);
  for (std::int64_t h : {std::int64_t{c.next_epoch}, c.model.step, std::int64_t{c.since_best}}) append(ck, h);
  append(ck, c.best_valid);
  auto vec = [&ck](const auto& v) {
    append(ck, static_cast<std::int64_t>(v.size()));
    for (const auto& x : v) append(ck, x);
  };
  vec(c.dims);
  vec(c.model.params);
  vec(c.model.adam_m);
  vec(c.model.adam_v);
  vec(c.train_loss);
  vec(c.valid_loss);
  write_bytes(dir.file("v1.gckpt"), ck);
  const Checkpoint back = load_checkpoint(dir.file("v1.gckpt"));
  CHECK(back.model.params == c.model.params);
  CHECK(back.valid_loss == c.valid_loss);
  CHECK(back.next_epoch == 3);

  // Version 1's layout fixes every length too: bytes after the last part are refused.
  write_bytes(dir.file("v1tail.gckpt"), ck + "junk");
  CHECK_THROWS_WITH_AS(load_checkpoint(dir.file("v1tail.gckpt")), doctest::Contains("trailing bytes"), InvalidInput);
  // An epoch beyond int is refused naming the header's fields, not narrowed into a garbage epoch.
  std::string big = ck;
  const std::int64_t huge = std::int64_t{1} << 40;
  std::memcpy(big.data() + 8 + sizeof c.seed, &huge, sizeof huge);
  write_bytes(dir.file("v1big.gckpt"), big);
  CHECK_THROWS_WITH_AS(load_checkpoint(dir.file("v1big.gckpt")),
                       doctest::Contains("bad checkpoint header: got 'epoch 1099511627776"), InvalidInput);

  write_bytes(dir.file("v3.bin"), "GCNPWTS3" + v1.substr(8));
  CHECK_THROWS_WITH_AS(load_weights(dir.file("v3.bin"), kDims),
                       doctest::Contains("not a gcnpart weights file: got 'bad magic', expected GCNPWTS2 (or GCNPWTS1)"),
                       InvalidInput);
}

TEST_CASE("a folder given as a weights or checkpoint file is an I/O error naming it, not an internal one") {
  testing::TempDir dir;
  const std::string folder = dir.file("sub");
  std::filesystem::create_directory(folder);
  CHECK_THROWS_WITH_AS(load_weights(folder, kDims), doctest::Contains("sub"), IoError);
  CHECK_THROWS_WITH_AS(load_checkpoint(folder), doctest::Contains("sub"), IoError);
}
