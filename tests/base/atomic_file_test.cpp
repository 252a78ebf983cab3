#include "base/atomic_file.hpp"

#include <doctest/doctest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/error.hpp"
#include "test_support.hpp"

using namespace gcnpart;

namespace {
std::string slurp(const std::string& p) {
  std::ifstream f(p);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("an AtomicFile that is not committed leaves the old file intact and no temporary behind") {
  testing::TempDir dir;
  const auto target = dir.file("out.txt");
  write_file_atomic(target, "old");
  {
    AtomicFile f(target);
    f.write("new but abandoned");
  }
  CHECK(slurp(target) == "old");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    (void)entry;
    ++files;
  }
  CHECK(files == 1);
}

TEST_CASE("a committed AtomicFile replaces the target") {
  testing::TempDir dir;
  const auto target = dir.file("out.txt");
  write_file_atomic(target, "old");
  write_file_atomic(target, "new");
  CHECK(slurp(target) == "new");
}

TEST_CASE("an output of the longest legal name (255 bytes) is written atomically, leaving nothing beside it") {
  testing::TempDir dir;
  const std::string name(255, 'n');
  const auto target = dir.file(name);
  write_file_atomic(target, "old");
  {
    AtomicFile f(target);  // its lock and temporary take a hashed sibling name: name + ".lock" is 260 bytes
    f.write("abandoned");
  }
  write_file_atomic(target, "new");
  CHECK(slurp(target) == "new");
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    (void)entry;
    ++files;
  }
  CHECK(files == 1);
}

TEST_CASE("AtomicFile in a missing directory throws IoError naming the path") {
  CHECK_THROWS_AS(AtomicFile("/nonexistent-dir-gcnpart/x.txt"), IoError);
}

// ------------------------------------------------------------------------------------------------ advisory lock

namespace {
bool exists(const std::string& p) { return std::filesystem::exists(p); }
}  // namespace

TEST_CASE("a second AtomicFile on the same target is refused while the first writes, naming the writer's pid") {
  testing::TempDir dir;
  const auto target = dir.file("out.gcsr");
  write_file_atomic(target, "old");
  {
    AtomicFile first(target);
    first.write("first ");
    CHECK(exists(target + ".lock"));
    CHECK(slurp(target + ".lock") == std::to_string(::getpid()) + "\n");
    std::string msg;
    try {
      AtomicFile second(target);
      second.write("second");
      second.commit();
    } catch (const IoError& e) {
      msg = e.what();
    }
    CHECK_MESSAGE(msg.find(target + ": is being written by another gcnpart process (pid " +
                           std::to_string(::getpid()) + ",") != std::string::npos,
                  "message: " << msg);
    first.write("writer");
    first.commit();
  }
  CHECK(slurp(target) == "first writer");
  CHECK_FALSE(exists(target + ".lock"));
  CHECK_NOTHROW(write_file_atomic(target, "next"));  // released on commit
  CHECK(slurp(target) == "next");
}

TEST_CASE("an abandoned AtomicFile releases its lock and removes the lock file") {
  testing::TempDir dir;
  const auto target = dir.file("plan.json");
  { AtomicFile f(target); }
  CHECK_FALSE(exists(target + ".lock"));
  { AtomicFile f(target); }  // would throw if the first still held the lock
  CHECK_FALSE(exists(target));
  // Different targets in one directory do not conflict.
  AtomicFile a(dir.file("a.txt"));
  AtomicFile b(dir.file("b.txt"));
  a.commit();
  b.commit();
}

TEST_CASE("another process writing the target is refused by name, and a writer killed mid-way leaves no lock held") {
  testing::TempDir dir;
  const auto target = dir.file("report.json");
  write_file_atomic(target, "old");
  int ready[2], go[2];
  REQUIRE(::pipe(ready) == 0);
  REQUIRE(::pipe(go) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // Child: hold the lock until told to continue, then commit (or be killed first).
    char c = 'e';
    try {
      AtomicFile f(target);
      f.write("child");
      c = 'r';
      if (::write(ready[1], &c, 1) != 1 || ::read(go[0], &c, 1) != 1) ::_exit(2);
      f.commit();
    } catch (...) {
      if (c == 'e' && ::write(ready[1], &c, 1) != 1) ::_exit(3);  // unblock the parent
      ::_exit(1);
    }
    ::_exit(0);
  }
  char c = 0;
  REQUIRE(::read(ready[0], &c, 1) == 1);
  REQUIRE(c == 'r');
  std::string msg;
  try {
    AtomicFile f(target);
  } catch (const IoError& e) {
    msg = e.what();
  }
  CHECK_MESSAGE(msg.find("is being written by another gcnpart process (pid " + std::to_string(child) + ",") !=
                    std::string::npos,
                "message: " << msg);
  CHECK(::write(go[1], &c, 1) == 1);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(slurp(target) == "child");
  CHECK_FALSE(exists(target + ".lock"));

  // A writer killed with SIGKILL leaves its lock file behind but the kernel drops the lock with the process.
  const pid_t victim = ::fork();
  REQUIRE(victim >= 0);
  if (victim == 0) {
    char r = 'e';
    try {
      AtomicFile f(target);
      f.write("never committed");
      r = 'r';
      if (::write(ready[1], &r, 1) != 1) ::_exit(2);
      for (;;) ::pause();
    } catch (...) {
      if (::write(ready[1], &r, 1) != 1) ::_exit(3);
      ::_exit(1);
    }
  }
  REQUIRE(::read(ready[0], &c, 1) == 1);
  REQUIRE(c == 'r');
  ::kill(victim, SIGKILL);
  REQUIRE(::waitpid(victim, &status, 0) == victim);
  CHECK(exists(target + ".lock"));
  CHECK(slurp(target) == "child");
  CHECK_NOTHROW(write_file_atomic(target, "after the crash"));
  CHECK(slurp(target) == "after the crash");
  CHECK_FALSE(exists(target + ".lock"));
  for (int fd : {ready[0], ready[1], go[0], go[1]}) ::close(fd);
}

// ---- issue 18: what an output path names is respected

TEST_CASE("an output through a symbolic link replaces the file it points to and keeps the link") {
  testing::TempDir dir;
  const auto target = dir.file("real.json"), link = dir.file("link.json");
  write_file_atomic(target, "old");
  std::filesystem::create_symlink("real.json", link);
  write_file_atomic(link, "new");
  CHECK(std::filesystem::is_symlink(link));
  CHECK(slurp(target) == "new");
  const auto dangling = dir.file("dangling.json");
  std::filesystem::create_symlink("made-by-write.json", dangling);
  write_file_atomic(dangling, "created");
  CHECK(std::filesystem::is_symlink(dangling));
  CHECK(slurp(dir.file("made-by-write.json")) == "created");
}

TEST_CASE("a device, a FIFO or an inherited descriptor is written in place; a folder is refused") {
  {
    AtomicFile f("/dev/null");
    CHECK(f.in_place());
    f.write("discarded");
    f.commit();
  }
  CHECK(std::filesystem::is_character_file("/dev/null"));
  CHECK_THROWS_WITH_AS(write_file_atomic("/dev/full", "x"), doctest::Contains("No space left"), IoError);
  testing::TempDir dir;
  const auto fifo = dir.file("out.fifo");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::string got;
  std::thread reader([&] { got = slurp(fifo); });
  write_file_atomic(fifo, "through the pipe");
  reader.join();
  CHECK(got == "through the pipe");
  CHECK(std::filesystem::is_fifo(fifo));
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  write_file_atomic("/dev/fd/" + std::to_string(fds[1]), "by descriptor");
  ::close(fds[1]);
  char buf[64] = {};
  CHECK(std::string(buf, static_cast<std::size_t>(::read(fds[0], buf, sizeof buf))) == "by descriptor");
  ::close(fds[0]);
  CHECK_THROWS_WITH_AS(write_file_atomic(dir.path.string(), "x"), doctest::Contains("is a directory"), IoError);
}

TEST_CASE("check_output_path names the option and the reason before any work") {
  testing::TempDir dir;
  check_output_path("-", "--json");
  check_output_path(dir.file("new.json"), "--json");
  check_output_path("/dev/null", "--json");
  CHECK_THROWS_WITH_AS(check_output_path(dir.path.string(), "--json"),
                       doctest::Contains(doctest::String((dir.path.string() + ": is a directory").c_str())), IoError);
  CHECK_THROWS_WITH_AS(check_output_path(dir.file("missing/x.json"), "--html"),
                       doctest::Contains("does not exist"), IoError);
  check_output_folder(dir.file("a/b/c"), "--checkpoint");
  write_file_atomic(dir.file("plain"), "x");
  CHECK_THROWS_WITH_AS(check_output_folder(dir.file("plain"), "--checkpoint"),
                       doctest::Contains("exists and is not a folder"), IoError);
}

TEST_CASE("temporaries of a dead writer are removed by the next writer; pending ones by the signal-safe cleanup") {
  testing::TempDir dir;
  const auto target = dir.file("out.gcsr");
  // A writer killed by SIGKILL: its pid is gone (a child that already exited), its temporary stays.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);
  const auto stale = target + ".tmp." + std::to_string(child);
  write_file_atomic(stale, "half a file");
  const auto live = target + ".tmp.1";  // pid 1 is alive: not ours to remove
  write_file_atomic(live, "someone else's");
  write_file_atomic(target, "complete");
  CHECK_FALSE(std::filesystem::exists(stale));
  CHECK(std::filesystem::exists(live));
  CHECK(slurp(target) == "complete");
  {
    AtomicFile f(dir.file("pending.bin"));
    f.write("unfinished");
    remove_pending_temporaries();  // what the SIGINT / SIGTERM handler does before _exit
    int left = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir.path))
      left += e.path().filename().string().rfind("pending.bin", 0) == 0;
    CHECK(left == 0);
  }
}

TEST_CASE("escape_text shows control bytes, invalid UTF-8 and a byte-order mark, and keeps valid UTF-8") {
  CHECK(escape_text("plain text") == "plain text");
  CHECK(escape_text(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(escape_text("\x1b[31mred") == "\\x1b[31mred");
  CHECK(escape_text("\xEF\xBB\xBF%%MatrixMarket") == "\\xef\\xbb\\xbf%%MatrixMarket");
  CHECK(escape_text("caf\xC3\xA9 \xE2\x82\xAC") == "caf\xC3\xA9 \xE2\x82\xAC");
  CHECK(escape_text("\xFF\xFE") == "\\xff\\xfe");
  CHECK(escape_text("\xC2\x9B") == "\\xc2\\x9b");  // C1 CSI
  const InvalidInput e(InputLocation{"f\x1b.txt", 1, 2}, "bad", std::string("x\0y", 3), "z");
  CHECK(std::string(e.what()) == "f\\x1b.txt:1:2: bad: got 'x\\x00y', expected z");
}

TEST_CASE("a claimed folder is refused to a second claimer, naming the holder, and free again once released") {
  testing::TempDir dir;
  {
    FolderClaim first(dir.path, "checkpoints");
    try {
      FolderClaim second(dir.path, "checkpoints");
      FAIL("expected IoError");
    } catch (const IoError& e) {
      const std::string msg = e.what();
      CHECK(msg.find("checkpoints") != std::string::npos);
      CHECK(msg.find("pid " + std::to_string(::getpid())) != std::string::npos);
    }
  }
  { FolderClaim again(dir.path, "checkpoints"); }
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path)) {
    (void)entry;
    ++files;
  }
  CHECK(files == 0);  // nothing left behind
}
