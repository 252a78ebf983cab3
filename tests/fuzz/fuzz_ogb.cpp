// libFuzzer target: the OGB node-property folder loader. A valid six-node folder lives in the scratch directory;
// the first input byte picks one of its CSV files, the rest of the input replaces that file for one load, and the
// valid content is put back afterwards, so every file is fuzzed while the others stay well-formed.
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "datasets/loaders.hpp"
#include "fuzz_support.hpp"

namespace {

struct OgbFile {
  const char* path;   // inside the dataset folder
  const char* valid;  // well-formed content, consistent with the other files
};

// Six nodes, five stored edges (add_inverse_edge from meta.csv), three features, three classes, node 5 unlabelled.
constexpr std::array<OgbFile, 9> kFiles = {{
    {"raw/edge.csv", "0,1\n1,2\n2,3\n3,4\n4,0\n"},
    {"raw/node-feat.csv", "0.0,1.5,-2.0\n1.0,0.0,0.25\n0,0,0\n3.0,1e-3,2\n-1.0,0.5,0.125\n0.0,0.0,1.0\n"},
    {"raw/node-label.csv", "0\n1\n2\n1\n0\n\"\"\n"},
    {"raw/num-node-list.csv", "6\n"},
    {"raw/num-edge-list.csv", "5\n"},
    {"split/random/train.csv", "0\n1\n"},
    {"split/random/valid.csv", "2\n3\n"},
    {"split/random/test.csv", "4\n"},
    {"meta.csv", ",tiny\nnum classes,3\nadd_inverse_edge,True\nsplit,random\nis hetero,False\nbinary,False\n"},
}};

const std::filesystem::path& dataset_dir() {
  static const std::filesystem::path dir = [] {
    const std::filesystem::path d = gcnpart::fuzz::scratch_dir() / "tiny";
    std::filesystem::create_directories(d / "raw");
    std::filesystem::create_directories(d / "split" / "random");
    for (const auto& f : kFiles) gcnpart::fuzz::write_file(d / f.path, f.valid);
    return d;
  }();
  return dir;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gcnpart;
  if (size < 1) return 0;
  const std::filesystem::path& dir = dataset_dir();
  const OgbFile& target = kFiles[data[0] % kFiles.size()];
  fuzz::write_file(dir / target.path, data + 1, size - 1);
  datasets::LoadOptions options;
  options.symmetrize = size % 2 == 0;
  fuzz::expect_dataset_or_invalid_input([&] { return datasets::load_ogb(dir.string(), options); });
  fuzz::write_file(dir / target.path, target.valid);
  return 0;
}
