// Loader throughput on one core: generates a large plain SNAP edge list, then times
//   scan      TextReader + LineCursor over every line, parsing both ids (the tokenizer alone),
//   load_snap the whole loader (parse, id remap, build_csr with symmetrise/dedupe),
//   build_csr build_csr alone on the edge list load_snap must produce (known from the generator; the CSRs are
//             compared, so this also checks load_snap), giving load_snap's own share = load_snap - build_csr,
//   gcsr      save_gcsr and load_gcsr of the loaded dataset,
// each the median of several runs after a warm-up read (the file is in the page cache: this measures parsing,
// not the disk), as wall-clock and as process CPU time (the dev machine's 2 cores are shared, so CPU time is the
// steadier figure). Prints one JSON object; --out writes it to a file too.
//
//   loader_bench [--mb 300] [--file /tmp/gcnpart-loader-bench.txt] [--runs 3] [--commit abc123]
//                [--machine "..."] [--out bench/results/loaders-cpu-DATE.json] [--keep]
#include <omp.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <time.h>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "datasets/gcsr.hpp"
#include "datasets/loaders.hpp"
#include "datasets/text_reader.hpp"
#include "base/error.hpp"

namespace {

using Clock = std::chrono::steady_clock;
using gcnpart::datasets::Dataset;

struct Args {
  double mb = 300;
  std::string file = "/tmp/gcnpart-loader-bench.txt";
  int runs = 3;
  std::string commit = "unknown";
  std::string machine = "2-core CPU dev machine";
  std::string out;
  bool keep = false;
};

Args parse_args(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) throw gcnpart::InvalidInput::parameter(k, "", "a value after " + k);
      return argv[++i];
    };
    if (k == "--mb") a.mb = std::stod(value());
    else if (k == "--file") a.file = value();
    else if (k == "--runs") a.runs = std::stoi(value());
    else if (k == "--commit") a.commit = value();
    else if (k == "--machine") a.machine = value();
    else if (k == "--out") a.out = value();
    else if (k == "--keep") a.keep = true;
    else throw gcnpart::InvalidInput::parameter(k, k, "--mb, --file, --runs, --commit, --machine, --out, --keep");
  }
  if (a.mb <= 0 || a.runs < 1) throw gcnpart::InvalidInput::parameter("--mb/--runs", "", "positive values");
  return a;
}

/// A SNAP file of about `bytes`: a header, then "u<TAB>v" lines with ids below 2^22 from a fixed xorshift
/// stream (7-digit ids, as in the larger SNAP graphs), every 64th line a self loop, every 16th a repeat.
std::int64_t write_snap(const std::string& path, std::int64_t bytes, std::vector<std::uint32_t>& src,
                        std::vector<std::uint32_t>& dst) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw gcnpart::IoError(path, "cannot create");
  std::vector<char> buf(std::size_t{8} << 20);
  std::size_t used = 0;
  std::int64_t written = 0, lines = 0;
  const std::string header = "# Synthetic SNAP edge list for loader_bench\n# FromNodeId\tToNodeId\n";
  std::fwrite(header.data(), 1, header.size(), f);
  written += static_cast<std::int64_t>(header.size());
  std::uint64_t s = 0x9E3779B97F4A7C15ull;
  std::uint32_t last_u = 0, last_v = 1;
  while (written + static_cast<std::int64_t>(used) < bytes) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    std::uint32_t u = static_cast<std::uint32_t>(s) & 0x3FFFFF;
    std::uint32_t v = static_cast<std::uint32_t>(s >> 32) & 0x3FFFFF;
    if (lines % 64 == 63) v = u;
    if (lines % 16 == 15) {
      u = last_u;
      v = last_v;
    }
    last_u = u;
    last_v = v;
    src.push_back(u);
    dst.push_back(v);
    char* p = buf.data() + used;
    p = std::to_chars(p, p + 16, u).ptr;
    *p++ = '\t';
    p = std::to_chars(p, p + 16, v).ptr;
    *p++ = '\n';
    used = static_cast<std::size_t>(p - buf.data());
    ++lines;
    if (used > buf.size() - 64) {
      std::fwrite(buf.data(), 1, used, f);
      written += static_cast<std::int64_t>(used);
      used = 0;
    }
  }
  std::fwrite(buf.data(), 1, used, f);
  written += static_cast<std::int64_t>(used);
  if (std::fclose(f) != 0) throw gcnpart::IoError(path, "write failed");
  return lines;
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Process CPU time (user + system, so page faults count): with one thread it is the work done, unaffected by
/// other processes competing for the cores, which on a shared 2-core machine move the wall clock a lot.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

/// Medians of wall-clock and CPU seconds over the runs of one measurement.
struct Timing {
  std::vector<double> wall, cpu;
  template <class Fn>
  void run(Fn&& fn) {
    const double c0 = cpu_seconds();
    const auto t0 = Clock::now();
    fn();
    wall.push_back(seconds_since(t0));
    cpu.push_back(cpu_seconds() - c0);
  }
  [[nodiscard]] double wall_s() const { return median_of(wall); }
  [[nodiscard]] double cpu_s() const { return median_of(cpu); }
  static double median_of(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }
};

/// The tokenizer alone: every line, both ids, summed so nothing is optimised away.
std::int64_t scan(const std::string& path) {
  gcnpart::datasets::TextReader r(path);
  std::string_view line;
  std::int64_t sum = 0;
  while (r.next_line(line)) {
    gcnpart::datasets::LineCursor c(r, line);
    c.skip_blanks();
    if (c.at_end_exact() || c.peek() == '#') continue;
    sum += c.read_int_here("id", gcnpart::datasets::LineCursor::kBlank);
    sum += c.read_int("id");
  }
  return sum;
}

/// The 1-minute load average (other processes sharing the cores), or -1 where /proc is missing.
double load_average() {
  std::ifstream in("/proc/loadavg");
  double v = -1;
  in >> v;
  return v;
}

std::string today() {
  const std::time_t t = std::time(nullptr);
  char s[16];
  std::strftime(s, sizeof s, "%Y-%m-%d", std::gmtime(&t));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    const Args args = parse_args(argc, argv);
    omp_set_num_threads(1);
    std::cerr << "load average at start: " << load_average() << "\n";

    const auto target = static_cast<std::int64_t>(args.mb * 1e6);
    auto t0 = Clock::now();
    std::vector<std::uint32_t> gen_src, gen_dst;
    const std::int64_t lines = write_snap(args.file, target, gen_src, gen_dst);
    const double gen_s = seconds_since(t0);
    const auto bytes = static_cast<std::int64_t>(std::filesystem::file_size(args.file));
    const double mb = static_cast<double>(bytes) / 1e6;
    std::cerr << "generated " << args.file << ": " << mb << " MB, " << lines << " lines in " << gen_s << " s\n";

    // Warm-up: pull the file into the page cache.
    volatile std::int64_t sink = scan(args.file);

    Timing scan_t, load_t, build_t, save_t, gload_t;
    for (int i = 0; i < args.runs; ++i) scan_t.run([&] { sink = sink + scan(args.file); });
    Dataset ds;
    for (int i = 0; i < args.runs; ++i) {
      ds = Dataset{};  // free the previous result outside the timed region
      load_t.run([&] { ds = gcnpart::datasets::load_snap(args.file); });
    }

    // The edge list load_snap must hand to build_csr: generated ids mapped ascending to 0..N-1.
    gcnpart::datasets::EdgeList expected;
    {
      std::vector<gcnpart::NodeId> map(std::size_t{1} << 22, -1);
      for (std::size_t i = 0; i < gen_src.size(); ++i) map[gen_src[i]] = map[gen_dst[i]] = 0;
      gcnpart::NodeId next = 0;
      for (auto& m : map)
        if (m == 0) m = next++;
      expected.num_nodes = next;
      expected.src.resize(gen_src.size());
      expected.dst.resize(gen_src.size());
      for (std::size_t i = 0; i < gen_src.size(); ++i) {
        expected.src[i] = map[gen_src[i]];
        expected.dst[i] = map[gen_dst[i]];
      }
      gen_src = {};
      gen_dst = {};
    }
    for (int i = 0; i < args.runs; ++i) {
      gcnpart::datasets::Csr csr;
      build_t.run([&] { csr = gcnpart::datasets::build_csr(expected); });
      if (csr.row_offsets != ds.graph.row_offsets || csr.col_ids != ds.graph.col_ids)
        throw gcnpart::Error("load_snap's CSR differs from build_csr on the generated edge list");
    }
    expected = {};
    const double own_wall = load_t.wall_s() - build_t.wall_s();
    const double own_cpu = load_t.cpu_s() - build_t.cpu_s();
    std::cerr << "scan " << mb / scan_t.wall_s() << " MB/s, load_snap " << mb / load_t.wall_s() << " MB/s ("
              << ds.num_nodes() << " nodes, " << ds.graph.num_edges() << " entries), of which build_csr "
              << build_t.wall_s() << " s: parse + remap " << mb / own_wall << " MB/s (wall clock; CPU time: scan "
              << mb / scan_t.cpu_s() << ", load_snap " << mb / load_t.cpu_s() << ", parse + remap " << mb / own_cpu
              << " MB/s)\n";

    const std::string gcsr_path = args.file + ".gcsr";
    for (int i = 0; i < args.runs; ++i) {
      save_t.run([&] { gcnpart::datasets::save_gcsr(ds, gcsr_path); });
      Dataset back;
      gload_t.run([&] { back = gcnpart::datasets::load_gcsr(gcsr_path, true); });
      if (back.graph.num_edges() != ds.graph.num_edges()) throw gcnpart::Error("gcsr round trip lost edges");
    }
    const double gcsr_mb = static_cast<double>(std::filesystem::file_size(gcsr_path)) / 1e6;
    std::filesystem::remove(gcsr_path);
    if (!args.keep) std::filesystem::remove(args.file);

    auto figure = [&](const char* name, double megabytes, double wall, double cpu, bool last = false) {
      std::ostringstream f;
      f.precision(4);
      f << "    \"" << name << "\": {\"wall_seconds\": " << wall << ", \"mb_per_s\": " << megabytes / wall
        << ", \"cpu_seconds\": " << cpu << ", \"cpu_mb_per_s\": " << megabytes / cpu << "}" << (last ? "\n" : ",\n");
      return f.str();
    };
    std::ostringstream j;
    j.precision(4);
    j << "{\n"
      << "  \"benchmark\": \"loader_bench\",\n"
      << "  \"machine\": \"" << args.machine << "\",\n"
      << "  \"date\": \"" << today() << "\",\n"
      << "  \"commit\": \"" << args.commit << "\",\n"
      << "  \"threads\": 1,\n"
      << "  \"runs\": " << args.runs << ",\n"
      << "  \"input\": {\"format\": \"snap\", \"compressed\": false, \"bytes\": " << bytes << ", \"lines\": " << lines
      << ", \"nodes\": " << ds.num_nodes() << ", \"csr_entries\": " << ds.graph.num_edges() << "},\n"
      << "  \"results\": {\n"
      << figure("scan", mb, scan_t.wall_s(), scan_t.cpu_s())
      << figure("load_snap", mb, load_t.wall_s(), load_t.cpu_s())
      << figure("build_csr_alone", mb, build_t.wall_s(), build_t.cpu_s())
      << figure("load_snap_without_build_csr", mb, own_wall, own_cpu)
      << figure("save_gcsr", gcsr_mb, save_t.wall_s(), save_t.cpu_s())
      << figure("load_gcsr", gcsr_mb, gload_t.wall_s(), gload_t.cpu_s(), true)
      << "  },\n"
      << "  \"gcsr_bytes\": " << static_cast<std::int64_t>(gcsr_mb * 1e6) << ",\n"
      << "  \"load_snap_over_load_gcsr_wall\": " << load_t.wall_s() / gload_t.wall_s() << ",\n"
      << "  \"load_average_1min_at_end\": " << load_average() << ",\n"
      << "  \"notes\": \"MB = 1e6 bytes of text; page-cached file; scan = TextReader + from_chars of both ids; "
         "load_snap = parse + id remap + build_csr (symmetrise, drop loops, dedupe) on 1 OpenMP thread; "
         "load_snap_without_build_csr = load_snap minus build_csr timed alone on the identical edge list; "
         "cpu_* = process CPU time (user + system), robust to other processes sharing the 2 cores; "
         "gcsr timed with checksum verification\"\n"
      << "}\n";
    std::cout << j.str();
    if (!args.out.empty()) {
      std::ofstream out(args.out);
      if (!(out << j.str())) throw gcnpart::IoError(args.out, "cannot write");
    }
    return 0;
  } catch (const gcnpart::Error& e) {
    std::cerr << "loader_bench: " << e.what() << "\n";
    return static_cast<int>(e.exit_code());
  } catch (const std::exception& e) {
    std::cerr << "loader_bench: " << e.what() << "\n";
    return 1;
  }
}
