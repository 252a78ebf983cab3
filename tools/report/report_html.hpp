// The HTML report of `gcnpart compare`: one self-contained page (inline CSS and SVG, no scripts, no network).
// Presentation, used by the front-ends (the CLI, the Python module): library gcnpart::report (tools/report/).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace gcnpart::report {

/// Renders the JSON report of `gcnpart compare` as a complete HTML5 document: a header (dataset, partitioner, date,
/// commit, device), a summary table (one row per strategy x parts x layers) and four inline SVG charts (halo growth
/// per hop, peak memory per device per strategy, lost edges vs K, test accuracy vs K) with a caption each.
/// Every key is optional: what was not measured is left out with a note (no "train" objects: no accuracy chart).
/// All text taken from the report is HTML-escaped. Never throws on malformed or partial input.
[[nodiscard]] std::string compare_html(const nlohmann::json& report);

/// `text` with & < > " ' replaced by entities and control characters (other than tab and newline) dropped,
/// safe inside element content and quoted attribute values, in HTML and in SVG.
[[nodiscard]] std::string html_escape(std::string_view text);

}  // namespace gcnpart::report

