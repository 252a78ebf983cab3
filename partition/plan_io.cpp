// The plan file (.gplan): a 64-byte header, then typed, checksummed records in a fixed order.
//
//   header   0 magic "GCNPPLAN"   8 u32 version        12 u32 strategy   16 u32 partitioner
//           20 i32 parts         24 i32 layers        28 u32 zero       32 u64 nodes
//           40 u64 record count  48 u64 file size     56 u32 zero       60 u32 CRC32 of bytes 0..59
//   record   u32 dtype (1 int32, 2 int64, 3 float32, 4 float64), u32 CRC32 of (dtype, count, data),
//            u64 count, then count elements, little-endian, no padding.
//
// Records, in order: partition (part_of, [parts, edge_cut, comm_volume], [seconds]); per device (local_nodes,
// [num_inner, rows of local_graph, gather_forward, gather_backward], ring_sizes, local_graph offsets/columns/values,
// dinv, gather_forward x3, gather_backward x3, dinv_own, send_rows x3, recv_counts); [table_block], table_dinv,
// table_nodes; metrics (8 counts, 6 reals, inner/local nodes, local edges, halo_per_hop per device, boundary_rows).
// Version 1 (before the boundary strategy) lacks send_rows, recv_counts and boundary_rows; it still loads.
// A reader checks every count against the bytes left before allocating, every CRC, then the contents.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>

#include "base/atomic_file.hpp"
#include "base/binary_format.hpp"
#include "base/error.hpp"
#include "base/input_file.hpp"
#include "partition/detail/plan_detail.hpp"
#include "partition/plan.hpp"

namespace gcnpart::partition {

static_assert(std::endian::native == std::endian::little, "plan I/O assumes a little-endian host");

namespace {

constexpr char kMagic[8] = {'G', 'C', 'N', 'P', 'P', 'L', 'A', 'N'};
constexpr std::uint32_t kVersion = 2;
constexpr std::uint32_t kOldestVersion = 1;
constexpr std::uint64_t kHeaderBytes = 64;
constexpr std::uint64_t kRecordHeaderBytes = 16;
// 14 device records + its halo_per_hop; version 2 adds send_rows (3) and recv_counts per device, boundary_rows once.
constexpr std::int64_t records_per_device(std::uint32_t version) { return version >= 2 ? 19 : 15; }
constexpr std::int64_t fixed_records(std::uint32_t version) { return version >= 2 ? 12 : 11; }
constexpr int kMaxLayers = 64;

enum DType : std::uint32_t { kInt32 = 1, kInt64 = 2, kFloat32 = 3, kFloat64 = 4 };

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, std::int32_t>) return kInt32;
  if constexpr (std::is_same_v<T, std::int64_t>) return kInt64;
  if constexpr (std::is_same_v<T, float>) return kFloat32;
  return kFloat64;
}

const char* dtype_name(std::uint32_t d) {
  switch (d) {
    case kInt32: return "int32 (1)";
    case kInt64: return "int64 (2)";
    case kFloat32: return "float32 (3)";
    case kFloat64: return "float64 (4)";
    default: return "unknown";
  }
}

std::int64_t expected_records(std::int64_t parts, std::uint32_t version = kVersion) {
  return fixed_records(version) + records_per_device(version) * parts;
}

// The CRC of a record: its dtype and count, then its data.
std::uint32_t record_crc(std::uint32_t dtype, std::uint64_t count, const void* data, std::uint64_t bytes) {
  unsigned char head[12];
  std::memcpy(head, &dtype, 4);
  std::memcpy(head + 4, &count, 8);
  return binary::crc32(binary::crc32(0, head, sizeof head), data, bytes);
}

using binary::get;
using binary::put;

using binary::hex32;
[[noreturn]] void fail(const std::string& path, std::uint64_t byte, const std::string& problem, const std::string& value,
                       const std::string& expected) {
  binary::fail_at_byte(path, byte, problem, value, expected);
}

std::string printable(const unsigned char* p, std::size_t n) {
  std::string s;
  for (std::size_t i = 0; i < n; ++i) {
    if (p[i] >= 32 && p[i] < 127) {
      s += static_cast<char>(p[i]);
    } else {
      s += "\\x" + hex32(p[i]).substr(8);
    }
  }
  return s;
}

std::uint32_t strategy_code(Strategy s) { return static_cast<std::uint32_t>(s); }
std::uint32_t partitioner_code(Partitioner p) { return static_cast<std::uint32_t>(p); }
static_assert(static_cast<int>(Strategy::kSingle) == 0 && static_cast<int>(Strategy::kPipeline) == 4 &&
                  static_cast<int>(Strategy::kBoundary) == 5,
              "strategy codes are part of the plan file format: a new strategy takes the next code");
static_assert(static_cast<int>(Partitioner::kMetis) == 0 && static_cast<int>(Partitioner::kRange) == 2,
              "partitioner codes are part of the plan file format");

struct OutRecord {
  std::uint32_t dtype;
  const void* data;
  std::uint64_t count;
  std::uint64_t bytes;
};

class RecordList {
 public:
  template <class T, class Alloc>
  void add(const std::vector<T, Alloc>& v) {
    records_.push_back({dtype_of<T>(), v.data(), v.size(), v.size() * sizeof(T)});
  }
  template <class T>
  void add_values(std::vector<T> values) {  // small arrays built on the fly
    owned_.push_back(std::make_unique<std::vector<unsigned char>>(values.size() * sizeof(T)));
    std::memcpy(owned_.back()->data(), values.data(), values.size() * sizeof(T));
    records_.push_back({dtype_of<T>(), owned_.back()->data(), values.size(), values.size() * sizeof(T)});
  }
  void add_csr(const datasets::Csr& m) {
    add(m.row_offsets);
    add(m.col_ids);
    add(m.values);
  }
  [[nodiscard]] const std::vector<OutRecord>& records() const { return records_; }

 private:
  std::vector<OutRecord> records_;
  std::vector<std::unique_ptr<std::vector<unsigned char>>> owned_;
};

// ---------------------------------------------------------------------------------------------------------------
// Reading

using InFile = ::gcnpart::InputFile;

// Reads the records in order; every count is checked against the bytes left before anything is allocated.
class RecordReader {
 public:
  RecordReader(const InFile& file, std::string path, std::uint64_t offset) : file_(file), path_(std::move(path)), at_(offset) {}

  /// The next record as a vector of T (Vec: std::vector<T> or HostVector<T>, filled by the read); `exact` >= 0
  /// demands that many elements.
  template <class T, class Vec = std::vector<T>>
  Vec next(const std::string& name, std::int64_t exact = -1) {
    const std::uint64_t size = file_.size();
    if (size - at_ < kRecordHeaderBytes)
      fail(path_, size, "file truncated before record '" + name + "'", std::to_string(size) + " bytes",
           "a 16-byte record header at byte " + std::to_string(at_));
    unsigned char head[kRecordHeaderBytes];
    file_.read(head, kRecordHeaderBytes, at_);
    const auto dtype = get<std::uint32_t>(head, 0);
    const auto crc = get<std::uint32_t>(head, 4);
    const auto count = get<std::uint64_t>(head, 8);
    if (dtype != dtype_of<T>()) fail(path_, at_, "dtype of record '" + name + "'", dtype_name(dtype), dtype_name(dtype_of<T>()));
    const std::uint64_t data_at = at_ + kRecordHeaderBytes;
    const std::uint64_t left = size - data_at;
    if (count > left / sizeof(T))
      fail(path_, at_ + 8, "element count of record '" + name + "'", std::to_string(count),
           "at most " + std::to_string(left / sizeof(T)) + " (" + std::to_string(left) + " bytes left in the file)");
    if (exact >= 0 && count != static_cast<std::uint64_t>(exact))
      fail(path_, at_ + 8, "element count of record '" + name + "'", std::to_string(count), std::to_string(exact));
    Vec v(static_cast<std::size_t>(count));
    const std::uint64_t bytes = count * sizeof(T);
    if (bytes > 0) file_.read(v.data(), bytes, data_at);
    const std::uint32_t actual = record_crc(dtype, count, v.data(), bytes);
    if (actual != crc)
      fail(path_, data_at, "checksum mismatch in record '" + name + "' (data corrupt)", hex32(actual),
           hex32(crc) + " (the CRC32 stored at byte " + std::to_string(at_ + 4) + ")");
    last_data_at_ = data_at;
    at_ = data_at + bytes;
    return v;
  }

  [[nodiscard]] std::uint64_t offset() const { return at_; }
  /// Byte offset of the data of the record read last (for messages about its contents).
  [[nodiscard]] std::uint64_t last_data_at() const { return last_data_at_; }

 private:
  const InFile& file_;
  std::string path_;
  std::uint64_t at_;
  std::uint64_t last_data_at_ = 0;
};

// Lowest index in [0, count) for which bad(i) holds (count if none), in parallel.
template <class Bad>
std::int64_t first_bad(std::int64_t count, Bad bad) {
  std::int64_t first = count;
#pragma omp parallel for reduction(min : first) schedule(static) if (count > (std::int64_t{1} << 16))
  for (std::int64_t i = 0; i < count; ++i)
    if (bad(i)) first = std::min(first, i);
  return first;
}

}  // namespace

void save_parts(const Partition& partition, const std::string& path) {
  AtomicFile f(path);
  std::string chunk;
  chunk.reserve(1 << 16);
  for (const std::int32_t p : partition.part_of) {
    chunk += std::to_string(p);
    chunk += '\n';
    if (chunk.size() > (1 << 16) - 16) {
      f.write(chunk);
      chunk.clear();
    }
  }
  f.write(chunk);
  f.commit();
}

void save_plan(const Plan& plan, const std::string& path) {
  const auto parts = static_cast<std::int64_t>(plan.devices.size());
  const auto where = [](const std::string& what) { return InputLocation{"plan " + what, 0, 0}; };
  if (parts != plan.parts || parts < 1)
    throw InvalidInput(where("devices"), "device count", std::to_string(parts), std::to_string(plan.parts) + " (Plan::parts)");
  if (plan.partition.part_of.size() > static_cast<std::size_t>(std::numeric_limits<NodeId>::max()))
    throw InvalidInput(where("partition"), "node count", std::to_string(plan.partition.part_of.size()), "below 2^31");
  const PlanMetrics& m = plan.metrics;
  const auto per_device = [&](const auto& v, const char* name) {
    if (static_cast<std::int64_t>(v.size()) != parts)
      throw InvalidInput(where(std::string("metrics ") + name), "length", std::to_string(v.size()), std::to_string(parts));
  };
  per_device(m.inner_nodes, "inner_nodes");
  per_device(m.local_nodes, "local_nodes");
  per_device(m.local_edges, "local_edges");
  per_device(m.halo_per_hop, "halo_per_hop");

  RecordList out;
  const Partition& pt = plan.partition;
  out.add(pt.part_of);
  out.add_values<std::int64_t>({pt.parts, pt.edge_cut, pt.comm_volume});
  out.add_values<double>({pt.seconds});
  for (const DevicePlan& d : plan.devices) {
    out.add(d.local_nodes);
    out.add_values<std::int64_t>({d.num_inner, d.local_graph.num_nodes, d.gather_forward.num_nodes, d.gather_backward.num_nodes});
    out.add(d.ring_sizes);
    out.add_csr(d.local_graph);
    out.add(d.dinv);
    out.add_csr(d.gather_forward);
    out.add_csr(d.gather_backward);
    out.add(d.dinv_own);
    out.add_csr(d.send_rows);
    out.add(d.recv_counts);
  }
  out.add_values<std::int64_t>({plan.table_block});
  out.add(plan.table_dinv);
  out.add(plan.table_nodes);
  out.add_values<std::int64_t>({m.nodes, m.edges, m.edge_cut, m.comm_volume, m.lost_edges, m.replicated_edges,
                                m.table_rows, m.index_bytes});
  out.add_values<double>({m.lost_fraction, m.replication_factor, m.node_imbalance, m.edge_imbalance, m.plan_seconds,
                          m.partition_seconds});
  out.add(m.inner_nodes);
  out.add(m.local_nodes);
  out.add(m.local_edges);
  for (const auto& hops : m.halo_per_hop) out.add(hops);
  out.add(m.boundary_rows);
  const auto& records = out.records();
  if (static_cast<std::int64_t>(records.size()) != expected_records(parts))
    throw LogicError("save_plan: record layout out of step with expected_records");

  std::uint64_t file_size = kHeaderBytes;
  for (const auto& r : records) file_size += kRecordHeaderBytes + r.bytes;
  unsigned char head[kHeaderBytes] = {};
  std::memcpy(head, kMagic, sizeof kMagic);
  put<std::uint32_t>(head, 8, kVersion);
  put<std::uint32_t>(head, 12, strategy_code(plan.strategy));
  put<std::uint32_t>(head, 16, partitioner_code(plan.partitioner));
  put<std::int32_t>(head, 20, plan.parts);
  put<std::int32_t>(head, 24, plan.layers);
  put<std::uint64_t>(head, 32, static_cast<std::uint64_t>(pt.part_of.size()));
  put<std::uint64_t>(head, 40, static_cast<std::uint64_t>(records.size()));
  put<std::uint64_t>(head, 48, file_size);
  put<std::uint32_t>(head, 60, binary::crc32(0, head, 60));

  AtomicFile file(path);
  file.write(head, kHeaderBytes);
  for (const auto& r : records) {
    unsigned char rh[kRecordHeaderBytes];
    put<std::uint32_t>(rh, 0, r.dtype);
    put<std::uint32_t>(rh, 4, record_crc(r.dtype, r.count, r.data, r.bytes));
    put<std::uint64_t>(rh, 8, r.count);
    file.write(rh, kRecordHeaderBytes);
    if (r.bytes > 0) file.write(r.data, r.bytes);
  }
  file.commit();
}

Plan load_plan(const std::string& path) {
  const InFile file(path);
  const std::uint64_t size = file.size();
  if (size < kHeaderBytes)
    fail(path, size, "file too short for the plan header", std::to_string(size) + " bytes",
         "at least " + std::to_string(kHeaderBytes) + " bytes");
  unsigned char head[kHeaderBytes];
  file.read(head, kHeaderBytes, 0);
  if (std::memcmp(head, kMagic, sizeof kMagic) != 0)
    fail(path, 0, "not a gcnpart plan file (bad magic)", printable(head, sizeof kMagic), "'GCNPPLAN'");
  const auto version = get<std::uint32_t>(head, 8);
  if (version < kOldestVersion || version > kVersion)
    fail(path, 8, "unsupported plan version", std::to_string(version),
         std::to_string(kOldestVersion) + ".." + std::to_string(kVersion));
  const auto stored_crc = get<std::uint32_t>(head, 60);
  if (const std::uint32_t actual = binary::crc32(0, head, 60); actual != stored_crc)
    fail(path, 60, "header checksum mismatch (header corrupt)", hex32(actual),
         hex32(stored_crc) + " (the CRC32 of bytes 0..59)");
  binary::expect_declared_size(path, size, get<std::uint64_t>(head, 48), 48, "record");
  const auto strategy = get<std::uint32_t>(head, 12);
  // Version 1 files predate the boundary strategy (code 5).
  const std::size_t known = version >= 2 ? kStrategies.size() : static_cast<std::size_t>(Strategy::kBoundary);
  if (strategy >= known) {
    std::string names;
    for (std::size_t i = 0; i < known; ++i) names += std::string(names.empty() ? "" : ", ") + kStrategies[i].name;
    fail(path, 12, "strategy code", std::to_string(strategy), "0.." + std::to_string(known - 1) + " (" + names + ")");
  }
  const auto partitioner = get<std::uint32_t>(head, 16);
  if (partitioner > partitioner_code(Partitioner::kRange))
    fail(path, 16, "partitioner code", std::to_string(partitioner), "0..2 (metis, random, range)");
  const auto parts = get<std::int32_t>(head, 20);
  // Each device has records_per_device records of at least 16 bytes: a part count the file cannot hold is refused
  // before anything is sized by it.
  const std::int64_t max_parts =
      static_cast<std::int64_t>(size / (kRecordHeaderBytes * records_per_device(version)));
  if (parts < 1 || parts > max_parts)
    fail(path, 20, "part count", std::to_string(parts), "1.." + std::to_string(max_parts) + " for a file of this size");
  const auto layers = get<std::int32_t>(head, 24);
  if (layers < 1 || layers > kMaxLayers)
    fail(path, 24, "layer count", std::to_string(layers), "1.." + std::to_string(kMaxLayers));
  const auto nodes = get<std::uint64_t>(head, 32);
  if (nodes > static_cast<std::uint64_t>(std::numeric_limits<NodeId>::max()))
    fail(path, 32, "node count", std::to_string(nodes), "at most 2147483647");
  const auto record_count = get<std::uint64_t>(head, 40);
  if (record_count != static_cast<std::uint64_t>(expected_records(parts, version)))
    fail(path, 40, "record count", std::to_string(record_count),
         std::to_string(expected_records(parts, version)) + " for " + std::to_string(parts) + " devices");
  const bool boundary = static_cast<Strategy>(strategy) == Strategy::kBoundary;

  Plan plan;
  plan.strategy = static_cast<Strategy>(strategy);
  plan.partitioner = static_cast<Partitioner>(partitioner);
  plan.parts = parts;
  plan.layers = layers;
  const auto n = static_cast<std::int64_t>(nodes);
  RecordReader in(file, path, kHeaderBytes);

  // Contents are checked as they arrive, so a bad file is an error here rather than a crash in an executor.
  auto check_ids = [&](const auto& ids, std::int64_t low, std::int64_t high, const std::string& what) {
    const auto count = static_cast<std::int64_t>(ids.size());
    const std::int64_t bad = first_bad(count, [&](std::int64_t i) { return ids[i] < low || ids[i] >= high; });
    if (bad < count)
      fail(path, in.last_data_at() + 4 * static_cast<std::uint64_t>(bad), what + " " + std::to_string(bad),
           std::to_string(ids[bad]), std::to_string(low) + ".." + std::to_string(high - 1));
  };
  auto check_reals = [&](const std::vector<float>& x, const std::string& what) {
    const auto count = static_cast<std::int64_t>(x.size());
    const std::int64_t bad = first_bad(count, [&](std::int64_t i) { return !std::isfinite(x[i]) || x[i] < 0; });
    if (bad < count)
      fail(path, in.last_data_at() + 4 * static_cast<std::uint64_t>(bad), what + " " + std::to_string(bad),
           std::to_string(x[bad]), "a finite value >= 0");
  };
  // A Csr of `rows` rows with columns in [0, cols), rows strictly ascending; empty arrays = never built.
  auto read_csr = [&](const std::string& name, std::int64_t rows, std::int64_t cols) {
    datasets::Csr m;
    m.num_nodes = rows;
    m.row_offsets = in.next<RowOffset>(name + ".row_offsets");
    const std::uint64_t offsets_at = in.last_data_at();
    const auto entries_left = static_cast<std::int64_t>(size - in.offset());
    if (m.row_offsets.empty()) {
      if (rows != 0) fail(path, offsets_at - 8, name + " row offset count", "0", std::to_string(rows + 1));
    } else {
      if (static_cast<std::int64_t>(m.row_offsets.size()) != rows + 1)
        fail(path, offsets_at - 8, name + " row offset count", std::to_string(m.row_offsets.size()), std::to_string(rows + 1));
      if (m.row_offsets[0] != 0) fail(path, offsets_at, name + " first row offset", std::to_string(m.row_offsets[0]), "0");
      const std::int64_t bad = first_bad(rows, [&](std::int64_t r) {
        return m.row_offsets[r + 1] < m.row_offsets[r] || m.row_offsets[r + 1] > entries_left;
      });
      if (bad < rows)
        fail(path, offsets_at + 8 * static_cast<std::uint64_t>(bad + 1), name + " row offset " + std::to_string(bad + 1),
             std::to_string(m.row_offsets[bad + 1]), "non-decreasing, within the file");
    }
    const std::int64_t entries = m.row_offsets.empty() ? 0 : m.row_offsets[rows];
    m.col_ids = in.next<NodeId, HostVector<NodeId>>(name + ".col_ids", entries);
    check_ids(m.col_ids, 0, cols, name + " column");
    const std::int64_t bad = first_bad(rows, [&](std::int64_t r) {
      for (RowOffset k = m.row_offsets[r] + 1; k < m.row_offsets[r + 1]; ++k)
        if (m.col_ids[k - 1] >= m.col_ids[k]) return true;
      return false;
    });
    if (bad < rows)
      fail(path, in.last_data_at() + 4 * static_cast<std::uint64_t>(m.row_offsets[bad]),
           name + " row " + std::to_string(bad) + " columns", "not strictly ascending", "strictly ascending columns");
    m.values = in.next<float, HostVector<float>>(name + ".values");
    if (!m.values.empty() && static_cast<std::int64_t>(m.values.size()) != entries)
      fail(path, in.last_data_at() - 8, name + " value count", std::to_string(m.values.size()),
           "0 or " + std::to_string(entries));
    return m;
  };

  Partition& pt = plan.partition;
  pt.method = plan.partitioner;
  pt.part_of = in.next<std::int32_t>("partition.part_of", n);
  check_ids(pt.part_of, 0, parts, "part of node");
  const auto pcounts = in.next<std::int64_t>("partition.counts", 3);
  if (pcounts[0] != parts)
    fail(path, in.last_data_at(), "partition part count", std::to_string(pcounts[0]), std::to_string(parts) + " (byte 20)");
  pt.parts = parts;
  pt.edge_cut = pcounts[1];
  pt.comm_volume = pcounts[2];
  pt.seconds = in.next<double>("partition.seconds", 1)[0];

  plan.devices.resize(static_cast<std::size_t>(parts));
  std::vector<std::int64_t> gather_rows(static_cast<std::size_t>(parts));
  for (int p = 0; p < parts; ++p) {
    DevicePlan& d = plan.devices[p];
    const std::string dev = "device " + std::to_string(p);
    d.local_nodes = in.next<NodeId>(dev + " local_nodes");
    check_ids(d.local_nodes, 0, n, dev + " local node");
    const auto local = static_cast<std::int64_t>(d.local_nodes.size());
    const auto counts = in.next<std::int64_t>(dev + " counts", 4);
    const std::uint64_t counts_at = in.last_data_at();
    d.num_inner = counts[0];
    if (d.num_inner < 0 || d.num_inner > local)
      fail(path, counts_at, dev + " num_inner", std::to_string(d.num_inner), "0.." + std::to_string(local));
    for (int k = 1; k < 4; ++k)
      if (counts[k] < 0 || counts[k] > std::int64_t{0x7fffffff})
        fail(path, counts_at + 8 * k, dev + " matrix row count", std::to_string(counts[k]), "0..2147483647");
    if (counts[1] != 0 && counts[1] != local)
      fail(path, counts_at + 8, dev + " local_graph rows", std::to_string(counts[1]), "0 or " + std::to_string(local));
    if (counts[2] != 0 && counts[2] != d.num_inner)
      fail(path, counts_at + 16, dev + " gather_forward rows", std::to_string(counts[2]), "0 or " + std::to_string(d.num_inner));
    gather_rows[p] = counts[3];
    d.ring_sizes = in.next<std::int64_t>(dev + " ring_sizes");
    std::int64_t reached = d.num_inner;
    for (std::size_t h = 0; h < d.ring_sizes.size(); ++h) {
      if (d.ring_sizes[h] < 0 || d.ring_sizes[h] > local)
        fail(path, in.last_data_at() + 8 * h, dev + " ring size " + std::to_string(h + 1), std::to_string(d.ring_sizes[h]),
             "0.." + std::to_string(local));
      reached += d.ring_sizes[h];
    }
    if (reached != local && !boundary)  // boundary: checked against recv_counts below
      fail(path, in.last_data_at(), dev + " num_inner + ring sizes", std::to_string(reached),
           std::to_string(local) + " (the local node count)");
    d.local_graph = read_csr(dev + " local_graph", counts[1], local);
    d.dinv = in.next<float>(dev + " dinv");
    if (!d.dinv.empty() && static_cast<std::int64_t>(d.dinv.size()) != local)
      fail(path, in.last_data_at() - 8, dev + " dinv length", std::to_string(d.dinv.size()), "0 or " + std::to_string(local));
    check_reals(d.dinv, dev + " dinv");
    // Gather columns are table slots (checked against the table size once table_block is read).
    d.gather_forward = read_csr(dev + " gather_forward", counts[2], std::numeric_limits<NodeId>::max());
    d.gather_backward = read_csr(dev + " gather_backward", counts[3], d.num_inner);
    d.dinv_own = in.next<float>(dev + " dinv_own");
    if (!d.dinv_own.empty() && static_cast<std::int64_t>(d.dinv_own.size()) != d.num_inner)
      fail(path, in.last_data_at() - 8, dev + " dinv_own length", std::to_string(d.dinv_own.size()),
           "0 or " + std::to_string(d.num_inner));
    check_reals(d.dinv_own, dev + " dinv_own");
    if (version < 2) continue;
    d.send_rows = read_csr(dev + " send_rows", boundary ? parts : 0, d.num_inner);
    d.recv_counts = in.next<std::int64_t>(dev + " recv_counts");
    if (!boundary) continue;
    if (static_cast<std::int64_t>(d.recv_counts.size()) != parts)
      fail(path, in.last_data_at() - 8, dev + " recv_counts length", std::to_string(d.recv_counts.size()),
           std::to_string(parts));
    std::int64_t received = d.num_inner;
    for (int q = 0; q < parts; ++q) {
      if (d.recv_counts[q] < 0 || d.recv_counts[q] > local || (q == p && d.recv_counts[q] != 0))
        fail(path, in.last_data_at() + 8 * static_cast<std::uint64_t>(q), dev + " recv_counts " + std::to_string(q),
             std::to_string(d.recv_counts[q]), q == p ? "0" : "0.." + std::to_string(local));
      received += d.recv_counts[q];
    }
    if (received != local)
      fail(path, in.last_data_at(), dev + " num_inner + recv_counts", std::to_string(received),
           std::to_string(local) + " (the local node count)");
  }
  plan.table_block = in.next<std::int64_t>("table_block", 1)[0];
  if (plan.table_block < 0 || plan.table_block > std::int64_t{0x7fffffff} / parts)
    fail(path, in.last_data_at(), "table_block", std::to_string(plan.table_block),
         "0.." + std::to_string(std::int64_t{0x7fffffff} / parts) + " (parts x table_block below 2^31)");
  const std::int64_t table_rows = plan.table_block * parts;
  for (int p = 0; p < parts; ++p) {
    const DevicePlan& d = plan.devices[p];
    // boundary's source columns are its local nodes, gather's the table slots.
    const std::int64_t sources = boundary ? static_cast<std::int64_t>(d.local_nodes.size()) : table_rows;
    if (gather_rows[p] != 0 && gather_rows[p] != sources)
      fail(path, kHeaderBytes, "device " + std::to_string(p) + " gather_backward rows", std::to_string(gather_rows[p]),
           boundary ? "0 or the local node count " + std::to_string(sources)
                    : "0 or parts x table_block = " + std::to_string(table_rows));
    for (const NodeId s : d.gather_forward.col_ids)
      if (s >= sources)
        fail(path, kHeaderBytes, "device " + std::to_string(p) + " gather_forward column", std::to_string(s),
             (boundary ? "a local node below " : "a table slot below ") + std::to_string(sources));
  }
  plan.table_dinv = in.next<float>("table_dinv");
  if (!plan.table_dinv.empty() && static_cast<std::int64_t>(plan.table_dinv.size()) != table_rows)
    fail(path, in.last_data_at() - 8, "table_dinv length", std::to_string(plan.table_dinv.size()),
         "0 or " + std::to_string(table_rows));
  check_reals(plan.table_dinv, "table_dinv slot");
  plan.table_nodes = in.next<NodeId>("table_nodes");
  if (!plan.table_nodes.empty() && static_cast<std::int64_t>(plan.table_nodes.size()) != table_rows)
    fail(path, in.last_data_at() - 8, "table_nodes length", std::to_string(plan.table_nodes.size()),
         "0 or " + std::to_string(table_rows));
  check_ids(plan.table_nodes, -1, n, "table_nodes slot");

  PlanMetrics& m = plan.metrics;
  const auto counts = in.next<std::int64_t>("metrics.counts", 8);
  m.nodes = counts[0];
  m.edges = counts[1];
  m.edge_cut = counts[2];
  m.comm_volume = counts[3];
  m.lost_edges = counts[4];
  m.replicated_edges = counts[5];
  m.table_rows = counts[6];
  m.index_bytes = counts[7];
  const auto reals = in.next<double>("metrics.reals", 6);
  m.lost_fraction = reals[0];
  m.replication_factor = reals[1];
  m.node_imbalance = reals[2];
  m.edge_imbalance = reals[3];
  m.plan_seconds = reals[4];
  m.partition_seconds = reals[5];
  m.inner_nodes = in.next<std::int64_t>("metrics.inner_nodes", parts);
  m.local_nodes = in.next<std::int64_t>("metrics.local_nodes", parts);
  m.local_edges = in.next<std::int64_t>("metrics.local_edges", parts);
  m.halo_per_hop.resize(static_cast<std::size_t>(parts));
  for (int p = 0; p < parts; ++p) m.halo_per_hop[p] = in.next<std::int64_t>("metrics.halo_per_hop " + std::to_string(p));
  if (version >= 2) m.boundary_rows = in.next<std::int64_t>("metrics.boundary_rows");
  detail::fill_work(m, plan.strategy);  // derived from local_nodes / inner_nodes and local_edges: not stored
  // Every record was read and the declared size matched the file, yet bytes remain: the records end early.
  if (in.offset() != size)
    fail(path, in.offset(), "trailing bytes after the last record", std::to_string(size - in.offset()) + " bytes",
         "the file to end at byte " + std::to_string(in.offset()) + " (after record " +
             std::to_string(expected_records(parts, version)) + ")");
  return plan;
}

}  // namespace gcnpart::partition
