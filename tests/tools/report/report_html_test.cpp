#include "tools/report/report_html.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

using nlohmann::json;
using gcnpart::report::compare_html;

namespace {

std::size_t count(const std::string& haystack, const std::string& needle) {
  std::size_t n = 0;
  for (auto at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + needle.size())) ++n;
  return n;
}

/// Bytes of the per-device memory breakdown of a GCN with hidden width 16 holding `nodes` rows and `edges` entries.
json memory_of(double nodes, double edges, double table_rows, int layers, double features) {
  const double graph = (nodes + 1) * 8 + edges * 12 + nodes * 4;
  const double feat = nodes * features * 4 + nodes * 4;
  const double activations = nodes * 16 * 4 * 2 * layers;
  const double gradients = activations * 0.6;
  const double weights = (features * 16 + 16 * 16 * (layers - 2) + 16 * 7) * 4;
  const double optimizer = weights * 2;
  const double workspace = nodes * 16 * 4;
  const double communication = table_rows * 16 * 4 * 2;
  json by = {{"graph", std::llround(graph)},         {"features", std::llround(feat)},
             {"activations", std::llround(activations)}, {"gradients", std::llround(gradients)},
             {"weights", std::llround(weights)},     {"optimizer", std::llround(optimizer)},
             {"workspace", std::llround(workspace)}, {"communication", std::llround(communication)}};
  double peak = 0;
  for (const auto& [k, v] : by.items()) peak += v.get<double>();
  return {{"peak_bytes", std::llround(peak)}, {"at_peak_by_category", by}};
}

/// A compare report shaped like a real Cora run: single, drop, halo and gather at K = 2, 4, 8 and 2 or 3 layers,
/// pipeline at K = 2, and drop on a random partition for contrast.
json cora_report(bool train) {
  const double n = 2708, directed = 10556, features = 1433;
  json rows = json::array();
  auto add = [&](const std::string& strategy, const std::string& partitioner, int parts, int layers) {
    const double cut = partitioner == "random" ? 5278.0 * (1 - 1.0 / parts) : 5278.0 * 0.034 * std::log2(parts) * 1.1;
    json m;
    json inner = json::array(), local = json::array(), local_edges = json::array(), halo = json::array();
    json memory = json::array(), sent = json::array();
    const bool exact_halo = strategy == "halo";
    for (int d = 0; d < parts; ++d) {
      const double own = std::round(n / parts * (1 + 0.01 * ((d % 3) - 1)));
      json rings = json::array();
      double held = own;
      if (strategy != "single" && strategy != "pipeline") {
        double ring = cut / parts * 1.6 * (1 + 0.1 * (d % 2));
        for (int h = 0; h < layers; ++h) {
          const double r = std::round(std::min(ring, n - held));
          rings.push_back(r);
          if (exact_halo) held += r;
          ring *= 2.6;
        }
      }
      const double edges = std::round(directed * held / n * (strategy == "drop" ? 0.93 : 1.05));
      inner.push_back(strategy == "pipeline" ? n : own);
      local.push_back(strategy == "pipeline" ? n : held);
      local_edges.push_back(strategy == "pipeline" ? directed : edges);
      halo.push_back(rings);
      const double table = strategy == "gather" ? std::ceil(n / parts) * parts : 0;
      if (strategy == "pipeline")
        memory.push_back(memory_of(d == 0 ? n : n * 0.02, directed, n * 0.5, layers / parts + 1, d == 0 ? features : 1));
      else
        memory.push_back(memory_of(strategy == "single" ? n : held, edges, table, layers, features));
      sent.push_back(strategy == "single" ? 0.0 : strategy == "gather" ? table * 16 * 4 * layers * 2 : 23000.0 * 4);
    }
    const bool drop = strategy == "drop";
    m = {{"edge_cut", std::llround(parts > 1 ? cut : 0)},
         {"comm_volume", std::llround(parts > 1 ? cut * 1.7 : 0)},
         {"lost_edges", drop ? std::llround(cut) : 0},
         {"lost_fraction", drop ? std::round(cut) / 5278.0 : 0.0},
         {"inner_nodes", inner},
         {"local_nodes", local},
         {"local_edges", local_edges},
         {"halo_per_hop", halo},
         {"replication_factor", exact_halo ? 1 + cut * 0.9 * layers / n : 1.0},
         {"replicated_edges", exact_halo ? std::llround(cut * 3 * layers) : 0},
         {"table_rows", strategy == "gather" ? std::llround(std::ceil(n / parts) * parts) : 0},
         {"index_bytes", strategy == "gather" ? std::llround(directed * 8.0 / parts) : 0},
         {"node_imbalance", 1.01},
         {"edge_imbalance", 1.04 + 0.01 * parts},
         {"plan_seconds", 0.002 * parts},
         {"partition_seconds", 0.011 * parts}};
    json row = {{"strategy", strategy}, {"parts", parts}, {"layers", layers}, {"metrics", m},
                {"memory", memory},     {"bytes_sent_per_epoch", sent},
                {"epoch_seconds", 0.0042 / parts + 0.0009 * (strategy == "gather") + 0.0004 * layers}};
    if (partitioner != "metis") row["partitioner"] = partitioner;
    if (train) {
      const double reference = layers == 2 ? 0.812 : 0.801;
      const double acc = drop ? reference - (partitioner == "random" ? 0.07 : 0.018) * std::log2(parts) : reference;
      row["train"] = {{"test_accuracy", acc}, {"valid_accuracy", acc - 0.021}, {"final_loss", drop ? 0.26 : 0.21},
                      {"epochs", 200}};
    }
    rows.push_back(row);
  };
  for (int layers : {2, 3}) {
    add("single", "metis", 1, layers);
    for (int parts : {2, 4, 8})
      for (const char* s : {"drop", "halo", "gather"}) add(s, "metis", parts, layers);
    add("pipeline", "metis", 2, layers);
  }
  for (int parts : {2, 4, 8}) add("drop", "random", parts, 2);
  return {{"command", "compare"},
          {"date", "2026-11-29T15:00:00Z"},
          {"commit", "abc1234"},
          {"dataset", {{"name", "cora"}, {"nodes", 2708}, {"edges_directed", 10556}, {"features", 1433}, {"classes", 7}}},
          {"partitioner", "metis"},
          {"parts", {2, 4, 8}},
          {"layers", {2, 3}},
          {"device", "cpu (virtual devices)"},
          {"rows", rows}};
}

}  // namespace

TEST_CASE("the compare report is one complete HTML document with four inline SVG charts") {
  const std::string html = compare_html(cora_report(true));
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(html.find("<html lang=\"en\">") != std::string::npos);
  CHECK(html.find("<meta charset=\"utf-8\">") != std::string::npos);
  CHECK(html.find("</html>") != std::string::npos);
  CHECK(count(html, "<svg") == 4);
  CHECK(count(html, "</svg>") == 4);
  CHECK(count(html, "<figcaption>") == 4);
  // Numbers as people read them.
  CHECK(html.find("2,708") != std::string::npos);
  CHECK(html.find("81.2 %") != std::string::npos);
  CHECK(html.find(" MiB") != std::string::npos);
  CHECK(html.find("abc1234") != std::string::npos);
  CHECK(html.find("2026-11-29 15:00 UTC") != std::string::npos);
  // Every strategy is named, and the baseline partitioner has its own series.
  for (const char* s : {"single", "drop", "halo", "gather", "pipeline", "random partition"})
    CHECK_MESSAGE(html.find(s) != std::string::npos, s);

  if (const char* path = std::getenv("GCNPART_REPORT_EXAMPLE"); path != nullptr && *path != '\0') {
    std::ofstream(path) << html;
    std::ofstream(std::string(path) + ".no-train.html") << compare_html(cora_report(false));
    MESSAGE("example report written to " << std::string(path));
  }
}

TEST_CASE("without train results the accuracy chart gives way to a note") {
  const std::string html = compare_html(cora_report(false));
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(count(html, "<svg") == 3);
  CHECK(html.find("Accuracy was not measured") != std::string::npos);
  CHECK(html.find("--train") != std::string::npos);
}

TEST_CASE("the report needs no network, no scripts and no external resources") {
  for (bool train : {true, false}) {
    std::string html = compare_html(cora_report(train));
    const std::string xmlns = "http://www.w3.org/2000/svg";
    for (auto at = html.find(xmlns); at != std::string::npos; at = html.find(xmlns)) html.erase(at, xmlns.size());
    CHECK(html.find("http://") == std::string::npos);
    CHECK(html.find("https://") == std::string::npos);
    CHECK(html.find("<script") == std::string::npos);
    CHECK(html.find("<link") == std::string::npos);
    CHECK(html.find("<img") == std::string::npos);
    CHECK(html.find("@import") == std::string::npos);
    CHECK(html.find("url(") == std::string::npos);
    CHECK(html.find(" src=") == std::string::npos);
  }
}

TEST_CASE("text taken from the report is HTML-escaped everywhere") {
  json report = cora_report(true);
  report["dataset"]["name"] = "<b>&\"x\"";
  report["device"] = "<script>alert(1)</script>";
  report["commit"] = "'><img>";
  report["rows"][3]["strategy"] = "<i>odd</i>";
  report["rows"][4]["partitioner"] = "a&b";
  const std::string html = compare_html(report);
  CHECK(html.find("&lt;b&gt;&amp;&quot;x&quot;") != std::string::npos);
  CHECK(html.find("<b>&\"x\"") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("&lt;script&gt;alert(1)&lt;/script&gt;") != std::string::npos);
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("&#39;&gt;&lt;img&gt;") != std::string::npos);
  CHECK(html.find("<i>odd</i>") == std::string::npos);
  CHECK(html.find("&lt;i&gt;odd&lt;/i&gt;") != std::string::npos);
  CHECK(html.find("a&b") == std::string::npos);
  CHECK(gcnpart::report::html_escape(std::string("a\x01<\n", 4)) == "a&lt;\n");
}

TEST_CASE("missing keys and values of the wrong type render without throwing") {
  const json cases[] = {
      json(),
      json::object(),
      json::array({1, 2}),
      json{{"rows", json::array()}},
      json{{"rows", {json::object(), json(nullptr), 3, "x"}}},
      json{{"dataset", "cora"}, {"rows", {{{"strategy", "drop"}, {"parts", 4}}}}},
      json{{"dataset", {{"name", 7}, {"nodes", "many"}}},
           {"parts", "2,4"},
           {"rows",
            {{{"strategy", "halo"},
              {"parts", 4},
              {"layers", 2},
              {"metrics", {{"inner_nodes", {1, "a", nullptr}}, {"halo_per_hop", {{1, 2}, "x", {3}}}}},
              {"memory", {{{"peak_bytes", "big"}}, json::object(), 5, {{"peak_bytes", 100}}}},
              {"bytes_sent_per_epoch", 12},
              {"train", {{"test_accuracy", "high"}}}},
             {{"strategy", "single"}, {"parts", 1}, {"layers", 2}, {"train", {{"test_accuracy", 0.8}}}},
             {{"strategy", "drop"}, {"parts", 1e300}, {"layers", -3}, {"metrics", {{"lost_edges", -1}}}}}}},
  };
  for (const json& report : cases) {
    std::string html;
    CHECK_NOTHROW(html = compare_html(report));
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
    CHECK(html.find("</html>") != std::string::npos);
  }
  // Rows without memory, halo or cut data: those charts give way to notes, the table still renders.
  json bare = cora_report(false);
  for (auto& row : bare["rows"]) {
    row.erase("memory");
    row["metrics"].erase("halo_per_hop");
    row["metrics"].erase("lost_edges");
    row["metrics"].erase("edge_cut");
  }
  const std::string html = compare_html(bare);
  CHECK(count(html, "<svg") == 0);
  CHECK(count(html, "class=\"note\"") == 5);
  CHECK(html.find("<table>") != std::string::npos);
}

TEST_CASE("the page template is filled completely and text from the report is never read as a placeholder") {
  json report = cora_report(true);
  report["dataset"]["name"] = "{{summary}} {{#halo_chart}}x{{/halo_chart}}";
  report["commit"] = "{{date}}";
  for (const json& r : {report, json::object()}) {
    const std::string html = compare_html(r);
    CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);  // the template's comment is dropped with its line break
    CHECK(count(html, "<style>") == 1);
    CHECK(count(html, "</main>") == 1);
    CHECK(count(html, "<figure class=\"card\">") == 4);
  }
  const std::string html = compare_html(report);
  // The dataset name (title, header: 3 braces each) and the commit (facts, footer), as given.
  CHECK(count(html, "{{") == 8);
  CHECK(html.find("{{summary}} {{#halo_chart}}x{{/halo_chart}}") != std::string::npos);
  CHECK(html.find("commit {{date}}") != std::string::npos);
  CHECK(count(html, "<h2>Summary</h2>") == 1);
}

TEST_CASE("a skipped configuration is one line with its reason, and the CPU caveat and the gather table's memory "
          "are stated") {
  json j = cora_report(false);
  j["epoch_time_note"] = "the K virtual CPU devices are K threads sharing this machine's 2 cores";
  j["rows"].push_back({{"strategy", "pipeline"}, {"parts", 4}, {"layers", 2}, {"status", "skipped"},
                       {"reason", "4 pipeline stages for 2 layers"}});
  const std::string html = compare_html(j);
  CHECK(html.find("skipped: 4 pipeline stages for 2 layers") != std::string::npos);
  CHECK(html.find("K threads sharing this machine&#39;s 2 cores") != std::string::npos);
  CHECK(html.find("counted in peak memory per device (category gather_table)") != std::string::npos);
  // the halo chart's caption describes what it plots: each ring, not a running total
  CHECK(html.find("each point is one ring, not a running total") != std::string::npos);
  CHECK(html.find("climbs steeply towards the whole graph") == std::string::npos);
  CHECK(html.find("sent per epoch<br>all devices") != std::string::npos);
}

TEST_CASE("a row's epoch cell shows the timed epochs' spread when the report has it") {
  json j = cora_report(false);
  j["rows"][0]["epoch_seconds"] = 0.0123;
  j["rows"][0]["epoch_ms_min"] = 11.9;
  j["rows"][0]["epoch_ms_max"] = 13.0;
  j["rows"][1]["epoch_ms_min"] = 5.0;  // equal ends: no range printed
  j["rows"][1]["epoch_ms_max"] = 5.0;
  const std::string html = compare_html(j);
  CHECK(html.find("12.3 ms<br><span class=\"spread\" title=\"fastest to slowest timed epoch\">11.9 ms \xe2\x80\x93 13.0 ms</span>") !=
        std::string::npos);
  CHECK(count(html, "class=\"spread\"") == 1);
}
