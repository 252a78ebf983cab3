#include "datasets/loaders.hpp"

#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <thread>
#include <string>
#include <vector>

#include "datasets/error_matchers.hpp"
#include "datasets/gcsr.hpp"
#include "datasets/generators.hpp"
#include "base/error.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using namespace gcnpart::datasets;
using gcnpart::testing::data_dir;
using gcnpart::testing::message_of;
using gcnpart::testing::test_data;

namespace fs = std::filesystem;

namespace {

/// Row u of the CSR as a vector.
std::vector<NodeId> row(const Csr& g, std::int64_t u) {
  return {g.col_ids.begin() + g.row_offsets[u], g.col_ids.begin() + g.row_offsets[u + 1]};
}

std::vector<float> row_values(const Csr& g, std::int64_t u) {
  return {g.values.begin() + g.row_offsets[u], g.values.begin() + g.row_offsets[u + 1]};
}

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

/// A writable copy of tests/data/ogb/tiny with raw/<stem>.csv.gz replaced by a plain raw/<stem>.csv.
struct TinyCopy {
  gcnpart::testing::TempDir tmp;
  fs::path dir;
  TinyCopy() {
    dir = tmp.path / "tiny";
    fs::copy(test_data("ogb/tiny"), dir, fs::copy_options::recursive);
  }
  void replace(const std::string& stem, const std::string& content) const {
    fs::remove(dir / "raw" / (stem + ".csv.gz"));
    write_file(dir / "raw" / (stem + ".csv"), content);
  }
  [[nodiscard]] std::string path() const { return dir.string(); }
};

template <class Error = InvalidInput>
std::string load_error(const std::string& path, const LoadOptions& options = {}) {
  return message_of<Error>([&] { (void)load_dataset(path, options); });
}

}  // namespace

// ------------------------------------------------------------------------------------------------ detection

TEST_CASE("detect_format tells formats apart by path, folder layout and first bytes") {
  CHECK(detect_format("demo") == Format::kDemo);
  CHECK(detect_format(test_data("ogb/tiny")) == Format::kOgb);
  CHECK(detect_format(test_data("snap/small.txt")) == Format::kSnap);
  CHECK(detect_format(test_data("snap/sparse_ids.txt.gz")) == Format::kSnap);
  CHECK(detect_format(test_data("metis/small.graph")) == Format::kMetis);
  CHECK(detect_format(test_data("mtx/pattern_general.mtx")) == Format::kMatrixMarket);
  CHECK(detect_format(test_data("mtx/real_symmetric.mtx.gz")) == Format::kMatrixMarket);

  gcnpart::testing::TempDir tmp;
  write_file(tmp.file("whatever.gcsr"), "not read: the extension decides");
  CHECK(detect_format(tmp.file("whatever.gcsr")) == Format::kGcsr);
  write_file(tmp.file("a.dat"), "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2\n");
  write_file(tmp.file("b.dat"), "% METIS\n2 1\n2\n1\n");
  write_file(tmp.file("c.dat"), "# SNAP\n0 1\n");
  write_file(tmp.file("d.dat"), "0 1\n");
  CHECK(detect_format(tmp.file("a.dat")) == Format::kMatrixMarket);
  CHECK(detect_format(tmp.file("b.dat")) == Format::kMetis);
  CHECK(detect_format(tmp.file("c.dat")) == Format::kSnap);
  CHECK_MESSAGE_HAS(message_of<InvalidInput>([&] { (void)detect_format(tmp.file("d.dat")); }),
                    "cannot tell the file format");
  CHECK_MESSAGE_HAS(message_of<InvalidInput>([&] { (void)detect_format(tmp.path.string()); }),
                    "unrecognised directory");
  CHECK_MESSAGE_HAS(message_of<IoError>([&] { (void)detect_format(tmp.file("missing.txt")); }), "missing.txt");
  CHECK(std::string(format_name(Format::kMatrixMarket)) == "mtx");
  CHECK(std::string(format_name(Format::kOgb)) == "ogb");
}

TEST_CASE("a missing file is an IoError naming it, whatever the loader") {
  gcnpart::testing::TempDir tmp;
  const std::string missing = tmp.file("nope.txt");
  CHECK_MESSAGE_HAS(message_of<IoError>([&] { (void)load_snap(missing); }), "nope.txt");
  CHECK_MESSAGE_HAS(message_of<IoError>([&] { (void)load_metis(tmp.file("x.graph")); }), "x.graph");
  CHECK_MESSAGE_HAS(message_of<IoError>([&] { (void)load_matrix_market(tmp.file("x.mtx")); }), "x.mtx");
  CHECK_MESSAGE_HAS(message_of<IoError>([&] { (void)load_ogb(tmp.file("noogb")); }), "noogb");
  CHECK_MESSAGE_HAS(load_error<IoError>(missing), "nope.txt");
}

// ------------------------------------------------------------------------------------------------ SNAP

TEST_CASE("SNAP loader reads comments, mixed whitespace, loops and duplicates and says what it removed") {
  const Dataset ds = load_snap(test_data("snap/small.txt"));
  CHECK(ds.name == "small");
  CHECK(ds.num_nodes() == 5);
  CHECK(ds.graph.num_edges() == 8);  // path 0-1-2-3-4, both directions
  CHECK(row(ds.graph, 0) == std::vector<NodeId>{1});
  CHECK(row(ds.graph, 2) == std::vector<NodeId>{1, 3});
  CHECK(row(ds.graph, 4) == std::vector<NodeId>{3});
  CHECK(ds.build_stats.input_edges == 7);
  CHECK(ds.build_stats.self_loops_removed == 1);
  CHECK(ds.build_stats.after_symmetrize == 12);
  CHECK(ds.build_stats.duplicates_removed == 4);
  CHECK(ds.build_stats.output_edges == 8);
  CHECK(ds.graph.is_symmetric());
  CHECK_FALSE(ds.has_features());
  CHECK_FALSE(ds.has_labels());
  CHECK_MESSAGE_HAS(ds.provenance, "1 self loops removed");
  CHECK_MESSAGE_HAS(ds.provenance, "4 duplicates removed");
  CHECK_MESSAGE_HAS(ds.provenance, "already 0..N-1");
  CHECK_NOTHROW(ds.validate());
}

TEST_CASE("CSV edge lists (PyG / DGL exports) read as SNAP, with or without a header, and .csv is detected") {
  gcnpart::testing::TempDir tmp;
  const std::string with_header = tmp.file("edges.csv"), bare = tmp.file("bare.txt");
  std::ofstream(with_header) << "src,dst\n0,1\n1, 2\n2 ,3\n3,4\n";
  std::ofstream(bare) << "0,1\n1,2\n2,3\n3,4\n";
  for (const std::string& path : {with_header, bare}) {
    const Dataset ds = load_snap(path);
    CHECK(ds.num_nodes() == 5);
    CHECK(ds.graph.num_edges() == 8);  // the path 0-1-2-3-4, both directions
  }
  CHECK(load_dataset(with_header).graph.num_edges() == 8);  // .csv: a SNAP-style edge list by its extension
  // A third column or a name after the header is refused with the line and column.
  const std::string extra = tmp.file("extra.csv"), name = tmp.file("name.csv");
  std::ofstream(extra) << "0,1,7\n";
  std::ofstream(name) << "src,dst\n0,node\n";
  CHECK_MESSAGE_HAS(message_of<InvalidInput>([&] { (void)load_snap(extra); }), "extra.csv:1:4: unexpected extra field");
  CHECK_MESSAGE_HAS(message_of<InvalidInput>([&] { (void)load_snap(name); }), "name.csv:2:3: bad integer");
}

TEST_CASE("SNAP loader keeps edges directed when not asked to symmetrise") {
  LoadOptions o;
  o.symmetrize = false;
  const Dataset ds = load_snap(test_data("snap/small.txt"), o);
  CHECK(ds.graph.num_edges() == 5);  // 0->1, 1->0, 1->2, 2->3, 3->4 (loop and duplicate dropped)
  CHECK(row(ds.graph, 1) == std::vector<NodeId>{0, 2});
  CHECK(row(ds.graph, 4).empty());
}

TEST_CASE("SNAP loader maps sparse 64-bit ids to 0..N-1 in ascending order and reads gzip") {
  const Dataset ds = load_snap(test_data("snap/sparse_ids.txt.gz"));
  CHECK(ds.name == "sparse_ids");
  CHECK(ds.num_nodes() == 4);  // 7 -> 0, 10 -> 1, 42 -> 2, 10^12 -> 3
  CHECK(row(ds.graph, 0) == std::vector<NodeId>{1, 2});
  CHECK(row(ds.graph, 1) == std::vector<NodeId>{0, 3});
  CHECK(row(ds.graph, 3) == std::vector<NodeId>{1, 2});
  CHECK_MESSAGE_HAS(ds.provenance, "(gzip)");
  CHECK_MESSAGE_HAS(ds.provenance, "mapped in ascending order");
}

TEST_CASE("SNAP loader maps dense ids with gaps across 64-bit word boundaries in ascending order") {
  gcnpart::testing::TempDir tmp;
  write_file(tmp.file("gaps.txt"), "63 64\n64\t130\n130 3\n");
  const Dataset ds = load_snap(tmp.file("gaps.txt"));
  CHECK(ds.num_nodes() == 4);  // 3 -> 0, 63 -> 1, 64 -> 2, 130 -> 3
  CHECK(row(ds.graph, 0) == std::vector<NodeId>{3});
  CHECK(row(ds.graph, 1) == std::vector<NodeId>{2});
  CHECK(row(ds.graph, 2) == std::vector<NodeId>{1, 3});
  CHECK(row(ds.graph, 3) == std::vector<NodeId>{0, 2});
  CHECK_MESSAGE_HAS(ds.provenance, "mapped in ascending order");
}

TEST_CASE("SNAP loader accepts CRLF line ends and a last line without a newline") {
  const Dataset ds = load_snap(test_data("snap/crlf_no_final_newline.txt"));
  CHECK(ds.num_nodes() == 3);
  CHECK(ds.graph.num_edges() == 4);
}

TEST_CASE("SNAP loader gives structure-only graphs synthetic features only when asked") {
  LoadOptions o;
  o.synthetic_features = 4;
  o.synthetic_classes = 2;
  o.seed = 7;
  const Dataset ds = load_dataset(test_data("snap/small.txt"), o);
  CHECK(ds.num_features == 4);
  CHECK(ds.features.size() == 20);
  CHECK(ds.labels.size() == 5);
  CHECK(ds.num_classes == 2);
  CHECK_MESSAGE_HAS(ds.provenance, "synthetic features");
  o.synthetic_classes = 0;
  CHECK_MESSAGE_HAS(message_of<InvalidInput>([&] { (void)load_snap(test_data("snap/small.txt"), o); }),
                    "synthetic_classes");
}

TEST_CASE("SNAP loader names file:line:column and the bad value of every malformed line") {
  std::string msg = load_error(test_data("snap/bad_token.txt"));
  CHECK_MESSAGE_HAS(msg, "bad_token.txt:2:3: bad integer: got 'x2'");
  CHECK_MESSAGE_HAS(msg, "non-negative integer node id");

  msg = load_error(test_data("snap/bad_count.txt"));
  CHECK_MESSAGE_HAS(msg, "bad_count.txt:1:19");
  CHECK_MESSAGE_HAS(msg, "got '5', expected 2 data lines");

  CHECK_MESSAGE_HAS(load_error(test_data("snap/extra_field.txt")), "extra_field.txt:2:5: unexpected extra field: got '3'");
  CHECK_MESSAGE_HAS(load_error(test_data("snap/negative_id.txt")), "negative_id.txt:2:3: negative node id: got '-1'");
  CHECK_MESSAGE_HAS(load_error(test_data("snap/missing_id.txt")), "missing_id.txt:2:2: missing value");
  CHECK_MESSAGE_HAS(load_error(test_data("snap/overflow_id.txt")),
                    "overflow_id.txt:2:3: bad integer: got '99999999999999999999'");
  CHECK_MESSAGE_HAS(load_error(test_data("snap/empty.txt")), "empty.txt:2: empty graph");
}

TEST_CASE("SNAP loader refuses truncated and corrupt gzip files") {
  std::string msg = load_error(test_data("snap/truncated.txt.gz"));
  CHECK_MESSAGE_HAS(msg, "truncated.txt.gz:");
  CHECK_MESSAGE_HAS(msg, "unexpected end of compressed data");
  msg = load_error(test_data("snap/corrupt.txt.gz"));
  CHECK_MESSAGE_HAS(msg, "corrupt.txt.gz:");
  CHECK_MESSAGE_HAS(msg, "corrupt compressed data");
}

// ------------------------------------------------------------------------------------------------ METIS

TEST_CASE("METIS loader reads comments, leading and trailing spaces and an empty line for an isolated vertex") {
  const Dataset ds = load_metis(test_data("metis/small.graph"));
  CHECK(ds.name == "small");
  CHECK(ds.num_nodes() == 5);
  CHECK(ds.graph.num_edges() == 8);
  CHECK(row(ds.graph, 0) == std::vector<NodeId>{1, 2});
  CHECK(row(ds.graph, 2) == std::vector<NodeId>{0, 1, 3});
  CHECK(row(ds.graph, 4).empty());
  CHECK(ds.build_stats.input_edges == 8);
  CHECK(ds.build_stats.output_edges == 8);
  CHECK_NOTHROW(ds.validate());
  CHECK(load_metis(test_data("metis/explicit_fmt.graph")).graph.num_edges() == 4);
}

TEST_CASE("METIS loader skips vertex weights and sizes and keeps edge weights") {
  const Dataset ds = load_metis(test_data("metis/weighted.graph"));
  CHECK(ds.num_nodes() == 4);
  REQUIRE(ds.graph.weighted());
  CHECK(row(ds.graph, 1) == std::vector<NodeId>{0, 2});
  CHECK(row_values(ds.graph, 1) == std::vector<float>{5, 2});
  CHECK(row_values(ds.graph, 3) == std::vector<float>{7});
  CHECK_MESSAGE_HAS(ds.provenance, "fmt 011 ncon 2");

  const Dataset sized = load_metis(test_data("metis/vertex_sizes.graph"));
  CHECK(sized.num_nodes() == 3);
  CHECK(row(sized.graph, 1) == std::vector<NodeId>{0, 2});
  CHECK_FALSE(sized.graph.weighted());
}

TEST_CASE("METIS loader names file:line:column and the bad value of every malformed input") {
  CHECK_MESSAGE_HAS(load_error(test_data("metis/bad_id.graph")),
                    "bad_id.graph:3:3: neighbour id out of range: got '4', expected a neighbour id in 1..3");
  std::string msg = load_error(test_data("metis/bad_count.graph"));
  CHECK_MESSAGE_HAS(msg, "bad_count.graph:1:3: adjacency entries do not match");
  CHECK_MESSAGE_HAS(msg, "got '4 entries', expected 2 x m = 6");
  CHECK_MESSAGE_HAS(load_error(test_data("metis/too_few_lines.graph")),
                    "too_few_lines.graph:3: file ends before all vertex lines: got '2 vertex lines', expected 4");
  CHECK_MESSAGE_HAS(load_error(test_data("metis/too_many_lines.graph")),
                    "too_many_lines.graph:4:1: more lines than the header's n vertices: got '1'");
  CHECK_MESSAGE_HAS(load_error(test_data("metis/bad_token.graph")), "bad_token.graph:3:3: bad integer: got '3x'");
  CHECK_MESSAGE_HAS(load_error(test_data("metis/negative.graph")), "negative.graph:1:1: negative");
  CHECK_MESSAGE_HAS(load_error(test_data("metis/empty.graph")), "empty.graph:1:1: empty graph");
  CHECK_MESSAGE_HAS(load_error(test_data("metis/bad_fmt.graph")), "bad_fmt.graph:1:5: bad fmt field");
  CHECK_MESSAGE_HAS(load_error(test_data("metis/nan_weight.graph")),
                    "nan_weight.graph:3:9: non-finite edge weight: got 'nan'");
}

TEST_CASE("METIS loader refuses a header claiming absurd sizes before allocating") {
  std::string msg = load_error(test_data("metis/absurd_nodes.graph"));
  CHECK_MESSAGE_HAS(msg, "absurd_nodes.graph:1:1: too many nodes");
  CHECK_MESSAGE_HAS(msg, "got '1000000000000'");
  msg = load_error(test_data("metis/absurd_for_file.graph"));
  CHECK_MESSAGE_HAS(msg, "absurd_for_file.graph:1:1: vertex count n larger than the file can hold");
  CHECK_MESSAGE_HAS(msg, "got '2000000000'");
}

// ------------------------------------------------------------------------------------------------ Matrix Market

TEST_CASE("Matrix Market loader reads pattern general matrices as directed entries, symmetrised") {
  const Dataset ds = load_matrix_market(test_data("mtx/pattern_general.mtx"));
  CHECK(ds.name == "pattern_general");
  CHECK(ds.num_nodes() == 4);
  CHECK(ds.graph.num_edges() == 8);  // the 4-cycle
  CHECK(row(ds.graph, 0) == std::vector<NodeId>{1, 3});
  CHECK_FALSE(ds.graph.weighted());
  LoadOptions o;
  o.symmetrize = false;
  CHECK(load_matrix_market(test_data("mtx/pattern_general.mtx"), o).graph.num_edges() == 4);
}

TEST_CASE("Matrix Market loader mirrors a symmetric file's triangle and keeps values as weights") {
  LoadOptions o;
  o.symmetrize = false;  // a symmetric file is mirrored regardless
  const Dataset ds = load_matrix_market(test_data("mtx/real_symmetric.mtx.gz"), o);
  CHECK(ds.num_nodes() == 3);
  CHECK(ds.graph.num_edges() == 4);  // 1-2, 2-3 both ways; the diagonal entry is a dropped self loop
  CHECK(ds.build_stats.self_loops_removed == 1);
  CHECK(row(ds.graph, 1) == std::vector<NodeId>{0, 2});
  CHECK(row_values(ds.graph, 1) == std::vector<float>{0.5f, 1.5f});

  const Dataset ints = load_matrix_market(test_data("mtx/integer_general.mtx"));
  CHECK(ints.graph.num_edges() == 6);
  CHECK(row_values(ints.graph, 0) == std::vector<float>{4, 7});
}

TEST_CASE("Matrix Market loader rejects array, complex, hermitian and non-square matrices clearly") {
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/array.mtx")),
                    "array.mtx:1:23: dense 'array' format is not a graph: got 'array'");
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/complex.mtx")),
                    "complex.mtx:1:34: complex values cannot be edge weights: got 'complex'");
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/hermitian.mtx")),
                    "hermitian.mtx:1:39: unsupported symmetry for a graph: got 'hermitian'");
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/not_square.mtx")),
                    "not_square.mtx:2:3: a graph's adjacency matrix must be square: got '4 columns', expected 3");
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/no_banner.mtx")), "no_banner.mtx:1:1: missing Matrix Market banner");
}

TEST_CASE("Matrix Market loader names file:line:column of bad indices, values and entry counts") {
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/bad_index.mtx")),
                    "bad_index.mtx:4:3: index out of range: got '5', expected an index in 1..4");
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/too_few.mtx")),
                    "too_few.mtx:4: file ends before all entries: got '2 entries', expected 3");
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/too_many.mtx")),
                    "too_many.mtx:4:1: more entries than the size line declares: got '2'");
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/inf_value.mtx")), "inf_value.mtx:4:5: non-finite value: got 'inf'");
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/absurd_rows.mtx")),
                    "absurd_rows.mtx:2:1: too many nodes (rows on the size line): got '1000000000000'");
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/absurd_nnz.mtx")),
                    "absurd_nnz.mtx:2:9: entry count nnz larger than the file can hold: got '900000000'");
  // Rows take no bytes: a size line of 2e9 rows and one entry used to allocate 16 GB of row offsets (fuzz_mtx's
  // -malloc_limit_mb reports such an input as a crash).
  CHECK_MESSAGE_HAS(load_error(test_data("mtx/absurd_rows_for_nnz.mtx")),
                    "absurd_rows_for_nnz.mtx:2:1: more rows than the entries can touch: got '2000000000', expected at "
                    "most 2 x nnz + 1048576 = 1048578");
}

// ------------------------------------------------------------------------------------------------ OGB

TEST_CASE("OGB loader reads the tiny gzip folder: meta.csv, inverse edges, features, NaN label, split") {
  const Dataset ds = load_ogb(test_data("ogb/tiny"));
  CHECK(ds.name == "tiny");
  CHECK(ds.num_nodes() == 6);
  CHECK(ds.graph.num_edges() == 8);  // 4 stored edges, each with its reverse
  CHECK(ds.graph.is_symmetric());
  CHECK(row(ds.graph, 5).empty());
  CHECK(ds.num_features == 3);
  REQUIRE(ds.features.size() == 18);
  CHECK(ds.features[0] == 0.0f);
  CHECK(ds.features[1] == 1.5f);
  CHECK(ds.features[2] == -2.0f);
  CHECK(ds.features[3 * 3 + 1] == 1e-3f);
  CHECK(ds.labels == std::vector<std::int32_t>{0, 1, 2, 1, 0, -1});
  CHECK(ds.num_classes == 3);
  CHECK(ds.split("train") == std::vector<NodeId>{0, 1});
  CHECK(ds.split("valid") == std::vector<NodeId>{2, 3});
  CHECK(ds.split("test") == std::vector<NodeId>{4});
  CHECK_MESSAGE_HAS(ds.provenance, "add_inverse_edge=True (meta.csv)");
  CHECK_MESSAGE_HAS(ds.provenance, "split 'random' (from meta.csv)");
  CHECK_NOTHROW(ds.validate());
  CHECK(load_dataset(test_data("ogb/tiny")).graph.col_ids == ds.graph.col_ids);
}

TEST_CASE("OGB loader takes the split folder the caller names and lists the folders when it is missing") {
  LoadOptions o;
  o.split = "other";
  const Dataset ds = load_ogb(test_data("ogb/tiny"), o);
  CHECK(ds.split("train") == std::vector<NodeId>{3, 4});
  o.split = "nope";
  const std::string msg = message_of<InvalidInput>([&] { (void)load_ogb(test_data("ogb/tiny"), o); });
  CHECK_MESSAGE_HAS(msg, "no such split folder: got 'nope', expected one of: other, random");
}

TEST_CASE("OGB loader without meta.csv reads plain csv, float labels with NaN and the only split folder") {
  const Dataset ds = load_ogb(test_data("ogb/directed"));
  CHECK(ds.name == "directed");
  CHECK(ds.num_nodes() == 4);
  CHECK(ds.graph.num_edges() == 8);  // symmetrize defaults to true without meta.csv
  CHECK(ds.labels == std::vector<std::int32_t>{1, -1, 0, 1});
  CHECK(ds.num_classes == 2);  // max label + 1
  CHECK_FALSE(ds.has_features());
  CHECK(ds.split("train") == std::vector<NodeId>{0});
  CHECK_MESSAGE_HAS(ds.provenance, "split 'time' (the only one)");
  CHECK_NOTHROW(ds.validate());

  LoadOptions o;
  o.symmetrize = false;
  const Dataset directed = load_ogb(test_data("ogb/directed"), o);
  CHECK(directed.graph.num_edges() == 4);
  CHECK(row(directed.graph, 3) == std::vector<NodeId>{2});
  CHECK(row(directed.graph, 2) == std::vector<NodeId>{0});
  CHECK_MESSAGE_HAS(directed.provenance, "kept directed as stored");
}

TEST_CASE("OGB loader follows add_inverse_edge=False and still symmetrises for GCN when asked, saying so") {
  TinyCopy copy;
  std::string meta;
  {
    std::ifstream in(copy.dir / "meta.csv");
    meta.assign(std::istreambuf_iterator<char>(in), {});
  }
  meta.replace(meta.find("add_inverse_edge,True"), 21, "add_inverse_edge,False");
  write_file(copy.dir / "meta.csv", meta);
  const Dataset sym = load_ogb(copy.path());
  CHECK(sym.graph.num_edges() == 8);
  CHECK_MESSAGE_HAS(sym.provenance, "add_inverse_edge=False (edges directed as stored), symmetrised anyway");
  LoadOptions o;
  o.symmetrize = false;
  const Dataset dir = load_ogb(copy.path(), o);
  CHECK(dir.graph.num_edges() == 4);
  CHECK(row(dir.graph, 0) == std::vector<NodeId>{1});
  CHECK(row(dir.graph, 1) == std::vector<NodeId>{2});
}

TEST_CASE("OGB loader names the count file and both counts when the counts disagree") {
  {
    TinyCopy copy;
    copy.replace("num-edge-list", "5\n");
    const std::string msg = load_error(copy.path());
    CHECK_MESSAGE_HAS(msg, "num-edge-list.csv:1:1: edge count does not match");
    CHECK_MESSAGE_HAS(msg, "got '5', expected 4 rows in");
  }
  {
    TinyCopy copy;
    copy.replace("num-node-list", "7\n");
    const std::string msg = load_error(copy.path());
    CHECK_MESSAGE_HAS(msg, "node-label.csv.gz");
    CHECK_MESSAGE_HAS(msg, "label rows do not match num-node-list: got '6 rows', expected 7");
  }
  {
    TinyCopy copy;
    copy.replace("node-feat", "0,0,0\n1,1,1\n2,2,2\n3,3,3\n4,4,4\n");
    const std::string msg = load_error(copy.path());
    CHECK_MESSAGE_HAS(msg, "node-feat.csv:5: feature rows do not match num-node-list: got '5 rows', expected 6");
  }
  {
    TinyCopy copy;
    copy.replace("num-node-list", "6\n1\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "num-node-list.csv:2:1: more than one graph");
  }
}

TEST_CASE("OGB loader names file:line:column and value of bad ids, labels and features") {
  {
    TinyCopy copy;
    copy.replace("edge", "0,1\n0,9\n2,3\n3,4\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()),
                      "edge.csv:2:3: node id out of range: got '9', expected a node id in 0..5");
  }
  {
    TinyCopy copy;
    copy.replace("edge", "0,1\n0;1\n2,3\n3,4\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "edge.csv:2:1: bad integer: got '0;1'");
  }
  {
    TinyCopy copy;
    copy.replace("node-feat", "0,0,0\n1.0,nan,0.25\n0,0,0\n0,0,0\n0,0,0\n0,0,0\n");
    const std::string msg = load_error(copy.path());
    CHECK_MESSAGE_HAS(msg, "node-feat.csv:2:5: non-finite feature at node 1 column 1: got 'nan'");
  }
  {
    TinyCopy copy;
    copy.replace("node-feat", "0,0,0\n1,-inf,0\n0,0,0\n0,0,0\n0,0,0\n0,0,0\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "node-feat.csv:2:3: non-finite feature at node 1 column 1: got '-inf'");
  }
  {
    TinyCopy copy;
    copy.replace("node-feat", "0,0,0\n1,2\n0,0,0\n0,0,0\n0,0,0\n0,0,0\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "node-feat.csv:2:4: feature row too short");
  }
  {
    TinyCopy copy;
    copy.replace("node-feat", "0,0,0\n1,2,3,4\n0,0,0\n0,0,0\n0,0,0\n0,0,0\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "node-feat.csv:2:7: feature row too long: got '4'");
  }
  {
    TinyCopy copy;
    copy.replace("node-label", "0\n1\n3\n1\n0\n0\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "node-label.csv:3:1: label out of range: got '3', expected a class in 0..2");
  }
  {
    TinyCopy copy;
    copy.replace("node-label", "0,1\n1,0\n0,0\n1,1\n0,0\n0,0\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "node-label.csv:1:2: multi-task labels are not supported");
  }
  {
    TinyCopy copy;
    fs::remove(copy.dir / "split" / "random" / "test.csv.gz");
    write_file(copy.dir / "split" / "random" / "test.csv", "4\n6\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "test.csv:2:1: node id out of range: got '6', expected a node id in 0..5");
  }
}

TEST_CASE("OGB loader refuses absurd node counts before allocating and empty graphs") {
  {
    TinyCopy copy;
    copy.replace("num-node-list", "1000000000000\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "num-node-list.csv:1:1: too many nodes");
  }
  {
    TinyCopy copy;
    copy.replace("num-node-list", "2000000000\n");
    const std::string msg = load_error(copy.path());
    CHECK_MESSAGE_HAS(msg, "num-node-list.csv:1:1: node count larger than the file can hold: got '2000000000'");
  }
  {
    TinyCopy copy;
    copy.replace("num-edge-list", "900000000000\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "edge count larger than the file can hold: got '900000000000'");
  }
  {
    TinyCopy copy;
    copy.replace("num-node-list", "0\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "num-node-list.csv:1:1: empty graph");
  }
  {
    TinyCopy copy;
    copy.replace("num-node-list", "-4\n");
    CHECK_MESSAGE_HAS(load_error(copy.path()), "num-node-list.csv:1:1: negative count: got '-4'");
  }
}

TEST_CASE("OGB loader raises IoError for a missing required file and InvalidInput for a truncated one") {
  {
    TinyCopy copy;
    fs::remove(copy.dir / "raw" / "edge.csv.gz");
    CHECK_MESSAGE_HAS(load_error<IoError>(copy.path()), "edge.csv.gz: missing required file");
  }
  {
    TinyCopy copy;
    fs::remove(copy.dir / "raw" / "node-feat.csv.gz");  // optional
    CHECK_FALSE(load_ogb(copy.path()).has_features());
  }
  {
    TinyCopy copy;
    const fs::path gz = copy.dir / "raw" / "node-feat.csv.gz";
    std::string bytes;
    {
      std::ifstream in(gz, std::ios::binary);
      bytes.assign(std::istreambuf_iterator<char>(in), {});
    }
    write_file(gz, bytes.substr(0, bytes.size() - 6));
    const std::string msg = load_error(copy.path());
    CHECK_MESSAGE_HAS(msg, "node-feat.csv.gz:");
    CHECK_MESSAGE_HAS(msg, "unexpected end of compressed data");
  }
}

// ------------------------------------------------------------------------------------------------ dispatch

TEST_CASE("load_dataset dispatches demo and .gcsr files") {
  const Dataset demo = load_dataset("demo");
  CHECK(demo.num_nodes() == 10000);
  gcnpart::testing::TempDir tmp;
  const Dataset tiny = load_ogb(test_data("ogb/tiny"));
  save_gcsr(tiny, tmp.file("tiny.gcsr"));
  const Dataset back = load_dataset(tmp.file("tiny.gcsr"));
  CHECK(back.graph.col_ids == tiny.graph.col_ids);
  CHECK(back.features == tiny.features);
  CHECK(back.labels == tiny.labels);
}

// ------------------------------------------------------------------------------------------------ real data

TEST_CASE("Cora loads with 2708 nodes, 10556 directed edges, 1433 features, 7 classes and a 140/500/1000 split") {
  const Dataset ds = load_dataset(data_dir() + "/cora");
  CHECK(ds.name == "cora");
  CHECK(ds.num_nodes() == 2708);
  CHECK(ds.graph.num_edges() == 10556);
  CHECK(ds.build_stats.input_edges == 5278);
  CHECK(ds.build_stats.self_loops_removed == 0);
  CHECK(ds.graph.is_symmetric());
  CHECK(ds.num_features == 1433);
  CHECK(ds.num_classes == 7);
  CHECK(ds.split("train").size() == 140);
  CHECK(ds.split("valid").size() == 500);
  CHECK(ds.split("test").size() == 1000);
  std::vector<int> histogram(7, 0);
  for (const auto l : ds.labels) ++histogram.at(static_cast<std::size_t>(l));
  CHECK(histogram == std::vector<int>{351, 217, 418, 818, 426, 298, 180});
  std::int64_t nonzeros = 0;
  for (const float x : ds.features) nonzeros += x != 0.0f ? 1 : 0;
  CHECK(nonzeros == 49216);
  CHECK_NOTHROW(ds.validate());
}

TEST_CASE("CiteSeer loads with 3327 nodes, 9104 directed edges, 3703 features, 6 classes and 48 isolated nodes") {
  const Dataset ds = load_dataset(data_dir() + "/citeseer");
  CHECK(ds.num_nodes() == 3327);
  CHECK(ds.graph.num_edges() == 9104);
  CHECK(ds.num_features == 3703);
  CHECK(ds.num_classes == 6);
  CHECK(ds.split("train").size() == 120);
  CHECK(ds.split("valid").size() == 500);
  CHECK(ds.split("test").size() == 1000);
  CHECK(degree_stats(ds.graph).isolated == 48);
  std::int64_t nonzeros = 0;
  for (const float x : ds.features) nonzeros += x != 0.0f ? 1 : 0;
  CHECK(nonzeros == 105165);
  CHECK_NOTHROW(ds.validate());
}

TEST_CASE("email-Enron loads with 36692 nodes and 367662 directed entries (183831 undirected)") {
  const Dataset ds = load_dataset(data_dir() + "/snap/email-Enron.txt.gz");
  CHECK(ds.name == "email-Enron");
  CHECK(ds.num_nodes() == 36692);
  CHECK(ds.graph.num_edges() == 367662);
  CHECK(ds.build_stats.input_edges == 367662);
  CHECK(ds.build_stats.self_loops_removed == 0);
  CHECK(ds.build_stats.duplicates_removed == 367662);  // every line's reverse is itself a line
  CHECK(ds.graph.is_symmetric());
  CHECK_NOTHROW(ds.graph.validate("email-Enron"));
}

TEST_CASE("soc-Slashdot0902 symmetrised has 82168 nodes, 1008460 entries, 78303 self loops removed") {
  const Dataset ds = load_dataset(data_dir() + "/snap/soc-Slashdot0902.txt.gz");
  CHECK(ds.num_nodes() == 82168);
  CHECK(ds.build_stats.input_edges == 948464);
  CHECK(ds.build_stats.self_loops_removed == 78303);
  CHECK(ds.graph.num_edges() == 1008460);
  CHECK(ds.graph.num_edges() / 2 == 504230);
  CHECK(ds.graph.is_symmetric());
  CHECK_MESSAGE_HAS(ds.provenance, "78,303 self loops removed");
}

TEST_CASE("METIS 4elt has 15606 nodes and 45878 undirected edges, wing 62032 and 121544") {
  const Dataset elt = load_dataset(data_dir() + "/metis/4elt.graph");
  CHECK(elt.num_nodes() == 15606);
  CHECK(elt.graph.num_edges() == 91756);
  CHECK(elt.build_stats.input_edges == 91756);
  CHECK(elt.graph.is_symmetric());
  const DegreeStats d = degree_stats(elt.graph);
  CHECK(d.min == 3);
  CHECK(d.max == 10);
  const Dataset wing = load_dataset(data_dir() + "/metis/wing.graph");
  CHECK(wing.num_nodes() == 62032);
  CHECK(wing.graph.num_edges() == 2 * 121544);
  CHECK(degree_stats(wing.graph).min == 2);
  CHECK(degree_stats(wing.graph).max == 4);
}

// ------------------------------------------------------------------------------------------------ robustness

TEST_CASE("loaders either load or throw a typed error on randomly mutated inputs, never crash or hang") {
  gcnpart::testing::TempDir tmp;
  const std::vector<std::string> sources = {"snap/small.txt", "metis/small.graph", "metis/weighted.graph",
                                            "mtx/pattern_general.mtx", "mtx/integer_general.mtx"};
  const std::string alphabet = "0123456789 \t\n\r,-.#%eE+xn";
  std::uint64_t state = 0x243F6A8885A308D3ull;  // fixed: the same mutations every run
  auto next = [&state](std::uint64_t bound) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state % bound;
  };
  int loaded = 0, refused = 0;
  for (const auto& rel : sources) {
    std::string original;
    {
      std::ifstream in(test_data(rel), std::ios::binary);
      original.assign(std::istreambuf_iterator<char>(in), {});
    }
    const std::string name = fs::path(rel).filename().string();
    for (int trial = 0; trial < 150; ++trial) {
      std::string bytes = original;
      const auto edits = 1 + next(3);
      for (std::uint64_t k = 0; k < edits && !bytes.empty(); ++k) {
        const auto at = static_cast<std::size_t>(next(bytes.size()));
        switch (next(3)) {
          case 0: bytes[at] = alphabet[next(alphabet.size())]; break;
          case 1: bytes.erase(at, 1 + next(4)); break;
          default: bytes.insert(at, 1, alphabet[next(alphabet.size())]); break;
        }
      }
      const std::string path = tmp.file(name);
      write_file(path, bytes);
      try {
        const Dataset ds = load_dataset(path);
        CHECK_NOTHROW(ds.graph.validate(path));
        ++loaded;
      } catch (const InvalidInput&) {  // anything else (LogicError, std::bad_alloc...) fails the test
        ++refused;
      }
    }
  }
  CHECK(loaded > 0);
  CHECK(refused > 0);
}

// ------------------------------------------------------------------------------------------------ issue 18

TEST_CASE("a symmetric METIS graph with positive weights loads; an asymmetric one or a weight <= 0 is refused") {
  gcnpart::testing::TempDir tmp;
  const auto ok = tmp.file("ok.graph");
  write_file(ok, "3 2 1\n2 0.5\n1 0.5 3 2\n2 2\n");
  const Dataset ds = load_dataset(ok);
  CHECK(ds.graph.num_edges() == 4);
  CHECK(row_values(ds.graph, 1) == std::vector<float>{0.5f, 2.0f});
  const auto asym = tmp.file("asym.graph");
  write_file(asym, "4 2\n2\n3\n4\n1\n");  // a directed 4-cycle: 2m entries, none with its reverse
  CHECK(gcnpart::testing::contains(load_error(asym), "asymmetric adjacency: got 'vertex 1 lists 2, vertex 2 does not list 1'"));
  const auto zero = tmp.file("zero.graph");
  write_file(zero, "2 1 1\n2 0\n1 0\n");
  CHECK(gcnpart::testing::contains(load_error(zero), "zero.graph:2:3: edge weight not positive: got '0'"));
}

TEST_CASE("a Matrix Market entry stored twice is refused, naming the entry; a weight beyond float32 too") {
  gcnpart::testing::TempDir tmp;
  const auto dup = tmp.file("dup.mtx");
  write_file(dup, "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 1.0\n3 1 2.0\n1 2 4.0\n");
  CHECK(gcnpart::testing::contains(load_error(dup), "dup.mtx: duplicate entry: got '1 2'"));
  const auto huge = tmp.file("huge.mtx");
  write_file(huge, "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 3.5e38\n");
  CHECK(gcnpart::testing::contains(load_error(huge), "huge.mtx:3:5: number out of float32 range: got '3.5e38'"));
}

TEST_CASE("the host-memory budget refuses a header's claim before allocating and a growing file while reading") {
  gcnpart::testing::TempDir tmp;
  const auto mtx = tmp.file("claims.mtx");
  std::string body = "%%MatrixMarket matrix coordinate pattern general\n100 100 5000\n";
  for (int i = 0; i < 5000; ++i) body += std::to_string(i % 100 + 1) + " " + std::to_string((i * 7) % 100 + 1) + "\n";
  write_file(mtx, body);
  LoadOptions small;
  small.max_host_bytes = 4096;
  const std::string msg = load_error<OutOfMemory>(mtx, small);
  CHECK(gcnpart::testing::contains(msg, "claims.mtx:2:9: loading needs more host memory than allowed"));
  CHECK(gcnpart::testing::contains(msg, "--max-host-memory"));
  const auto snap = tmp.file("lines.txt");
  std::string lines;
  for (int i = 0; i < 70000; ++i) lines += std::to_string(i) + " " + std::to_string(i + 1) + "\n";
  write_file(snap, lines);
  CHECK(gcnpart::testing::contains(load_error<OutOfMemory>(snap, small), "lines.txt:65536: loading needs more"));
  CHECK(load_dataset(snap).num_nodes() == 70001);  // the default budget (3/4 of the memory) lets it through
  CHECK(default_max_host_bytes() >= (std::int64_t{256} << 20));
}

TEST_CASE("splits that share a node, list one twice, or more classes than nodes are refused") {
  Dataset ds = demo_dataset();
  check_splits_and_labels(ds);
  Dataset leak = ds;
  leak.splits["test"].push_back(leak.splits["train"].front());
  CHECK(gcnpart::testing::contains(message_of<InvalidInput>([&] { check_splits_and_labels(leak); }),
                                   "node in two splits (train/test leakage)"));
  Dataset twice = ds;
  twice.splits["train"].push_back(twice.splits["train"].front());
  CHECK(gcnpart::testing::contains(message_of<InvalidInput>([&] { check_splits_and_labels(twice); }),
                                   "node listed twice in one split"));
  Dataset classes = ds;
  classes.num_classes = 999999999;
  CHECK(gcnpart::testing::contains(message_of<InvalidInput>([&] { check_splits_and_labels(classes); }),
                                   "more classes than nodes"));
}

TEST_CASE("a .gcsr file with a non-finite edge weight is refused with its byte offset") {
  gcnpart::testing::TempDir tmp;
  Dataset ds = demo_dataset();
  ds.graph.values.assign(static_cast<std::size_t>(ds.graph.num_edges()), 1.0f);
  ds.graph.values[3] = std::numeric_limits<float>::infinity();
  const auto path = tmp.file("inf.gcsr");
  // save_gcsr refuses it too; write through a finite file and patch the weight with its checksum off.
  CHECK(gcnpart::testing::contains(message_of<InvalidInput>([&] { save_gcsr(ds, path); }), "non-finite"));
  ds.graph.values[3] = 12345.678f;
  save_gcsr(ds, path);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), {});
  const float two = 12345.678f, inf = std::numeric_limits<float>::infinity();
  const auto at = bytes.find(std::string(reinterpret_cast<const char*>(&two), 4));
  REQUIRE(at != std::string::npos);
  f.seekp(static_cast<std::streamoff>(at));
  f.write(reinterpret_cast<const char*>(&inf), 4);
  f.close();
  const std::string msg = message_of<InvalidInput>([&] { (void)load_gcsr(path, false); });
  CHECK(gcnpart::testing::contains(msg, "edge weight 3"));
  CHECK(gcnpart::testing::contains(msg, "at byte " + std::to_string(at)));
}

TEST_CASE("a pipe with a telling extension loads as a stream; one without is refused with a hint") {
  gcnpart::testing::TempDir tmp;
  const auto fifo = tmp.file("edges.txt");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] { std::ofstream(fifo) << "0 1\n1 2\n"; });
  const Dataset ds = load_dataset(fifo);
  writer.join();
  CHECK(ds.num_nodes() == 3);
  const auto bare = tmp.file("edges");
  REQUIRE(::mkfifo(bare.c_str(), 0600) == 0);
  CHECK(gcnpart::testing::contains(load_error(bare), "cannot tell the format of a pipe"));
}

TEST_CASE("the default host budget follows the tightest of physical memory, ulimit -v and the cgroup's limit") {
  struct rlimit saved {};
  REQUIRE(::getrlimit(RLIMIT_AS, &saved) == 0);
  const std::int64_t before = gcnpart::datasets::host_memory_limit();
  CHECK(before > 0);
  CHECK(gcnpart::datasets::default_max_host_bytes() >= std::min<std::int64_t>(before / 4 * 3, std::int64_t{256} << 20));
  // A soft address-space limit below the machine's memory becomes the limit (and is raised back afterwards). Not under
  // AddressSanitizer, whose shadow memory needs an unlimited address space.
#ifndef GCNPART_SANITIZED
  const rlim_t cap = static_cast<rlim_t>(std::min<std::int64_t>(before / 2, std::int64_t{64} << 30));
  if (saved.rlim_cur == RLIM_INFINITY || saved.rlim_cur > cap) {
    struct rlimit lower = saved;
    lower.rlim_cur = cap;
    REQUIRE(::setrlimit(RLIMIT_AS, &lower) == 0);
    const std::int64_t limited = gcnpart::datasets::host_memory_limit();
    const std::int64_t budget = gcnpart::datasets::default_max_host_bytes();
    REQUIRE(::setrlimit(RLIMIT_AS, &saved) == 0);
    CHECK(limited == static_cast<std::int64_t>(cap));
    CHECK(budget == std::max<std::int64_t>(static_cast<std::int64_t>(cap) / 4 * 3, std::int64_t{256} << 20));
  }
#endif
}
