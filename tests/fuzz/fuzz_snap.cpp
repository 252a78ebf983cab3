// libFuzzer target: the SNAP edge-list loader (plain or gzip text through TextReader).
#include <cstddef>
#include <cstdint>

#include "datasets/loaders.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gcnpart;
  static const std::string path = (fuzz::scratch_dir() / "input.txt").string();
  fuzz::write_file(path, data, size);
  datasets::LoadOptions options;
  options.symmetrize = size % 2 == 0;  // both build paths without spending input bytes on a flag
  fuzz::expect_dataset_or_invalid_input([&] { return datasets::load_snap(path, options); });
  return 0;
}
