// Number and time formats every report shares (terminal tables, verdict sentences, JSON dates).
#pragma once

#include <cstdint>
#include <string>

namespace gcnpart {

/// "1,234,567" (a minus sign in front of negative numbers).
[[nodiscard]] std::string with_commas(std::int64_t v);
/// "12.34 MiB": binary units, two decimals above bytes.
[[nodiscard]] std::string human_bytes(double bytes);
/// The current UTC time as "2026-11-29T18:40:00Z" (the date of every JSON report).
[[nodiscard]] std::string now_iso();

}  // namespace gcnpart
