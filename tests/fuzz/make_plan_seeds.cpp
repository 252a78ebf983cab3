// Writes the plan-file seeds of corpus/plan/ (run once; the seeds are checked in):
//   g++ -std=c++20 -fopenmp -I. tests/fuzz/make_plan_seeds.cpp datasets/*.cpp base/*.cpp partition/*.cpp \
//       partition/detail/*.cpp -lmetis -lz -o /tmp/plan_seeds
//   /tmp/plan_seeds tests/data tests/fuzz/corpus/plan
// Each seed is one steering byte (see fuzz_plan.cpp) followed by a valid plan of a small graph.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "datasets/loaders.hpp"
#include "partition/plan.hpp"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  namespace fs = std::filesystem;
  using namespace gcnpart;
  const fs::path out = argv[2];
  fs::create_directories(out);
  const auto ds = datasets::load_dataset(std::string(argv[1]) + "/metis/small.graph");
  partition::PartitionOptions range;
  range.method = partition::Partitioner::kRange;
  struct Seed {
    partition::Strategy strategy;
    int parts;
    const char* name;
  };
  for (const Seed& s : {Seed{partition::Strategy::kSingle, 1, "single"}, Seed{partition::Strategy::kDrop, 2, "drop"},
                        Seed{partition::Strategy::kHalo, 2, "halo"}, Seed{partition::Strategy::kGather, 2, "gather"},
                        Seed{partition::Strategy::kPipeline, 2, "pipeline"}}) {
    const auto plan = partition::make_plan(ds.graph, s.strategy, s.parts, 2, range);
    const fs::path tmp = out / (std::string(s.name) + ".tmp");
    partition::save_plan(plan, tmp.string());
    std::ifstream in(tmp, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    fs::remove(tmp);
    for (const unsigned char steer : {0, 7}) {
      std::ofstream f(out / (std::string(s.name) + "-steer" + std::to_string(steer) + ".bin"), std::ios::binary);
      f.put(static_cast<char>(steer));
      f << bytes;
    }
  }
  return 0;
}
