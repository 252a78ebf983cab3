#include "datasets/text_reader.hpp"

#include <doctest/doctest.h>
#include <zlib.h>

#include <sys/stat.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <thread>
#include <string>
#include <vector>

#include "datasets/error_matchers.hpp"
#include "base/error.hpp"
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

// ---- issue 18: byte-order marks, concatenated and trailing gzip data, pipes

TEST_CASE("a UTF-8 byte-order mark at the start is skipped, one later in the file is kept") {
  testing::TempDir dir;
  const auto path = dir.file("bom.txt");
  write_file(path, "\xEF\xBB\xBF" "0 1\n\xEF\xBB\xBF" "2 3\n");
  const auto lines = all_lines(path);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0] == "0 1");
  CHECK(lines[1] == "\xEF\xBB\xBF" "2 3");
  const auto gz = dir.file("bom.txt.gz");
  write_gz(gz, "\xEF\xBB\xBF" "4 5\n");
  CHECK(all_lines(gz) == std::vector<std::string>{"4 5"});
}

TEST_CASE("concatenated gzip members read as one stream; anything else after the stream is refused with its offset") {
  testing::TempDir dir;
  const auto a = dir.file("a.gz"), b = dir.file("b.gz"), both = dir.file("both.txt.gz");
  write_gz(a, "0 1\n");
  write_gz(b, "1 2\n");
  std::ifstream ia(a, std::ios::binary), ib(b, std::ios::binary);
  std::string first((std::istreambuf_iterator<char>(ia)), {}), second((std::istreambuf_iterator<char>(ib)), {});
  write_file(both, first + second);
  CHECK(all_lines(both) == std::vector<std::string>{"0 1", "1 2"});
  for (const std::string& tail : {std::string("garbage"), std::string(8, '\0'), std::string("\x1f")}) {
    const auto bad = dir.file("tail.txt.gz");
    write_file(bad, first + tail);
    const std::string msg = message_of<InvalidInput>([&] { (void)all_lines(bad); });
    CHECK(testing::contains(msg, "data after the end of the gzip stream at byte " + std::to_string(first.size())));
  }
}

TEST_CASE("a FIFO is read as a stream with an unknown size") {
  testing::TempDir dir;
  const auto fifo = dir.file("edges.fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::thread writer([&] {
    std::ofstream out(fifo, std::ios::binary);
    for (int i = 0; i < 20000; ++i) out << i << ' ' << i + 1 << '\n';
  });
  TextReader r(fifo, 4096);
  CHECK(r.file_bytes() == -1);
  CHECK_FALSE(r.regular());
  CHECK(r.size_bound() == std::numeric_limits<std::int64_t>::max());
  std::string_view line;
  std::int64_t n = 0;
  std::string last;
  while (r.next_line(line)) {
    ++n;
    last = std::string(line);
  }
  writer.join();
  CHECK(n == 20000);
  CHECK(last == "19999 20000");
}

TEST_CASE("a line beyond kMaxLineBytes is refused without growing the buffer past it") {
  testing::TempDir dir;
  const auto path = dir.file("long.txt.gz");
  write_gz(path, std::string(TextReader::kMaxLineBytes + 10, '7'));
  const std::string msg = message_of<InvalidInput>([&] { (void)all_lines(path); });
  CHECK(testing::contains(msg, "line too long"));
}
