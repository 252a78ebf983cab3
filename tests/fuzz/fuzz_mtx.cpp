// libFuzzer target: the Matrix Market loader (banner, size line, pattern/real/integer, general/symmetric).
#include <cstddef>
#include <cstdint>

#include "datasets/loaders.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gcnpart;
  static const std::string path = (fuzz::scratch_dir() / "input.mtx").string();
  fuzz::write_file(path, data, size);
  datasets::LoadOptions options;
  options.symmetrize = size % 2 == 0;
  fuzz::expect_dataset_or_invalid_input([&] { return datasets::load_matrix_market(path, options); });
  return 0;
}
