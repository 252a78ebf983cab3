#include "kernels/core/atomic_file.hpp"

#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kernels/core/error.hpp"
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
