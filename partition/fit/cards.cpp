#include "partition/fit/cards.hpp"

#include <algorithm>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "base/error.hpp"

namespace gcnpart::partition {

extern const char* const kBuiltinCardsJson;  // partition/fit/cards.json, compiled in (cards_data.cpp.in)

namespace {

using nlohmann::json;
constexpr const char* kBuiltinOrigin = "partition/fit/cards.json (built in)";
constexpr const char* kOriginKey = "_origin";
// Upper bounds that keep conversions in range (a petabyte card, a million GB/s or TFLOP/s, W or USD).
constexpr double kMaxBytes = 1e15, kMaxRate = 1e6, kMaxMib = 1e6;

/// The file an entry came from: its _origin (set by merge_into) when that is a string, else `fallback`.
std::string origin_of(const nlohmann::json& entry, const std::string& fallback) {
  if (entry.is_object() && entry.contains(kOriginKey) && entry.at(kOriginKey).is_string())
    return entry.at(kOriginKey).get<std::string>();
  return fallback;
}

[[noreturn]] void bad(const std::string& origin, const std::string& what, const std::string& value,
                      const std::string& expected) {
  throw InvalidInput(InputLocation{origin, 0, 0}, what, value, expected);
}

json parse_json(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse errors, and number overflow (out_of_range)
    bad(origin, "not valid JSON", e.what(), "a JSON document {\"cards\": [...]}");
  }
}

std::string shown(const json& v) {
  std::string s = v.dump();
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

/// Reads the fields of one card object (already merged), every one checked.
class CardReader {
 public:
  CardReader(std::string origin, std::string card) : origin_(std::move(origin)), card_(std::move(card)) {}
  const json& field(const json& obj, const std::string& name, const std::string& path) const {
    if (!obj.is_object() || !obj.contains(name)) bad(origin_, where(path), "missing", "the field to be present");
    return obj.at(name);
  }
  /// A number in [min, max] (max keeps integer conversions and products in range).
  double number(const json& obj, const std::string& name, double min, double max, const std::string& path = "") const {
    const json& v = field(obj, name, path.empty() ? name : path);
    if (!v.is_number() || !(v.get<double>() >= min) || !(v.get<double>() <= max))
      bad(origin_, where(path.empty() ? name : path), shown(v), "a number in [" + trim(min) + ", " + trim(max) + "]");
    return v.get<double>();
  }
  std::string text(const json& obj, const std::string& name) const {
    const json& v = field(obj, name, name);
    if (!v.is_string() || v.get<std::string>().empty()) bad(origin_, where(name), shown(v), "a non-empty string");
    return v.get<std::string>();
  }
  std::string where(const std::string& path) const { return "card '" + card_ + "': field '" + path + "'"; }

 private:
  static std::string trim(double x) {
    std::ostringstream o;
    o << x;
    return o.str();
  }
  std::string origin_, card_;
};

CardCatalogue build(const json& doc, const std::vector<std::string>& origins) {
  CardCatalogue cat;
  cat.origins = origins;
  const std::string first = origins.empty() ? std::string("<cards>") : origins.front();
  if (!doc.is_object()) bad(first, "catalogue", shown(doc), "a JSON object with \"cards\" and \"families\"");
  if (doc.contains("families")) {
    const json& fams = doc.at("families");
    if (!fams.is_object()) bad(first, "field 'families'", shown(fams), "an object of family name -> {fixed_overhead_mib}");
    for (const auto& [name, f] : fams.items()) {
      const std::string origin = origin_of(f, first);
      if (!f.is_object() || !f.contains("fixed_overhead_mib") || !f.at("fixed_overhead_mib").is_number() ||
          !(f.at("fixed_overhead_mib").get<double>() >= 0) || !(f.at("fixed_overhead_mib").get<double>() <= kMaxMib))
        bad(origin, "family '" + name + "': field 'fixed_overhead_mib'",
            f.is_object() && f.contains("fixed_overhead_mib") ? shown(f.at("fixed_overhead_mib")) : "missing",
            "a number of MiB in [0, 1e6]");
      CardFamily fam;
      fam.fixed_overhead_mib = f.at("fixed_overhead_mib").get<double>();
      if (f.contains("measured")) {
        if (!f.at("measured").is_boolean()) bad(origin, "family '" + name + "': field 'measured'", shown(f.at("measured")), "true or false");
        fam.measured = f.at("measured").get<bool>();
      }
      if (f.contains("note") && f.at("note").is_string()) fam.note = f.at("note").get<std::string>();
      cat.families[name] = fam;
    }
  }
  if (!doc.contains("cards") || !doc.at("cards").is_array())
    bad(first, "field 'cards'", doc.contains("cards") ? shown(doc.at("cards")) : "missing", "an array of card objects");
  for (const json& e : doc.at("cards")) {
    const std::string origin = origin_of(e, first);
    if (!e.is_object() || !e.contains("id") || !e.at("id").is_string() || e.at("id").get<std::string>().empty())
      bad(origin, "card entry", shown(e), "an object with a non-empty string \"id\"");
    const std::string id = e.at("id").get<std::string>();
    CardReader r(origin, id);
    Card c;
    c.id = id;
    c.name = r.text(e, "name");
    c.family = r.text(e, "family");
    c.memory_bytes = static_cast<std::int64_t>(r.number(e, "memory_bytes", 1, kMaxBytes));
    c.memory_bandwidth_gbs = r.number(e, "memory_bandwidth_gbs", 1e-3, kMaxRate);
    c.fp32_tflops = r.number(e, "fp32_tflops", 1e-3, kMaxRate);
    c.tf32_tflops = r.number(e, "tf32_tflops", 0, kMaxRate);
    c.bf16_tflops = r.number(e, "bf16_tflops", 0, kMaxRate);
    const json& link = r.field(e, "interconnect", "interconnect");
    c.pcie_generation = static_cast<int>(r.number(link, "pcie_generation", 1, 16, "interconnect.pcie_generation"));
    c.pcie_gbs = r.number(link, "pcie_gbs", 1e-3, kMaxRate, "interconnect.pcie_gbs");
    c.nvlink_gbs = r.number(link, "nvlink_gbs", 0, kMaxRate, "interconnect.nvlink_gbs");
    c.nvlink_max_gpus = static_cast<int>(r.number(link, "nvlink_max_gpus", 0, 1024, "interconnect.nvlink_max_gpus"));
    if (c.nvlink_gbs > 0 && c.nvlink_max_gpus < 2)
      bad(origin, r.where("interconnect.nvlink_max_gpus"), std::to_string(c.nvlink_max_gpus),
          ">= 2 when nvlink_gbs > 0 (the GPUs one NVLink domain joins)");
    c.board_power_w = r.number(e, "board_power_w", 1, kMaxRate);
    if (e.contains("l2_mib")) c.l2_bytes = static_cast<std::int64_t>(r.number(e, "l2_mib", 0, kMaxMib) * 1048576.0);
    if (e.contains("sms")) c.sms = static_cast<int>(r.number(e, "sms", 0, 100000));
    const json& price = r.field(e, "launch_price_usd", "launch_price_usd");
    if (!price.is_null()) {
      if (!price.is_number() || !(price.get<double>() > 0) || !(price.get<double>() <= kMaxRate))
        bad(origin, r.where("launch_price_usd"), shown(price), "a price in USD > 0, or null when none was published");
      c.launch_price_usd = price.get<double>();
    }
    c.source = r.text(e, "source");
    if (e.contains("note")) {
      if (!e.at("note").is_string()) bad(origin, r.where("note"), shown(e.at("note")), "a string");
      c.note = e.at("note").get<std::string>();
    }
    if (e.contains("fixed_overhead_mib")) {
      c.fixed_overhead_bytes = static_cast<std::int64_t>(r.number(e, "fixed_overhead_mib", 0, kMaxMib) * 1048576.0);
      c.fixed_overhead_measured = e.contains("fixed_overhead_measured") && e.at("fixed_overhead_measured").is_boolean() &&
                                  e.at("fixed_overhead_measured").get<bool>();
    } else if (auto it = cat.families.find(c.family); it != cat.families.end()) {
      c.fixed_overhead_bytes = static_cast<std::int64_t>(it->second.fixed_overhead_mib * 1048576.0);
      c.fixed_overhead_measured = it->second.measured;
    } else {
      std::string known;
      for (const auto& [name, f] : cat.families) known += (known.empty() ? "" : ", ") + name;
      bad(origin, r.where("family"), c.family,
          "a family listed under \"families\" (" + known + ") or a card-level fixed_overhead_mib");
    }
    for (const auto& other : cat.cards)
      if (other.id == id) bad(origin, "card '" + id + "'", "a second entry", "one entry per id in a file");
    cat.cards.push_back(std::move(c));
  }
  return cat;
}

/// Merges `user` into `base`: cards by id (fields overridden one by one, interconnect one level deeper), families
/// by name. Entries remember the file that touched them last, for error messages.
void merge_into(json& base, const json& user, const std::string& origin) {
  if (!user.is_object()) bad(origin, "catalogue", shown(user), "a JSON object with \"cards\" and/or \"families\"");
  if (user.contains("families")) {
    if (!user.at("families").is_object()) bad(origin, "field 'families'", shown(user.at("families")), "an object");
    for (const auto& [name, f] : user.at("families").items()) {
      json& dst = base["families"][name];
      if (!dst.is_object()) dst = json::object();
      if (!f.is_object()) bad(origin, "family '" + name + "'", shown(f), "an object");
      for (const auto& [k, v] : f.items()) dst[k] = v;
      dst[kOriginKey] = origin;
    }
  }
  if (user.contains("cards")) {
    if (!user.at("cards").is_array()) bad(origin, "field 'cards'", shown(user.at("cards")), "an array of card objects");
    json& cards = base["cards"];
    std::vector<std::string> ids_here;  // one entry per id in one file: a second one would silently override
    for (const json& e : user.at("cards")) {
      if (!e.is_object() || !e.contains("id") || !e.at("id").is_string())
        bad(origin, "card entry", shown(e), "an object with a string \"id\"");
      const std::string id = e.at("id").get<std::string>();
      if (std::find(ids_here.begin(), ids_here.end(), id) != ids_here.end())
        bad(origin, "card '" + id + "'", "a second entry", "one entry per id in a file");
      ids_here.push_back(id);
      json* dst = nullptr;
      for (json& c : cards)
        if (c.at("id") == e.at("id")) dst = &c;
      if (dst == nullptr) {
        cards.push_back(json::object());
        dst = &cards.back();
      }
      for (const auto& [k, v] : e.items()) {
        if (k == "interconnect" && v.is_object() && dst->contains("interconnect") && (*dst)["interconnect"].is_object()) {
          for (const auto& [lk, lv] : v.items()) (*dst)["interconnect"][lk] = lv;
        } else {
          (*dst)[k] = v;
        }
      }
      (*dst)[kOriginKey] = origin;
    }
  }
}

}  // namespace

const Card& CardCatalogue::find(const std::string& id, const std::string& parameter) const {
  for (const auto& c : cards)
    if (c.id == id) return c;
  std::string known;
  for (const auto& c : cards) known += (known.empty() ? "" : ", ") + c.id;
  throw InvalidInput::parameter(parameter, id, "a card id of the catalogue (" + known + ")");
}

CardCatalogue parse_cards(const std::string& text, const std::string& origin) {
  return build(parse_json(text, origin), {origin});
}

CardCatalogue builtin_cards() { return parse_cards(kBuiltinCardsJson, kBuiltinOrigin); }

CardCatalogue load_cards(const std::string& file) {
  json doc = parse_json(kBuiltinCardsJson, kBuiltinOrigin);
  std::vector<std::string> origins{kBuiltinOrigin};
  if (!file.empty()) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw IoError(file, "cannot open the card file");
    std::ostringstream text;
    text << in.rdbuf();
    if (in.bad()) throw IoError(file, "cannot read the card file");
    merge_into(doc, parse_json(text.str(), file), file);
    origins.push_back(file);
  }
  return build(doc, origins);
}

}  // namespace gcnpart::partition
