// Enum <-> name conversion from one table per enum (mt-KaHyPar keeps every enum with its names in one place).
// An enum opts in by specialising EnumNames<Enum> with `static constexpr const auto& table`: an array of rows that
// each have a `value` (the enumerator) and a `name` (what the CLI parses and the reports print), in the order the
// CLI lists them. to_string, from_string and enum_names then work for it; nothing else spells its names.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "base/error.hpp"

namespace gcnpart {

/// Specialise with `static constexpr const auto& table = <array of rows with .value and .name>;`.
template <class Enum>
struct EnumNames;

template <class Enum>
concept NamedEnum = std::is_enum_v<Enum> && requires { EnumNames<Enum>::table; };

/// The name of `e` ("unknown" for a value outside the table).
template <NamedEnum Enum>
[[nodiscard]] constexpr const char* to_string(Enum e) noexcept {
  for (const auto& row : EnumNames<Enum>::table)
    if (row.value == e) return row.name;
  return "unknown";
}

/// Whether row i of the table holds enumerator i (tables indexed by the enum, e.g. traits(), need this).
template <NamedEnum Enum>
[[nodiscard]] constexpr bool table_in_enum_order() noexcept {
  std::size_t i = 0;
  for (const auto& row : EnumNames<Enum>::table)
    if (static_cast<std::size_t>(row.value) != i++) return false;
  return true;
}

/// Every name, in table order.
template <NamedEnum Enum>
[[nodiscard]] std::vector<std::string> enum_names() {
  std::vector<std::string> out;
  for (const auto& row : EnumNames<Enum>::table) out.emplace_back(row.name);
  return out;
}

/// "a, b or c" (what an InvalidInput expects).
[[nodiscard]] inline std::string or_list(const std::vector<std::string>& names) {
  std::string s;
  for (std::size_t i = 0; i < names.size(); ++i) s += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return s;
}

/// The enumerator named `text`. @throws InvalidInput naming `parameter` and listing the valid names.
template <NamedEnum Enum>
[[nodiscard]] Enum from_string(std::string_view text, const std::string& parameter) {
  for (const auto& row : EnumNames<Enum>::table)
    if (text == row.name) return row.value;
  throw InvalidInput::parameter(parameter, std::string(text), or_list(enum_names<Enum>()));
}

}  // namespace gcnpart
