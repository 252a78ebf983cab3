// The compare report as one HTML page: the page itself (style, layout, captions) is tools/report/report_template.html,
// filled here with the header, the tables and the charts. Charts are SVG drawn here (no plotting library, no scripts): exact values sit
// in <title> tooltips and in the tables, so the page stays readable offline, printed, or with scripts disabled.
// Every accessor tolerates a missing key or a value of the wrong type: a report from an older or partial run must
// still render, with a note where something was not measured.
#include "tools/report/report_html.hpp"

#include "base/format.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "partition/strategy.hpp"

namespace gcnpart::report {

/// tools/report/report_template.html, compiled in by CMake (report_template.cpp.in): the page around the charts.
extern const char* const kReportTemplate;

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && c != '\t' && c != '\n') || u == 0x7f) break;  // not allowed in HTML text
        out += c;
      }
    }
  }
  return out;
}

namespace {

using nlohmann::json;

std::string esc(std::string_view s) { return html_escape(s); }

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---------------------------------------------------------------------------------------------------------------
// Reading the report
// ---------------------------------------------------------------------------------------------------------------

const json* field(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  return &*it;
}

std::optional<double> number(const json& j, const char* key) {
  const json* f = field(j, key);
  if (f == nullptr || !f->is_number()) return std::nullopt;
  const double v = f->get<double>();
  if (!std::isfinite(v)) return std::nullopt;
  return v;
}

std::string text(const json& j, const char* key) {
  const json* f = field(j, key);
  if (f == nullptr) return {};
  if (f->is_string()) return f->get<std::string>();
  if (f->is_number_integer()) return std::to_string(f->get<std::int64_t>());
  if (f->is_number()) return format_fixed(f->get<double>(), 6);  // std::to_string's digits, without the locale
  if (f->is_boolean()) return f->get<bool>() ? "true" : "false";
  return {};
}

/// An array of numbers; non-numbers become NaN so per-device positions are kept.
std::vector<double> numbers(const json* f) {
  std::vector<double> out;
  if (f == nullptr || !f->is_array()) return out;
  for (const json& v : *f) out.push_back(v.is_number() ? v.get<double>() : kNaN);
  return out;
}

int to_int(std::optional<double> v) {
  if (!v) return 0;
  return static_cast<int>(std::clamp(std::round(*v), -1e9, 1e9));
}

struct DeviceMemory {
  double peak = kNaN;
  std::vector<std::pair<std::string, double>> at_peak;  ///< category -> bytes, in the report's order
};

struct Row {
  std::size_t index = 0;  ///< position in the report, the last sort key
  std::string strategy, partitioner;
  int parts = 0, layers = 0;
  std::optional<double> edge_cut, comm_volume, lost_edges, lost_fraction, replication, replicated_edges;
  std::optional<double> table_rows, index_bytes, node_imbalance, edge_imbalance, plan_seconds, partition_seconds;
  std::optional<double> work_predicted, work_measured;  ///< work imbalance: the plan's model, the devices' compute
  std::vector<double> inner_nodes, local_nodes, local_edges, bytes_sent;
  std::vector<std::vector<double>> halo_per_hop;  ///< [device][hop - 1]
  std::vector<DeviceMemory> memory;
  std::optional<double> epoch_seconds;
  std::optional<double> epoch_ms_min, epoch_ms_max;  ///< the timed epochs' spread (compare; absent in older reports)
  std::optional<double> test_accuracy, valid_accuracy, final_loss, epochs;
  std::string skipped;  ///< "status": "skipped": why the configuration did not run (else empty)
};

struct Report {
  std::string date, commit, device, partitioner, dataset;
  std::string epoch_time_note;  ///< e.g. CPU virtual devices share the machine's cores
  std::optional<double> nodes, edges_directed, features, classes;
  std::vector<double> parts, layers;
  std::vector<Row> rows;
};

Row parse_row(const json& j, std::size_t index, const std::string& default_partitioner) {
  Row r;
  r.index = index;
  r.strategy = text(j, "strategy");
  if (r.strategy.empty()) r.strategy = "unnamed";
  r.partitioner = text(j, "partitioner");
  if (r.partitioner.empty()) r.partitioner = default_partitioner;
  r.parts = to_int(number(j, "parts"));
  r.layers = to_int(number(j, "layers"));
  if (text(j, "status") == "skipped") r.skipped = "skipped: " + text(j, "reason");
  if (const json* m = field(j, "metrics"); m != nullptr && m->is_object()) {
    r.edge_cut = number(*m, "edge_cut");
    r.comm_volume = number(*m, "comm_volume");
    r.lost_edges = number(*m, "lost_edges");
    r.lost_fraction = number(*m, "lost_fraction");
    r.replication = number(*m, "replication_factor");
    r.replicated_edges = number(*m, "replicated_edges");
    r.table_rows = number(*m, "table_rows");
    r.index_bytes = number(*m, "index_bytes");
    r.node_imbalance = number(*m, "node_imbalance");
    r.edge_imbalance = number(*m, "edge_imbalance");
    r.work_predicted = number(*m, "work_imbalance");
    r.plan_seconds = number(*m, "plan_seconds");
    r.partition_seconds = number(*m, "partition_seconds");
    r.inner_nodes = numbers(field(*m, "inner_nodes"));
    r.local_nodes = numbers(field(*m, "local_nodes"));
    r.local_edges = numbers(field(*m, "local_edges"));
    if (const json* h = field(*m, "halo_per_hop"); h != nullptr && h->is_array())
      for (const json& device : *h) r.halo_per_hop.push_back(numbers(&device));
  }
  if (const json* mem = field(j, "memory"); mem != nullptr && mem->is_array()) {
    for (const json& d : *mem) {
      DeviceMemory dm;
      if (auto p = number(d, "peak_bytes")) dm.peak = *p;
      if (const json* c = field(d, "at_peak_by_category"); c != nullptr && c->is_object())
        for (const auto& [name, bytes] : c->items())
          if (bytes.is_number()) dm.at_peak.emplace_back(name, bytes.get<double>());
      r.memory.push_back(std::move(dm));
    }
  }
  r.bytes_sent = numbers(field(j, "bytes_sent_per_epoch"));
  r.epoch_seconds = number(j, "epoch_seconds");
  r.epoch_ms_min = number(j, "epoch_ms_min");
  r.epoch_ms_max = number(j, "epoch_ms_max");
  r.work_measured = number(j, "work_imbalance_measured");
  if (const json* t = field(j, "train"); t != nullptr && t->is_object()) {
    r.test_accuracy = number(*t, "test_accuracy");
    r.valid_accuracy = number(*t, "valid_accuracy");
    r.final_loss = number(*t, "final_loss");
    r.epochs = number(*t, "epochs");
  }
  return r;
}

int strategy_rank(const std::string& s) {  // table order (partition::kStrategies), unknown names last
  int i = 0;
  for (const auto& row : partition::kStrategies) {
    if (s == row.name) return i;
    ++i;
  }
  return i;
}

int partitioner_rank(const std::string& p) {
  if (p == "metis") return 0;
  if (p == "random") return 1;
  if (p == "range") return 2;
  return 3;
}

Report parse_report(const json& j) {
  Report r;
  r.date = text(j, "date");
  r.commit = text(j, "commit");
  r.device = text(j, "device");
  r.epoch_time_note = text(j, "epoch_time_note");
  r.partitioner = text(j, "partitioner");
  if (const json* d = field(j, "dataset"); d != nullptr && d->is_object()) {
    r.dataset = text(*d, "name");
    r.nodes = number(*d, "nodes");
    r.edges_directed = number(*d, "edges_directed");
    r.features = number(*d, "features");
    r.classes = number(*d, "classes");
  } else if (const json* d = field(j, "dataset"); d != nullptr && d->is_string()) {
    r.dataset = d->get<std::string>();
  }
  r.parts = numbers(field(j, "parts"));
  r.layers = numbers(field(j, "layers"));
  if (const json* rows = field(j, "rows"); rows != nullptr && rows->is_array()) {
    std::size_t i = 0;
    for (const json& row : *rows)
      if (row.is_object()) r.rows.push_back(parse_row(row, i++, r.partitioner));
  }
  std::stable_sort(r.rows.begin(), r.rows.end(), [](const Row& a, const Row& b) {
    return std::tuple(a.layers, a.parts, strategy_rank(a.strategy), a.strategy, partitioner_rank(a.partitioner),
                      a.partitioner, a.index) <
           std::tuple(b.layers, b.parts, strategy_rank(b.strategy), b.strategy, partitioner_rank(b.partitioner),
                      b.partitioner, b.index);
  });
  return r;
}

// Per-device summaries, NaN-tolerant.
struct Spread {
  double min = kNaN, mean = kNaN, max = kNaN, sum = kNaN;
  int argmax = -1, argmin = -1, count = 0;
};

Spread spread(const std::vector<double>& v) {
  Spread s;
  double total = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i])) continue;
    if (s.count == 0 || v[i] > s.max) s.max = v[i], s.argmax = static_cast<int>(i);
    if (s.count == 0 || v[i] < s.min) s.min = v[i], s.argmin = static_cast<int>(i);
    total += v[i];
    ++s.count;
  }
  if (s.count > 0) s.mean = total / s.count, s.sum = total;
  return s;
}

std::vector<double> peaks(const Row& r) {
  std::vector<double> p;
  for (const auto& d : r.memory) p.push_back(d.peak);
  return p;
}

// ---------------------------------------------------------------------------------------------------------------
// Numbers as people read them
// ---------------------------------------------------------------------------------------------------------------

const char* const kNone = "\xe2\x80\x94";  // em dash: not measured

std::string fixed(double v, int decimals) { return format_fixed(v, decimals); }  // '.' whatever the locale

std::string trim_zeros(std::string s) {
  if (s.find('.') == std::string::npos) return s;
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

std::string commas(double v) {
  if (!std::isfinite(v)) return kNone;
  const auto n = static_cast<long long>(std::llround(std::clamp(v, -9e18, 9e18)));
  std::string s = std::to_string(n < 0 ? -n : n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<std::size_t>(i), ",");
  return n < 0 ? "-" + s : s;
}

/// Three significant figures: 1.23, 12.3, 123.
std::string sig3(double v) {
  const double a = std::fabs(v);
  return fixed(v, a < 9.995 ? 2 : a < 99.95 ? 1 : 0);
}

std::string bytes_text(double b) {
  if (!std::isfinite(b)) return kNone;
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  if (std::fabs(b) < 1024) return commas(b) + " B";
  int u = 0;
  while (std::fabs(b) >= 1024 && u < 5) b /= 1024, ++u;
  return sig3(b) + " " + kUnits[u];
}

std::string percent(double fraction) {
  if (!std::isfinite(fraction)) return kNone;
  const double v = fraction * 100;
  return fixed(v, (v != 0 && std::fabs(v) < 0.995) ? 2 : 1) + " %";
}

std::string seconds_text(double s) {
  if (!std::isfinite(s)) return kNone;
  if (s == 0) return "0 s";
  if (std::fabs(s) < 1e-3) return sig3(s * 1e6) + " \xc2\xb5s";
  if (std::fabs(s) < 1) return sig3(s * 1e3) + " ms";
  return sig3(s) + " s";
}

/// Axis labels: 950, 1,500, 25k, 1.5M.
std::string compact(double v) {
  const double a = std::fabs(v);
  if (a >= 1e9) return trim_zeros(fixed(v / 1e9, 2)) + "G";
  if (a >= 1e6) return trim_zeros(fixed(v / 1e6, 2)) + "M";
  if (a >= 1e4) return trim_zeros(fixed(v / 1e3, 1)) + "k";
  if (std::fabs(v - std::round(v)) < 1e-9) return commas(v);
  return trim_zeros(fixed(v, 2));
}

std::string opt(const std::optional<double>& v, const std::function<std::string(double)>& f) {
  return v ? f(*v) : std::string(kNone);
}

std::string join_numbers(const std::vector<double>& v, const char* sep) {
  std::string s;
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? sep : "") + commas(v[i]);
  return s;
}

std::string plural(int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); }

// ---------------------------------------------------------------------------------------------------------------
// Colours
// ---------------------------------------------------------------------------------------------------------------

constexpr const char* kInk = "#1d2330";
constexpr const char* kMuted = "#5d6675";
constexpr const char* kGrid = "#e6e8ec";
constexpr const char* kAxis = "#9aa1ab";
constexpr const char* kHalo = "stroke=\"#fff\" stroke-width=\"3\" stroke-linejoin=\"round\" paint-order=\"stroke\"";

// Okabe-Ito: distinguishable with the common colour-vision deficiencies.
std::string strategy_colour(const std::string& s) {
  if (s == "single") return "#3b3f46";
  if (s == "drop") return "#d55e00";
  if (s == "halo") return "#0072b2";
  if (s == "gather") return "#009e73";
  if (s == "pipeline") return "#cc79a7";
  if (s == "boundary") return "#e69f00";
  static const char* const kMore[] = {"#e69f00", "#56b4e9", "#8c6d31", "#7f7f7f"};
  return kMore[std::hash<std::string>{}(s) % 4];
}

std::string partitioner_colour(const std::string& p) {
  if (p == "metis") return "#d55e00";
  if (p == "random") return "#6b7280";
  if (p == "range") return "#e69f00";
  static const char* const kMore[] = {"#56b4e9", "#8c6d31", "#cc79a7"};
  return kMore[std::hash<std::string>{}(p) % 3];
}

// Data in blues, per-layer tensors in oranges, parameters in greens, communication in red.
const std::vector<std::pair<std::string, std::string>>& category_colours() {
  static const std::vector<std::pair<std::string, std::string>> kColours = {
      {"graph", "#4e79a7"},   {"features", "#a0cbe8"},  {"activations", "#f28e2b"},
      {"gradients", "#ffbe7d"}, {"weights", "#59a14f"},   {"optimizer", "#8cd17d"},
      {"workspace", "#b6992d"}, {"communication", "#e15759"}};
  return kColours;
}

std::string category_colour(const std::string& c) {
  for (const auto& [name, colour] : category_colours())
    if (name == c) return colour;
  static const char* const kMore[] = {"#bab0ac", "#9d7660", "#d4a6c8", "#79706e"};
  return kMore[std::hash<std::string>{}(c) % 4];
}

/// A sequential ramp (viridis, stopped before its yellow end, which vanishes on white); t in [0, 1].
std::string ramp(double t) {
  static const double kStops[][3] = {{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}};
  t = std::clamp(t, 0.0, 1.0) * 3;
  const int i = std::min(2, static_cast<int>(t));
  const double f = t - i;
  char buf[8];
  std::snprintf(buf, sizeof buf, "#%02x%02x%02x", static_cast<int>(kStops[i][0] + f * (kStops[i + 1][0] - kStops[i][0])),
                static_cast<int>(kStops[i][1] + f * (kStops[i + 1][1] - kStops[i][1])),
                static_cast<int>(kStops[i][2] + f * (kStops[i + 1][2] - kStops[i][2])));
  return buf;
}

const char* dash_for(int i) {
  static const char* const kDashes[] = {"", "7 4", "2 3", "9 3 2 3"};
  return kDashes[i % 4];
}

// ---------------------------------------------------------------------------------------------------------------
// SVG drawing
// ---------------------------------------------------------------------------------------------------------------

std::string c(double v) { return trim_zeros(fixed(v, 1)); }

class Svg {
 public:
  Svg(double width, double height, std::string_view label) {
    out_ << "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 " << c(width) << ' ' << c(height)
         << "\" width=\"" << c(width) << "\" height=\"" << c(height) << "\" role=\"img\" aria-label=\"" << esc(label)
         << "\" font-size=\"12\">\n";
  }

  void line(double x1, double y1, double x2, double y2, const std::string& stroke, double width = 1,
            const char* dash = "") {
    out_ << "<line x1=\"" << c(x1) << "\" y1=\"" << c(y1) << "\" x2=\"" << c(x2) << "\" y2=\"" << c(y2)
         << "\" stroke=\"" << stroke << "\" stroke-width=\"" << c(width) << '"';
    if (*dash) out_ << " stroke-dasharray=\"" << dash << '"';
    out_ << "/>\n";
  }

  void rect(double x, double y, double w, double h, const std::string& fill, std::string_view tip = {},
            const char* extra = "") {
    out_ << "<rect x=\"" << c(x) << "\" y=\"" << c(y) << "\" width=\"" << c(std::max(0.0, w)) << "\" height=\""
         << c(std::max(0.0, h)) << "\" fill=\"" << fill << '"' << (*extra ? " " : "") << extra;
    close(tip, "rect");
  }

  void circle(double x, double y, double r, const std::string& fill, std::string_view tip = {},
              const char* extra = "") {
    out_ << "<circle cx=\"" << c(x) << "\" cy=\"" << c(y) << "\" r=\"" << c(r) << "\" fill=\"" << fill << '"'
         << (*extra ? " " : "") << extra;
    close(tip, "circle");
  }

  void polyline(const std::vector<std::pair<double, double>>& points, const std::string& stroke, double width,
                const char* dash = "") {
    if (points.size() < 2) return;
    out_ << "<polyline fill=\"none\" stroke=\"" << stroke << "\" stroke-width=\"" << c(width)
         << "\" stroke-linejoin=\"round\" stroke-linecap=\"round\"";
    if (*dash) out_ << " stroke-dasharray=\"" << dash << '"';
    out_ << " points=\"";
    for (std::size_t i = 0; i < points.size(); ++i) out_ << (i ? " " : "") << c(points[i].first) << ',' << c(points[i].second);
    out_ << "\"/>\n";
  }

  /// `anchor`: start | middle | end. `extra`: further attributes, written as given.
  void text(double x, double y, std::string_view s, const char* anchor = "start", double size = 12,
            const std::string& fill = kInk, const char* extra = "") {
    out_ << "<text x=\"" << c(x) << "\" y=\"" << c(y) << '"';
    if (std::string_view(anchor) != "start") out_ << " text-anchor=\"" << anchor << '"';
    if (size != 12) out_ << " font-size=\"" << c(size) << '"';
    if (fill != kInk) out_ << " fill=\"" << fill << '"';
    if (*extra) out_ << ' ' << extra;
    out_ << '>' << esc(s) << "</text>\n";
  }

  void raw(std::string_view s) { out_ << s; }

  std::string finish() {
    out_ << "</svg>";
    return out_.str();
  }

 private:
  void close(std::string_view tip, const char* tag) {
    if (tip.empty()) {
      out_ << "/>\n";
    } else {
      out_ << "><title>" << esc(tip) << "</title></" << tag << ">\n";
    }
  }
  std::ostringstream out_;
};

/// Rough width of a label at `size` px in the page's sans-serif font (for legend layout only).
double text_width(std::string_view s, double size = 12) {
  std::size_t glyphs = 0;
  for (char ch : s)
    if ((static_cast<unsigned char>(ch) & 0xc0) != 0x80) ++glyphs;
  return static_cast<double>(glyphs) * size * 0.56;
}

struct Scale {
  double d0 = 0, d1 = 1, r0 = 0, r1 = 1;
  bool log = false;
  double operator()(double v) const {
    double t = 0.5;
    if (log) {
      v = std::max(v, d0);
      if (d1 > d0) t = (std::log(v) - std::log(d0)) / (std::log(d1) - std::log(d0));
    } else if (d1 != d0) {
      t = (v - d0) / (d1 - d0);
    }
    return r0 + t * (r1 - r0);
  }
};

struct Ticks {
  double lo = 0, hi = 1;
  std::vector<double> values;
};

double nice_step(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / p;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 2.5 ? 2.5 : f <= 5 ? 5 : 10) * p;
}

/// Round-number ticks covering [lo, hi], the domain widened to the outer ticks.
Ticks linear_ticks(double lo, double hi, int target = 5) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (hi <= lo) hi = lo + (lo == 0 ? 1 : std::fabs(lo) * 0.1);
  const double step = nice_step((hi - lo) / target);
  Ticks t;
  t.lo = std::floor(lo / step + 1e-9) * step;
  t.hi = std::ceil(hi / step - 1e-9) * step;
  for (int i = 0; i <= 100; ++i) {
    const double v = t.lo + i * step;
    if (v > t.hi + step * 1e-6) break;
    t.values.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  }
  return t;
}

/// 1-2-5 ticks for a log axis over [lo, hi] (both > 0), the domain padded a little beyond the data.
Ticks log_ticks(double lo, double hi) {
  Ticks t;
  t.lo = lo / 1.4;
  t.hi = hi * 1.4;
  const double decades = std::log10(t.hi / t.lo);
  const std::vector<double> mults = decades > 3.5 ? std::vector<double>{1} : std::vector<double>{1, 2, 5};
  for (int e = static_cast<int>(std::floor(std::log10(t.lo))); e <= static_cast<int>(std::ceil(std::log10(t.hi))); ++e)
    for (double m : mults) {
      const double v = m * std::pow(10.0, e);
      if (v >= t.lo && v <= t.hi) t.values.push_back(v);
    }
  return t;
}

struct Frame {
  double left, top, right, bottom;
};

void y_axis(Svg& s, const Frame& f, const Scale& y, const std::vector<double>& ticks,
            const std::function<std::string(double)>& label, std::string_view title, bool right_side = false) {
  for (double v : ticks) {
    const double py = y(v);
    if (!right_side) s.line(f.left, py, f.right, py, kGrid);
    const double tx = right_side ? f.right + 6 : f.left - 6;
    s.text(tx, py + 4, label(v), right_side ? "start" : "end", 11, kMuted);
  }
  if (!title.empty()) {
    const double tx = right_side ? f.right + 54 : f.left - 52;
    const double ty = (f.top + f.bottom) / 2;
    std::string rot = "transform=\"rotate(" + std::string(right_side ? "90 " : "-90 ") + c(tx) + " " + c(ty) + ")\"";
    s.text(tx, ty, title, "middle", 12, kMuted, rot.c_str());
  }
}

void x_axis(Svg& s, const Frame& f, const Scale& x, const std::vector<std::pair<double, std::string>>& ticks,
            std::string_view title) {
  s.line(f.left, f.bottom, f.right, f.bottom, kAxis);
  for (const auto& [v, label] : ticks) {
    const double px = x(v);
    s.line(px, f.bottom, px, f.bottom + 4, kAxis);
    s.text(px, f.bottom + 17, label, "middle", 11, kMuted);
  }
  if (!title.empty()) s.text((f.left + f.right) / 2, f.bottom + 36, title, "middle", 12, kMuted);
}

struct LegendItem {
  std::string label, colour;
  enum Kind { kLine, kDashed, kBox, kDot, kTick } kind = kLine;
  const char* dash = "";
};

/// A horizontal legend from (x, y), wrapping at max_x; returns the y below it.
double legend(Svg& s, double x, double y, double max_x, const std::vector<LegendItem>& items) {
  const double x0 = x;
  for (const auto& item : items) {
    const double w = 26 + text_width(item.label, 12) + 18;
    if (x + w > max_x && x > x0) x = x0, y += 20;
    switch (item.kind) {
      case LegendItem::kLine:
      case LegendItem::kDashed:
        s.line(x, y - 4, x + 20, y - 4, item.colour, 2.5, item.kind == LegendItem::kDashed ? "5 3" : item.dash);
        if (item.kind == LegendItem::kLine) s.circle(x + 10, y - 4, 3.2, item.colour);
        break;
      case LegendItem::kBox: s.rect(x + 4, y - 10, 12, 12, item.colour, {}, "rx=\"2\""); break;
      case LegendItem::kDot: s.circle(x + 10, y - 4, 4, item.colour, {}, "stroke=\"#fff\" stroke-width=\"1.5\""); break;
      case LegendItem::kTick: s.line(x + 2, y - 4, x + 18, y - 4, item.colour, 2); break;
    }
    s.text(x + 26, y, item.label, "start", 12, kInk);
    x += w;
  }
  return y + 10;
}

/// Log axis for K: 2, 4, 8 equally spaced, as the cost usually grows with log K.
Scale k_scale(const std::vector<int>& ks, double r0, double r1) {
  Scale x;
  x.log = true;
  x.r0 = r0;
  x.r1 = r1;
  const double lo = std::max(1, ks.front()), hi = std::max(1, ks.back());
  const double pad = lo == hi ? 2.0 : std::pow(hi / lo, 0.08);
  x.d0 = lo / pad;
  x.d1 = hi * pad;
  return x;
}

std::vector<std::pair<double, std::string>> k_ticks(const std::vector<int>& ks) {
  std::vector<std::pair<double, std::string>> t;
  for (int k : ks) t.emplace_back(std::max(1, k), std::to_string(k));
  return t;
}

std::string layers_text(int layers) { return layers > 0 ? plural(layers, "layer", "layers") : "layers ?"; }

// ---------------------------------------------------------------------------------------------------------------
// Chart: halo growth per hop
// ---------------------------------------------------------------------------------------------------------------

struct HaloSeries {
  std::string partitioner;
  int parts = 0;
  std::vector<double> mean;  ///< [0] = inner nodes, [h] = halo nodes first reached at hop h
};

std::vector<HaloSeries> halo_series(const Report& r) {
  auto usable = [](const Row& row) {
    return row.parts > 0 && !row.halo_per_hop.empty() && !row.inner_nodes.empty() &&
           std::isfinite(spread(row.inner_nodes).mean);
  };
  // The halo rings are the halo strategy's; other strategies only carry them when no halo row does.
  const bool have_halo = std::any_of(r.rows.begin(), r.rows.end(),
                                     [&](const Row& row) { return row.strategy == "halo" && usable(row); });
  std::map<std::tuple<int, std::string, int>, HaloSeries> by_key;
  for (const Row& row : r.rows) {
    if (!usable(row) || (have_halo && row.strategy != "halo")) continue;
    HaloSeries s{row.partitioner, row.parts, {spread(row.inner_nodes).mean}};
    std::size_t hops = 0;
    for (const auto& d : row.halo_per_hop) hops = std::max(hops, d.size());
    for (std::size_t h = 0; h < hops; ++h) {
      std::vector<double> at;
      for (const auto& d : row.halo_per_hop) at.push_back(h < d.size() ? d[h] : kNaN);
      s.mean.push_back(spread(at).mean);
    }
    // The partition does not depend on the depth, so the deepest run's rings extend the shallower ones.
    auto key = std::tuple(partitioner_rank(row.partitioner), row.partitioner, row.parts);
    auto it = by_key.find(key);
    if (it == by_key.end() || it->second.mean.size() < s.mean.size()) by_key[key] = std::move(s);
  }
  std::vector<HaloSeries> out;
  for (auto& [key, s] : by_key) out.push_back(std::move(s));
  return out;
}

std::string halo_chart(const Report& r, double width, double height) {
  const auto series = halo_series(r);
  if (series.empty()) return {};
  std::size_t hops = 0;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& s : series) {
    hops = std::max(hops, s.mean.size() - 1);
    for (double v : s.mean)
      if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  }
  if (!(hi > 0)) return {};
  const bool log = hi / lo > 30;
  const bool show_all = r.nodes && *r.nodes > 0 && (log ? *r.nodes <= hi * 1000 : *r.nodes <= hi * 3);
  if (show_all) hi = std::max(hi, *r.nodes);

  std::set<std::string> partitioners;
  for (const auto& s : series) partitioners.insert(s.partitioner);
  std::vector<int> ks;
  for (const auto& s : series) ks.push_back(s.parts);
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());

  Svg svg(width, height, "Halo nodes per device at each hop");
  std::vector<LegendItem> items;
  std::vector<std::string> part_list(partitioners.begin(), partitioners.end());
  auto colour_of = [&](int k) {
    const auto i = std::find(ks.begin(), ks.end(), k) - ks.begin();
    return ramp(ks.size() == 1 ? 0.35 : static_cast<double>(i) / static_cast<double>(ks.size() - 1));
  };
  auto dash_of = [&](const std::string& p) {
    return dash_for(static_cast<int>(std::find(part_list.begin(), part_list.end(), p) - part_list.begin()));
  };
  for (const auto& s : series) {
    std::string label = "K = " + std::to_string(s.parts);
    if (partitioners.size() > 1) label += " \xc2\xb7 " + s.partitioner;
    items.push_back({label, colour_of(s.parts), LegendItem::kLine, dash_of(s.partitioner)});
  }
  const double legend_bottom = legend(svg, 70, 20, width - 10, items);

  const Frame f{70, legend_bottom + 14, width - 20, height - 48};
  Scale x{0, static_cast<double>(std::max<std::size_t>(hops, 1)), f.left + 18, f.right - 18, false};
  Ticks yt = log ? log_ticks(lo, hi) : linear_ticks(0, hi * 1.08, 5);
  Scale y{yt.lo, yt.hi, f.bottom, f.top, log};
  y_axis(svg, f, y, yt.values, compact, log ? "nodes per device, mean (log scale)" : "nodes per device, mean");
  std::vector<std::pair<double, std::string>> xt;
  for (std::size_t h = 0; h <= hops; ++h) xt.emplace_back(static_cast<double>(h), h == 0 ? "0 (own)" : std::to_string(h));
  x_axis(svg, f, x, xt, "hop: the device's own nodes (0), then nodes first reached h edges away");

  if (show_all) {
    const double py = y(*r.nodes);
    svg.line(f.left, py, f.right, py, kMuted, 1.2, "4 4");
    svg.text(f.right - 4, py - 6, "whole graph: " + commas(*r.nodes) + " nodes", "end", 11, kMuted, kHalo);
  }
  for (const auto& s : series) {
    std::vector<std::pair<double, double>> points;
    for (std::size_t h = 0; h < s.mean.size(); ++h)
      if (std::isfinite(s.mean[h])) points.emplace_back(x(static_cast<double>(h)), y(s.mean[h]));
    const std::string colour = colour_of(s.parts);
    svg.polyline(points, colour, 2.5, dash_of(s.partitioner));
    for (std::size_t h = 0; h < s.mean.size(); ++h) {
      if (!std::isfinite(s.mean[h])) continue;
      std::string tip = "K = " + std::to_string(s.parts) + " (" + s.partitioner + "), " +
                        (h == 0 ? std::string("own nodes") : "hop " + std::to_string(h)) + ": " + commas(s.mean[h]) +
                        " nodes per device on average";
      svg.circle(x(static_cast<double>(h)), y(s.mean[h]), 4, colour, tip, "stroke=\"#fff\" stroke-width=\"1.5\"");
    }
  }
  return svg.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// Chart: lost edges vs K
// ---------------------------------------------------------------------------------------------------------------

struct CutPoint {
  int parts = 0;
  double edges = 0;
  double fraction = kNaN;
};

struct CutSeries {
  std::string partitioner;
  bool lost = true;  ///< drop's lost edges; false: the edge cut of a partitioner that no drop run used
  std::vector<CutPoint> points;
};

std::vector<CutSeries> cut_series(const Report& r) {
  const double undirected = r.edges_directed ? *r.edges_directed / 2 : kNaN;
  std::map<std::pair<int, std::string>, CutSeries> by;
  std::set<std::string> with_drop;
  for (const Row& row : r.rows)
    if (row.strategy == "drop" && row.lost_edges && row.parts > 0) with_drop.insert(row.partitioner);
  for (const Row& row : r.rows) {
    if (row.parts <= 0) continue;
    const bool drop = row.strategy == "drop";
    std::optional<double> v;
    if (drop) v = row.lost_edges;
    else if (!with_drop.count(row.partitioner) && row.strategy != "single" && row.parts > 1) v = row.edge_cut;
    if (!v) continue;
    auto& s = by[{partitioner_rank(row.partitioner), row.partitioner}];
    s.partitioner = row.partitioner;
    s.lost = drop;
    if (std::any_of(s.points.begin(), s.points.end(), [&](const CutPoint& p) { return p.parts == row.parts; }))
      continue;  // the depth does not change the partition
    CutPoint p{row.parts, *v, kNaN};
    if (drop && row.lost_fraction) p.fraction = *row.lost_fraction;
    else if (undirected > 0) p.fraction = *v / undirected;
    s.points.push_back(p);
  }
  std::vector<CutSeries> out;
  for (auto& [key, s] : by) {
    std::sort(s.points.begin(), s.points.end(), [](const CutPoint& a, const CutPoint& b) { return a.parts < b.parts; });
    out.push_back(std::move(s));
  }
  return out;
}

std::string lost_edges_chart(const Report& r, double width, double height) {
  const auto series = cut_series(r);
  if (series.empty()) return {};
  std::vector<int> ks;
  double hi = 0;
  for (const auto& s : series)
    for (const auto& p : s.points) ks.push_back(p.parts), hi = std::max(hi, p.edges);
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  const double undirected = r.edges_directed ? *r.edges_directed / 2 : kNaN;

  Svg svg(width, height, "Edges lost between parts against the number of devices");
  std::vector<LegendItem> items;
  for (const auto& s : series)
    items.push_back({s.lost ? "drop, " + s.partitioner + " partition: lost edges" : s.partitioner + " partition: edge cut",
                     partitioner_colour(s.partitioner), s.lost ? LegendItem::kLine : LegendItem::kDashed});
  const double legend_bottom = legend(svg, 70, 20, width - 10, items);

  const bool right_axis = undirected > 0;
  const Frame f{70, legend_bottom + 14, width - (right_axis ? 64 : 20), height - 48};
  const Scale x = k_scale(ks, f.left + 10, f.right - 10);
  const Ticks yt = linear_ticks(0, std::max(hi, 1.0) * 1.15, 5);
  const Scale y{yt.lo, yt.hi, f.bottom, f.top, false};
  y_axis(svg, f, y, yt.values, compact, "edges between parts (undirected)");
  if (right_axis) {
    // Percent ticks at round percentages of all edges, placed on the same vertical scale.
    const Ticks pt = linear_ticks(0, yt.hi / undirected * 100, 5);
    std::vector<double> at;
    for (double p : pt.values)
      if (p / 100 * undirected <= yt.hi * (1 + 1e-9)) at.push_back(p / 100 * undirected);
    y_axis(svg, f, y, at, [&](double v) { return trim_zeros(fixed(v / undirected * 100, 2)) + " %"; },
           "share of all edges", true);
  }
  x_axis(svg, f, x, k_ticks(ks), "devices (K)");

  for (const auto& s : series) {
    const std::string colour = partitioner_colour(s.partitioner);
    std::vector<std::pair<double, double>> points;
    for (const auto& p : s.points) points.emplace_back(x(std::max(1, p.parts)), y(p.edges));
    svg.polyline(points, colour, 2.5, s.lost ? "" : "6 4");
    for (const auto& p : s.points) {
      const double px = x(std::max(1, p.parts)), py = y(p.edges);
      std::string exact = commas(p.edges);
      std::string label = p.edges >= 1e5 ? compact(p.edges) : exact;
      if (std::isfinite(p.fraction)) {
        exact += " (" + percent(p.fraction) + ")";
        label += " (" + percent(p.fraction) + ")";
      }
      const std::string tip = std::string(s.lost ? "drop loses " : "edge cut: ") + exact + " edges with the " +
                              s.partitioner + " partition on K = " + std::to_string(p.parts) + " devices";
      svg.circle(px, py, 4.5, colour, tip, "stroke=\"#fff\" stroke-width=\"1.5\"");
      // Keep the label inside the plot: the first and last points sit near the axes.
      const double half = text_width(label, 11) / 2 + 2;
      const double lx = std::clamp(px, f.left + half, std::max(f.left + half, f.right - half));
      svg.text(lx, py - 10, label, "middle", 11, colour, (std::string("font-weight=\"600\" ") + kHalo).c_str());
    }
  }
  return svg.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// Chart: peak memory per device, small multiples per (layers, K)
// ---------------------------------------------------------------------------------------------------------------

struct MemoryBar {
  const Row* row = nullptr;
  Spread peak;
  std::vector<std::pair<std::string, double>> stack;  ///< the most loaded device's breakdown at its peak
};

MemoryBar memory_bar(const Row& row) {
  MemoryBar b{&row, spread(peaks(row)), {}};
  if (b.peak.argmax < 0) return b;
  const auto& dev = row.memory[static_cast<std::size_t>(b.peak.argmax)];
  double total = 0;
  // Known categories in a fixed order (the legend's), so equal colours stack at equal heights across bars.
  for (const auto& [name, colour] : category_colours())
    for (const auto& [cat, bytes] : dev.at_peak)
      if (cat == name && bytes > 0) b.stack.emplace_back(cat, bytes), total += bytes;
  for (const auto& [cat, bytes] : dev.at_peak) {
    const bool known = std::any_of(category_colours().begin(), category_colours().end(),
                                   [&](const auto& kc) { return kc.first == cat; });
    if (!known && bytes > 0) b.stack.emplace_back(cat, bytes), total += bytes;
  }
  if (b.peak.max - total > b.peak.max * 1e-3) b.stack.emplace_back(b.stack.empty() ? "total" : "other", b.peak.max - total);
  return b;
}

using MemoryPanels = std::map<std::pair<int, int>, std::vector<MemoryBar>>;  ///< (layers, K) -> bars

/// Panels: every (layers, K) with a split strategy; single (one device) is the reference bar in each, first.
/// `with_single`: whether the reference bars were added (false when single is all there is).
MemoryPanels memory_panels(const Report& r, bool* with_single) {
  MemoryPanels panels;
  std::map<int, MemoryBar> single_by_layers;
  for (const Row& row : r.rows) {
    MemoryBar b = memory_bar(row);
    if (b.peak.count == 0) continue;
    if (row.strategy == "single") {
      if (!single_by_layers.count(row.layers)) single_by_layers.emplace(row.layers, b);
    } else {
      panels[{row.layers, row.parts}].push_back(std::move(b));
    }
  }
  if (panels.empty()) {
    for (auto& [layers, b] : single_by_layers) panels[{layers, 1}].push_back(b);
    single_by_layers.clear();
  }
  for (auto& [key, bars] : panels) {
    auto it = single_by_layers.find(key.first);
    if (it == single_by_layers.end() && !single_by_layers.empty()) it = single_by_layers.begin();
    if (it != single_by_layers.end()) bars.insert(bars.begin(), it->second);
  }
  *with_single = !single_by_layers.empty();
  return panels;
}

/// The categories drawn, the least-loaded tick when some bar has one, the single-device line when drawn.
std::vector<LegendItem> memory_legend(const MemoryPanels& panels, bool with_single) {
  std::set<std::string> used;
  bool any_min = false;
  for (const auto& [key, bars] : panels)
    for (const auto& b : bars) {
      for (const auto& [cat, bytes] : b.stack) used.insert(cat);
      any_min = any_min || b.peak.count > 1;
    }
  std::vector<LegendItem> items;
  for (const auto& [name, colour] : category_colours())
    if (used.count(name)) items.push_back({name, colour, LegendItem::kBox});
  for (const auto& cat : used)
    if (std::none_of(category_colours().begin(), category_colours().end(), [&](const auto& kc) { return kc.first == cat; }))
      items.push_back({cat, category_colour(cat), LegendItem::kBox});
  if (any_min) items.push_back({"least loaded device", kInk, LegendItem::kTick});
  if (with_single) items.push_back({"single-device peak", strategy_colour("single"), LegendItem::kDashed});
  return items;
}

/// One stacked bar (the most loaded device) with its least-loaded tick and labels, centred at cx.
void memory_bar_at(Svg& svg, const Report& r, const MemoryBar& b, const Frame& f, const Scale& y, double cx,
                   double bar_w, double slot) {
  const Row& row = *b.row;
  const std::string who = row.strategy + (row.partitioner != r.partitioner ? " (" + row.partitioner + ")" : "") +
                          ", K = " + std::to_string(row.parts) + ", " + layers_text(row.layers);
  double acc = 0;
  for (const auto& [cat, bytes] : b.stack) {
    const double y0 = y(acc), y1 = y(acc + bytes);
    const std::string colour = cat == "total" ? "#9aa3ae" : category_colour(cat);
    svg.rect(cx - bar_w / 2, y1, bar_w, y0 - y1, colour,
             who + ": " + cat + " " + bytes_text(bytes) + " at the peak of device " + std::to_string(b.peak.argmax));
    acc += bytes;
  }
  if (b.peak.count > 1) {
    const double my = y(b.peak.min);
    svg.line(cx - bar_w / 2 - 5, my, cx + bar_w / 2 + 5, my, kInk, 2.2);
    svg.rect(cx - bar_w / 2 - 5, my - 5, bar_w + 10, 10, "transparent",
             who + ": least loaded device " + std::to_string(b.peak.argmin) + " peaks at " + bytes_text(b.peak.min) +
                 " (mean " + bytes_text(b.peak.mean) + ")");
  }
  svg.text(cx, y(b.peak.max) - 6, bytes_text(b.peak.max), "middle", 10.5, kInk, kHalo);
  const double label_size = std::clamp(slot / (0.62 * static_cast<double>(row.strategy.size() + 1)), 9.0, 12.0);
  svg.text(cx, f.bottom + 16, row.strategy, "middle", label_size, strategy_colour(row.strategy), "font-weight=\"600\"");
  std::string sub = row.strategy == "single" ? "1 device" : "";
  if (row.partitioner != r.partitioner && row.strategy != "single") sub = row.partitioner;
  if (!sub.empty()) svg.text(cx, f.bottom + 30, sub, "middle", 10.5, kMuted);
}

std::string memory_chart(const Report& r, double width) {
  bool with_single = false;
  const MemoryPanels panels = memory_panels(r, &with_single);
  if (panels.empty()) return {};
  std::set<int> distinct_k;
  double hi = 0;
  for (const auto& [key, bars] : panels) {
    distinct_k.insert(key.second);
    for (const auto& b : bars) hi = std::max(hi, b.peak.max);
  }
  const int cols = static_cast<int>(std::clamp<std::size_t>(distinct_k.size(), 1, 4));
  const int rows = (static_cast<int>(panels.size()) + cols - 1) / cols;
  const double panel_w = width / cols, panel_h = 260;

  // Legend first, to know where the panels start.
  const std::vector<LegendItem> items = memory_legend(panels, with_single);
  Svg probe(width, 10, "");
  const double legend_h = legend(probe, 0, 20, width - 10, items);
  const double top = legend_h + 12;
  Svg svg(width, top + rows * panel_h, "Peak memory per device for each strategy");
  legend(svg, 70, 20, width - 10, items);

  // One byte unit for the whole chart, so every panel reads the same.
  int unit = 0;
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  while (unit < 5 && hi >= std::pow(1024.0, unit + 1)) ++unit;
  const double div = std::pow(1024.0, unit);
  const Ticks yt = linear_ticks(0, std::max(hi, 1.0) / div * 1.12, 4);

  int index = 0;
  for (const auto& [key, bars] : panels) {
    const auto [layers, parts] = key;
    const double px = (index % cols) * panel_w, py = top + (index / cols) * panel_h;
    ++index;
    const Frame f{px + 70, py + 30, px + panel_w - 14, py + panel_h - 48};
    svg.text(px + 70, py + 14, "K = " + std::to_string(parts) + (parts == 1 ? " device" : " devices") + " \xc2\xb7 " +
                                   layers_text(layers),
             "start", 13, kInk, "font-weight=\"600\"");
    const Scale y{yt.lo * div, yt.hi * div, f.bottom, f.top, false};
    std::vector<double> ticks;
    for (double v : yt.values) ticks.push_back(v * div);
    y_axis(svg, f, y, ticks,
           [&](double v) { return v == 0 ? std::string("0") : trim_zeros(fixed(v / div, 2)) + " " + kUnits[unit]; }, "");
    svg.line(f.left, f.bottom, f.right, f.bottom, kAxis);

    const double slot = (f.right - f.left) / static_cast<double>(bars.size());
    const double bar_w = std::min(46.0, slot * 0.6);
    if (bars.front().row->strategy == "single" && bars.size() > 1) {
      const double sy = y(bars.front().peak.max);
      svg.line(f.left, sy, f.right, sy, strategy_colour("single"), 1, "4 3");
    }
    for (std::size_t i = 0; i < bars.size(); ++i)
      memory_bar_at(svg, r, bars[i], f, y, f.left + slot * (static_cast<double>(i) + 0.5), bar_w, slot);
  }
  return svg.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// Chart: test accuracy vs K, one panel per depth
// ---------------------------------------------------------------------------------------------------------------

std::map<int, double> single_accuracy(const Report& r) {
  std::map<int, std::pair<double, int>> sums;
  for (const Row& row : r.rows)
    if (row.strategy == "single" && row.test_accuracy) {
      sums[row.layers].first += *row.test_accuracy;
      sums[row.layers].second += 1;
    }
  std::map<int, double> out;
  for (const auto& [layers, s] : sums) out[layers] = s.first / s.second;
  return out;
}

struct AccuracySeries {
  std::string strategy, partitioner;
  std::vector<const Row*> points;
};

struct AccuracyPanels {
  std::map<int, std::map<std::tuple<int, std::string, int, std::string>, AccuracySeries>> panels;  ///< layers ->
  std::vector<int> ks;  ///< every K with an accuracy, sorted, distinct (1 when only single was trained)
  double lo = 1, hi = 0;
};

/// Rows with a test accuracy, one panel per depth (single only opens its panel: it is the reference line).
AccuracyPanels accuracy_panels(const Report& r) {
  AccuracyPanels a;
  for (const Row& row : r.rows) {
    if (!row.test_accuracy) continue;
    a.lo = std::min(a.lo, *row.test_accuracy);
    a.hi = std::max(a.hi, *row.test_accuracy);
    if (row.strategy == "single") {
      a.panels[row.layers];
      continue;
    }
    if (row.parts <= 0) continue;
    auto& s = a.panels[row.layers][{strategy_rank(row.strategy), row.strategy, partitioner_rank(row.partitioner),
                                    row.partitioner}];
    s.strategy = row.strategy;
    s.partitioner = row.partitioner;
    if (std::none_of(s.points.begin(), s.points.end(), [&](const Row* p) { return p->parts == row.parts; }))
      s.points.push_back(&row);
    a.ks.push_back(row.parts);
  }
  if (a.ks.empty()) a.ks.push_back(1);
  std::sort(a.ks.begin(), a.ks.end());
  a.ks.erase(std::unique(a.ks.begin(), a.ks.end()), a.ks.end());
  return a;
}

/// One strategy's accuracy against K, shifted dx pixels sideways.
void accuracy_series_at(Svg& svg, const AccuracySeries& s, const Scale& x, const Scale& y, double dx, const char* dash) {
  const std::string colour = strategy_colour(s.strategy);
  std::vector<const Row*> pts = s.points;
  std::sort(pts.begin(), pts.end(), [](const Row* a, const Row* b) { return a->parts < b->parts; });
  std::vector<std::pair<double, double>> line;
  for (const Row* p : pts) line.emplace_back(x(std::max(1, p->parts)) + dx, y(*p->test_accuracy * 100));
  svg.polyline(line, colour, 2.2, dash);
  for (const Row* p : pts) {
    std::string tip = s.strategy + " (" + s.partitioner + "), K = " + std::to_string(p->parts) + ", " +
                      layers_text(p->layers) + ": test " + percent(*p->test_accuracy);
    if (p->valid_accuracy) tip += ", valid " + percent(*p->valid_accuracy);
    if (p->final_loss) tip += ", final loss " + trim_zeros(fixed(*p->final_loss, 4));
    if (p->epochs) tip += ", " + commas(*p->epochs) + " epochs";
    svg.circle(x(std::max(1, p->parts)) + dx, y(*p->test_accuracy * 100), 4.5, colour, tip,
               "stroke=\"#fff\" stroke-width=\"1.5\"");
  }
}

std::string accuracy_chart(const Report& r, double width) {
  const auto reference = single_accuracy(r);
  const AccuracyPanels data = accuracy_panels(r);
  const auto& panels = data.panels;
  const auto& ks = data.ks;
  const double lo = data.lo, hi = data.hi;
  if (panels.empty()) return {};

  std::vector<LegendItem> items;
  std::set<std::pair<std::string, std::string>> seen;
  std::vector<std::string> partitioners;
  for (const auto& [layers, series] : panels)
    for (const auto& [key, s] : series)
      if (std::find(partitioners.begin(), partitioners.end(), s.partitioner) == partitioners.end())
        partitioners.push_back(s.partitioner);
  auto dash_of = [&](const std::string& p) {
    if (p == r.partitioner) return "";
    return dash_for(1 + static_cast<int>(std::find(partitioners.begin(), partitioners.end(), p) - partitioners.begin()));
  };
  for (const auto& [layers, series] : panels)
    for (const auto& [key, s] : series)
      if (seen.insert({s.strategy, s.partitioner}).second)
        items.push_back({s.strategy + (s.partitioner != r.partitioner ? " (" + s.partitioner + ")" : ""),
                         strategy_colour(s.strategy), LegendItem::kLine, dash_of(s.partitioner)});
  if (!reference.empty()) items.push_back({"single device (reference)", strategy_colour("single"), LegendItem::kDashed});
  Svg probe(width, 10, "");
  const double top = legend(probe, 0, 20, width - 10, items) + 10;

  const int cols = static_cast<int>(std::clamp<std::size_t>(panels.size(), 1, 3));
  const int rows = (static_cast<int>(panels.size()) + cols - 1) / cols;
  const double panel_w = width / cols, panel_h = 300;
  Svg svg(width, top + rows * panel_h, "Test accuracy against the number of devices");
  legend(svg, 70, 20, width - 10, items);

  const Ticks yt = linear_ticks(std::max(0.0, lo - 0.02) * 100, std::min(1.0, hi + 0.02) * 100, 5);
  int index = 0;
  for (const auto& [layers, series] : panels) {
    const double px = (index % cols) * panel_w, py = top + (index / cols) * panel_h;
    ++index;
    const Frame f{px + 70, py + 30, px + panel_w - 22, py + panel_h - 50};
    svg.text(px + 70, py + 14, layers_text(layers), "start", 13, kInk, "font-weight=\"600\"");
    const Scale y{yt.lo, yt.hi, f.bottom, f.top, false};
    y_axis(svg, f, y, yt.values, [](double v) { return trim_zeros(fixed(v, 1)) + " %"; },
           index == 1 || cols == 1 ? "test accuracy" : "");
    const Scale x = k_scale(ks, f.left + 24, f.right - 24);
    x_axis(svg, f, x, k_ticks(ks), "devices (K)");
    if (auto it = reference.find(layers); it != reference.end()) {
      const double ry = y(it->second * 100);
      svg.line(f.left, ry, f.right, ry, strategy_colour("single"), 1.8, "6 4");
      svg.text(f.right - 4, ry - 7, "single: " + percent(it->second), "end", 11, strategy_colour("single"),
               (std::string("font-weight=\"600\" ") + kHalo).c_str());
    }
    // Exact strategies land on the same accuracy: offset each series a few pixels so every marker stays visible.
    const double n = static_cast<double>(series.size());
    int si = 0;
    for (const auto& [key, s] : series) {
      const double dx = (si++ - (n - 1) / 2) * 6;
      accuracy_series_at(svg, s, x, y, dx, dash_of(s.partitioner));
    }
  }
  return svg.finish();
}

// ---------------------------------------------------------------------------------------------------------------
// The page
// ---------------------------------------------------------------------------------------------------------------

std::string na() { return std::string("<span class=\"na\">") + kNone + "</span>"; }

std::string cell(const std::string& s) { return s == kNone ? na() : esc(s); }

std::string chip(const std::string& colour) { return "<span class=\"chip\" style=\"background:" + colour + "\"></span>"; }

std::string date_text(const std::string& iso) {
  // 2026-11-29T15:00:00Z -> 2026-11-29 15:00 UTC; anything else as given.
  if (iso.size() >= 16 && iso[4] == '-' && iso[10] == 'T') {
    std::string s = iso.substr(0, 10) + " " + iso.substr(11, 5);
    if (iso.back() == 'Z') s += " UTC";
    return s;
  }
  return iso;
}

std::string list_text(const std::vector<double>& v) {
  std::string s;
  for (double x : v)
    if (std::isfinite(x)) s += (s.empty() ? "" : ", ") + commas(x);
  return s;
}

void fact(std::ostringstream& o, const char* label, const std::string& value, const std::string& small = {}) {
  o << "<div class=\"fact\"><span>" << label << "</span><b>" << (value.empty() ? na() : esc(value)) << "</b>";
  if (!small.empty()) o << "<small>" << esc(small) << "</small>";
  o << "</div>\n";
}

void write_header(std::ostringstream& o, const Report& r) {
  o << "<header>\n<p class=\"kicker\">gcnpart compare</p>\n<h1>Splitting <em>"
    << (r.dataset.empty() ? std::string("an unnamed graph") : esc(r.dataset)) << "</em> across devices</h1>\n";
  std::vector<std::string> bits;
  if (!r.partitioner.empty()) bits.push_back(r.partitioner + " partition");
  if (!r.parts.empty()) bits.push_back("K = " + list_text(r.parts));
  if (!r.layers.empty()) bits.push_back(list_text(r.layers) + (r.layers.size() == 1 && r.layers[0] == 1 ? " layer" : " layers"));
  if (!r.device.empty()) bits.push_back(r.device);
  if (!bits.empty()) {
    std::string line;
    for (const auto& b : bits) line += (line.empty() ? "" : " \xc2\xb7 ") + b;
    o << "<p class=\"sub\">" << esc(line) << "</p>\n";
  }
  o << "<div class=\"facts\">\n";
  fact(o, "nodes", r.nodes ? commas(*r.nodes) : "");
  fact(o, "undirected edges", r.edges_directed ? commas(*r.edges_directed / 2) : "",
       r.edges_directed ? commas(*r.edges_directed) + " directed" : "");
  fact(o, "features", r.features ? commas(*r.features) : "");
  fact(o, "classes", r.classes ? commas(*r.classes) : "");
  fact(o, "partitioner", r.partitioner);
  fact(o, "device", r.device, r.epoch_time_note);
  fact(o, "date", date_text(r.date));
  fact(o, "commit", r.commit);
  o << "</div>\n</header>\n";
}

/// A few sentences on the largest split: the numbers a reader would look for first.
void write_glance(std::ostringstream& o, const Report& r) {
  int kmax = 0;
  for (const Row& row : r.rows)
    if (row.strategy != "single") kmax = std::max(kmax, row.parts);
  if (kmax <= 1) return;
  const auto reference = single_accuracy(r);
  std::vector<std::string> lines;
  // The shallowest depth at the largest K, where every strategy was run.
  int layers = std::numeric_limits<int>::max();
  for (const Row& row : r.rows)
    if (row.parts == kmax) layers = std::min(layers, row.layers);
  const std::string at = "At K = " + std::to_string(kmax) + " with " + layers_text(layers) + ", ";
  for (const Row& row : r.rows) {
    if (row.parts != kmax || row.layers != layers || row.partitioner != r.partitioner) continue;
    if (row.strategy == "drop" && row.lost_edges) {
      std::string s = at + "<b>drop</b> loses " + commas(*row.lost_edges) + " edges";
      if (row.lost_fraction) s += " (" + esc(percent(*row.lost_fraction)) + " of the graph)";
      auto ref = reference.find(layers);
      if (row.test_accuracy && ref != reference.end())
        s += " and reaches " + esc(percent(*row.test_accuracy)) + " test accuracy against " +
             esc(percent(ref->second)) + " on one device";
      lines.push_back(s + ".");
    } else if (row.strategy == "halo" && row.replication) {
      lines.push_back(at + "<b>halo</b> stores " + fixed(*row.replication, 2) +
                      "&times; the graph's nodes across the devices (replication factor).");
    }
  }
  // Lowest peak per device at kmax, against the single-device peak.
  const Row* best = nullptr;
  double best_peak = 0;
  const Row* single = nullptr;
  for (const Row& row : r.rows) {
    const Spread p = spread(peaks(row));
    if (p.count == 0 || row.layers != layers) continue;
    if (row.strategy == "single" && single == nullptr) single = &row;
    if (row.parts == kmax && row.strategy != "single" && (best == nullptr || p.max < best_peak)) best = &row, best_peak = p.max;
  }
  if (best != nullptr) {
    std::string s = "The smallest peak memory per device at K = " + std::to_string(kmax) + " is <b>" +
                    esc(best->strategy) + "</b>'s, " + esc(bytes_text(best_peak));
    if (single != nullptr) s += ", against " + esc(bytes_text(spread(peaks(*single)).max)) + " for single";
    lines.push_back(s + ".");
  }
  if (lines.empty()) return;
  o << "<section>\n<h2>At a glance</h2>\n<ul class=\"glance\">\n";
  for (const auto& l : lines) o << "<li>" << l << "</li>\n";
  o << "</ul>\n</section>\n";
}

/// The test accuracy, and its difference to single at the same depth in points.
std::string accuracy_cell(const Row& row, const std::map<int, double>& reference) {
  if (!row.test_accuracy) return na();
  std::ostringstream o;
  o << esc(percent(*row.test_accuracy));
  auto ref = reference.find(row.layers);
  if (row.strategy != "single" && ref != reference.end()) {
    const double d = (*row.test_accuracy - ref->second) * 100;
    if (std::fabs(d) >= 0.05)
      o << "<span class=\"delta" << (d < -0.5 ? " bad" : "") << "\">" << (d > 0 ? "+" : "\xe2\x88\x92")
        << fixed(std::fabs(d), 1) << "</span>";
    else
      o << "<span class=\"delta\">\xc2\xb1" << "0.0</span>";
  }
  return o.str();
}

/// The largest peak over the devices and the bytes all devices send per epoch, with the spread as a tooltip.
std::string peak_and_sent_cells(const Row& row) {
  std::ostringstream o;
  const Spread p = spread(peaks(row));
  if (p.count > 0) {
    o << "<td title=\"" << esc("min " + bytes_text(p.min) + ", mean " + bytes_text(p.mean) + " over " +
                               plural(p.count, "device", "devices"))
      << "\">" << esc(bytes_text(p.max)) << "</td>";
  } else {
    o << "<td>" << na() << "</td>";
  }
  const Spread sent = spread(row.bytes_sent);
  if (sent.count > 0) {
    o << "<td title=\"" << esc("max " + bytes_text(sent.max) + " per device") << "\">" << esc(bytes_text(sent.sum))
      << "</td>";
  } else {
    o << "<td>" << na() << "</td>";
  }
  return o.str();
}

void write_summary(std::ostringstream& o, const Report& r) {
  if (r.rows.empty()) {
    o << "<p class=\"note\">The report holds no runs.</p>\n";
    return;
  }
  std::set<std::string> partitioners;
  bool any_acc = false;
  for (const Row& row : r.rows) {
    partitioners.insert(row.partitioner);
    any_acc = any_acc || row.test_accuracy.has_value();
  }
  const bool show_partitioner = partitioners.size() > 1;
  const auto reference = single_accuracy(r);
  const int columns = 9 + show_partitioner + any_acc;
  o << "<div class=\"table-wrap\"><table>\n<thead><tr><th class=\"l\">strategy</th>";
  if (show_partitioner) o << "<th class=\"l\">partitioner</th>";
  o << "<th title=\"devices\">K</th>"
       "<th title=\"undirected edges between parts that drop ignores\">lost edges</th>"
       "<th title=\"lost edges as a share of all undirected edges\">lost</th>"
       "<th title=\"undirected edges between parts\">edge cut</th>"
       "<th title=\"sum of nodes held by all devices / nodes of the graph; gather holds only its own rows (1.00): its "
       "table of K x largest-part rows is counted in peak memory per device (category gather_table)\">replication</th>"
       "<th title=\"the largest peak over the devices\">peak memory<br>per device</th>"
       "<th title=\"bytes sent by all devices in one epoch\">sent per epoch<br>all devices</th>"
       "<th>epoch time</th>";
  if (any_acc) o << "<th title=\"test accuracy; the difference to single in points\">test accuracy</th>";
  o << "</tr></thead>\n";
  int current_layers = std::numeric_limits<int>::min(), current_parts = -1;
  for (const Row& row : r.rows) {
    if (row.layers != current_layers) {
      if (current_layers != std::numeric_limits<int>::min()) o << "</tbody>\n";
      o << "<tbody><tr class=\"group\"><td colspan=\"" << columns << "\">"
        << (row.layers > 0 ? std::to_string(row.layers) + "-layer GCN" : std::string("depth not recorded"))
        << "</td></tr>\n";
      current_layers = row.layers;
      current_parts = row.parts;
      o << "<tr>";
    } else {
      o << (row.parts != current_parts ? "<tr class=\"newk\">" : "<tr>");
      current_parts = row.parts;
    }
    o << "<td class=\"l\">" << chip(strategy_colour(row.strategy)) << esc(row.strategy) << "</td>";
    if (show_partitioner) o << "<td class=\"l\">" << esc(row.partitioner) << "</td>";
    o << "<td>" << (row.parts > 0 ? std::to_string(row.parts) : na()) << "</td>";
    if (!row.skipped.empty()) {
      o << "<td class=\"l\" colspan=\"" << columns - 2 - (show_partitioner ? 1 : 0) << "\">" << esc(row.skipped)
        << "</td></tr>\n";
      continue;
    }
    o << "<td>" << cell(opt(row.lost_edges, commas)) << "</td>";
    std::optional<double> lost_fraction = row.lost_fraction;
    if (!lost_fraction && row.lost_edges && r.edges_directed && *r.edges_directed > 0)
      lost_fraction = *row.lost_edges / (*r.edges_directed / 2);
    o << "<td>" << cell(opt(lost_fraction, percent)) << "</td>";
    o << "<td>" << cell(opt(row.edge_cut, commas)) << "</td>";
    o << "<td>" << cell(opt(row.replication, [](double v) { return fixed(v, 2) + "\xc3\x97"; })) << "</td>";
    o << peak_and_sent_cells(row);
    o << "<td>" << cell(opt(row.epoch_seconds, seconds_text));
    if (row.epoch_seconds && row.epoch_ms_min && row.epoch_ms_max && *row.epoch_ms_max > *row.epoch_ms_min)
      o << "<br><span class=\"spread\" title=\"fastest to slowest timed epoch\">" << esc(seconds_text(*row.epoch_ms_min * 1e-3))
        << " \xe2\x80\x93 " << esc(seconds_text(*row.epoch_ms_max * 1e-3)) << "</span>";
    o << "</td>";
    if (any_acc) o << "<td>" << accuracy_cell(row, reference) << "</td>";
    o << "</tr>\n";
  }
  o << "</tbody>\n</table></div>\n";
  if (!any_acc) o << "<p class=\"note\">Accuracy was not measured: run <code>gcnpart compare --train</code> to add it.</p>\n";
}

void write_details(std::ostringstream& o, const Report& r) {
  if (r.rows.empty()) return;
  bool any_device = false;
  for (const Row& row : r.rows) any_device = any_device || !row.inner_nodes.empty() || !row.memory.empty();
  // Plan metrics per run.
  o << "<details><summary>Plan metrics per run</summary>\n<div class=\"table-wrap\"><table>\n<thead><tr>"
       "<th class=\"l\">strategy</th><th class=\"l\">partitioner</th><th>K</th><th>layers</th><th>comm<br>volume</th>"
       "<th>edge<br>cut</th><th>replicated<br>edges</th><th>node<br>imbalance</th><th>edge<br>imbalance</th>"
       "<th>work imbalance<br>predicted</th><th>work imbalance<br>measured</th><th>gather<br>table rows</th>"
       "<th>index<br>bytes</th><th>partition<br>time</th><th>plan<br>time</th></tr></thead>\n<tbody>\n";
  for (const Row& row : r.rows) {
    if (!row.skipped.empty()) continue;
    o << "<tr><td class=\"l\">" << chip(strategy_colour(row.strategy)) << esc(row.strategy) << "</td><td class=\"l\">"
      << esc(row.partitioner) << "</td><td>" << row.parts << "</td><td>" << row.layers << "</td><td>"
      << cell(opt(row.comm_volume, commas)) << "</td><td>" << cell(opt(row.edge_cut, commas)) << "</td><td>"
      << cell(opt(row.replicated_edges, commas)) << "</td><td>"
      << cell(opt(row.node_imbalance, [](double v) { return fixed(v, 3); })) << "</td><td>"
      << cell(opt(row.edge_imbalance, [](double v) { return fixed(v, 3); })) << "</td><td>"
      << cell(opt(row.work_predicted, [](double v) { return fixed(v, 3); })) << "</td><td>"
      << cell(opt(row.work_measured, [](double v) { return fixed(v, 3); })) << "</td><td>"
      << cell(opt(row.table_rows, commas)) << "</td><td>" << cell(opt(row.index_bytes, bytes_text)) << "</td><td>"
      << cell(opt(row.partition_seconds, seconds_text)) << "</td><td>" << cell(opt(row.plan_seconds, seconds_text))
      << "</td></tr>\n";
  }
  o << "</tbody></table></div>\n</details>\n";
  if (!any_device) return;
  o << "<details><summary>Per-device numbers</summary>\n<div class=\"table-wrap\"><table>\n<thead><tr>"
       "<th class=\"l\">strategy</th><th class=\"l\">partitioner</th><th>K</th><th>layers</th><th>device</th>"
       "<th>own nodes</th><th>local nodes</th><th>local edges</th><th>halo nodes by hop</th><th>peak memory</th>"
       "<th>sent per epoch</th></tr></thead>\n<tbody>\n";
  auto at = [](const std::vector<double>& v, std::size_t i) { return i < v.size() ? v[i] : kNaN; };
  for (const Row& row : r.rows) {
    const std::size_t devices = std::max({row.inner_nodes.size(), row.local_nodes.size(), row.memory.size(),
                                          row.bytes_sent.size(), row.halo_per_hop.size()});
    for (std::size_t d = 0; d < devices; ++d) {
      o << "<tr" << (d == 0 ? " class=\"newk\"" : "") << "><td class=\"l\">" << chip(strategy_colour(row.strategy))
        << esc(row.strategy) << "</td><td class=\"l\">" << esc(row.partitioner) << "</td><td>" << row.parts
        << "</td><td>" << row.layers << "</td><td>" << d << "</td><td>" << cell(commas(at(row.inner_nodes, d)))
        << "</td><td>" << cell(commas(at(row.local_nodes, d))) << "</td><td>" << cell(commas(at(row.local_edges, d)))
        << "</td><td>"
        << (d < row.halo_per_hop.size() && !row.halo_per_hop[d].empty() ? esc(join_numbers(row.halo_per_hop[d], " / "))
                                                                          : na())
        << "</td><td>" << cell(bytes_text(d < row.memory.size() ? row.memory[d].peak : kNaN)) << "</td><td>"
        << cell(bytes_text(at(row.bytes_sent, d))) << "</td></tr>\n";
    }
  }
  o << "</tbody></table></div>\n</details>\n";
}

/// `{{name}}` -> the value (inserted as given: the caller escapes), `{{#name}}...{{/name}}` kept when the value is
/// not empty, `{{^name}}...{{/name}}` kept when it is, `{{! comment }}` dropped with the line break after it.
/// Unknown names read as empty; sections do not nest (the page needs none).
std::string fill(std::string_view page, const std::map<std::string, std::string>& values) {
  auto value = [&](std::string_view name) {
    const auto it = values.find(std::string(name));
    return it == values.end() ? std::string_view{} : std::string_view(it->second);
  };
  std::string out;
  std::size_t at = 0;
  while (at < page.size()) {
    const std::size_t open = page.find("{{", at);
    const std::size_t close = open == std::string_view::npos ? open : page.find("}}", open);
    if (close == std::string_view::npos) break;
    out.append(page.substr(at, open - at));
    const std::string_view tag = page.substr(open + 2, close - open - 2);
    at = close + 2;
    if (tag.empty() || (tag[0] != '#' && tag[0] != '^' && tag[0] != '!')) {
      out.append(value(tag));
      continue;
    }
    if (tag[0] == '!') {
      if (at < page.size() && page[at] == '\n') ++at;
      continue;
    }
    const std::string end = "{{/" + std::string(tag.substr(1)) + "}}";
    const std::size_t stop = std::min(page.find(end, at), page.size());
    if (value(tag.substr(1)).empty() == (tag[0] == '^')) out += fill(page.substr(at, stop - at), values);
    at = std::min(stop + end.size(), page.size());
  }
  if (at < page.size()) out.append(page.substr(at));
  return out;
}

template <typename Writer>
std::string written(Writer write, const Report& r) {
  std::ostringstream o;
  write(o, r);
  return o.str();
}

}  // namespace

std::string compare_html(const nlohmann::json& report) {
  const Report r = parse_report(report);
  std::map<std::string, std::string> values;
  values["title"] = esc("gcnpart compare: " + (r.dataset.empty() ? std::string("unnamed graph") : r.dataset));
  values["header"] = written(write_header, r);
  values["glance"] = written(write_glance, r);
  values["summary"] = written(write_summary, r);
  values["details"] = written(write_details, r);
  values["halo_chart"] = halo_chart(r, 560, 360);
  values["lost_edges_chart"] = lost_edges_chart(r, 560, 360);
  values["memory_chart"] = memory_chart(r, 1120);
  values["accuracy_chart"] = accuracy_chart(r, 1120);
  values["commit"] = esc(r.commit);
  values["date"] = r.date.empty() ? std::string() : esc(date_text(r.date));
  return fill(kReportTemplate, values);
}

}  // namespace gcnpart::report
