#include "datasets/gcsr.hpp"

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "datasets/generators.hpp"
#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using namespace gcnpart::datasets;

namespace {

std::vector<unsigned char> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_bytes(const std::string& path, const std::vector<unsigned char>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

template <class T>
T get(const std::vector<unsigned char>& b, std::size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}
template <class T>
void put(std::vector<unsigned char>& b, std::size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
}

// A bitwise CRC32 (IEEE, reflected, as zlib): an independent reference for the stored checksums.
std::uint32_t crc32_reference(const unsigned char* p, std::size_t n) {
  std::uint32_t crc = 0xFFFFFFFFu;
  for (std::size_t i = 0; i < n; ++i) {
    crc ^= p[i];
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

struct Entry {
  std::string name;
  std::uint32_t dtype, crc;
  std::uint64_t count, offset, bytes;
};

// Parses the section table as datasets/README.md describes it.
std::vector<Entry> section_table(const std::vector<unsigned char>& b) {
  std::vector<Entry> t;
  const auto sections = get<std::uint32_t>(b, 52);
  for (std::uint32_t i = 0; i < sections; ++i) {
    const std::size_t at = 64 + 64 * i;
    Entry e;
    e.name = std::string(reinterpret_cast<const char*>(b.data() + at), strnlen(reinterpret_cast<const char*>(b.data() + at), 32));
    e.dtype = get<std::uint32_t>(b, at + 32);
    e.crc = get<std::uint32_t>(b, at + 36);
    e.count = get<std::uint64_t>(b, at + 40);
    e.offset = get<std::uint64_t>(b, at + 48);
    e.bytes = get<std::uint64_t>(b, at + 56);
    t.push_back(e);
  }
  return t;
}

// Recomputes the header CRC after a deliberate header edit, so that the edit itself is what the loader sees.
void fix_header_crc(std::vector<unsigned char>& b) {
  const std::size_t table_end = 64 + 64 * static_cast<std::size_t>(get<std::uint32_t>(b, 52));
  put<std::uint32_t>(b, table_end, crc32_reference(b.data(), table_end));
}

Dataset small_dataset() {
  EdgeList e;
  e.num_nodes = 6;
  e.src = {0, 0, 1, 2, 3, 4};
  e.dst = {1, 2, 2, 3, 4, 5};
  e.weights = {0.5f, 1.5f, 2.0f, -1.0f, 3.25f, 0.125f};
  Dataset ds;
  ds.name = "tiny graph \xC3\xA9";  // UTF-8 survives
  ds.provenance = "hand-built for gcsr_test";
  ds.graph = build_csr(e, {}, &ds.build_stats);
  ds.num_features = 3;
  for (int i = 0; i < 18; ++i) ds.features.push_back(0.25f * static_cast<float>(i) - 1.0f);
  ds.labels = {0, 1, 2, -1, 1, 0};
  ds.num_classes = 3;
  ds.splits["train"] = {0, 1};
  ds.splits["valid"] = {2};
  ds.splits["test"] = {4, 5};
  ds.splits["empty"] = {};
  return ds;
}

void check_equal(const Dataset& a, const Dataset& b) {
  CHECK(a.name == b.name);
  CHECK(a.provenance == b.provenance);
  CHECK(a.graph.num_nodes == b.graph.num_nodes);
  CHECK(a.graph.row_offsets == b.graph.row_offsets);
  CHECK(a.graph.col_ids == b.graph.col_ids);
  CHECK(a.graph.values == b.graph.values);
  CHECK(a.num_features == b.num_features);
  CHECK(a.features == b.features);
  CHECK(a.labels == b.labels);
  CHECK(a.num_classes == b.num_classes);
  CHECK(a.splits == b.splits);
  CHECK(a.build_stats.input_edges == b.build_stats.input_edges);
  CHECK(a.build_stats.self_loops_removed == b.build_stats.self_loops_removed);
  CHECK(a.build_stats.after_symmetrize == b.build_stats.after_symmetrize);
  CHECK(a.build_stats.duplicates_removed == b.build_stats.duplicates_removed);
  CHECK(a.build_stats.output_edges == b.build_stats.output_edges);
}

// Loading must throw InvalidInput whose message names the file; returns the message.
std::string load_error(const std::string& path, bool verify = true) {
  try {
    (void)load_gcsr(path, verify);
  } catch (const InvalidInput& e) {
    CHECK(e.where().file == path);
    CHECK(std::string(e.what()).find(path) != std::string::npos);
    return e.what();
  }
  FAIL("expected InvalidInput for " << path);
  return {};
}

}  // namespace

TEST_CASE("gcsr round trip keeps graph, weights, features, labels, splits, name and provenance") {
  testing::TempDir dir;
  const Dataset ds = small_dataset();
  const std::string path = dir.file("tiny.gcsr");
  save_gcsr(ds, path);
  check_equal(ds, load_gcsr(path));
  check_equal(ds, load_gcsr(path, /*verify_checksum=*/false));
}

TEST_CASE("gcsr round trip of a structure-only graph and of an empty graph") {
  testing::TempDir dir;
  Dataset plain = small_dataset();
  plain.graph.values.clear();
  plain.features.clear();
  plain.num_features = 0;
  plain.labels.clear();
  plain.num_classes = 0;
  plain.splits.clear();
  plain.name.clear();
  save_gcsr(plain, dir.file("plain.gcsr"));
  const Dataset back = load_gcsr(dir.file("plain.gcsr"));
  check_equal(plain, back);
  CHECK_FALSE(back.graph.weighted());
  CHECK_FALSE(back.has_features());
  CHECK_FALSE(back.has_labels());

  Dataset empty;
  empty.name = "empty";
  save_gcsr(empty, dir.file("empty.gcsr"));
  const Dataset e = load_gcsr(dir.file("empty.gcsr"));
  CHECK(e.num_nodes() == 0);
  CHECK(e.graph.row_offsets == std::vector<RowOffset>{0});
  CHECK(e.name == "empty");
}

TEST_CASE("gcsr round trip of a generated dataset whose features span several checksum pieces") {
  testing::TempDir dir;
  RmatParams p;
  p.scale = 13;
  p.edge_factor = 8;
  p.features = 300;  // 8192 x 300 x 4 bytes = 9.8 MB: more than one 8 MiB CRC piece
  p.classes = 5;
  const Dataset ds = generate_rmat(p);
  const std::string path = dir.file("rmat.gcsr");
  save_gcsr(ds, path);
  check_equal(ds, load_gcsr(path));
}

TEST_CASE("gcsr layout: 64-byte aligned sections whose CRCs are plain CRC32s of their bytes") {
  testing::TempDir dir;
  RmatParams p;
  p.scale = 13;
  p.edge_factor = 8;
  p.features = 300;
  p.classes = 5;
  const std::string path = dir.file("rmat.gcsr");
  save_gcsr(generate_rmat(p), path);
  const auto b = read_bytes(path);
  CHECK(std::memcmp(b.data(), "GCNPCSR\0", 8) == 0);
  CHECK(get<std::uint32_t>(b, 8) == 1);
  CHECK(get<std::uint32_t>(b, 12) == 6);  // features and labels, unweighted
  CHECK(get<std::uint64_t>(b, 16) == 8192);
  CHECK(get<std::uint64_t>(b, 32) == 300);
  CHECK(get<std::uint64_t>(b, 40) == 5);
  CHECK(get<std::uint32_t>(b, 48) == 3);
  CHECK(get<std::uint64_t>(b, 56) == b.size());
  const auto table = section_table(b);
  const std::size_t table_end = 64 + 64 * table.size();
  CHECK(get<std::uint32_t>(b, table_end) == crc32_reference(b.data(), table_end));
  std::vector<std::string> names;
  for (const auto& e : table) {
    names.push_back(e.name);
    CHECK(e.offset % 64 == 0);
    CHECK(e.offset + e.bytes <= b.size());
    CHECK(e.crc == crc32_reference(b.data() + e.offset, e.bytes));
  }
  CHECK(names == std::vector<std::string>{"row_offsets", "col_ids", "features", "labels", "split:test", "split:train",
                                          "split:valid", "name", "provenance", "build_stats"});
}

TEST_CASE("gcsr files truncated anywhere are rejected with the file named") {
  testing::TempDir dir;
  const std::string good = dir.file("good.gcsr");
  save_gcsr(small_dataset(), good);
  const auto bytes = read_bytes(good);
  const auto table = section_table(bytes);
  std::vector<std::size_t> cuts = {0, 7, 40, 63, 64, 64 + 64 * 2 + 5, 64 + 64 * table.size() + 4};
  for (const auto& e : table)
    if (e.bytes > 0) cuts.push_back(e.offset + e.bytes / 2);
  cuts.push_back(bytes.size() - 1);
  for (const std::size_t cut : cuts) {
    CAPTURE(cut);
    const std::string path = dir.file("cut.gcsr");
    write_bytes(path, std::vector<unsigned char>(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut)));
    const std::string msg = load_error(path);
    CHECK((msg.find("truncated") != std::string::npos || msg.find("too short") != std::string::npos));
    (void)load_error(path, /*verify=*/false);
  }
}

TEST_CASE("gcsr detects a flipped byte in every section and in the header") {
  testing::TempDir dir;
  const std::string good = dir.file("good.gcsr");
  save_gcsr(small_dataset(), good);
  const auto bytes = read_bytes(good);
  const auto table = section_table(bytes);
  for (const auto& e : table) {
    if (e.bytes == 0) continue;
    CAPTURE(e.name);
    auto bad = bytes;
    bad[e.offset + e.bytes / 2] ^= 0x40;
    const std::string path = dir.file("flip.gcsr");
    write_bytes(path, bad);
    const std::string msg = load_error(path);
    CHECK(msg.find("checksum mismatch in section '" + e.name + "'") != std::string::npos);
    CHECK(msg.find("at byte " + std::to_string(e.offset)) != std::string::npos);
  }
  auto bad = bytes;
  bad[64 + 40] ^= 0x01;  // element count of the first section
  write_bytes(dir.file("head.gcsr"), bad);
  CHECK(load_error(dir.file("head.gcsr")).find("header checksum") != std::string::npos);
}

TEST_CASE("gcsr without checksums still rejects ids out of range and broken offsets") {
  testing::TempDir dir;
  save_gcsr(small_dataset(), dir.file("good.gcsr"));
  const auto bytes = read_bytes(dir.file("good.gcsr"));
  const auto table = section_table(bytes);
  auto at = [&](const std::string& name) {
    for (const auto& e : table)
      if (e.name == name) return e;
    FAIL("no section " << name);
    return Entry{};
  };
  auto bad = bytes;
  put<std::int32_t>(bad, at("col_ids").offset + 4, 1000000000);
  write_bytes(dir.file("col.gcsr"), bad);
  std::string msg = load_error(dir.file("col.gcsr"), false);
  CHECK(msg.find("out of range") != std::string::npos);
  CHECK(msg.find("1000000000") != std::string::npos);
  CHECK(msg.find("at byte " + std::to_string(at("col_ids").offset + 4)) != std::string::npos);

  bad = bytes;
  put<std::int64_t>(bad, at("row_offsets").offset + 8 * 3, 999);
  write_bytes(dir.file("off.gcsr"), bad);
  CHECK(load_error(dir.file("off.gcsr"), false).find("row offset of node 3") != std::string::npos);

  bad = bytes;
  put<std::int32_t>(bad, at("labels").offset, 7);
  write_bytes(dir.file("label.gcsr"), bad);
  CHECK(load_error(dir.file("label.gcsr"), false).find("label of node 0") != std::string::npos);

  bad = bytes;
  put<std::int32_t>(bad, at("split:train").offset, -3);
  write_bytes(dir.file("split.gcsr"), bad);
  CHECK(load_error(dir.file("split.gcsr"), false).find("split:train") != std::string::npos);
}

TEST_CASE("gcsr rejects a wrong magic and an unsupported version") {
  testing::TempDir dir;
  save_gcsr(small_dataset(), dir.file("good.gcsr"));
  const auto bytes = read_bytes(dir.file("good.gcsr"));

  auto bad = bytes;
  std::memcpy(bad.data(), "PK\x03\x04zip!", 8);
  write_bytes(dir.file("magic.gcsr"), bad);
  std::string msg = load_error(dir.file("magic.gcsr"), false);
  CHECK(msg.find("bad magic") != std::string::npos);
  CHECK(msg.find("at byte 0") != std::string::npos);

  bad = bytes;
  put<std::uint32_t>(bad, 8, 2);
  fix_header_crc(bad);
  write_bytes(dir.file("version.gcsr"), bad);
  msg = load_error(dir.file("version.gcsr"));
  CHECK(msg.find("unsupported .gcsr version at byte 8: got '2', expected 1") != std::string::npos);
}

TEST_CASE("gcsr headers claiming huge counts are rejected before anything is allocated") {
  testing::TempDir dir;
  save_gcsr(small_dataset(), dir.file("good.gcsr"));
  const auto bytes = read_bytes(dir.file("good.gcsr"));
  struct Case {
    std::size_t at;
    std::uint64_t value;
    const char* expect;
  };
  const Case cases[] = {{16, 1000000000000ull, "node count at byte 16"},
                        {16, 2000000000ull, "feature count at byte 32"},  // fits int32, but 2e9 x 3 features cannot fit
                        {24, 1000000000000ull, "edge count at byte 24"},
                        {32, 1ull << 40, "feature count at byte 32"},
                        {64 + 40, 1ull << 61, "element count of section 'row_offsets'"},
                        {64 + 56, 1ull << 62, "length of section 'row_offsets'"},
                        {64 + 48, 1ull << 62, "offset of section 'row_offsets'"}};
  for (const auto& c : cases) {
    CAPTURE(c.expect);
    auto bad = bytes;
    put<std::uint64_t>(bad, c.at, c.value);
    fix_header_crc(bad);
    write_bytes(dir.file("huge.gcsr"), bad);
    CHECK(load_error(dir.file("huge.gcsr")).find(c.expect) != std::string::npos);
    CHECK(load_error(dir.file("huge.gcsr"), false).find(c.expect) != std::string::npos);
  }
  auto bad = bytes;
  put<std::uint32_t>(bad, 52, 0xFFFFFFFFu);  // section count
  write_bytes(dir.file("sections.gcsr"), bad);
  CHECK(load_error(dir.file("sections.gcsr"), false).find("section count at byte 52") != std::string::npos);
}

TEST_CASE("gcsr saving never leaves a truncated file: an uncommitted write keeps the old file") {
  testing::TempDir dir;
  const std::string path = dir.file("data.gcsr");
  const Dataset first = small_dataset();
  save_gcsr(first, path);
  {
    AtomicFile half(path);
    half.write("GCNPCSR");  // a writer that dies before commit()
  }
  check_equal(first, load_gcsr(path));

  Dataset second = small_dataset();
  second.name = "second";
  save_gcsr(second, path);
  CHECK(load_gcsr(path).name == "second");
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir.path)) ++files;
  CHECK(files == 1);  // no temporary file left behind
}

TEST_CASE("gcsr reports a missing file as IoError and an over-long split name as InvalidInput") {
  testing::TempDir dir;
  CHECK_THROWS_AS((void)load_gcsr(dir.file("absent.gcsr")), IoError);
  Dataset ds = small_dataset();
  ds.splits["a-split-name-that-is-far-too-long"] = {1};
  CHECK_THROWS_AS(save_gcsr(ds, dir.file("long.gcsr")), InvalidInput);
  CHECK_FALSE(std::filesystem::exists(dir.file("long.gcsr")));
}
