#include "engine/checkpoint.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "base/atomic_file.hpp"
#include "base/binary_format.hpp"
#include "base/error.hpp"

namespace gcnpart::engine {

std::string checkpoint_path(const std::string& dir, int rank, int parts, int next_epoch) {
  return dir + "/rank" + std::to_string(rank) + "-of-" + std::to_string(parts) + ".e" + std::to_string(next_epoch) +
         ".gckpt";
}

namespace {
std::string latest_path(const std::string& dir) { return dir + "/checkpoint.latest"; }
}  // namespace

std::optional<int> read_checkpoint_latest(const std::string& dir, int parts) {
  const std::string path = latest_path(dir);
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::string magic, epoch_key, parts_key;
  long long epoch = -1, saved_parts = -1;
  in >> magic >> epoch_key >> epoch >> parts_key >> saved_parts;
  if (!in || magic != "gcnpart-checkpoint-v2" || epoch_key != "next_epoch" || parts_key != "parts" || epoch < 0 ||
      saved_parts < 1)
    throw InvalidInput(InputLocation{path, 1, 1}, "malformed checkpoint index", magic,
                       "'gcnpart-checkpoint-v2 next_epoch E parts K'");
  if (saved_parts != parts)
    throw InvalidInput(InputLocation{path, 1, 1}, "checkpoint written by a run on another number of devices",
                       "parts " + std::to_string(saved_parts), "parts " + std::to_string(parts) + " (this run)");
  return static_cast<int>(epoch);
}

void write_checkpoint_latest(const std::string& dir, int parts, int next_epoch) {
  const std::string text = "gcnpart-checkpoint-v2\nnext_epoch " + std::to_string(next_epoch) + "\nparts " +
                           std::to_string(parts) + "\n";
  AtomicFile f(latest_path(dir));
  f.write(text.data(), text.size());
  f.commit();
}

void remove_checkpoints_except(const std::string& dir, int rank, int parts, int keep) {
  const std::string prefix = "rank" + std::to_string(rank) + "-of-" + std::to_string(parts) + ".e";
  const std::string kept = std::filesystem::path(checkpoint_path(dir, rank, parts, keep)).filename().string();
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0 && name.size() > 6 && name.substr(name.size() - 6) == ".gckpt" && name != kept)
      std::filesystem::remove(entry.path(), ec);
  }
}

namespace {
// Version 2 of both formats ends every part (the header, each tensor or vector) in the CRC32 of its bytes; version 1
// had no checksums and still loads (a user's old weights), with the finiteness checks only.
constexpr char kWeightsMagic[8] = {'G', 'C', 'N', 'P', 'W', 'T', 'S', '2'};
constexpr char kWeightsMagicV1[8] = {'G', 'C', 'N', 'P', 'W', 'T', 'S', '1'};
constexpr char kCheckpointMagic[8] = {'G', 'C', 'N', 'P', 'C', 'K', 'P', '2'};
constexpr char kCheckpointMagicV1[8] = {'G', 'C', 'N', 'P', 'C', 'K', 'P', '1'};

/// zlib returns 0 for a null buffer instead of continuing: an empty part must leave the running CRC alone.
std::uint32_t crc_update(std::uint32_t crc, const void* data, std::uint64_t bytes) {
  return bytes == 0 ? crc : binary::crc32(crc, data, bytes);
}

/// Writes parts, each followed by the CRC32 of its bytes.
class PartWriter {
 public:
  explicit PartWriter(AtomicFile& f) : f_(f) {}
  void write(const void* data, std::size_t bytes) {
    f_.write(data, bytes);
    crc_ = crc_update(crc_, data, bytes);
  }
  template <class T>
  void write_vector(const std::vector<T>& v) {
    const std::int64_t n = static_cast<std::int64_t>(v.size());
    write(&n, sizeof n);
    write(v.data(), v.size() * sizeof(T));
  }
  void end_part() {
    f_.write(&crc_, sizeof crc_);
    crc_ = 0;
  }

 private:
  AtomicFile& f_;
  std::uint32_t crc_ = 0;
};

/// Reads a file written by PartWriter (version 2: end_part checks each part's CRC32) or a version-1 file (no CRCs).
class PartReader {
 public:
  PartReader(std::ifstream& in, std::string path, std::uint64_t file_size, bool checksummed)
      : in_(in), path_(std::move(path)), size_(file_size), checksummed_(checksummed) {}

  /// False on a short read (the caller names what is missing).
  bool read(void* data, std::uint64_t bytes) {
    if (!in_.read(static_cast<char*>(data), static_cast<std::streamsize>(bytes))) return false;
    crc_ = crc_update(crc_, data, bytes);
    at_ += bytes;
    return true;
  }
  /// A length-prefixed vector, refusing lengths the rest of the file cannot hold.
  template <class T>
  std::vector<T> read_vector(const std::string& what) {
    std::int64_t n = -1;
    if (!read(&n, sizeof n) || n < 0 || static_cast<std::uint64_t>(n) > (size_ - std::min(size_, at_)) / sizeof(T))
      throw InvalidInput(InputLocation{path_, 0, 0}, "bad length of the " + what, std::to_string(n),
                         "a length the file can hold");
    std::vector<T> v(static_cast<std::size_t>(n));
    if (!read(v.data(), v.size() * sizeof(T)))
      throw InvalidInput(InputLocation{path_, 0, 0}, "truncated " + what, "end of file", "more data");
    return v;
  }
  /// Version 2: the CRC32 stored next must match the bytes read since the previous part ended.
  /// @throws InvalidInput naming the file, the part `what` and its byte offset.
  void end_part(const std::string& what) {
    if (!checksummed_) return;
    std::uint32_t stored = 0;
    const std::uint64_t stored_at = at_;
    if (!in_.read(reinterpret_cast<char*>(&stored), sizeof stored))
      binary::fail_at_byte(path_, stored_at, "truncated checksum of the " + what, "end of file", "a 4-byte CRC32");
    at_ += sizeof stored;
    if (stored != crc_)
      binary::fail_at_byte(path_, begin_, "checksum mismatch in the " + what, "CRC32 " + binary::hex32(crc_),
                           binary::hex32(stored) + " (stored at byte " + std::to_string(stored_at) +
                               "; the file is damaged or was edited)");
    crc_ = 0;
    begin_ = at_;
  }
  /// Both versions end with the last part (their layouts fix every length): trailing bytes mean a damaged or
  /// foreign file.
  void expect_end(const std::string& last_part) {
    if (size_ != at_)
      binary::fail_at_byte(path_, at_, "trailing bytes after the last " + last_part, std::to_string(size_) + " bytes",
                           std::to_string(at_) + " (the file is damaged or was edited)");
  }

 private:
  std::ifstream& in_;
  std::string path_;
  std::uint64_t size_;
  bool checksummed_;
  std::uint64_t at_ = 0, begin_ = 0;
  std::uint32_t crc_ = 0;
};

/// The size of the regular file `path` (a folder or a device given as a weights or checkpoint file is refused).
/// @throws IoError naming the file.
std::uint64_t regular_file_size(const std::string& path) {
  std::error_code ec;
  const bool regular = std::filesystem::is_regular_file(path, ec);
  const auto size = regular ? std::filesystem::file_size(path, ec) : 0;
  if (!regular || ec) throw IoError(path, ec ? "cannot read the file's size: " + ec.message() : "not a regular file");
  return static_cast<std::uint64_t>(size);
}

/// Which version the magic names: 2, 1 or 0 (not ours).
int format_version(const char (&magic)[8], const char (&v2)[8], const char (&v1)[8]) {
  if (std::memcmp(magic, v2, 8) == 0) return 2;
  if (std::memcmp(magic, v1, 8) == 0) return 1;
  return 0;
}
}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  AtomicFile f(path);
  PartWriter w(f);
  w.write(kCheckpointMagic, sizeof kCheckpointMagic);
  w.write(&c.seed, sizeof c.seed);
  const std::int64_t header[3] = {c.next_epoch, c.model.step, c.since_best};
  w.write(header, sizeof header);
  w.write(&c.best_valid, sizeof c.best_valid);
  w.end_part();
  w.write_vector(c.dims);
  w.end_part();
  w.write_vector(c.model.params);
  w.end_part();
  w.write_vector(c.model.adam_m);
  w.end_part();
  w.write_vector(c.model.adam_v);
  w.end_part();
  w.write_vector(c.train_loss);
  w.end_part();
  w.write_vector(c.valid_loss);
  w.end_part();
  f.commit();
}
namespace {
/// The index of the first value of `v` that is not finite (NaN or infinite), or -1.
template <class T>
std::int64_t first_non_finite(const std::vector<T>& v) {
  for (std::size_t i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) return static_cast<std::int64_t>(i);
  return -1;
}

/// A file's values are trusted only when finite: a NaN written into a weight file or a checkpoint would be trained
/// around and saved again. @throws InvalidInput naming the file, what, the index and the value.
template <class T>
void expect_finite(const std::string& path, const std::vector<T>& v, const std::string& what) {
  const std::int64_t i = first_non_finite(v);
  if (i < 0) return;
  throw InvalidInput(InputLocation{path, 0, 0}, "non-finite value in the " + what,
                     std::to_string(v[static_cast<std::size_t>(i)]) + " at index " + std::to_string(i),
                     "finite values (the file is damaged or was edited)");
}
}  // namespace

Checkpoint load_checkpoint(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "cannot open checkpoint");
  const auto size = regular_file_size(path);
  char magic[8] = {};
  const bool whole_magic = static_cast<bool>(in.read(magic, 8));
  const int version = whole_magic ? format_version(magic, kCheckpointMagic, kCheckpointMagicV1) : 0;
  if (version == 0)
    throw InvalidInput(InputLocation{path, 0, 0}, "not a gcnpart checkpoint", "bad magic", "GCNPCKP2 (or GCNPCKP1)");
  in.seekg(0);
  PartReader r(in, path, size, version >= 2);
  Checkpoint c;
  std::int64_t header[3] = {-1, -1, -1};
  const bool read_header = r.read(magic, 8) && r.read(&c.seed, sizeof c.seed) && r.read(header, sizeof header) &&
                           r.read(&c.best_valid, sizeof c.best_valid);
  if (!read_header) throw InvalidInput(InputLocation{path, 0, 0}, "truncated checkpoint header", "end of file", "more data");
  r.end_part("checkpoint header");
  constexpr std::int64_t kIntMax = std::numeric_limits<int>::max();
  if (header[0] < 0 || header[1] < 0 || header[2] < 0 || header[0] > kIntMax || header[2] > kIntMax)
    throw InvalidInput(InputLocation{path, 0, 0}, "bad checkpoint header",
                       "epoch " + std::to_string(header[0]) + ", step " + std::to_string(header[1]) +
                           ", epochs since the best " + std::to_string(header[2]),
                       "epoch and counter in 0.." + std::to_string(kIntMax) + ", a non-negative step");
  c.next_epoch = static_cast<int>(header[0]);
  c.model.step = header[1];
  c.since_best = static_cast<int>(header[2]);
  auto part = [&r]<class T>(std::vector<T>& v, const std::string& what) {
    v = r.read_vector<T>(what);
    r.end_part(what);
  };
  part(c.dims, "layer widths");
  part(c.model.params, "parameters");
  part(c.model.adam_m, "Adam first moments");
  part(c.model.adam_v, "Adam second moments");
  part(c.train_loss, "training losses");
  part(c.valid_loss, "validation losses");
  r.expect_end("part (validation losses)");
  expect_finite(path, c.model.params, "parameters");
  expect_finite(path, c.model.adam_m, "Adam first moments");
  expect_finite(path, c.model.adam_v, "Adam second moments");
  for (std::size_t i = 0; i < c.model.adam_v.size(); ++i)
    if (c.model.adam_v[i] < 0)
      throw InvalidInput(InputLocation{path, 0, 0}, "negative Adam second moment",
                         std::to_string(c.model.adam_v[i]) + " at index " + std::to_string(i), ">= 0 (squares)");
  expect_finite(path, c.train_loss, "training losses");
  expect_finite(path, c.valid_loss, "validation losses");
  if (std::isnan(c.best_valid))  // +inf before the first evaluation is legitimate
    throw InvalidInput(InputLocation{path, 0, 0}, "NaN best validation loss", "nan", "a number or +inf");
  return c;
}

void save_weights(const std::string& path, const std::vector<std::int64_t>& dims,
                  const std::vector<std::vector<float>>& params) {
  AtomicFile f(path);
  PartWriter w(f);
  w.write(kWeightsMagic, sizeof kWeightsMagic);
  w.write_vector(dims);
  w.end_part();
  for (const auto& p : params) {
    w.write_vector(p);
    w.end_part();
  }
  f.commit();
}

std::vector<std::vector<float>> load_weights(const std::string& path, const std::vector<std::int64_t>& dims) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "cannot open weights file");
  auto fail = [&](const std::string& problem, const std::string& value, const std::string& expected) {
    throw InvalidInput(InputLocation{path, 0, 0}, problem, value, expected);
  };
  const auto size = regular_file_size(path);
  char magic[8] = {};
  const bool whole_magic = static_cast<bool>(in.read(magic, 8));
  const int version = whole_magic ? format_version(magic, kWeightsMagic, kWeightsMagicV1) : 0;
  if (version == 0) fail("not a gcnpart weights file", "bad magic", "GCNPWTS2 (or GCNPWTS1)");
  in.seekg(0);
  PartReader r(in, path, size, version >= 2);
  r.read(magic, 8);
  std::int64_t n = 0;
  if (!r.read(&n, sizeof n) || n < 2 || n > 65) fail("layer count", std::to_string(n), "2..65 widths");
  std::vector<std::int64_t> saved(static_cast<std::size_t>(n));
  if (!r.read(saved.data(), saved.size() * sizeof(std::int64_t))) fail("truncated header", "end of file", "layer widths");
  r.end_part("header (layer widths)");
  if (saved != dims) {
    std::string s, d;
    for (auto v : saved) s += (s.empty() ? "" : ",") + std::to_string(v);
    for (auto v : dims) d += (d.empty() ? "" : ",") + std::to_string(v);
    fail("layer widths do not match the model", s, d);
  }
  std::vector<std::vector<float>> params;
  for (std::int64_t l = 0; l + 1 < n; ++l) {
    for (const std::int64_t want : {saved[l] * saved[l + 1], saved[l + 1]}) {
      const std::string what = std::string(params.size() % 2 == 0 ? "weights" : "bias") + " of layer " + std::to_string(l);
      std::int64_t count = 0;
      if (!r.read(&count, sizeof count) || count != want)
        fail("tensor size of the " + what, std::to_string(count), std::to_string(want));
      std::vector<float> p(static_cast<std::size_t>(count));
      if (!r.read(p.data(), p.size() * sizeof(float)))
        fail("truncated tensor of layer " + std::to_string(l), "end of file", std::to_string(count) + " floats");
      r.end_part(what);
      expect_finite(path, p, what);
      params.push_back(std::move(p));
    }
  }
  r.expect_end("tensor");
  return params;
}

}  // namespace gcnpart::engine
