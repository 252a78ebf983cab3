#include "datasets/loaders.hpp"

#include <sys/resource.h>

#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <bit>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "datasets/gcsr.hpp"
#include "datasets/generators.hpp"
#include "datasets/text_reader.hpp"
#include "base/error.hpp"
#include "base/format.hpp"

namespace gcnpart::datasets {

namespace fs = std::filesystem;

namespace {

constexpr std::int64_t kMaxNodes = std::numeric_limits<NodeId>::max();
constexpr char kBlank = LineCursor::kBlank;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// File name, lower-cased, without a trailing ".gz".
std::string plain_name(const std::string& path) {
  std::string name = lower(fs::path(path).filename().string());
  if (ends_with(name, ".gz")) name.resize(name.size() - 3);
  return name;
}

/// "email-Enron.txt.gz" -> "email-Enron".
std::string stem_of(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  if (ends_with(lower(name), ".gz")) name.resize(name.size() - 3);
  const auto dot = name.rfind('.');
  return dot == std::string::npos || dot == 0 ? name : name.substr(0, dot);
}

std::string with_commas(std::int64_t v) {
  std::string s = std::to_string(v < 0 ? -v : v);
  for (auto i = static_cast<std::int64_t>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return v < 0 ? "-" + s : s;
}

/// One human sentence on what build_csr did, for Dataset::provenance.
std::string describe_build(const BuildStats& st, bool symmetrized) {
  std::string s = with_commas(st.input_edges) + " input entries";
  s += ", " + with_commas(st.self_loops_removed) + " self loops removed";
  if (symmetrized) s += ", symmetrised to " + with_commas(st.after_symmetrize);
  s += ", " + with_commas(st.duplicates_removed) + " duplicates removed -> " + with_commas(st.output_edges) +
       " directed entries";
  if (symmetrized) s += " (" + with_commas(st.output_edges / 2) + " undirected)";
  return s;
}

/// Structure-only graphs get synthetic features and labels only when asked.
void maybe_add_synthetic(Dataset& ds, const LoadOptions& o) {
  if (o.synthetic_features <= 0) return;
  if (o.synthetic_classes < 1)
    throw InvalidInput::parameter("synthetic_classes", std::to_string(o.synthetic_classes),
                                  ">= 1 when synthetic_features > 0");
  add_synthetic_features(ds, o.synthetic_features, o.synthetic_classes, o.seed);
  ds.provenance += "; synthetic features: " + std::to_string(o.synthetic_features) + " columns, " +
                   std::to_string(o.synthetic_classes) + " classes, seed " + std::to_string(o.seed);
}

/// Refuses a node count before anything of that size is allocated.
void check_node_count(const InputLocation& where, std::int64_t n, const char* what) {
  if (n < 0) throw InvalidInput(where, std::string("negative ") + what, std::to_string(n), "a count >= 1");
  if (n == 0) throw InvalidInput(where, "empty graph", "0", std::string("a graph with at least one node (") + what + ")");
  if (n > kMaxNodes)
    throw InvalidInput(where, std::string("too many nodes (") + what + ")", std::to_string(n),
                       "at most " + std::to_string(kMaxNodes) + " (int32 node ids)");
}

/// A header's claim of `count` records, each at least `min_bytes` long, must fit in what the file can hold.
void check_fits(const InputLocation& where, const TextReader& data, std::int64_t count, std::int64_t min_bytes,
                const std::string& what) {
  const std::int64_t bound = data.size_bound();
  if (count > bound / min_bytes + 1)
    throw InvalidInput(where, what + " larger than the file can hold", std::to_string(count),
                       "at most " + std::to_string(bound / min_bytes + 1) + " for " + data.path() + " (" +
                           std::to_string(data.file_bytes()) + " bytes" + (data.compressed() ? ", gzip" : "") + ")");
}

/// The loaders' host-memory budget: refuses a projected peak beyond LoadOptions::max_host_bytes before it is
/// allocated (a header's claimed count) or while the arrays grow (a file, perhaps a small .gz, with more lines than
/// the machine can hold).
class HostBudget {
 public:
  HostBudget(const LoadOptions& o, std::string what)
      : limit_(o.max_host_bytes > 0 ? o.max_host_bytes : default_max_host_bytes()), what_(std::move(what)) {}
  /// `bytes` = the projected peak if the input holds `count` records.
  void check(const InputLocation& where, std::int64_t count, std::int64_t bytes_per_record) const {
    const double bytes = static_cast<double>(count) * static_cast<double>(bytes_per_record);
    if (bytes <= static_cast<double>(limit_)) return;
    throw OutOfMemory(where.to_string() + ": loading needs more host memory than allowed: about " +
                      human_bytes(bytes) + " for " + std::to_string(count) + " " + what_ + ", the budget is " +
                      human_bytes(static_cast<double>(limit_)) +
                      " (--max-host-memory; default 3/4 of the tightest of the physical memory, ulimit -v and the "
                      "cgroup's memory.max)");
  }
  /// The same while records are read: cheap enough to call on every record (checks every 65536th).
  void check_growth(const TextReader& r, std::int64_t count, std::int64_t bytes_per_record) const {
    if ((count & 0xffff) == 0) check(r.location(), count, bytes_per_record);
  }

 private:
  std::int64_t limit_;
  std::string what_;
};

// Projected peak bytes per record of each loader: its own arrays plus build_csr's (symmetrised, int32 ids, offsets,
// per-row sort scratch), measured on RMAT and SNAP files within 20 %.
constexpr std::int64_t kSnapBytesPerLine = 56;
constexpr std::int64_t kEdgeListBytesPerEntry = 40;  // METIS, Matrix Market, OGB: int32 pairs (+ float weight)

// ------------------------------------------------------------------------------------------------ SNAP

/// The "# Nodes: N Edges: M" comment, if the file has one.
struct SnapHeader {
  std::int64_t nodes = -1;
  std::int64_t edges = -1;
  std::int64_t line = 0;
  std::int64_t edges_column = 0;
};

void parse_snap_comment(const TextReader& r, std::string_view line, SnapHeader& h) {
  const auto nodes_at = line.find("Nodes:");
  const auto edges_at = line.find("Edges:");
  if (nodes_at == std::string_view::npos && edges_at == std::string_view::npos) return;
  auto number_after = [&](std::size_t at, std::int64_t& column) -> std::int64_t {
    LineCursor c(r, line.substr(at + 6));
    c.skip_blanks();
    column = static_cast<std::int64_t>(at + 6) + c.column();
    // A count that is not a number is a malformed header, not a comment to ignore.
    const std::string_view tok = c.token();
    std::int64_t v = 0;
    const auto res = std::from_chars(tok.data(), tok.data() + tok.size(), v);
    if (res.ec != std::errc() || res.ptr != tok.data() + tok.size() || v < 0)
      throw InvalidInput(r.location(column), "bad count in the SNAP header", std::string(tok),
                         "a non-negative integer, as in '# Nodes: N Edges: M'");
    return v;
  };
  std::int64_t unused = 0;
  if (nodes_at != std::string_view::npos) h.nodes = number_after(nodes_at, unused);
  if (edges_at != std::string_view::npos) h.edges = number_after(edges_at, h.edges_column);
  h.line = r.line_number();
}

}  // namespace

Dataset load_snap(const std::string& path, const LoadOptions& options) {
  TextReader reader(path);
  const HostBudget budget(options, "edge lines");
  SnapHeader header;
  // Interleaved (src, dst) pairs of raw 64-bit ids.
  std::vector<std::int64_t> ends;
  std::int64_t max_id = -1;
  std::string_view line;
  constexpr const char* kIdExpected = "a non-negative integer node id (lines are 'SRC DST' or 'SRC,DST')";
  // CSV edge lists (PyG / DGL exports: 'src,dst' with or without a header line) read as SNAP: a comma may stand
  // between the two ids, and a first data line of names with a comma ('src,dst', 'source,target') is a header.
  bool seen_data = false;
  // Growing by doubling copies and page-faults the largest array several times; once the first lines have shown
  // the bytes per line, reserve for the whole file (plain files; a gzip file trusts its header's edge count,
  // capped by a generous compression ratio, so a lying header cannot make us reserve absurd amounts).
  constexpr std::size_t kEstimateAfter = 2 * 65536;
  auto reserve_estimate = [&] {
    std::int64_t estimate = 0;
    if (!reader.compressed() && reader.regular()) {
      const double per_line = static_cast<double>(reader.bytes_consumed()) / static_cast<double>(kEstimateAfter / 2);
      estimate = static_cast<std::int64_t>(static_cast<double>(reader.file_bytes()) / per_line * 1.02) + 1024;
    } else if (header.edges > 0) {
      estimate = std::min(header.edges, 2 * reader.file_bytes());
    }
    if (estimate > 0) {
      budget.check(reader.location(), estimate, kSnapBytesPerLine);
      ends.reserve(2 * static_cast<std::size_t>(estimate));
    }
  };
  while (reader.next_line(line)) {
    LineCursor c(reader, line);
    c.skip_blanks();
    if (c.at_end_exact()) continue;
    if (c.peek() == '#' || c.peek() == '%') {
      if (header.line == 0) parse_snap_comment(reader, line, header);
      continue;
    }
    if (!seen_data) {
      seen_data = true;
      const std::string_view rest = c.rest();
      const auto first = static_cast<unsigned char>(c.peek());
      if (std::isalpha(first) != 0 && rest.find(',') != std::string_view::npos) continue;  // a CSV header
    }
    const std::int64_t col_u = c.column();
    const std::int64_t u = c.read_int_here(kIdExpected, ',');
    c.skip_blanks();
    if (c.consume(',')) c.skip_blanks();
    const std::int64_t col_v = c.column();
    const std::int64_t v = c.read_int_here(kIdExpected, ',');
    if (!c.at_end()) c.fail_token("unexpected extra field", "two node ids per line ('SRC DST' or 'SRC,DST')");
    if ((u | v) < 0) {
      const bool first = u < 0;
      c.fail_at_column(first ? col_u : col_v, "negative node id", std::to_string(first ? u : v), kIdExpected);
    }
    max_id = std::max(max_id, std::max(u, v));
    ends.push_back(u);
    ends.push_back(v);
    budget.check_growth(reader, static_cast<std::int64_t>(ends.size() / 2), kSnapBytesPerLine);
    if (ends.size() == kEstimateAfter) reserve_estimate();
  }
  const auto lines = static_cast<std::int64_t>(ends.size() / 2);
  if (header.edges >= 0 && header.edges != lines)
    throw InvalidInput(InputLocation{path, header.line, header.edges_column},
                       "edge count in the '# Nodes: N Edges: M' header does not match the file",
                       std::to_string(header.edges), std::to_string(lines) + " data lines");
  if (lines == 0)
    throw InvalidInput(InputLocation{path, reader.line_number(), 0}, "empty graph", "0 edge lines",
                       "at least one 'SRC DST' line");

  // Sorted distinct ids map ascending to 0..N-1, so a file whose ids already are 0..N-1 keeps them.
  // Dense ids (the usual case) take a presence bitmap with per-word ranks, O(E + max id): at max_id / 8 bytes it
  // stays in cache where an id -> index array would not, which makes the two random-access passes several times
  // faster. Sparse ids take a sort of the distinct ids.
  EdgeList edges;
  edges.src.resize(static_cast<std::size_t>(lines));
  edges.dst.resize(static_cast<std::size_t>(lines));
  std::int64_t distinct = 0;
  bool identity = false;
  if (max_id < kMaxNodes && max_id <= 16 * static_cast<std::int64_t>(ends.size()) + (std::int64_t{1} << 24)) {
    const std::size_t words = static_cast<std::size_t>(max_id >> 6) + 1;
    std::vector<std::uint64_t> present(words, 0);
    for (const std::int64_t id : ends) present[static_cast<std::size_t>(id >> 6)] |= std::uint64_t{1} << (id & 63);
    std::vector<std::uint32_t> rank(words);  // distinct ids in the words before
    for (std::size_t w = 0; w < words; ++w) {
      rank[w] = static_cast<std::uint32_t>(distinct);
      distinct += std::popcount(present[w]);
    }
    identity = distinct == max_id + 1;
    if (identity) {
      for (std::int64_t i = 0; i < lines; ++i) {
        edges.src[i] = static_cast<NodeId>(ends[2 * i]);
        edges.dst[i] = static_cast<NodeId>(ends[2 * i + 1]);
      }
    } else {
      auto index = [&](std::int64_t id) {
        const auto w = static_cast<std::size_t>(id >> 6);
        const std::uint64_t below = present[w] & ((std::uint64_t{1} << (id & 63)) - 1);
        return static_cast<NodeId>(rank[w] + static_cast<std::uint32_t>(std::popcount(below)));
      };
      for (std::int64_t i = 0; i < lines; ++i) {
        edges.src[i] = index(ends[2 * i]);
        edges.dst[i] = index(ends[2 * i + 1]);
      }
    }
  } else {
    std::vector<std::int64_t> ids(ends);
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    distinct = static_cast<std::int64_t>(ids.size());
    if (distinct > kMaxNodes)
      throw InvalidInput(InputLocation{path, 0, 0}, "too many distinct node ids", std::to_string(distinct),
                         "at most " + std::to_string(kMaxNodes) + " (int32 node ids)");
    auto index = [&](std::int64_t id) {
      return static_cast<NodeId>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
    };
    for (std::int64_t i = 0; i < lines; ++i) {
      edges.src[i] = index(ends[2 * i]);
      edges.dst[i] = index(ends[2 * i + 1]);
    }
  }
  ends.clear();
  ends.shrink_to_fit();
  edges.num_nodes = distinct;

  Dataset ds;
  ds.name = stem_of(path);
  BuildOptions build;
  build.symmetrize = options.symmetrize;
  ds.graph = build_csr(edges, build, &ds.build_stats);
  ds.provenance = "SNAP edge list " + path + (reader.compressed() ? " (gzip)" : "") + ": " + with_commas(lines) +
                  " edge lines, " + with_commas(distinct) + " distinct node ids " +
                  (identity ? "(already 0..N-1, kept)" : "(mapped in ascending order to 0..N-1)");
  if (header.nodes >= 0 && header.nodes != distinct)
    ds.provenance += " (the header says " + with_commas(header.nodes) + " nodes)";
  ds.provenance += "; " + describe_build(ds.build_stats, build.symmetrize);
  maybe_add_synthetic(ds, options);
  return ds;
}

// ------------------------------------------------------------------------------------------------ METIS

Dataset load_metis(const std::string& path, const LoadOptions& options) {
  TextReader reader(path);
  std::string_view line;
  auto is_comment = [](const LineCursor& c) { return c.peek() == '%'; };

  // Header: the first line that is neither blank nor a comment.
  std::optional<LineCursor> hc;
  while (reader.next_line(line)) {
    LineCursor c(reader, line);
    c.skip_blanks();
    if (c.at_end_exact() || is_comment(c)) continue;
    hc.emplace(c);
    break;
  }
  if (!hc)
    throw InvalidInput(InputLocation{path, reader.line_number(), 0}, "missing METIS header", "",
                       "a line 'n m [fmt [ncon]]'");
  LineCursor& c = *hc;
  const std::int64_t header_line = reader.line_number();
  const std::int64_t col_n = c.column();
  const std::int64_t n = c.read_int_here("the number of vertices n in 'n m [fmt [ncon]]'", kBlank);
  c.skip_blanks();
  const std::int64_t col_m = c.column();
  const std::int64_t m = c.read_int("the number of undirected edges m in 'n m [fmt [ncon]]'");
  bool has_sizes = false, has_vweights = false, has_eweights = false;
  std::int64_t ncon = 0;
  if (!c.at_end()) {
    const std::int64_t col_fmt = c.column();
    const std::string_view fmt = c.read_token();
    if (fmt.empty() || fmt.size() > 3 || fmt.find_first_not_of("01") != std::string_view::npos)
      c.fail_at_column(col_fmt, "bad fmt field in the METIS header", fmt,
                       "up to three binary digits (vertex sizes, vertex weights, edge weights), e.g. 0, 1, 10, 11, 100");
    const std::string padded = std::string(3 - fmt.size(), '0') + std::string(fmt);
    has_sizes = padded[0] == '1';
    has_vweights = padded[1] == '1';
    has_eweights = padded[2] == '1';
    if (!c.at_end()) {
      const std::int64_t col_ncon = c.column();
      ncon = c.read_int_here("ncon, the number of vertex weights per vertex", kBlank);
      if (!has_vweights)
        c.fail_at_column(col_ncon, "ncon given but fmt declares no vertex weights", std::to_string(ncon),
                         "no ncon field, or fmt with the vertex-weight digit set (e.g. 10)");
      if (ncon < 1) c.fail_at_column(col_ncon, "bad ncon", std::to_string(ncon), ">= 1");
    }
    if (!c.at_end()) c.fail_token("unexpected extra field in the METIS header", "'n m [fmt [ncon]]'");
  }
  if (has_vweights && ncon == 0) ncon = 1;
  check_node_count(InputLocation{path, header_line, col_n}, n, "n in the METIS header");
  if (m < 0)
    throw InvalidInput(InputLocation{path, header_line, col_m}, "negative edge count m", std::to_string(m), ">= 0");
  // Each vertex needs a line end; each of the 2m adjacency entries at least a digit and a separator.
  check_fits(InputLocation{path, header_line, col_n}, reader, n, 1, "vertex count n");
  check_fits(InputLocation{path, header_line, col_m}, reader, m, 4, "edge count m");
  const std::int64_t entries_expected = 2 * m;
  const HostBudget budget(options, "adjacency entries (2 x m)");
  budget.check(InputLocation{path, header_line, col_m}, entries_expected, kEdgeListBytesPerEntry);

  EdgeList edges;
  edges.num_nodes = n;
  edges.src.reserve(static_cast<std::size_t>(entries_expected));
  edges.dst.reserve(static_cast<std::size_t>(entries_expected));
  if (has_eweights) edges.weights.reserve(static_cast<std::size_t>(entries_expected));
  const std::string id_expected = "a neighbour id in 1.." + std::to_string(n);
  std::int64_t vertex = 0;  // 0-based id of the next vertex line
  std::int64_t entries = 0;
  while (vertex < n && reader.next_line(line)) {
    LineCursor v(reader, line);
    v.skip_blanks();
    if (!v.at_end_exact() && is_comment(v)) continue;
    if (has_sizes) {
      const std::int64_t col = v.column();
      const std::int64_t size = v.read_int("the vertex size (fmt 1xx)");
      if (size < 0) v.fail_at_column(col, "negative vertex size", std::to_string(size), ">= 0");
    }
    for (std::int64_t k = 0; k < ncon; ++k) {
      v.skip_blanks();
      const std::int64_t col = v.column();
      const std::int64_t w = v.read_int_here("a vertex weight (fmt x1x, ncon per vertex)", kBlank);
      if (w < 0) v.fail_at_column(col, "negative vertex weight", std::to_string(w), ">= 0");
    }
    while (!v.at_end()) {
      const std::int64_t col = v.column();
      const std::int64_t u = v.read_int_here(id_expected.c_str(), kBlank);
      if (u < 1 || u > n) v.fail_at_column(col, "neighbour id out of range", std::to_string(u), id_expected);
      if (++entries > entries_expected)
        v.fail_at_column(col, "more adjacency entries than the header's 2 x m", std::to_string(u),
                         std::to_string(entries_expected) + " entries in total (m = " + std::to_string(m) +
                             " on line " + std::to_string(header_line) + ")");
      edges.src.push_back(static_cast<NodeId>(vertex));
      edges.dst.push_back(static_cast<NodeId>(u - 1));
      if (has_eweights) {
        v.skip_blanks();
        const std::int64_t wcol = v.column();
        const std::string_view wtok = v.token();
        const float w = v.read_float_here("an edge weight after each neighbour (fmt xx1)", kBlank);
        if (!std::isfinite(w)) v.fail_at_column(wcol, "non-finite edge weight", wtok, "a finite number");
        // METIS itself requires positive weights; a weight of 0 would be an edge that is not there.
        if (!(w > 0)) v.fail_at_column(wcol, "edge weight not positive", wtok, "a weight > 0 (METIS format)");
        edges.weights.push_back(w);
      }
    }
    ++vertex;
  }
  if (vertex < n)
    throw InvalidInput(InputLocation{path, reader.line_number(), 0}, "file ends before all vertex lines",
                       std::to_string(vertex) + " vertex lines",
                       std::to_string(n) + " (n on line " + std::to_string(header_line) + ")");
  while (reader.next_line(line)) {
    LineCursor t(reader, line);
    t.skip_blanks();
    if (t.at_end_exact() || is_comment(t)) continue;
    t.fail_token("more lines than the header's n vertices",
                 "end of file after " + std::to_string(n) + " vertex lines (or a '%' comment)");
  }
  if (entries != entries_expected)
    throw InvalidInput(InputLocation{path, header_line, col_m},
                       "adjacency entries do not match the header's edge count",
                       std::to_string(entries) + " entries",
                       "2 x m = " + std::to_string(entries_expected) + " (each undirected edge in both endpoint lines)");

  Dataset ds;
  ds.name = stem_of(path);
  // A METIS graph is undirected: each edge in both endpoints' lines. The file's own adjacency is built as stored
  // and must be symmetric (METIS refuses it otherwise); repairing it silently would train on another graph.
  BuildOptions build;
  build.symmetrize = false;
  ds.graph = build_csr(edges, build, &ds.build_stats);
  edges = EdgeList{};
  {
    const Csr& g = ds.graph;
    for (std::int64_t u = 0; u < g.num_nodes; ++u)
      for (RowOffset k = g.row_offsets[u]; k < g.row_offsets[u + 1]; ++k) {
        const NodeId v = g.col_ids[k];
        const auto b = g.col_ids.begin() + g.row_offsets[v], e = g.col_ids.begin() + g.row_offsets[v + 1];
        if (!std::binary_search(b, e, static_cast<NodeId>(u)))
          throw InvalidInput(InputLocation{path, 0, 0}, "asymmetric adjacency",
                             "vertex " + std::to_string(u + 1) + " lists " + std::to_string(v + 1) + ", vertex " +
                                 std::to_string(v + 1) + " does not list " + std::to_string(u + 1),
                             "each undirected edge in both endpoints' lines (METIS graphs are symmetric)");
      }
  }
  ds.provenance = "METIS graph " + path + ": n " + with_commas(n) + ", m " + with_commas(m);
  if (has_sizes || has_vweights || has_eweights)
    ds.provenance += std::string(", fmt ") + (has_sizes ? "1" : "0") + (has_vweights ? "1" : "0") +
                     (has_eweights ? "1" : "0") + (has_vweights ? " ncon " + std::to_string(ncon) : "") +
                     " (vertex sizes/weights skipped" + (has_eweights ? ", edge weights kept)" : ")");
  ds.provenance += "; " + describe_build(ds.build_stats, build.symmetrize);
  if (ds.graph.num_edges() != entries) ds.provenance += " (the file was not a symmetric, loop-free adjacency)";
  maybe_add_synthetic(ds, options);
  return ds;
}

// ------------------------------------------------------------------------------------------------ Matrix Market

Dataset load_matrix_market(const std::string& path, const LoadOptions& options) {
  TextReader reader(path);
  std::string_view line;
  if (!reader.next_line(line))
    throw InvalidInput(InputLocation{path, 1, 1}, "empty file", "",
                       "a header '%%MatrixMarket matrix coordinate <field> <symmetry>'");
  LineCursor h(reader, line);
  const std::string_view banner = h.read_token();
  if (lower(banner) != "%%matrixmarket")
    throw InvalidInput(reader.location(1), "missing Matrix Market banner", std::string(banner), "'%%MatrixMarket' on line 1");
  auto header_field = [&](const char* what) {
    h.skip_blanks();
    const std::int64_t col = h.column();
    const std::string value = lower(h.read_token());
    if (value.empty()) h.fail_at_column(col, std::string("missing ") + what + " in the header", "",
                                         "'%%MatrixMarket matrix coordinate pattern|real|integer general|symmetric'");
    return std::pair<std::string, std::int64_t>(value, col);
  };
  const auto [object, col_object] = header_field("object");
  const auto [format, col_format] = header_field("format");
  const auto [field, col_field] = header_field("field");
  const auto [symmetry, col_symmetry] = header_field("symmetry");
  if (object != "matrix")
    h.fail_at_column(col_object, "unsupported Matrix Market object", object, "'matrix'");
  if (format == "array")
    h.fail_at_column(col_format, "dense 'array' format is not a graph", format,
                     "'coordinate' (sparse: one 'i j [value]' line per entry)");
  if (format != "coordinate") h.fail_at_column(col_format, "unknown Matrix Market format", format, "'coordinate'");
  if (field == "complex")
    h.fail_at_column(col_field, "complex values cannot be edge weights", field, "pattern, real or integer");
  const bool pattern = field == "pattern";
  if (!pattern && field != "real" && field != "integer" && field != "double")
    h.fail_at_column(col_field, "unknown Matrix Market field", field, "pattern, real or integer");
  if (symmetry == "hermitian" || symmetry == "skew-symmetric")
    h.fail_at_column(col_symmetry, "unsupported symmetry for a graph", symmetry, "general or symmetric");
  const bool symmetric = symmetry == "symmetric";
  if (!symmetric && symmetry != "general")
    h.fail_at_column(col_symmetry, "unknown Matrix Market symmetry", symmetry, "general or symmetric");
  if (!h.at_end()) h.fail_token("unexpected extra field in the header", "exactly four fields after %%MatrixMarket");

  // Size line: the first line after the comments.
  std::optional<LineCursor> sc;
  while (reader.next_line(line)) {
    LineCursor c(reader, line);
    c.skip_blanks();
    if (c.at_end_exact() || c.peek() == '%') continue;
    sc.emplace(c);
    break;
  }
  if (!sc)
    throw InvalidInput(InputLocation{path, reader.line_number(), 0}, "missing size line", "", "'rows cols nnz'");
  LineCursor& s = *sc;
  const std::int64_t size_line = reader.line_number();
  const std::int64_t col_rows = s.column();
  const std::int64_t rows = s.read_int_here("the number of rows in 'rows cols nnz'", kBlank);
  s.skip_blanks();
  const std::int64_t col_cols = s.column();
  const std::int64_t cols = s.read_int_here("the number of columns in 'rows cols nnz'", kBlank);
  s.skip_blanks();
  const std::int64_t col_nnz = s.column();
  const std::int64_t nnz = s.read_int_here("the number of entries in 'rows cols nnz'", kBlank);
  if (!s.at_end()) s.fail_token("unexpected extra field on the size line", "'rows cols nnz'");
  check_node_count(InputLocation{path, size_line, col_rows}, rows, "rows on the size line");
  if (cols != rows)
    throw InvalidInput(InputLocation{path, size_line, col_cols}, "a graph's adjacency matrix must be square",
                       std::to_string(cols) + " columns", std::to_string(rows) + " (= rows)");
  if (nnz < 0)
    throw InvalidInput(InputLocation{path, size_line, col_nnz}, "negative entry count", std::to_string(nnz), ">= 0");
  check_fits(InputLocation{path, size_line, col_nnz}, reader, nnz, 4, "entry count nnz");
  // Rows take no bytes in the file, so the size line alone could ask for a CSR of 2^31 rows. Each entry touches at
  // most two nodes; beyond that rows are isolated nodes, of which a generous number is allowed.
  constexpr std::int64_t kIsolatedRowsAllowed = std::int64_t{1} << 20;
  if (rows > 2 * nnz + kIsolatedRowsAllowed)
    throw InvalidInput(InputLocation{path, size_line, col_rows}, "more rows than the entries can touch",
                       std::to_string(rows),
                       "at most 2 x nnz + " + std::to_string(kIsolatedRowsAllowed) + " = " +
                           std::to_string(2 * nnz + kIsolatedRowsAllowed) + " (the rest would be isolated nodes)");

  const HostBudget budget(options, "entries (nnz)");
  budget.check(InputLocation{path, size_line, col_nnz}, nnz, kEdgeListBytesPerEntry);
  EdgeList edges;
  edges.num_nodes = rows;
  edges.src.reserve(static_cast<std::size_t>(nnz));
  edges.dst.reserve(static_cast<std::size_t>(nnz));
  if (!pattern) edges.weights.reserve(static_cast<std::size_t>(nnz));
  const std::string id_expected = "an index in 1.." + std::to_string(rows);
  std::int64_t read = 0;
  while (reader.next_line(line)) {
    LineCursor c(reader, line);
    c.skip_blanks();
    if (c.at_end_exact() || c.peek() == '%') continue;
    if (read == nnz)
      c.fail_token("more entries than the size line declares",
                   std::to_string(nnz) + " entries (nnz on line " + std::to_string(size_line) + ")");
    std::array<std::int64_t, 2> ij{};
    for (auto& x : ij) {
      c.skip_blanks();
      const std::int64_t col = c.column();
      x = c.read_int_here(id_expected.c_str(), kBlank);
      if (x < 1 || x > rows) c.fail_at_column(col, "index out of range", std::to_string(x), id_expected);
    }
    edges.src.push_back(static_cast<NodeId>(ij[0] - 1));
    edges.dst.push_back(static_cast<NodeId>(ij[1] - 1));
    if (!pattern) {
      c.skip_blanks();
      const std::int64_t col = c.column();
      const std::string_view tok = c.token();
      const float w = c.read_float_here(field == "integer" ? "an integer value" : "a real value", kBlank);
      if (!std::isfinite(w)) c.fail_at_column(col, "non-finite value", tok, "a finite number");
      edges.weights.push_back(w);
    }
    if (!c.at_end())
      c.fail_token("unexpected extra field", pattern ? "'i j' (pattern matrix)" : "'i j value'");
    ++read;
  }
  if (read < nnz)
    throw InvalidInput(InputLocation{path, reader.line_number(), 0}, "file ends before all entries",
                       std::to_string(read) + " entries",
                       std::to_string(nnz) + " (nnz on line " + std::to_string(size_line) + ")");

  // Duplicate entries: the format does not define them (some readers sum, some keep the last); refused with the
  // entry, rather than guessing. Found on the stored entries, before symmetrising.
  {
    BuildOptions raw;
    raw.symmetrize = false;
    raw.drop_self_loops = false;
    raw.deduplicate = false;
    EdgeList pattern_only{edges.num_nodes, edges.src, edges.dst, {}};
    const Csr stored = build_csr(pattern_only, raw);
    for (std::int64_t u = 0; u < stored.num_nodes; ++u)
      for (RowOffset k = stored.row_offsets[u] + 1; k < stored.row_offsets[u + 1]; ++k)
        if (stored.col_ids[k] == stored.col_ids[k - 1])
          throw InvalidInput(InputLocation{path, 0, 0}, "duplicate entry",
                             std::to_string(u + 1) + " " + std::to_string(stored.col_ids[k] + 1),
                             "each (row, column) once (Matrix Market does not say duplicates are summed; merge them "
                             "first)");
  }
  Dataset ds;
  ds.name = stem_of(path);
  BuildOptions build;
  build.symmetrize = options.symmetrize || symmetric;  // a symmetric file stores one triangle only
  ds.graph = build_csr(edges, build, &ds.build_stats);
  ds.provenance = "Matrix Market " + path + ": " + field + " " + symmetry + ", " + with_commas(rows) + " x " +
                  with_commas(cols) + ", " + with_commas(nnz) + " stored entries; " +
                  describe_build(ds.build_stats, build.symmetrize);
  maybe_add_synthetic(ds, options);
  return ds;
}

// ------------------------------------------------------------------------------------------------ OGB

namespace {

/// raw/<stem>.csv.gz or raw/<stem>.csv; empty when neither exists.
std::string find_csv(const fs::path& dir, const std::string& stem) {
  for (const char* ext : {".csv.gz", ".csv"}) {
    const fs::path p = dir / (stem + ext);
    if (fs::is_regular_file(p)) return p.string();
  }
  return {};
}

std::string require_csv(const fs::path& dir, const std::string& stem) {
  std::string p = find_csv(dir, stem);
  if (p.empty()) throw IoError((dir / (stem + ".csv.gz")).string(), "missing required file (or " + stem + ".csv)");
  return p;
}

/// meta.csv (our copies): master.csv's orientation, ",<name>" then "key,value" lines.
struct Meta {
  std::string path;
  std::string name;
  std::map<std::string, std::pair<std::string, std::int64_t>> values;  // key -> (value, line)

  [[nodiscard]] const std::pair<std::string, std::int64_t>* find(const std::string& key) const {
    const auto it = values.find(key);
    return it == values.end() ? nullptr : &it->second;
  }
};

std::string unquote(std::string_view v) {
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
  return std::string(v);
}

std::optional<Meta> read_meta(const fs::path& dir) {
  const fs::path p = dir / "meta.csv";
  if (!fs::exists(p)) return std::nullopt;
  Meta meta;
  meta.path = p.string();
  TextReader r(meta.path);
  std::string_view line;
  bool first = true;
  while (r.next_line(line)) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    const auto comma = line.find(',');
    if (comma == std::string_view::npos)
      throw InvalidInput(r.location(static_cast<std::int64_t>(line.size()) + 1), "missing ',' in meta.csv",
                         std::string(line), "'key,value' lines after the ',<name>' header");
    const std::string key = unquote(line.substr(0, comma));
    const std::string value = unquote(line.substr(comma + 1));
    if (first && key.empty()) {
      meta.name = value;
    } else {
      meta.values[key] = {value, r.line_number()};
    }
    first = false;
  }
  return meta;
}

/// A count list (num-node-list / num-edge-list): exactly one row for a node-prediction dataset.
std::int64_t read_count_list(const std::string& path, const char* what) {
  TextReader r(path);
  std::string_view line;
  std::int64_t value = -1;
  std::int64_t rows = 0;
  while (r.next_line(line)) {
    LineCursor c(r, line);
    if (c.at_end()) continue;
    const std::int64_t v = c.read_int_here(what, ',');
    if (!c.at_end()) c.fail_token("unexpected extra field", "one count per line");
    if (++rows > 1)
      throw InvalidInput(r.location(1), "more than one graph in the count list", std::to_string(v),
                         "a single line (a node-prediction dataset holds one graph)");
    value = v;
  }
  if (rows == 0) throw InvalidInput(InputLocation{path, 1, 0}, "empty count list", "", std::string("one line: ") + what);
  if (value < 0) throw InvalidInput(InputLocation{path, 1, 1}, "negative count", std::to_string(value), ">= 0");
  return value;
}

std::vector<NodeId> read_split_file(const std::string& path, std::int64_t n) {
  TextReader r(path);
  std::string_view line;
  std::vector<NodeId> ids;
  const std::string expected = "a node id in 0.." + std::to_string(n - 1);
  while (r.next_line(line)) {
    LineCursor c(r, line);
    if (c.at_end()) continue;
    const std::int64_t col = c.column();
    const std::int64_t v = c.read_int_here(expected.c_str(), ',');
    if (v < 0 || v >= n) c.fail_at_column(col, "node id out of range", std::to_string(v), expected);
    if (!c.at_end()) c.fail_token("unexpected extra field", "one node id per line");
    ids.push_back(static_cast<NodeId>(v));
  }
  return ids;
}

/// The split folder: options.split, else meta.csv's, else the only one (or "planetoid" among several).
std::optional<fs::path> choose_split_dir(const fs::path& dir, const LoadOptions& o, const std::optional<Meta>& meta,
                                         std::string& how) {
  const fs::path split_root = dir / "split";
  std::vector<std::string> available;
  if (fs::is_directory(split_root))
    for (const auto& e : fs::directory_iterator(split_root))
      if (e.is_directory()) available.push_back(e.path().filename().string());
  std::sort(available.begin(), available.end());
  std::string list;
  for (const auto& a : available) list += (list.empty() ? "" : ", ") + a;
  auto known = [&](const std::string& s) { return std::find(available.begin(), available.end(), s) != available.end(); };
  if (!o.split.empty()) {
    if (!known(o.split))
      throw InvalidInput(InputLocation{split_root.string(), 0, 0}, "no such split folder", o.split,
                         available.empty() ? std::string("a split/<name>/ folder, but there is none")
                                           : "one of: " + list);
    how = "requested";
    return split_root / o.split;
  }
  if (meta)
    if (const auto* s = meta->find("split"); s != nullptr && s->first != "None" && !s->first.empty()) {
      if (!known(s->first))
        throw InvalidInput(InputLocation{meta->path, s->second, 7}, "meta.csv names a split folder that is missing",
                           s->first, available.empty() ? std::string("split/" + s->first + "/") : "one of: " + list);
      how = "from meta.csv";
      return split_root / s->first;
    }
  if (available.empty()) return std::nullopt;
  if (available.size() == 1) {
    how = "the only one";
    return split_root / available[0];
  }
  if (known("planetoid")) {
    how = "default";
    return split_root / "planetoid";
  }
  throw InvalidInput(InputLocation{split_root.string(), 0, 0}, "several split folders and none chosen", list,
                     "LoadOptions::split (--split) naming one of them");
}

}  // namespace

Dataset load_ogb(const std::string& dir_arg, const LoadOptions& options) {
  const fs::path dir(dir_arg);
  if (!fs::exists(dir)) throw IoError(dir_arg, "no such directory");
  if (!fs::is_directory(dir)) throw IoError(dir_arg, "not a directory (an OGB dataset is a folder with raw/)");
  const fs::path raw = dir / "raw";
  if (!fs::is_directory(raw)) throw IoError(raw.string(), "missing: an OGB dataset folder holds raw/edge.csv.gz");
  const std::string edge_path = require_csv(raw, "edge");
  const std::string nodes_path = require_csv(raw, "num-node-list");
  const std::string edges_path = require_csv(raw, "num-edge-list");
  const std::string label_path = require_csv(raw, "node-label");
  const std::string feat_path = find_csv(raw, "node-feat");
  const std::optional<Meta> meta = read_meta(dir);

  Dataset ds;
  ds.name = meta && !meta->name.empty() ? meta->name : fs::path(dir).lexically_normal().filename().string();
  if (ds.name.empty()) ds.name = fs::path(dir).lexically_normal().parent_path().filename().string();

  // add_inverse_edge: meta.csv, else LoadOptions::symmetrize.
  bool add_inverse = options.symmetrize;
  bool add_inverse_from_meta = false;
  std::int32_t meta_classes = -1;
  if (meta) {
    if (const auto* v = meta->find("add_inverse_edge"); v != nullptr) {
      if (v->first != "True" && v->first != "False")
        throw InvalidInput(InputLocation{meta->path, v->second, 18}, "bad add_inverse_edge", v->first,
                           "True or False");
      add_inverse = v->first == "True";
      add_inverse_from_meta = true;
    }
    if (const auto* v = meta->find("num classes"); v != nullptr && v->first != "None") {
      std::int64_t k = 0;
      const auto r = std::from_chars(v->first.data(), v->first.data() + v->first.size(), k);
      if (r.ec != std::errc() || r.ptr != v->first.data() + v->first.size() || k < 1 || k > (1 << 30))
        throw InvalidInput(InputLocation{meta->path, v->second, 13}, "bad num classes", v->first,
                           "a positive integer");
      meta_classes = static_cast<std::int32_t>(k);
    }
    if (const auto* v = meta->find("binary"); v != nullptr && v->first == "True")
      throw InvalidInput(InputLocation{meta->path, v->second, 8}, "binary (npz) OGB datasets are not supported",
                         v->first, "False (CSV files under raw/)");
    if (const auto* v = meta->find("is hetero"); v != nullptr && v->first == "True")
      throw InvalidInput(InputLocation{meta->path, v->second, 11}, "heterogeneous OGB datasets are not supported",
                         v->first, "False");
  }

  const std::int64_t n = read_count_list(nodes_path, "the number of nodes");
  check_node_count(InputLocation{nodes_path, 1, 1}, n, "num-node-list");
  const std::int64_t stored_edges = read_count_list(edges_path, "the number of stored edges");

  // Edges.
  EdgeList edges;
  edges.num_nodes = n;
  {
    TextReader r(edge_path);
    check_fits(InputLocation{edges_path, 1, 1}, r, stored_edges, 4, "edge count");
    HostBudget(options, "edges").check(InputLocation{edges_path, 1, 1}, stored_edges, kEdgeListBytesPerEntry);
    edges.src.reserve(static_cast<std::size_t>(stored_edges));
    edges.dst.reserve(static_cast<std::size_t>(stored_edges));
    const std::string expected = "a node id in 0.." + std::to_string(n - 1) + " (rows are 'src,dst')";
    std::string_view line;
    while (r.next_line(line)) {
      LineCursor c(r, line);
      if (c.at_end()) continue;
      c.skip_blanks();
      std::int64_t col = c.column();
      const std::int64_t u = c.read_int_here(expected.c_str(), ',');
      if (u < 0 || u >= n) c.fail_at_column(col, "node id out of range", std::to_string(u), expected);
      c.skip_blanks();
      c.expect_separator(',', "',' between src and dst");
      c.skip_blanks();
      col = c.column();
      const std::int64_t v = c.read_int_here(expected.c_str(), ',');
      if (v < 0 || v >= n) c.fail_at_column(col, "node id out of range", std::to_string(v), expected);
      if (!c.at_end()) c.fail_token("unexpected extra field", "two columns 'src,dst'");
      edges.src.push_back(static_cast<NodeId>(u));
      edges.dst.push_back(static_cast<NodeId>(v));
    }
    if (edges.size() != stored_edges)
      throw InvalidInput(InputLocation{edges_path, 1, 1}, "edge count does not match " + edge_path,
                         std::to_string(stored_edges), std::to_string(edges.size()) + " rows in " + edge_path);
  }

  // Labels: one class per line; NaN (or pandas' "" for a missing value) marks an unlabelled node.
  {
    TextReader r(label_path);
    check_fits(InputLocation{nodes_path, 1, 1}, r, n, 1, "node count");
    ds.labels.reserve(static_cast<std::size_t>(n));
    const std::string expected = meta_classes > 0 ? "a class in 0.." + std::to_string(meta_classes - 1) + " or NaN"
                                                  : "a class id in 0.." + std::to_string(n - 1) +
                                                        " (below the node count) or NaN";
    std::int32_t max_label = -1;
    std::string_view line;
    while (r.next_line(line)) {
      LineCursor c(r, line);
      if (c.at_end()) continue;
      if (static_cast<std::int64_t>(ds.labels.size()) == n)
        c.fail_token("more label rows than nodes", std::to_string(n) + " rows (num-node-list " + nodes_path + ")");
      const std::int64_t col = c.column();
      std::int32_t label = -1;
      if (c.rest().substr(0, 2) == "\"\"") {
        c.consume('"');
        c.consume('"');
      } else {
        const std::string_view tok = c.token(',');
        const double x = c.read_double_here(expected.c_str(), ',');
        if (!std::isnan(x)) {
          if (std::isinf(x) || x < 0 || x != std::floor(x) || x >= (1 << 30) ||
              (meta_classes > 0 && x >= meta_classes) || (meta_classes <= 0 && x >= static_cast<double>(n)))
            c.fail_at_column(col, "label out of range", tok, expected);
          label = static_cast<std::int32_t>(x);
        }
      }
      if (c.peek() == ',')
        c.fail_at_column(c.column(), "multi-task labels are not supported", line,
                         "one label column (a multi-class task)");
      if (!c.at_end()) c.fail_token("unexpected extra field", "one label per line");
      max_label = std::max(max_label, label);
      ds.labels.push_back(label);
    }
    if (static_cast<std::int64_t>(ds.labels.size()) != n)
      throw InvalidInput(InputLocation{label_path, r.line_number(), 0}, "label rows do not match num-node-list",
                         std::to_string(ds.labels.size()) + " rows", std::to_string(n) + " (" + nodes_path + ")");
    ds.num_classes = meta_classes > 0 ? meta_classes : max_label + 1;
  }

  // Features (optional): n rows of F comma-separated numbers, F fixed by the first row.
  if (!feat_path.empty()) {
    TextReader r(feat_path);
    std::string_view line;
    std::int64_t row = 0;
    std::int64_t f = 0;
    while (r.next_line(line)) {
      LineCursor c(r, line);
      if (c.at_end()) continue;
      if (row == n)
        c.fail_token("more feature rows than nodes", std::to_string(n) + " rows (num-node-list " + nodes_path + ")");
      if (row == 0) {
        f = static_cast<std::int64_t>(std::count(line.begin(), line.end(), ',')) + 1;
        // Every value needs a digit and a separator: refuse an N x F the file cannot hold before allocating it.
        if (n > 0 && f > r.size_bound() / 2 / n + 1)
          throw InvalidInput(InputLocation{nodes_path, 1, 1}, "node count times features larger than the file can hold",
                             std::to_string(n) + " x " + std::to_string(f),
                             "a node-feat file of at least 2 x N x F bytes (" + feat_path + " holds at most " +
                                 std::to_string(r.size_bound()) + ")");
        HostBudget(options, "feature values (nodes x features)").check(r.location(1), n * f, 2 * sizeof(float));
        ds.features.reserve(static_cast<std::size_t>(n * f));
        ds.num_features = f;
      }
      for (std::int64_t j = 0; j < f; ++j) {
        if (j > 0) {
          if (c.at_end_exact())
            c.fail_token("feature row too short", std::to_string(f) + " values (as in row 1), found " +
                                                      std::to_string(j));
          c.expect_separator(',', "',' between feature values");
        }
        c.skip_blanks();
        const std::int64_t col = c.column();
        const float x = c.read_float_here("a number", ',');
        if (!std::isfinite(x)) {
          const std::string_view tok = line.substr(static_cast<std::size_t>(col - 1));
          c.fail_at_column(col, "non-finite feature at node " + std::to_string(row) + " column " + std::to_string(j),
                           tok.substr(0, tok.find_first_of(", \t")), "a finite number");
        }
        c.skip_blanks();
        ds.features.push_back(x);
      }
      if (!c.at_end()) {
        c.consume(',');
        c.fail_token("feature row too long", std::to_string(f) + " values (as in row 1)");
      }
      ++row;
    }
    if (row != n)
      throw InvalidInput(InputLocation{feat_path, r.line_number(), 0}, "feature rows do not match num-node-list",
                         std::to_string(row) + " rows", std::to_string(n) + " (" + nodes_path + ")");
  }

  // Splits.
  std::string split_how;
  const std::optional<fs::path> split_dir = choose_split_dir(dir, options, meta, split_how);
  std::string split_desc = "no split folder";
  if (split_dir) {
    split_desc = "split '" + split_dir->filename().string() + "' (" + split_how + "):";
    for (const char* part : {"train", "valid", "test"}) {
      const std::string p = find_csv(*split_dir, part);
      if (p.empty()) continue;
      ds.splits[part] = read_split_file(p, n);
      split_desc += std::string(" ") + part + " " + std::to_string(ds.splits[part].size());
    }
    if (ds.splits.empty()) {
      if (fs::exists(*split_dir / "split_dict.pt"))
        throw IoError((*split_dir / "split_dict.pt").string(),
                      "torch split_dict.pt is not supported: provide train/valid/test.csv.gz");
      throw IoError((*split_dir / "train.csv.gz").string(), "missing split files (train/valid/test.csv[.gz])");
    }
  }

  // Graph: add_inverse_edge gives every stored edge its reverse; a directed dataset is still symmetrised for GCN
  // when LoadOptions::symmetrize asks.
  BuildOptions build;
  build.symmetrize = add_inverse || options.symmetrize;
  ds.graph = build_csr(edges, build, &ds.build_stats);
  std::string edges_how;
  if (add_inverse)
    edges_how = std::string("add_inverse_edge=True") + (add_inverse_from_meta ? " (meta.csv)" : " (default)") +
                ": every stored edge gets its reverse";
  else if (build.symmetrize)
    edges_how = "add_inverse_edge=False (edges directed as stored), symmetrised anyway because GCN needs a "
                "symmetric graph (LoadOptions::symmetrize)";
  else
    edges_how = "add_inverse_edge=False: edges kept directed as stored";
  ds.provenance = "OGB node-property folder " + dir_arg + (meta ? " (meta.csv)" : "") + ": " + with_commas(n) +
                  " nodes, " + with_commas(stored_edges) + " stored edges; " + edges_how + "; " +
                  describe_build(ds.build_stats, build.symmetrize) + "; " + std::to_string(ds.num_features) +
                  " features, " + std::to_string(ds.num_classes) + " classes; " + split_desc;
  // Everything above was checked where it was read, except that split nodes carry a label.
  ds.validate();
  return ds;
}

// ------------------------------------------------------------------------------------------------ dispatch

const char* format_name(Format f) {
  switch (f) {
    case Format::kAuto: return "auto";
    case Format::kOgb: return "ogb";
    case Format::kSnap: return "snap";
    case Format::kMetis: return "metis";
    case Format::kMatrixMarket: return "mtx";
    case Format::kGcsr: return "gcsr";
    case Format::kDemo: return "demo";
  }
  return "unknown";
}

Format detect_format(const std::string& path) {
  if (path == "demo") return Format::kDemo;
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw IoError(path, "no such file or directory");
  if (fs::is_directory(status)) {
    if (fs::is_directory(fs::path(path) / "raw")) return Format::kOgb;
    throw InvalidInput(InputLocation{path, 0, 0}, "unrecognised directory", path,
                       "an OGB dataset folder (with raw/edge.csv.gz)");
  }
  const std::string name = plain_name(path);
  if (ends_with(name, ".gcsr")) return Format::kGcsr;
  for (const char* ext : {".mtx", ".mm"})
    if (ends_with(name, ext)) return Format::kMatrixMarket;
  for (const char* ext : {".graph", ".metis", ".chaco"})
    if (ends_with(name, ext)) return Format::kMetis;
  for (const char* ext : {".txt", ".edges", ".edgelist", ".el", ".tsv", ".csv", ".snap"})
    if (ends_with(name, ext)) return Format::kSnap;

  // No telling extension: look at the first bytes (of a regular file: a pipe's would be gone).
  if (!fs::is_regular_file(status))
    throw InvalidInput(InputLocation{path, 0, 0}, "cannot tell the format of a pipe or device", path,
                       "an explicit format (--format snap|metis|mtx) when reading from a pipe");
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) throw IoError(path, "cannot open");
  std::array<char, 4096> head{};
  const int got = gzread(f, head.data(), static_cast<unsigned>(head.size()));
  gzclose_r(f);
  std::string_view text(head.data(), got > 0 ? static_cast<std::size_t>(got) : 0);
  const auto start = text.find_first_not_of(" \t\r\n");
  text = start == std::string_view::npos ? std::string_view() : text.substr(start);
  if (lower(text.substr(0, 14)) == "%%matrixmarket") return Format::kMatrixMarket;
  if (!text.empty() && text.front() == '%') return Format::kMetis;
  if (!text.empty() && text.front() == '#') return Format::kSnap;
  throw InvalidInput(InputLocation{path, 1, 1}, "cannot tell the file format", std::string(text.substr(0, 20)),
                     "a known extension (.txt[.gz] or .csv SNAP edge list, .graph METIS, .mtx[.gz] Matrix Market, .gcsr) or an "
                     "explicit format");
}

namespace {
Dataset load_format(const std::string& path, const LoadOptions& options) {
  const Format format = options.format == Format::kAuto ? detect_format(path) : options.format;
  switch (format) {
    case Format::kDemo: return demo_dataset();
    case Format::kGcsr: return load_gcsr(path, options.verify_checksum);
    case Format::kOgb: return load_ogb(path, options);
    case Format::kSnap: return load_snap(path, options);
    case Format::kMetis: return load_metis(path, options);
    case Format::kMatrixMarket: return load_matrix_market(path, options);
    case Format::kAuto: break;
  }
  throw LogicError("load_dataset: unhandled format");
}
}  // namespace

Dataset load_dataset(const std::string& path, const LoadOptions& options) {
  Dataset ds = load_format(path, options);
  check_splits_and_labels(ds);
  return ds;
}

namespace {
/// The byte count in a cgroup limit file ("max" or an unreadable file: none, 0).
std::int64_t cgroup_limit(const char* path) {
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  std::int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  // cgroup v1 writes a huge page-aligned number for "no limit".
  return r.ec == std::errc() && v > 0 && v < (std::int64_t{1} << 60) ? v : 0;
}
}  // namespace

std::int64_t host_memory_limit() {
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  std::int64_t limit = pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page : 0;
  auto tighten = [&](std::int64_t v) {
    if (v > 0 && (limit == 0 || v < limit)) limit = v;
  };
  struct rlimit as {};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY)
    tighten(static_cast<std::int64_t>(std::min<rlim_t>(as.rlim_cur, std::numeric_limits<std::int64_t>::max())));
  tighten(cgroup_limit("/sys/fs/cgroup/memory.max"));                    // cgroup v2
  tighten(cgroup_limit("/sys/fs/cgroup/memory/memory.limit_in_bytes"));  // cgroup v1
  return limit;
}

std::int64_t default_max_host_bytes() {
  return std::max<std::int64_t>(host_memory_limit() / 4 * 3, std::int64_t{256} << 20);
}

void check_splits_and_labels(const Dataset& ds) {
  const std::int64_t n = ds.num_nodes();
  const std::string name = "dataset " + (ds.name.empty() ? std::string("<unnamed>") : ds.name);
  if (ds.has_labels() && ds.num_classes > std::max<std::int64_t>(n, 2))
    throw InvalidInput(InputLocation{name + " labels", 0, 0}, "more classes than nodes",
                       std::to_string(ds.num_classes) + " classes",
                       "at most " + std::to_string(std::max<std::int64_t>(n, 2)) +
                           " (a stray large label? classes = largest label + 1)");
  // Which split first listed each node: 0 none, else index + 1.
  std::vector<std::uint8_t> owner(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)), 0);
  std::vector<std::string> names;
  for (const auto& [split, ids] : ds.splits) {
    names.push_back(split);
    const auto mine = static_cast<std::uint8_t>(std::min<std::size_t>(names.size(), 255));
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const NodeId v = ids[i];
      if (v < 0 || v >= n) continue;  // Dataset::validate and the loaders name out-of-range ids
      std::uint8_t& o = owner[static_cast<std::size_t>(v)];
      if (o == mine)
        throw InvalidInput(InputLocation{name + " split " + split + "[" + std::to_string(i) + "]", 0, 0},
                           "node listed twice in one split", std::to_string(v), "each node once per split");
      if (o != 0)
        throw InvalidInput(InputLocation{name + " split " + split + "[" + std::to_string(i) + "]", 0, 0},
                           "node in two splits (train/test leakage)",
                           std::to_string(v) + " also in split " + names[o - 1], "disjoint splits");
      o = mine;
    }
  }
}

}  // namespace gcnpart::datasets
