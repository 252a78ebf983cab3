// Number and time formats every report shares (terminal tables, verdict sentences, JSON dates).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gcnpart {

// Numbers written into files and reports are formatted without the C locale (std::to_chars): a host program that
// set a decimal-comma locale (a Python session, say) must not turn "560.0" into "560,0" in an SVG or a report.

/// `v` with `decimals` digits after a '.' ("%.*f" in the C locale, whatever the process's locale). Infinities and
/// NaN as "inf", "-inf", "nan".
[[nodiscard]] std::string format_fixed(double v, int decimals);
/// The shortest text that reads back as `v` ("0.01", "1e+30"; '.' whatever the locale).
[[nodiscard]] std::string format_shortest(double v);
/// The same for a float: the shortest text that reads back as the float (1e30f -> "1e+30", not its double digits).
[[nodiscard]] std::string format_shortest(float v);

/// "1,234,567" (a minus sign in front of negative numbers).
[[nodiscard]] std::string with_commas(std::int64_t v);
/// "12.34 MiB": binary units, two decimals above bytes.
[[nodiscard]] std::string human_bytes(double bytes);
/// Levenshtein distance of two short strings, ASCII letters compared without case (names, option spellings: the
/// "did you mean" of datasets and CLI options).
[[nodiscard]] std::size_t edit_distance(const std::string& a, const std::string& b);
/// The current UTC time as "2026-11-29T18:40:00Z" (the date of every JSON report).
[[nodiscard]] std::string now_iso();

}  // namespace gcnpart
