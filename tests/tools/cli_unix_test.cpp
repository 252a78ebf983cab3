// The gcnpart binary as a Unix tool: DATA by name or given explicitly (never a silent demo), --version, install.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

#include "test_support.hpp"

namespace {

struct Result {
  int status = -1;
  std::string output;  ///< stdout and stderr together
};

Result run(const std::string& args, const std::string& env = "") {
  const std::string command = env + " " + GCNPART_CLI + " " + args + " 2>&1";
  INFO(command);
  Result r;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), buf.size(), pipe) != nullptr) r.output += buf.data();
  const int raw = pclose(pipe);
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return r;
}

}  // namespace

TEST_CASE("train, compare and info without DATA are usage errors, not a run on the demo") {
  for (const char* cmd : {"train --epochs 1", "compare", "info"}) {
    const auto r = run(std::string("-q ") + cmd);
    INFO(cmd, r.output);
    CHECK(r.status == 2);
    CHECK(r.output.find("DATA is required") != std::string::npos);
  }
  const auto fit = run("-q fit --card h200");
  INFO(fit.output);
  CHECK(fit.status == 3);
  CHECK(fit.output.find("'demo'") != std::string::npos);
}

TEST_CASE("a dataset name is looked up in --data-dir, else in GCNPART_DATA, and a wrong one says where it looked") {
  gcnpart::testing::TempDir dir;
  const std::string folder = dir.file("data");
  std::filesystem::create_directories(folder + "/graphs");
  REQUIRE(run("-q generate sbm --nodes 200 --classes 2 --features 4 -o " + folder + "/graphs/tiny.gcsr").status == 0);
  const auto by_flag = run("-q info tiny --data-dir " + folder);
  INFO(by_flag.output);
  CHECK(by_flag.status == 0);
  CHECK(by_flag.output.find("200") != std::string::npos);
  const auto by_env = run("-q info tiny", "GCNPART_DATA=" + folder);
  INFO(by_env.output);
  CHECK(by_env.status == 0);
  const auto missing = run("-q info nosuch", "GCNPART_DATA=" + folder);
  INFO(missing.output);
  CHECK(missing.status == 4);
  CHECK(missing.output.find("no dataset of that name in the data folder " + folder) != std::string::npos);
  const auto unset = run("-q info nosuch", "GCNPART_DATA=");
  CHECK(unset.status == 4);
  CHECK(unset.output.find("set GCNPART_DATA") != std::string::npos);
}

TEST_CASE("--version names the commit and whether the build has CUDA") {
  const auto r = run("--version");
  CHECK(r.status == 0);
  CHECK(r.output.find("gcnpart 0.1.0 (commit ") == 0);
  CHECK(r.output.find(GCNPART_HAVE_CUDA ? "CPU and CUDA" : "CPU only: built without CUDA") != std::string::npos);
}

TEST_CASE("cmake --install puts a gcnpart that runs into PREFIX/bin") {
  gcnpart::testing::TempDir dir;
  const std::string command = std::string("cmake --install ") + GCNPART_BUILD_DIR + " --prefix " + dir.file("p") +
                              " >/dev/null 2>&1 && " + dir.file("p/bin/gcnpart") + " --version >/dev/null";
  INFO(command);
  CHECK(std::system(command.c_str()) == 0);
}
