#include "datasets/text_reader.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <cmath>
#include <fstream>
#include <string>
#include <vector>

#include "datasets/error_matchers.hpp"
#include "kernels/core/error.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using namespace gcnpart::datasets;
using gcnpart::testing::message_of;

namespace {
void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb9");
  REQUIRE(f != nullptr);
  REQUIRE(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())) == static_cast<int>(bytes.size()));
  REQUIRE(gzclose(f) == Z_OK);
}

std::vector<std::string> all_lines(const std::string& path, std::size_t buffer = TextReader::kDefaultBufferBytes) {
  TextReader r(path, buffer);
  std::vector<std::string> out;
  std::string_view line;
  while (r.next_line(line)) {
    out.emplace_back(line);
    CHECK(r.line_number() == static_cast<std::int64_t>(out.size()));
  }
  return out;
}
}  // namespace

TEST_CASE("text reader returns every line, strips CR, keeps empty lines and a last line without a newline") {
  gcnpart::testing::TempDir tmp;
  write_file(tmp.file("a.txt"), "first\r\n\nthird line\nlast");
  CHECK(all_lines(tmp.file("a.txt")) == std::vector<std::string>{"first", "", "third line", "last"});
  write_file(tmp.file("empty.txt"), "");
  CHECK(all_lines(tmp.file("empty.txt")).empty());
  write_file(tmp.file("one.txt"), "\n");
  CHECK(all_lines(tmp.file("one.txt")) == std::vector<std::string>{""});
}

TEST_CASE("text reader reads gzip and plain files alike and reports which one it read") {
  gcnpart::testing::TempDir tmp;
  std::string text;
  for (int i = 0; i < 20000; ++i) text += std::to_string(i) + "\t" + std::to_string(i * 31 % 977) + "\n";
  write_file(tmp.file("p.txt"), text);
  write_gz(tmp.file("p.txt.gz"), text);
  const auto plain = all_lines(tmp.file("p.txt"));
  const auto gz = all_lines(tmp.file("p.txt.gz"));
  CHECK(plain.size() == 20000);
  CHECK(plain == gz);
  CHECK_FALSE(TextReader(tmp.file("p.txt")).compressed());
  TextReader z(tmp.file("p.txt.gz"));
  CHECK(z.compressed());
  CHECK(z.size_bound() == z.file_bytes() * 1032);
}

TEST_CASE("text reader handles lines longer than its buffer and lines split across refills") {
  gcnpart::testing::TempDir tmp;
  const std::string long_line(50000, 'x');
  std::string text = "short\n" + long_line + "\n";
  for (int i = 0; i < 3000; ++i) text += "line " + std::to_string(i) + "\n";
  write_file(tmp.file("long.txt"), text);
  const auto lines = all_lines(tmp.file("long.txt"), 4096);
  REQUIRE(lines.size() == 3002);
  CHECK(lines[1] == long_line);
  CHECK(lines[2] == "line 0");
  CHECK(lines.back() == "line 2999");
  TextReader r(tmp.file("long.txt"), 4096);
  std::string_view l;
  while (r.next_line(l)) {
  }
  CHECK(r.bytes_consumed() == static_cast<std::int64_t>(text.size()));
}

TEST_CASE("text reader raises IoError for a missing file and for a directory") {
  gcnpart::testing::TempDir tmp;
  const std::string msg = message_of<IoError>([&] { TextReader r(tmp.file("nope.txt")); });
  CHECK_MESSAGE_HAS(msg, "nope.txt");
  CHECK_MESSAGE_HAS(msg, "no such file");
  CHECK_MESSAGE_HAS(message_of<IoError>([&] { TextReader r(tmp.path.string()); }), "directory");
}

TEST_CASE("text reader refuses a truncated gzip stream instead of stopping silently") {
  const std::string path = gcnpart::testing::test_data("snap/truncated.txt.gz");
  const std::string msg = message_of<InvalidInput>([&] {
    TextReader r(path);
    std::string_view l;
    while (r.next_line(l)) {
    }
  });
  CHECK_MESSAGE_HAS(msg, "truncated.txt.gz:");
  CHECK_MESSAGE_HAS(msg, "unexpected end of compressed data");
}

TEST_CASE("text reader refuses corrupt gzip data") {
  const std::string msg = message_of<InvalidInput>([&] {
    TextReader r(gcnpart::testing::test_data("snap/corrupt.txt.gz"));
    std::string_view l;
    while (r.next_line(l)) {
    }
  });
  CHECK_MESSAGE_HAS(msg, "corrupt.txt.gz:");
  CHECK_MESSAGE_HAS(msg, "corrupt compressed data");
}

TEST_CASE("line cursor parses integers and floats and reports the 1-based column of a bad token") {
  gcnpart::testing::TempDir tmp;
  write_file(tmp.file("c.txt"), "  12\t-7 1e-50 1e-400 2.5\n3,4.5,,x\n1e39 1e400\n");
  TextReader r(tmp.file("c.txt"));
  std::string_view line;
  REQUIRE(r.next_line(line));
  LineCursor c(r, line);
  CHECK(c.read_int("int") == 12);
  CHECK(c.read_int("int") == -7);
  // Underflow reads as zero, not as an error: below float32's range, then below double's.
  c.skip_blanks();
  CHECK(c.read_float_here("num", LineCursor::kBlank) == 0.0f);
  CHECK(std::fabs(c.read_double("num")) < 1e-300);
  c.skip_blanks();
  CHECK(c.read_float_here("num", LineCursor::kBlank) == 2.5f);
  CHECK(c.at_end());

  REQUIRE(r.next_line(line));
  LineCursor d(r, line);
  CHECK(d.read_int_here("int", ',') == 3);
  d.expect_separator(',', "','");
  CHECK(d.read_float_here("num", ',') == 4.5f);
  d.expect_separator(',', "','");
  std::string msg = message_of<InvalidInput>([&] { d.read_int_here("a count", ','); });
  CHECK_MESSAGE_HAS(msg, "c.txt:2:7: empty field");
  d.expect_separator(',', "','");
  msg = message_of<InvalidInput>([&] { d.read_int_here("a count", ','); });
  CHECK_MESSAGE_HAS(msg, "c.txt:2:8: bad integer: got 'x', expected a count");

  REQUIRE(r.next_line(line));
  LineCursor e(r, line);
  msg = message_of<InvalidInput>([&] { e.read_float_here("a float", LineCursor::kBlank); });
  CHECK_MESSAGE_HAS(msg, "c.txt:3:1: number out of float32 range: got '1e39'");
  LineCursor f(r, line.substr(5));
  msg = message_of<InvalidInput>([&] { f.read_double("a number"); });
  CHECK_MESSAGE_HAS(msg, "number out of range: got '1e400'");
}
