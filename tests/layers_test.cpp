// The layers of the source tree: which folder's files may include which folder's headers. kLayers is the one table;
// docs/architecture.md draws it ("The layers, one page") and the second test checks the drawing against it.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// One layer: the folder it holds (a file belongs to the layer of the longest folder that prefixes its path) and
/// the layers below it whose headers it may include (its own always).
struct Layer {
  std::string_view name;
  std::string_view folder;
  std::vector<std::string_view> may_include;
};

// Top to bottom. A change here is a change of the architecture: redraw docs/architecture.md's picture with it.
const std::vector<Layer> kLayers = {
    {"tools", "tools/", {"bench", "engine", "fit", "partition", "datasets", "kernels", "base"}},
    {"bench", "bench/", {"engine", "partition", "datasets", "kernels", "base"}},
    {"engine", "engine/", {"partition", "datasets", "kernels", "base"}},
    {"fit", "partition/fit/", {"partition", "datasets", "base"}},
    {"partition", "partition/", {"datasets", "base"}},
    {"datasets", "datasets/", {"base"}},
    {"kernels", "kernels/", {"base"}},
    {"base", "base/", {}},
};

/// The layer of a path relative to the source root ("partition/fit/advise.hpp" -> fit), or null.
const Layer* layer_of(std::string_view path) {
  const Layer* best = nullptr;
  for (const auto& l : kLayers)
    if (path.substr(0, l.folder.size()) == l.folder && (!best || l.folder.size() > best->folder.size())) best = &l;
  return best;
}

bool may_include(const Layer& from, const Layer& to) {
  return from.name == to.name ||
         std::find(from.may_include.begin(), from.may_include.end(), to.name) != from.may_include.end();
}

/// The quoted header of an `#include "..."` line, or empty.
std::string quoted_include(const std::string& line) {
  const auto first = line.find_first_not_of(" \t");
  if (first == std::string::npos || line.compare(first, 1, "#") != 0) return {};
  const auto directive = line.find_first_not_of(" \t", first + 1);
  if (directive == std::string::npos || line.compare(directive, 7, "include") != 0) return {};
  const auto open = line.find('"', directive + 7);
  if (open == std::string::npos) return {};
  const auto close = line.find('"', open + 1);
  return close == std::string::npos ? std::string() : line.substr(open + 1, close - open - 1);
}

std::string trim(std::string s) {
  const auto b = s.find_first_not_of(" `");
  const auto e = s.find_last_not_of(" `");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

}  // namespace

TEST_CASE("every #include \"...\" of the library and front-end folders names a header of its own layer or one below "
          "that it may use") {
  const fs::path root(GCNPART_SOURCE_DIR);
  const std::set<std::string> extensions{".cpp", ".hpp", ".cu", ".cuh", ".h", ".in"};
  int files_read = 0, includes_read = 0;
  std::set<std::string> layers_seen;
  for (const auto& layer : kLayers) {
    if (layer.folder.find('/') != layer.folder.size() - 1) continue;  // a sub-folder: walked with its parent
    for (const auto& entry : fs::recursive_directory_iterator(root / layer.folder)) {
      if (!entry.is_regular_file() || extensions.count(entry.path().extension().string()) == 0) continue;
      const std::string file = fs::relative(entry.path(), root).generic_string();
      const Layer* from = layer_of(file);
      REQUIRE(from != nullptr);
      layers_seen.insert(std::string(from->name));
      std::ifstream in(entry.path());
      REQUIRE(in.good());
      ++files_read;
      std::string line;
      for (int number = 1; std::getline(in, line); ++number) {
        const std::string header = quoted_include(line);
        if (header.empty()) continue;
        ++includes_read;
        const Layer* to = layer_of(header);
        if (to == nullptr) {
          FAIL_CHECK(file << ":" << number << ": #include \"" << header
                          << "\" is not rooted at a layer's folder (write it from the source root)");
        } else if (!may_include(*from, *to)) {
          FAIL_CHECK(file << ":" << number << ": " << from->name << " includes \"" << header << "\" of layer "
                          << to->name << ", which " << from->name << " may not use (tests/layers_test.cpp, kLayers)");
        }
      }
    }
  }
  CHECK(files_read > 100);     // the walk found the tree (140 files in December 2026)
  CHECK(includes_read > 300);  // and read their includes (395)
  CHECK(layers_seen.size() == kLayers.size());  // every layer's folder holds sources
}

TEST_CASE("docs/architecture.md draws the layer table of this test, row by row") {
  // The picture's rows read "| name | `folder` | what it holds | may include |", the last column comma-separated
  // ("-" for none).
  std::ifstream in(fs::path(GCNPART_SOURCE_DIR) / "docs" / "architecture.md");
  REQUIRE(in.good());
  std::vector<std::string> rows;
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("| ", 0) == 0) rows.push_back(line);
  for (const auto& layer : kLayers) {
    INFO("layer " << layer.name);
    const std::string start = "| " + std::string(layer.name) + " | `" + std::string(layer.folder) + "` |";
    const auto row = std::find_if(rows.begin(), rows.end(), [&](const std::string& r) { return r.rfind(start, 0) == 0; });
    REQUIRE_MESSAGE(row != rows.end(), "docs/architecture.md has no row starting with " << start);
    std::vector<std::string> cells;
    std::stringstream cells_in(*row);
    for (std::string cell; std::getline(cells_in, cell, '|');) cells.push_back(cell);
    REQUIRE(cells.size() >= 5);  // "", name, folder, holds, may include
    std::set<std::string> drawn;
    std::stringstream names(cells[4]);
    for (std::string name; std::getline(names, name, ',');)
      if (trim(name) != "-" && !trim(name).empty()) drawn.insert(trim(name));
    const std::set<std::string> table(layer.may_include.begin(), layer.may_include.end());
    CHECK(drawn == table);
  }
}
