#include "datasets/dataset_path.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "base/error.hpp"
#include "test_support.hpp"

using namespace gcnpart;
using gcnpart::datasets::resolve_dataset_path;

namespace {
void touch(const std::string& path) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << "x";
}
}  // namespace

TEST_CASE("a dataset name is found in the data folder, with or without its ending and one folder down") {
  gcnpart::testing::TempDir dir;
  std::filesystem::create_directories(dir.file("cora/raw"));
  touch(dir.file("snap/email-Enron.txt.gz"));
  touch(dir.file("rmat16.gcsr"));
  CHECK(resolve_dataset_path("cora", dir.path.string()) == dir.file("cora"));
  CHECK(resolve_dataset_path("rmat16", dir.path.string()) == dir.file("rmat16.gcsr"));
  CHECK(resolve_dataset_path("email-Enron", dir.path.string()) == dir.file("snap/email-Enron.txt.gz"));
  CHECK(resolve_dataset_path("email-Enron.txt.gz", dir.path.string()) == dir.file("snap/email-Enron.txt.gz"));
  // demo and paths that exist are not looked up
  CHECK(resolve_dataset_path("demo", dir.path.string()) == "demo");
  CHECK(resolve_dataset_path(dir.file("rmat16.gcsr"), "") == dir.file("rmat16.gcsr"));
}

TEST_CASE("an unknown, ambiguous or empty dataset name says where it looked or what matched") {
  gcnpart::testing::TempDir dir;
  touch(dir.file("a/g.graph"));
  touch(dir.file("b/g.mtx"));
  const std::string where = "no dataset of that name in the data folder " + dir.path.string();
  CHECK_THROWS_WITH_AS(resolve_dataset_path("nope", dir.path.string()), doctest::Contains(where.c_str()), IoError);
  CHECK_THROWS_WITH_AS(resolve_dataset_path("nope", ""), doctest::Contains("set GCNPART_DATA (or --data-dir)"),
                       IoError);
  CHECK_THROWS_WITH_AS(resolve_dataset_path("g", dir.path.string()), doctest::Contains("it matches 2"), InvalidInput);
  CHECK(resolve_dataset_path("sub/nope", dir.path.string()) == "sub/nope");  // a path: the loader reports it
  CHECK_THROWS_AS(resolve_dataset_path("", dir.path.string()), InvalidInput);
  CHECK_THROWS_WITH_AS(resolve_dataset_path("x", dir.file("missing")), doctest::Contains("is not a folder"), IoError);
}

TEST_CASE("dataset names match case-insensitively, and a near miss is offered as 'did you mean'") {
  gcnpart::testing::TempDir dir;
  std::filesystem::create_directories(dir.file("cora/raw"));
  touch(dir.file("snap/email-Enron.txt.gz"));
  CHECK(resolve_dataset_path("Cora", dir.path.string()) == dir.file("cora"));  // PyG's spelling
  CHECK(resolve_dataset_path("EMAIL-ENRON", dir.path.string()) == dir.file("snap/email-Enron.txt.gz"));
  CHECK_THROWS_WITH_AS(resolve_dataset_path("coar", dir.path.string()), doctest::Contains("did you mean 'cora'?"),
                       IoError);
  CHECK_THROWS_WITH_AS(resolve_dataset_path("email-enorn", dir.path.string()),
                       doctest::Contains("did you mean 'email-Enron'?"), IoError);
  // Nothing near: no suggestion.
  try {
    (void)resolve_dataset_path("xyzzy", dir.path.string());
    FAIL("xyzzy resolved");
  } catch (const IoError& e) {
    CHECK(std::string(e.what()).find("did you mean") == std::string::npos);
  }
}
