// The GPU catalogue of `gcnpart fit` and `gcnpart cards`: partition/fit/cards.json, compiled into the binary, optionally
// extended or overridden by a user file (entries merged by id, field by field).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "partition/fit/cost_model.hpp"

namespace gcnpart::partition {

/// A card family's fixed per-GPU overhead (CUDA context, library handles, cuBLAS workspace).
struct CardFamily {
  double fixed_overhead_mib = 600;
  bool measured = false;
  std::string note;
};

struct CardCatalogue {
  std::vector<Card> cards;  ///< in file order; user additions appended
  std::map<std::string, CardFamily> families;
  std::vector<std::string> origins;   ///< "built-in partition/fit/cards.json", then user files

  /// The card with this id. @throws InvalidInput naming the id and listing the known ones.
  [[nodiscard]] const Card& find(const std::string& id, const std::string& parameter = "--card") const;
};

/// Parses a complete catalogue document. `origin` names it in errors. Every field is checked: a missing or
/// mistyped field, a negative figure or an unknown family throws InvalidInput naming the file, the card and the field.
CardCatalogue parse_cards(const std::string& text, const std::string& origin);

/// The built-in catalogue (partition/fit/cards.json as compiled in).
CardCatalogue builtin_cards();

/// Built-in catalogue merged with `file` (if not empty): a user entry with a known id overrides the fields it
/// gives, a new id adds a card (then every field is required), families are merged by name.
/// @throws IoError if the file cannot be read, InvalidInput for a bad entry.
CardCatalogue load_cards(const std::string& file = "");

}  // namespace gcnpart::partition
