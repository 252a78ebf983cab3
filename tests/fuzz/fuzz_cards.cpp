// libFuzzer target: the GPU card catalogue (partition/fit/cards.*). First input byte even: the rest is a whole catalogue
// for parse_cards; odd: the rest is a user file merged into the built-in catalogue by load_cards.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "partition/fit/cards.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace gcnpart;
  if (size < 1) return 0;
  static const std::string path = (fuzz::scratch_dir() / "cards.json").string();
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    partition::CardCatalogue catalogue;
    if (data[0] % 2 == 0) {
      catalogue = partition::parse_cards(text, "fuzz.json");
    } else {
      fuzz::write_file(path, text);
      catalogue = partition::load_cards(path);
    }
    for (const auto& card : catalogue.cards) {
      if (catalogue.find(card.id).id != card.id) fuzz::bug("card " + card.id + " not found by its id");
      if (card.memory_bytes < 0 || !(card.memory_bandwidth_gbs >= 0) || !(card.fp32_tflops >= 0))
        fuzz::bug("card " + card.id + " accepted with a negative or NaN figure");
    }
  } catch (const InvalidInput&) {
    // The expected way to refuse a malformed catalogue.
  } catch (const std::exception& e) {
    fuzz::bug(std::string("unexpected exception ") + typeid(e).name() + ": " + e.what());
  }
  return 0;
}
