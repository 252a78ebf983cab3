// The .gcsr format; datasets/README.md ("The .gcsr format") is the specification this file implements.
#include "datasets/gcsr.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

#include "base/atomic_file.hpp"
#include "base/binary_format.hpp"
#include "base/error.hpp"
#include "base/input_file.hpp"

namespace gcnpart::datasets {

// The format is little-endian and the arrays are written and read by plain copies.
static_assert(std::endian::native == std::endian::little, ".gcsr I/O assumes a little-endian host");

namespace {

constexpr char kMagic[8] = {'G', 'C', 'N', 'P', 'C', 'S', 'R', '\0'};
constexpr std::uint32_t kVersion = 1;
constexpr std::uint32_t kFlagWeighted = 1u << 0, kFlagFeatures = 1u << 1, kFlagLabels = 1u << 2;
constexpr std::uint32_t kKnownFlags = kFlagWeighted | kFlagFeatures | kFlagLabels;
constexpr std::uint64_t kHeaderBytes = 64;
constexpr std::uint64_t kEntryBytes = 64;
constexpr std::uint64_t kNameBytes = 32;  // NUL-padded, at most 31 bytes of name
constexpr std::uint64_t kAlignment = 64;
constexpr std::uint64_t kMaxSections = 4096;
constexpr char kSplitPrefix[] = "split:";

enum DType : std::uint32_t { kInt32 = 1, kInt64 = 2, kFloat32 = 3, kUtf8 = 4 };

std::uint64_t dtype_size(std::uint32_t dtype) {
  switch (dtype) {
    case kInt32: return 4;
    case kInt64: return 8;
    case kFloat32: return 4;
    case kUtf8: return 1;
    default: return 0;
  }
}

const char* dtype_name(std::uint32_t dtype) {
  switch (dtype) {
    case kInt32: return "int32 (1)";
    case kInt64: return "int64 (2)";
    case kFloat32: return "float32 (3)";
    case kUtf8: return "utf8 (4)";
    default: return "unknown";
  }
}

std::uint64_t align_up(std::uint64_t x) { return (x + kAlignment - 1) / kAlignment * kAlignment; }

template <class T>
void put(std::vector<unsigned char>& buf, std::uint64_t offset, T value) {
  binary::put(buf.data(), offset, value);
}
template <class T>
T get(const std::vector<unsigned char>& buf, std::uint64_t offset) {
  return binary::get<T>(buf.data(), offset);
}

using binary::hex32;
// Every problem in a file: "<path>: <problem> at byte <offset>: got '<value>', expected <expected>".
[[noreturn]] void fail(const std::string& path, std::uint64_t byte, const std::string& problem, const std::string& value,
                       const std::string& expected) {
  binary::fail_at_byte(path, byte, problem, value, expected);
}

// ---------------------------------------------------------------------------------------------------------------
// Writing

struct OutSection {
  std::string name;
  std::uint32_t dtype;
  const void* data;
  std::uint64_t count;
  std::uint64_t offset = 0;
  std::uint32_t crc = 0;
  [[nodiscard]] std::uint64_t bytes() const { return count * dtype_size(dtype); }
};

[[noreturn]] void bad_dataset(const Dataset& ds, const std::string& array, const std::string& problem,
                              const std::string& value, const std::string& expected) {
  throw InvalidInput(InputLocation{"dataset '" + ds.name + "' " + array, 0, 0}, problem, value, expected);
}

}  // namespace

void save_gcsr(const Dataset& ds, const std::string& path) {
  const Csr& g = ds.graph;
  const std::int64_t n = g.num_nodes, e = g.num_edges();
  const RowOffset empty_offsets[1] = {0};
  const bool offsets_missing = n == 0 && g.row_offsets.empty();
  if (!offsets_missing && static_cast<std::int64_t>(g.row_offsets.size()) != n + 1)
    bad_dataset(ds, "row_offsets", "wrong length", std::to_string(g.row_offsets.size()), std::to_string(n + 1));
  if (g.weighted() && static_cast<std::int64_t>(g.values.size()) != e)
    bad_dataset(ds, "values", "wrong length", std::to_string(g.values.size()), std::to_string(e));
  for (std::size_t k = 0; k < g.values.size(); ++k)
    if (!std::isfinite(g.values[k]))
      bad_dataset(ds, "values[" + std::to_string(k) + "]", "non-finite edge weight", std::to_string(g.values[k]),
                  "a finite float");
  if (ds.num_features < 0 || static_cast<std::int64_t>(ds.features.size()) != n * ds.num_features)
    bad_dataset(ds, "features", "wrong length", std::to_string(ds.features.size()),
                std::to_string(n) + " x " + std::to_string(ds.num_features));
  if (ds.has_labels() && static_cast<std::int64_t>(ds.labels.size()) != n)
    bad_dataset(ds, "labels", "wrong length", std::to_string(ds.labels.size()), std::to_string(n));
  if (ds.num_classes < 0) bad_dataset(ds, "num_classes", "negative", std::to_string(ds.num_classes), ">= 0");

  std::vector<OutSection> sections;
  sections.push_back({"row_offsets", kInt64, offsets_missing ? empty_offsets : g.row_offsets.data(),
                      static_cast<std::uint64_t>(n + 1)});
  sections.push_back({"col_ids", kInt32, g.col_ids.data(), static_cast<std::uint64_t>(e)});
  if (g.weighted()) sections.push_back({"values", kFloat32, g.values.data(), static_cast<std::uint64_t>(e)});
  if (ds.has_features()) sections.push_back({"features", kFloat32, ds.features.data(), ds.features.size()});
  if (ds.has_labels()) sections.push_back({"labels", kInt32, ds.labels.data(), ds.labels.size()});
  for (const auto& [name, ids] : ds.splits) {
    const std::string section = kSplitPrefix + name;
    if (name.empty() || section.size() >= kNameBytes || name.find('\0') != std::string::npos)
      throw InvalidInput::parameter("split name", name,
                                    "1.." + std::to_string(kNameBytes - 1 - (sizeof kSplitPrefix - 1)) +
                                        " bytes without NUL (.gcsr section names hold 31 bytes)");
    sections.push_back({section, kInt32, ids.data(), ids.size()});
  }
  sections.push_back({"name", kUtf8, ds.name.data(), ds.name.size()});
  sections.push_back({"provenance", kUtf8, ds.provenance.data(), ds.provenance.size()});
  const std::int64_t stats[5] = {ds.build_stats.input_edges, ds.build_stats.self_loops_removed,
                                 ds.build_stats.after_symmetrize, ds.build_stats.duplicates_removed,
                                 ds.build_stats.output_edges};
  sections.push_back({"build_stats", kInt64, stats, 5});

  const std::uint64_t table_end = kHeaderBytes + kEntryBytes * sections.size();
  std::uint64_t cursor = table_end + 8;  // header CRC + 4 zero bytes
  for (auto& s : sections) {
    s.offset = align_up(cursor);
    cursor = s.offset + s.bytes();
    s.crc = binary::crc32(0, s.data, s.bytes());
  }
  const std::uint64_t file_size = cursor;

  std::vector<unsigned char> head(table_end + 8, 0);
  std::memcpy(head.data(), kMagic, sizeof kMagic);
  put<std::uint32_t>(head, 8, kVersion);
  put<std::uint32_t>(head, 12, (g.weighted() ? kFlagWeighted : 0) | (ds.has_features() ? kFlagFeatures : 0) |
                                   (ds.has_labels() ? kFlagLabels : 0));
  put<std::uint64_t>(head, 16, static_cast<std::uint64_t>(n));
  put<std::uint64_t>(head, 24, static_cast<std::uint64_t>(e));
  put<std::uint64_t>(head, 32, static_cast<std::uint64_t>(ds.num_features));
  put<std::uint64_t>(head, 40, static_cast<std::uint64_t>(ds.num_classes));
  put<std::uint32_t>(head, 48, static_cast<std::uint32_t>(ds.splits.size()));
  put<std::uint32_t>(head, 52, static_cast<std::uint32_t>(sections.size()));
  put<std::uint64_t>(head, 56, file_size);
  for (std::size_t i = 0; i < sections.size(); ++i) {
    const std::uint64_t at = kHeaderBytes + kEntryBytes * i;
    std::memcpy(head.data() + at, sections[i].name.data(), sections[i].name.size());
    put<std::uint32_t>(head, at + 32, sections[i].dtype);
    put<std::uint32_t>(head, at + 36, sections[i].crc);
    put<std::uint64_t>(head, at + 40, sections[i].count);
    put<std::uint64_t>(head, at + 48, sections[i].offset);
    put<std::uint64_t>(head, at + 56, sections[i].bytes());
  }
  put<std::uint32_t>(head, table_end, binary::crc32(0, head.data(), table_end));

  AtomicFile out(path);
  out.write(head.data(), head.size());
  static constexpr unsigned char kZeros[kAlignment] = {};
  for (const auto& s : sections) {
    out.write(kZeros, s.offset - out.size());
    out.write(s.data, s.bytes());
  }
  out.commit();
}

// ---------------------------------------------------------------------------------------------------------------
// Reading

namespace {

using InFile = ::gcnpart::InputFile;

struct InSection {
  std::string name;
  std::uint32_t dtype = 0, crc = 0;
  std::uint64_t count = 0, offset = 0, bytes = 0, entry = 0;  // entry: byte offset of its table entry
};

// Finds the lowest index in [0, count) for which bad(i) holds, in parallel; count if none.
template <class Bad>
std::int64_t first_bad(std::int64_t count, Bad bad) {
  std::int64_t first = count;
#pragma omp parallel for reduction(min : first) schedule(static)
  for (std::int64_t i = 0; i < count; ++i)
    if (bad(i)) first = std::min(first, i);
  return first;
}

}  // namespace

Dataset load_gcsr(const std::string& path, bool verify_checksum) {
  const InFile file(path);
  const std::uint64_t size = file.size();
  if (size < kHeaderBytes)
    fail(path, size, "file too short for the .gcsr header", std::to_string(size) + " bytes",
         "at least " + std::to_string(kHeaderBytes) + " bytes");
  std::vector<unsigned char> head(kHeaderBytes);
  file.read(head.data(), kHeaderBytes, 0);
  if (std::memcmp(head.data(), kMagic, sizeof kMagic) != 0) {
    std::string got;
    for (int i = 0; i < 8; ++i) {
      const unsigned char ch = head[i];
      got += (ch >= 32 && ch < 127) ? std::string(1, static_cast<char>(ch)) : "\\x" + hex32(ch).substr(8);
    }
    fail(path, 0, "not a .gcsr file (bad magic)", got, "'GCNPCSR\\0'");
  }
  const auto version = get<std::uint32_t>(head, 8);
  if (version != kVersion)
    fail(path, 8, "unsupported .gcsr version", std::to_string(version), std::to_string(kVersion));
  const auto num_sections = get<std::uint32_t>(head, 52);
  if (num_sections > kMaxSections)
    fail(path, 52, "section count", std::to_string(num_sections), "at most " + std::to_string(kMaxSections));
  const std::uint64_t table_end = kHeaderBytes + kEntryBytes * num_sections;
  if (size < table_end + 8)
    fail(path, size, "file truncated inside the header and section table", std::to_string(size) + " bytes",
         "at least " + std::to_string(table_end + 8) + " bytes for " + std::to_string(num_sections) + " sections");
  head.resize(table_end + 8);
  file.read(head.data() + kHeaderBytes, table_end + 8 - kHeaderBytes, kHeaderBytes);
  if (verify_checksum) {
    const auto stored = get<std::uint32_t>(head, table_end);
    const std::uint32_t actual = binary::crc32(0, head.data(), table_end);
    if (stored != actual)
      fail(path, table_end, "header checksum mismatch (header or section table corrupt)", hex32(actual),
           hex32(stored) + " (the CRC32 of bytes 0.." + std::to_string(table_end - 1) + " stored at byte " +
               std::to_string(table_end) + ")");
  }
  binary::expect_declared_size(path, size, get<std::uint64_t>(head, 56), 56, "section");

  const auto flags = get<std::uint32_t>(head, 12);
  if ((flags & ~kKnownFlags) != 0)
    fail(path, 12, "unknown flag bits", hex32(flags), "only bits 0-2 (weighted, features, labels)");
  const auto n = get<std::uint64_t>(head, 16);
  const auto e = get<std::uint64_t>(head, 24);
  const auto f = get<std::uint64_t>(head, 32);
  const auto classes = get<std::uint64_t>(head, 40);
  const auto num_splits = get<std::uint32_t>(head, 48);
  // Counts must fit the file before anything is sized by them (a corrupt count must not allocate).
  if (n > static_cast<std::uint64_t>(std::numeric_limits<NodeId>::max()))
    fail(path, 16, "node count", std::to_string(n), "at most 2147483647 (int32 node ids)");
  if (e > size / sizeof(NodeId))
    fail(path, 24, "edge count", std::to_string(e), "at most " + std::to_string(size / sizeof(NodeId)) + " for a file of " +
                                                     std::to_string(size) + " bytes");
  if (f > size / sizeof(float) || (n > 0 && f > size / sizeof(float) / n))
    fail(path, 32, "feature count", std::to_string(f), "num_nodes x num_features x 4 within the file size " +
                                                         std::to_string(size));
  if (classes > static_cast<std::uint64_t>(std::numeric_limits<std::int32_t>::max()))
    fail(path, 40, "class count", std::to_string(classes), "at most 2147483647");
  if (((flags & kFlagFeatures) != 0) != (f > 0))
    fail(path, 12, "features flag disagrees with the feature count at byte 32", hex32(flags),
         f > 0 ? "bit 1 set" : "bit 1 clear");

  // Section table: names, dtypes, sizes, alignment and ranges, all checked against the file size.
  std::vector<InSection> sections(num_sections);
  for (std::uint32_t i = 0; i < num_sections; ++i) {
    InSection& s = sections[i];
    s.entry = kHeaderBytes + kEntryBytes * i;
    const auto* name = reinterpret_cast<const char*>(head.data() + s.entry);
    const std::size_t len = strnlen(name, kNameBytes);
    if (len == 0 || len == kNameBytes)
      fail(path, s.entry, "section name", std::string(name, len), "1..31 bytes, NUL-padded to 32");
    s.name.assign(name, len);
    s.dtype = get<std::uint32_t>(head, s.entry + 32);
    s.crc = get<std::uint32_t>(head, s.entry + 36);
    s.count = get<std::uint64_t>(head, s.entry + 40);
    s.offset = get<std::uint64_t>(head, s.entry + 48);
    s.bytes = get<std::uint64_t>(head, s.entry + 56);
    const std::uint64_t width = dtype_size(s.dtype);
    if (width == 0)
      fail(path, s.entry + 32, "dtype of section '" + s.name + "'", std::to_string(s.dtype),
           "1 (int32), 2 (int64), 3 (float32) or 4 (utf8)");
    if (s.offset % kAlignment != 0 || s.offset < table_end + 8 || s.offset > size)
      fail(path, s.entry + 48, "offset of section '" + s.name + "'", std::to_string(s.offset),
           "a multiple of 64 in " + std::to_string(table_end + 8) + ".." + std::to_string(size));
    if (s.bytes > size - s.offset)
      fail(path, s.entry + 56, "length of section '" + s.name + "'", std::to_string(s.bytes),
           "at most " + std::to_string(size - s.offset) + " (section at byte " + std::to_string(s.offset) +
               ", file of " + std::to_string(size) + " bytes)");
    if (s.count > s.bytes / width || s.count * width != s.bytes)
      fail(path, s.entry + 40, "element count of section '" + s.name + "'", std::to_string(s.count),
           std::to_string(s.bytes / width) + " (" + std::to_string(s.bytes) + " bytes of " + dtype_name(s.dtype) + ")");
    for (std::uint32_t j = 0; j < i; ++j)
      if (sections[j].name == s.name) fail(path, s.entry, "duplicate section", s.name, "each name once");
  }
  {
    std::vector<const InSection*> by_offset;
    for (const auto& s : sections) by_offset.push_back(&s);
    std::sort(by_offset.begin(), by_offset.end(), [](auto* x, auto* y) { return x->offset < y->offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i)
      if (by_offset[i - 1]->offset + by_offset[i - 1]->bytes > by_offset[i]->offset)
        fail(path, by_offset[i]->entry + 48, "section '" + by_offset[i]->name + "' overlaps '" + by_offset[i - 1]->name + "'",
             std::to_string(by_offset[i]->offset),
             "at least " + std::to_string(by_offset[i - 1]->offset + by_offset[i - 1]->bytes));
  }
  auto find = [&](const std::string& name) -> const InSection* {
    for (const auto& s : sections)
      if (s.name == name) return &s;
    return nullptr;
  };
  auto require = [&](const std::string& name, bool present, std::uint32_t dtype, std::uint64_t count) -> const InSection* {
    const InSection* s = find(name);
    if (!present) {
      if (s != nullptr) fail(path, s->entry, "section '" + name + "' present although the flags at byte 12 say not", name, "no such section");
      return nullptr;
    }
    if (s == nullptr) fail(path, kHeaderBytes, "missing section", name, "a section table entry named '" + name + "'");
    if (s->dtype != dtype)
      fail(path, s->entry + 32, "dtype of section '" + name + "'", dtype_name(s->dtype), dtype_name(dtype));
    if (s->count != count)
      fail(path, s->entry + 40, "element count of section '" + name + "'", std::to_string(s->count), std::to_string(count));
    return s;
  };
  const InSection* s_offsets = require("row_offsets", true, kInt64, n + 1);
  const InSection* s_cols = require("col_ids", true, kInt32, e);
  const InSection* s_values = require("values", (flags & kFlagWeighted) != 0, kFloat32, e);
  const InSection* s_features = require("features", f > 0, kFloat32, n * f);
  const InSection* s_labels = require("labels", (flags & kFlagLabels) != 0, kInt32, n);
  const InSection* s_name = find("name");
  const InSection* s_prov = find("provenance");
  const InSection* s_stats = find("build_stats");
  if (s_name != nullptr && s_name->dtype != kUtf8)
    fail(path, s_name->entry + 32, "dtype of section 'name'", dtype_name(s_name->dtype), dtype_name(kUtf8));
  if (s_prov != nullptr && s_prov->dtype != kUtf8)
    fail(path, s_prov->entry + 32, "dtype of section 'provenance'", dtype_name(s_prov->dtype), dtype_name(kUtf8));
  if (s_stats != nullptr) s_stats = require("build_stats", true, kInt64, 5);
  std::vector<const InSection*> split_sections;
  for (const auto& s : sections) {
    if (s.name.rfind(kSplitPrefix, 0) != 0) continue;
    if (s.dtype != kInt32) fail(path, s.entry + 32, "dtype of section '" + s.name + "'", dtype_name(s.dtype), dtype_name(kInt32));
    if (s.count > n) fail(path, s.entry + 40, "element count of section '" + s.name + "'", std::to_string(s.count),
                          "at most num_nodes = " + std::to_string(n));
    split_sections.push_back(&s);
  }
  if (split_sections.size() != num_splits)
    fail(path, 48, "split count", std::to_string(num_splits),
         std::to_string(split_sections.size()) + " (sections named 'split:<name>')");

  // Every size is now known to fit the file: allocate and read.
  auto read_section = [&](const InSection* s, void* dst) {
    if (s->bytes > 0) file.read(dst, s->bytes, s->offset);
    if (verify_checksum) {
      const std::uint32_t actual = binary::crc32(0, dst, s->bytes);
      if (actual != s->crc)
        fail(path, s->offset, "checksum mismatch in section '" + s->name + "' (data corrupt)", hex32(actual),
             hex32(s->crc) + " (the CRC32 stored at byte " + std::to_string(s->entry + 36) + ")");
    }
  };
  Dataset ds;
  Csr& g = ds.graph;
  g.num_nodes = static_cast<std::int64_t>(n);
  g.row_offsets.resize(n + 1);
  read_section(s_offsets, g.row_offsets.data());
  g.col_ids.resize(e);
  read_section(s_cols, g.col_ids.data());
  if (s_values != nullptr) {
    g.values.resize(e);
    read_section(s_values, g.values.data());
  }
  ds.num_features = static_cast<std::int64_t>(f);
  if (s_features != nullptr) {
    ds.features.resize(n * f);
    read_section(s_features, ds.features.data());
  }
  if (s_labels != nullptr) {
    ds.labels.resize(n);
    read_section(s_labels, ds.labels.data());
  }
  ds.num_classes = static_cast<std::int32_t>(classes);
  for (const InSection* s : split_sections) {
    std::vector<NodeId> ids(s->count);
    read_section(s, ids.data());
    ds.splits[s->name.substr(sizeof kSplitPrefix - 1)] = std::move(ids);
  }
  auto read_text = [&](const InSection* s) {
    std::string text(s == nullptr ? 0 : s->bytes, '\0');
    if (s != nullptr) read_section(s, text.data());
    return text;
  };
  ds.name = read_text(s_name);
  ds.provenance = read_text(s_prov);
  if (s_stats != nullptr) {
    std::int64_t st[5];
    read_section(s_stats, st);
    ds.build_stats = BuildStats{st[0], st[1], st[2], st[3], st[4]};
  }

  // Contents: checked even without checksums, so that a bad file is an error here rather than a crash later.
  const auto ni = static_cast<std::int64_t>(n), ei = static_cast<std::int64_t>(e);
  if (g.row_offsets[0] != 0) fail(path, s_offsets->offset, "first row offset", std::to_string(g.row_offsets[0]), "0");
  std::int64_t bad = first_bad(ni, [&](std::int64_t u) {
    return g.row_offsets[u + 1] < g.row_offsets[u] || g.row_offsets[u + 1] > ei;
  });
  if (bad < ni)
    fail(path, s_offsets->offset + 8 * static_cast<std::uint64_t>(bad + 1), "row offset of node " + std::to_string(bad + 1),
         std::to_string(g.row_offsets[bad + 1]),
         "non-decreasing in " + std::to_string(g.row_offsets[bad]) + ".." + std::to_string(ei));
  if (g.row_offsets[ni] != ei)
    fail(path, s_offsets->offset + 8 * n, "last row offset", std::to_string(g.row_offsets[ni]),
         std::to_string(ei) + " (the edge count)");
  // Per row: ids in range and strictly ascending. Reports the lowest bad row.
  bad = first_bad(ni, [&](std::int64_t u) {
    for (RowOffset k = g.row_offsets[u]; k < g.row_offsets[u + 1]; ++k) {
      const NodeId v = g.col_ids[k];
      if (v < 0 || v >= ni || (k > g.row_offsets[u] && g.col_ids[k - 1] >= v)) return true;
    }
    return false;
  });
  if (bad < ni) {
    RowOffset k = g.row_offsets[bad];
    while (k < g.row_offsets[bad + 1]) {
      const NodeId v = g.col_ids[k];
      if (v < 0 || v >= ni || (k > g.row_offsets[bad] && g.col_ids[k - 1] >= v)) break;
      ++k;
    }
    const NodeId v = g.col_ids[k];
    const bool in_range = v >= 0 && v < ni;
    fail(path, s_cols->offset + 4 * static_cast<std::uint64_t>(k),
         "column id of node " + std::to_string(bad) + (in_range ? " not ascending" : " out of range"), std::to_string(v),
         in_range ? "> " + std::to_string(g.col_ids[k - 1]) : "0.." + std::to_string(ni - 1));
  }
  if (s_values != nullptr) {  // edge weights: a NaN or inf weight poisons every aggregation it touches
    bad = first_bad(ei, [&](std::int64_t k) { return !std::isfinite(g.values[k]); });
    if (bad < ei)
      fail(path, s_values->offset + 4 * static_cast<std::uint64_t>(bad), "edge weight " + std::to_string(bad),
           std::to_string(g.values[bad]), "a finite float");
  }
  if (s_features != nullptr) {
    const auto count = static_cast<std::int64_t>(ds.features.size());
    bad = first_bad(count, [&](std::int64_t i) { return !std::isfinite(ds.features[i]); });
    if (bad < count)
      fail(path, s_features->offset + 4 * static_cast<std::uint64_t>(bad),
           "feature " + std::to_string(bad % static_cast<std::int64_t>(f)) + " of node " +
               std::to_string(bad / static_cast<std::int64_t>(f)),
           std::to_string(ds.features[bad]), "a finite float");
  }
  if (s_labels != nullptr) {
    bad = first_bad(ni, [&](std::int64_t u) { return ds.labels[u] < -1 || ds.labels[u] >= ds.num_classes; });
    if (bad < ni)
      fail(path, s_labels->offset + 4 * static_cast<std::uint64_t>(bad), "label of node " + std::to_string(bad),
           std::to_string(ds.labels[bad]), "-1.." + std::to_string(ds.num_classes - 1) + " (num_classes at byte 40)");
  }
  for (const InSection* s : split_sections) {
    const auto& ids = ds.splits[s->name.substr(sizeof kSplitPrefix - 1)];
    const auto count = static_cast<std::int64_t>(ids.size());
    bad = first_bad(count, [&](std::int64_t i) { return ids[i] < 0 || ids[i] >= ni; });
    if (bad < count)
      fail(path, s->offset + 4 * static_cast<std::uint64_t>(bad), "node id in section '" + s->name + "'",
           std::to_string(ids[bad]), "0.." + std::to_string(ni - 1));
  }
  return ds;
}

}  // namespace gcnpart::datasets
