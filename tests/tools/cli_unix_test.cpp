// The gcnpart binary as a Unix tool: DATA by name or given explicitly (never a silent demo), --version, install.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

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
  REQUIRE(run("-q generate sbm --nodes 2000 --classes 2 --features 4 -o " + folder + "/graphs/tiny.gcsr").status == 0);
  const auto by_flag = run("-q info tiny --data-dir " + folder);
  INFO(by_flag.output);
  CHECK(by_flag.status == 0);
  CHECK(by_flag.output.find("2,000") != std::string::npos);
  const auto by_env = run("-q info tiny", "GCNPART_DATA=" + folder);
  INFO(by_env.output);
  CHECK(by_env.status == 0);
  const auto missing = run("-q info nosuch", "GCNPART_DATA=" + folder);
  INFO(missing.output);
  CHECK(missing.status == 4);
  CHECK(missing.output.find("no dataset of that name in the data folder " + folder) != std::string::npos);
  // Unset: the user's data folder ($XDG_DATA_HOME/gcnpart/datasets, ~/.local/share/gcnpart/datasets) when it exists,
  // else the datasets folder next to the checkout the build came from, else a message that says to set one.
  const auto unset = run("-q info nosuch", "GCNPART_DATA= XDG_DATA_HOME=" + folder + "/xdg-none HOME=" + folder);
  INFO(unset.output);
  CHECK(unset.status == 4);
  CHECK((unset.output.find("set GCNPART_DATA") != std::string::npos ||
         unset.output.find("no dataset of that name in the data folder") != std::string::npos));
  std::filesystem::create_directories(folder + "/home/.local/share/gcnpart/datasets");
  std::filesystem::copy_file(folder + "/graphs/tiny.gcsr", folder + "/home/.local/share/gcnpart/datasets/tiny.gcsr");
  const auto by_home = run("-q info tiny", "GCNPART_DATA= XDG_DATA_HOME= HOME=" + folder + "/home");
  INFO(by_home.output);
  CHECK(by_home.status == 0);
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

TEST_CASE("compare labels its columns, rounds halo/dev, skips pipeline at K > layers with a line and says CPU "
          "devices share the cores") {
  gcnpart::testing::TempDir dir;
  const std::string json = dir.file("c.json");
  const auto r = run("-q --threads 2 compare demo --parts 2,3 --layers 2 --strategies halo,gather,pipeline "
                     "--measure-epochs 2 --json " + json);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("sent/ep all") != std::string::npos);
  CHECK(r.output.find("sent/ep all = bytes all devices send per epoch") != std::string::npos);
  CHECK(r.output.find("gather: repl counts the rows a device computes") != std::string::npos);
  CHECK(r.output.find("gather_table") != std::string::npos);
  // The table itself says the K CPU devices share the cores: a line above the column headings, and the column.
  const auto note = r.output.find("epoch ms on cpu: the K virtual CPU devices are K threads sharing");
  const auto headings = r.output.find("epoch ms (min-max) shared");
  CHECK(note != std::string::npos);
  CHECK(headings != std::string::npos);
  CHECK(note < headings);
  // pipeline on 3 devices for 2 layers: a skipped line in the table and a skipped row in the JSON
  CHECK(r.output.find("skipped: 3 stages for 2 layers") != std::string::npos);
  std::ifstream in(json);
  const auto j = nlohmann::json::parse(in);
  bool skipped_row = false, pipeline_ran = false;
  for (const auto& row : j["rows"]) {
    if (row["strategy"] != "pipeline") continue;
    if (row["parts"] == 3) skipped_row = row.value("status", "") == "skipped";
    if (row["parts"] == 2) pipeline_ran = !row.contains("status");
  }
  CHECK(skipped_row);
  CHECK(pipeline_ran);
  // halo/dev of the halo row on 2 devices: the mean halo, rounded (not truncated)
  for (const auto& row : j["rows"]) {
    if (row["strategy"] != "halo" || row["parts"] != 2) continue;
    double halo = 0;
    for (std::size_t d = 0; d < 2; ++d)
      halo += row["metrics"]["local_nodes"][d].get<double>() - row["metrics"]["inner_nodes"][d].get<double>();
    std::string expected = std::to_string(std::llround(halo / 2));
    for (int at = static_cast<int>(expected.size()) - 3; at > 0; at -= 3) expected.insert(at, ",");
    std::istringstream lines(r.output);
    std::string line;
    bool found = false;
    while (std::getline(lines, line)) {
      std::istringstream cells(line);
      std::vector<std::string> c;
      for (std::string t; cells >> t;) c.push_back(t);
      if (c.size() > 7 && c[0] == "halo" && c[1] == "2") {
        found = true;
        CHECK(c[7] == expected);
      }
    }
    CHECK(found);
  }
}

TEST_CASE("compare --help names the pipeline rows and says --imbalance is a target METIS can exceed") {
  const auto r = run("compare --help");
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("pipeline runs where K <= layers") != std::string::npos);
  CHECK(r.output.find("'skipped'") != std::string::npos);
  CHECK(r.output.find("not a bound") != std::string::npos);
  CHECK(r.output.find("one node's weight") != std::string::npos);
  CHECK(r.output.find("--data-dir") != std::string::npos);
}

TEST_CASE("a mistyped option is named with the nearest one and the subcommand's help") {
  const auto epoch = run("-q train demo --epoch 3");
  INFO(epoch.output);
  CHECK(epoch.status == 2);
  CHECK(epoch.output.find("unknown option --epoch (did you mean --epochs?); see gcnpart train --help") !=
        std::string::npos);
  const auto nodes = run("-q fit --nodez 5");
  CHECK(nodes.status == 2);
  CHECK(nodes.output.find("did you mean --nodes?") != std::string::npos);
  const auto far = run("-q train demo --completely-unknown 1");
  CHECK(far.status == 2);
  CHECK(far.output.find("unknown option --completely-unknown; see gcnpart train --help") != std::string::npos);
}
