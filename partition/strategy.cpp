#include "partition/strategy.hpp"

#include "base/error.hpp"

namespace gcnpart::partition {

std::optional<StrategyRefusal> strategy_refusal(Strategy strategy, int parts, int layers, Precision precision) {
  using Kind = StrategyRefusal::Kind;
  const StrategyTraits& t = traits(strategy);
  const std::string k = std::to_string(parts);
  const std::string what = std::string(t.name) + " " + t.part_noun;  // "pipeline stages"
  switch (t.parts) {
    case PartsRule::kOne:
      if (parts != 1) return StrategyRefusal{Kind::kParts, "--parts", k, std::string("1 for strategy ") + t.name,
                                             std::string(t.name) + " runs on one device"};
      break;
    case PartsRule::kAtMostLayers:  // a stage needs a layer
      if (parts < 1 || parts > layers)
        return StrategyRefusal{Kind::kParts, "--parts", k,
                               "at most the number of layers (" + std::to_string(layers) + ") " + what,
                               k + " " + t.part_noun + " for " + std::to_string(layers) + " layers"};
      break;
    case PartsRule::kAny:
      if (parts < 1) return StrategyRefusal{Kind::kParts, "--parts", k, ">= 1", "needs at least one device"};
      break;
  }
  if (traits(precision).bf16_storage && !t.bf16) {
    const std::vector<std::string> others = [] {
      std::vector<std::string> out;
      for (const auto& row : kPrecisions)
        if (!row.bf16_storage) out.emplace_back(row.name);
      return out;
    }();
    return StrategyRefusal{Kind::kPrecision, "--precision", traits(precision).name,
                           or_list(others) + " with " + what + " (bf16 " + what + " are not implemented)",
                           "bf16 " + what + " are not implemented"};
  }
  return std::nullopt;
}

void check_strategy(Strategy strategy, int parts, int layers, Precision precision) {
  if (auto r = strategy_refusal(strategy, parts, layers, precision))
    throw InvalidInput::parameter(r->parameter, r->value, r->expected);
}

std::string strategies_help() {
  std::string s;
  for (const auto& row : kStrategies) s += std::string(s.empty() ? "" : "\n") + row.name + ": " + row.description;
  return s;
}

}  // namespace gcnpart::partition
