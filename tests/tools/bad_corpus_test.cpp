// The malformed-input corpus: tests/data/bad/MANIFEST.tsv lists each hand-made bad input with the loader that reads
// it, the error class it must raise and a piece of the message that names the position (file:line:column, byte,
// node, parameter). One test walks the manifest through the library; a second runs the built `gcnpart` binary on
// every row that gives a command line and checks the contract of README.md: one line "gcnpart: error: ..." on
// stderr and the exit code of the error class (3 invalid input, 4 I/O).
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <new>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/error_matchers.hpp"
#include "datasets/gcsr.hpp"
#include "datasets/loaders.hpp"
#include "engine/trainer.hpp"
#include "partition/plan.hpp"
#include "partition/fit/cards.hpp"
#include "base/atomic_file.hpp"
#include "base/error.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using gcnpart::testing::contains;

// The largest single allocation since the last reset: a bad input must be refused before anything of the size its
// header claims is allocated, so every row is loaded under a watch on operator new.
namespace {
std::atomic<std::size_t> g_largest_allocation{0};
}  // namespace

void* operator new(std::size_t bytes) {
  std::size_t seen = g_largest_allocation.load(std::memory_order_relaxed);
  while (bytes > seen && !g_largest_allocation.compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
  }
  if (void* p = std::malloc(bytes == 0 ? 1 : bytes)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

/// One manifest row.
struct BadInput {
  std::int64_t line = 0;  // in MANIFEST.tsv, for failure messages
  std::string file;       // relative to tests/data/bad; "-" for a command line without a file
  std::string loader;     // snap | metis | mtx | ogb | gcsr | auto | weights | plan | cards | cli [+budget=BYTES]
  std::string error;      // InvalidInput | IoError | OutOfMemory
  std::string message;    // must appear in the error message
  std::string cli;        // gcnpart arguments, {} = the file; "-" = not run through the CLI

  [[nodiscard]] std::string path() const { return gcnpart::testing::test_data("bad/" + file); }
  [[nodiscard]] std::string label() const { return "MANIFEST.tsv:" + std::to_string(line) + " " + file; }
};

/// More than any bad input of the corpus needs (the text reader's buffer is 8 MiB); an absurd header would ask for
/// gigabytes.
constexpr std::size_t kAllocationCap = std::size_t{64} << 20;

/// The layer widths every weights row is loaded against (the files say 3-4-2 where they get that far).
const std::vector<std::int64_t> kWeightDims = {3, 4, 2};

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  std::size_t start = 0;
  for (;;) {
    const std::size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

std::vector<BadInput> read_manifest() {
  const std::string path = gcnpart::testing::test_data("bad/MANIFEST.tsv");
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot open " << path);
  std::vector<BadInput> rows;
  std::string line;
  std::int64_t number = 0;
  bool header = true;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const auto f = split_tabs(line);
    REQUIRE_MESSAGE(f.size() == 5, "MANIFEST.tsv:" << number << ": expected 5 tab-separated fields, got " << f.size());
    if (header) {  // the column names
      header = false;
      continue;
    }
    rows.push_back(BadInput{number, f[0], f[1], f[2], f[3], f[4]});
  }
  return rows;
}

/// Runs a row through the library; returns the error class and message it raised ("none" if it loaded).
std::pair<std::string, std::string> run_library(const BadInput& row_in) {
  BadInput row = row_in;
  std::int64_t budget = 0;  // "snap+budget=1024": LoadOptions::max_host_bytes
  if (const auto plus = row.loader.find("+budget="); plus != std::string::npos) {
    budget = std::stoll(row.loader.substr(plus + 8));
    row.loader.resize(plus);
  }
  std::vector<std::int64_t> dims = kWeightDims;  // "weights+dims=64-16-7": other layer widths (the CLI's demo model)
  if (const auto plus = row.loader.find("+dims="); plus != std::string::npos) {
    dims.clear();
    std::istringstream widths(row.loader.substr(plus + 6));
    for (std::string w; std::getline(widths, w, '-');) dims.push_back(std::stoll(w));
    row.loader.resize(plus);
  }
  try {
    if (row.loader == "weights") {
      (void)engine::load_weights(row.path(), dims);
    } else if (row.loader == "plan") {
      (void)partition::load_plan(row.path());
    } else if (row.loader == "cards") {
      (void)partition::load_cards(row.path());
    } else {
      datasets::LoadOptions options;
      options.max_host_bytes = budget;
      if (row.loader == "snap") options.format = datasets::Format::kSnap;
      else if (row.loader == "metis") options.format = datasets::Format::kMetis;
      else if (row.loader == "mtx") options.format = datasets::Format::kMatrixMarket;
      else if (row.loader == "ogb") options.format = datasets::Format::kOgb;
      else if (row.loader == "gcsr") options.format = datasets::Format::kGcsr;
      else if (row.loader != "auto") FAIL_CHECK(row.label() << ": unknown loader '" << row.loader << "'");
      (void)datasets::load_dataset(row.path(), options);
    }
  } catch (const InvalidInput& e) {
    return {"InvalidInput", e.what()};
  } catch (const IoError& e) {
    return {"IoError", e.what()};
  } catch (const OutOfMemory& e) {
    return {"OutOfMemory", e.what()};
  } catch (const std::exception& e) {
    return {std::string("other (") + typeid(e).name() + ")", e.what()};
  }
  return {"none", ""};
}

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct CliResult {
  int exit_code = -1;
  std::vector<std::string> stderr_lines;
};

/// Runs the gcnpart binary with `args` (a shell word list) in `cwd`; stdout is discarded.
CliResult run_cli(const std::string& args, const std::string& cwd, const std::string& err_file = "") {
  // stderr goes beside cwd when the command must find cwd empty (a {dir} row).
  const std::string err = err_file.empty() ? cwd + "/stderr.txt" : err_file;
  const std::string command =
      "cd " + quoted(cwd) + " && " + quoted(GCNPART_CLI) + " " + args + " >/dev/null 2>" + quoted(err);
  const int status = std::system(command.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  std::istringstream lines(slurp(err));
  if (!err_file.empty()) std::filesystem::remove(err);
  for (std::string l; std::getline(lines, l);) r.stderr_lines.push_back(l);
  return r;
}

std::string with_file(std::string args, const std::string& path) {
  for (std::size_t at = args.find("{}"); at != std::string::npos; at = args.find("{}", at + 1))
    args.replace(at, 2, quoted(path));
  return args;
}

/// {data:REL}: a copy of the good fixture tests/data/REL (a file or a dataset folder) in the row's folder, so a row
/// can name a real input, and an output on it or inside it, without any risk to the fixture itself.
std::string with_good_copies(std::string args, const gcnpart::testing::TempDir& cwd) {
  for (std::size_t at = args.find("{data:"); at != std::string::npos; at = args.find("{data:", at)) {
    const std::size_t end = args.find('}', at);
    REQUIRE_MESSAGE(end != std::string::npos, "unterminated {data: in " << args);
    const std::string rel = args.substr(at + 6, end - at - 6);
    const std::filesystem::path from = gcnpart::testing::test_data(rel);
    const std::filesystem::path to = cwd.path / from.filename();
    if (!std::filesystem::exists(to))
      std::filesystem::copy(from, to, std::filesystem::copy_options::recursive);
    args.replace(at, end + 1 - at, quoted(to.string()));
  }
  return args;
}

int exit_code_of(const std::string& error_class) {
  if (error_class == "InvalidInput") return static_cast<int>(ExitCode::kInvalidInput);
  if (error_class == "IoError") return static_cast<int>(ExitCode::kIo);
  if (error_class == "OutOfMemory") return static_cast<int>(ExitCode::kOutOfMemory);
  return -1;
}

/// The contract of a failing command: exactly one line starting "gcnpart: error:", the last one; before it only
/// the one status line `gcnpart train` prints once its data has loaded ("gcnpart train: <dataset> ..."), nothing
/// else; and the exit code of the error class.
void check_cli_failure(const CliResult& r, const std::string& what, int expected_exit, const std::string& message) {
  CHECK_MESSAGE(r.exit_code == expected_exit, what << ": exit code " << r.exit_code << ", expected " << expected_exit);
  REQUIRE_MESSAGE(!r.stderr_lines.empty(), what << ": nothing on stderr");
  const std::string& last = r.stderr_lines.back();
  CHECK_MESSAGE(last.rfind("gcnpart: error: ", 0) == 0, what << ": last stderr line: " << last);
  CHECK_MESSAGE(contains(last, message), what << ": '" << message << "' not in: " << last);
  for (std::size_t i = 0; i + 1 < r.stderr_lines.size(); ++i)
    CHECK_MESSAGE(r.stderr_lines[i].rfind("gcnpart train: ", 0) == 0,
                  what << ": extra stderr line " << i + 1 << ": " << r.stderr_lines[i]);
  CHECK_MESSAGE(r.stderr_lines.size() <= 2, what << ": " << r.stderr_lines.size() << " stderr lines");
}

}  // namespace

TEST_CASE("every malformed input of the corpus raises its error class with a message naming the position") {
  const auto rows = read_manifest();
  int library_rows = 0, absurd = 0;
  for (const auto& row : rows) {
    CHECK_MESSAGE((row.error == "InvalidInput" || row.error == "IoError" || row.error == "OutOfMemory"),
                  row.label() << ": error class " << row.error);
    if (row.loader == "cli") {
      CHECK_MESSAGE(row.file == "-", row.label() << ": cli rows name no file");
      CHECK_MESSAGE(row.cli != "-", row.label() << ": a cli row needs a command line");
      continue;
    }
    ++library_rows;
    const std::string name = std::filesystem::path(row.file).filename().string();
    if (name.rfind("absurd_", 0) == 0 || name.rfind("negative_", 0) == 0 || contains(name, "_beyond_")) ++absurd;
    g_largest_allocation = 0;
    const auto [cls, msg] = run_library(row);
    CHECK_MESSAGE(g_largest_allocation.load() <= kAllocationCap,
                  row.label() << ": allocated " << g_largest_allocation.load() << " bytes at once before failing");
    CHECK_MESSAGE(cls == row.error, row.label() << ": raised " << cls << ", expected " << row.error << "; message: " << msg);
    CHECK_MESSAGE(contains(msg, row.message), row.label() << ": '" << row.message << "' not in: " << msg);
  }
  CHECK(rows.size() >= 130);  // 79 before issue 18's hostile inputs, which added the rest
  CHECK(library_rows >= 60);
  CHECK(absurd >= 10);  // absurd sizes and negative counts, refused before allocating
}

TEST_CASE("the CLI prints one 'gcnpart: error:' line and exits 3, 4 or 5 for every malformed input of the corpus") {
  int run = 0;
  for (const auto& row : read_manifest()) {
    if (row.cli == "-") continue;
    ++run;
    // {dir}: a fresh empty folder, the command's working directory (for refusals that need an existing folder).
    gcnpart::testing::TempDir cwd;
    auto with_dir = [&](std::string text) {
      for (std::size_t at = text.find("{dir}"); at != std::string::npos; at = text.find("{dir}", at + 1))
        text.replace(at, 5, cwd.path.string());
      return text;
    };
    const std::string args =
        "--quiet " + with_dir(with_good_copies(with_file(row.cli, row.file == "-" ? std::string() : row.path()), cwd));
    const std::string err_file = cwd.path.string() + "/../" + cwd.path.filename().string() + ".stderr";
    check_cli_failure(run_cli(args, cwd.path.string(), err_file), row.label() + " (gcnpart " + args + ")",
                      exit_code_of(row.error), with_dir(row.message));
  }
  CHECK(run >= 60);
}

TEST_CASE("the CLI refuses to write an output file that another writer holds, naming its pid, and leaves it intact") {
  gcnpart::testing::TempDir cwd;
  const std::string out = cwd.file("small.gcsr");
  write_file_atomic(out, "the old file");
  {
    AtomicFile writer(out);  // holds the lock as a concurrent `gcnpart convert` would
    const CliResult r =
        run_cli("--quiet convert " + quoted(gcnpart::testing::test_data("snap/small.txt")) + " " + quoted(out),
                cwd.path.string());
    check_cli_failure(r, "convert to a locked output", static_cast<int>(ExitCode::kIo),
                      "small.gcsr: is being written by another gcnpart process (pid " + std::to_string(::getpid()));
  }
  CHECK(slurp(out) == "the old file");
  const CliResult ok =
      run_cli("--quiet convert " + quoted(gcnpart::testing::test_data("snap/small.txt")) + " " + quoted(out),
              cwd.path.string());
  CHECK(ok.exit_code == 0);
  CHECK(datasets::load_gcsr(out).num_nodes() == 5);
  CHECK_FALSE(std::filesystem::exists(out + ".lock"));
}
