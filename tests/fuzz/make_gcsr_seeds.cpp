// Writes the .gcsr seeds of corpus/gcsr/ from the loader fixtures (run once; the seeds are checked in):
//   g++ -std=c++20 -fopenmp -I. tests/fuzz/make_gcsr_seeds.cpp datasets/*.cpp base/*.cpp -lz -o /tmp/seeds
//   /tmp/seeds tests/data tests/fuzz/corpus/gcsr
// Each seed is one steering byte (see fuzz_gcsr.cpp) followed by a valid file.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "datasets/gcsr.hpp"
#include "datasets/loaders.hpp"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  namespace fs = std::filesystem;
  const std::string data = argv[1];
  const fs::path out = argv[2];
  fs::create_directories(out);
  const std::pair<const char*, const char*> sources[] = {
      {"ogb/tiny", "tiny"}, {"metis/weighted.graph", "weighted"}, {"snap/small.txt", "small"}};
  for (const auto& [input, name] : sources) {
    const auto ds = gcnpart::datasets::load_dataset(data + "/" + input);
    const fs::path tmp = out / (std::string(name) + ".tmp.gcsr");
    gcnpart::datasets::save_gcsr(ds, tmp.string());
    std::ifstream in(tmp, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    fs::remove(tmp);
    for (const unsigned char steer : {0, 1, 6}) {
      std::ofstream f(out / (std::string(name) + "-steer" + std::to_string(steer) + ".bin"), std::ios::binary);
      f.put(static_cast<char>(steer));
      f << bytes;
    }
  }
  return 0;
}
