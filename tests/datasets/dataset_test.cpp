#include "datasets/dataset.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "datasets/error_matchers.hpp"
#include "base/error.hpp"

using namespace gcnpart;
using namespace gcnpart::datasets;
using gcnpart::testing::message_of;

namespace {
/// A path 0-1-2-3 with 2 features, 2 classes, a split of each kind.
Dataset path4() {
  Dataset ds;
  ds.name = "path4";
  EdgeList e;
  e.num_nodes = 4;
  e.src = {0, 1, 2};
  e.dst = {1, 2, 3};
  ds.graph = build_csr(e);
  ds.num_features = 2;
  ds.features = {0, 1, 1, 0, 0.5f, 0.5f, -1, 2};
  ds.labels = {0, 1, 1, -1};
  ds.num_classes = 2;
  ds.splits = {{"train", {0}}, {"valid", {1}}, {"test", {2}}};
  return ds;
}
}  // namespace

TEST_CASE("a consistent dataset validates and its splits are found by name") {
  const Dataset ds = path4();
  CHECK_NOTHROW(ds.validate());
  CHECK(ds.split("train") == std::vector<NodeId>{0});
  CHECK(ds.split("test") == std::vector<NodeId>{2});
}

TEST_CASE("asking for a missing split names it and lists the available ones") {
  const Dataset ds = path4();
  const std::string msg = message_of<InvalidInput>([&] { (void)ds.split("val"); });
  CHECK_MESSAGE_HAS(msg, "dataset path4");
  CHECK_MESSAGE_HAS(msg, "got 'val'");
  CHECK_MESSAGE_HAS(msg, "one of: test, train, valid");
  Dataset none;
  CHECK_MESSAGE_HAS(message_of<InvalidInput>([&] { (void)none.split("train"); }), "has none");
}

TEST_CASE("validate names the node and column of a NaN or infinite feature") {
  Dataset ds = path4();
  ds.features[5] = std::numeric_limits<float>::quiet_NaN();
  std::string msg = message_of<InvalidInput>([&] { ds.validate(); });
  CHECK_MESSAGE_HAS(msg, "features node 2 column 1");
  CHECK_MESSAGE_HAS(msg, "nan");
  ds = path4();
  ds.features[0] = std::numeric_limits<float>::infinity();
  msg = message_of<InvalidInput>([&] { ds.validate(); });
  CHECK_MESSAGE_HAS(msg, "features node 0 column 0");
}

TEST_CASE("validate refuses labels outside -1..classes-1, split ids out of range and unlabelled split nodes") {
  Dataset ds = path4();
  ds.labels[2] = 2;
  CHECK_MESSAGE_HAS(message_of<InvalidInput>([&] { ds.validate(); }), "labels[2]: label out of range: got '2'");
  ds = path4();
  ds.labels[2] = -2;
  CHECK_MESSAGE_HAS(message_of<InvalidInput>([&] { ds.validate(); }), "got '-2'");
  ds = path4();
  ds.splits["test"] = {2, 4};
  std::string msg = message_of<InvalidInput>([&] { ds.validate(); });
  CHECK_MESSAGE_HAS(msg, "split test[1]: node id out of range: got '4', expected 0..3");
  ds = path4();
  ds.splits["train"] = {3};
  msg = message_of<InvalidInput>([&] { ds.validate(); });
  CHECK_MESSAGE_HAS(msg, "unlabelled node in a split: got '3'");
}

TEST_CASE("validate refuses arrays whose sizes disagree with the graph") {
  Dataset ds = path4();
  ds.features.pop_back();
  CHECK_MESSAGE_HAS(message_of<InvalidInput>([&] { ds.validate(); }), "feature array size: got '7'");
  ds = path4();
  ds.labels.push_back(0);
  CHECK_MESSAGE_HAS(message_of<InvalidInput>([&] { ds.validate(); }), "label count: got '5'");
  ds = path4();
  ds.num_classes = 0;
  CHECK_MESSAGE_HAS(message_of<InvalidInput>([&] { ds.validate(); }), "no classes");
  ds = path4();
  ds.graph.col_ids[0] = 9;
  CHECK_THROWS_AS(ds.validate(), InvalidInput);
}
