#include "engine/checkpoint.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "base/atomic_file.hpp"
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
constexpr char kWeightsMagic[8] = {'G', 'C', 'N', 'P', 'W', 'T', 'S', '1'};
constexpr char kCheckpointMagic[8] = {'G', 'C', 'N', 'P', 'C', 'K', 'P', '1'};

template <class T>
void put_vector(AtomicFile& f, const std::vector<T>& v) {
  const std::int64_t n = static_cast<std::int64_t>(v.size());
  f.write(&n, sizeof n);
  f.write(v.data(), v.size() * sizeof(T));
}

/// Reads a length-prefixed vector, refusing lengths the rest of the file cannot hold.
template <class T>
std::vector<T> get_vector(std::ifstream& in, const std::string& path, std::uint64_t file_size, const char* what) {
  std::int64_t n = -1;
  in.read(reinterpret_cast<char*>(&n), sizeof n);
  const auto at = static_cast<std::uint64_t>(in.tellg());
  if (!in || n < 0 || static_cast<std::uint64_t>(n) * sizeof(T) > file_size - std::min(file_size, at))
    throw InvalidInput(InputLocation{path, 0, 0}, std::string("bad length of ") + what, std::to_string(n),
                       "a length the file can hold");
  std::vector<T> v(static_cast<std::size_t>(n));
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  if (!in) throw InvalidInput(InputLocation{path, 0, 0}, std::string("truncated ") + what, "end of file", "more data");
  return v;
}
}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& c) {
  AtomicFile f(path);
  f.write(kCheckpointMagic, sizeof kCheckpointMagic);
  f.write(&c.seed, sizeof c.seed);
  const std::int64_t header[3] = {c.next_epoch, c.model.step, c.since_best};
  f.write(header, sizeof header);
  f.write(&c.best_valid, sizeof c.best_valid);
  put_vector(f, c.dims);
  put_vector(f, c.model.params);
  put_vector(f, c.model.adam_m);
  put_vector(f, c.model.adam_v);
  put_vector(f, c.train_loss);
  put_vector(f, c.valid_loss);
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
  const auto size = static_cast<std::uint64_t>(std::filesystem::file_size(path));
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, kCheckpointMagic, 8) != 0)
    throw InvalidInput(InputLocation{path, 0, 0}, "not a gcnpart checkpoint", "bad magic", "GCNPCKP1");
  Checkpoint c;
  std::int64_t header[3];
  in.read(reinterpret_cast<char*>(&c.seed), sizeof c.seed);
  in.read(reinterpret_cast<char*>(header), sizeof header);
  in.read(reinterpret_cast<char*>(&c.best_valid), sizeof c.best_valid);
  if (!in || header[0] < 0 || header[1] < 0 || header[2] < 0)
    throw InvalidInput(InputLocation{path, 0, 0}, "bad checkpoint header", "epoch " + std::to_string(header[0]),
                       "non-negative epoch, step and counter");
  c.next_epoch = static_cast<int>(header[0]);
  c.model.step = header[1];
  c.since_best = static_cast<int>(header[2]);
  c.dims = get_vector<std::int64_t>(in, path, size, "layer widths");
  c.model.params = get_vector<float>(in, path, size, "parameters");
  c.model.adam_m = get_vector<float>(in, path, size, "Adam first moments");
  c.model.adam_v = get_vector<float>(in, path, size, "Adam second moments");
  c.train_loss = get_vector<double>(in, path, size, "training losses");
  c.valid_loss = get_vector<double>(in, path, size, "validation losses");
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
  f.write(kWeightsMagic, sizeof kWeightsMagic);
  const std::int64_t n = static_cast<std::int64_t>(dims.size());
  f.write(&n, sizeof n);
  f.write(dims.data(), dims.size() * sizeof(std::int64_t));
  for (const auto& p : params) {
    const std::int64_t count = static_cast<std::int64_t>(p.size());
    f.write(&count, sizeof count);
    f.write(p.data(), p.size() * sizeof(float));
  }
  f.commit();
}

std::vector<std::vector<float>> load_weights(const std::string& path, const std::vector<std::int64_t>& dims) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError(path, "cannot open weights file");
  auto fail = [&](const std::string& problem, const std::string& value, const std::string& expected) {
    throw InvalidInput(InputLocation{path, 0, 0}, problem, value, expected);
  };
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, kWeightsMagic, 8) != 0)
    fail("not a gcnpart weights file", "bad magic", "GCNPWTS1");
  std::int64_t n = 0;
  if (!in.read(reinterpret_cast<char*>(&n), sizeof n) || n < 2 || n > 65)
    fail("layer count", std::to_string(n), "2..65 widths");
  std::vector<std::int64_t> saved(static_cast<std::size_t>(n));
  in.read(reinterpret_cast<char*>(saved.data()), static_cast<std::streamsize>(n * sizeof(std::int64_t)));
  if (!in) fail("truncated header", "end of file", "layer widths");
  if (saved != dims) {
    std::string s, d;
    for (auto v : saved) s += (s.empty() ? "" : ",") + std::to_string(v);
    for (auto v : dims) d += (d.empty() ? "" : ",") + std::to_string(v);
    fail("layer widths do not match the model", s, d);
  }
  std::vector<std::vector<float>> params;
  for (std::int64_t l = 0; l + 1 < n; ++l) {
    for (const std::int64_t want : {saved[l] * saved[l + 1], saved[l + 1]}) {
      std::int64_t count = 0;
      if (!in.read(reinterpret_cast<char*>(&count), sizeof count) || count != want)
        fail("tensor size of layer " + std::to_string(l), std::to_string(count), std::to_string(want));
      std::vector<float> p(static_cast<std::size_t>(count));
      if (!in.read(reinterpret_cast<char*>(p.data()), static_cast<std::streamsize>(count * sizeof(float))))
        fail("truncated tensor of layer " + std::to_string(l), "end of file", std::to_string(count) + " floats");
      expect_finite(path, p, std::string(params.size() % 2 == 0 ? "weights" : "bias") + " of layer " + std::to_string(l));
      params.push_back(std::move(p));
    }
  }
  return params;
}

}  // namespace gcnpart::engine
