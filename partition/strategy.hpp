// The strategies and what each supports, in one table. Plans, the engine, the memory and cost models (fit), compare
// and the CLI's messages read these rows instead of testing strategies by name, so a new strategy is one row of
// kStrategies (plus its plan builder and aggregation) and every rule about which settings a strategy accepts lives
// in check_strategy / strategy_refusal.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "base/enum_names.hpp"
#include "base/enums.hpp"

namespace gcnpart::partition {

/// kBoundary comes last: the codes are part of the plan file format (partition/plan_io.cpp).
enum class Strategy { kSingle, kDrop, kHalo, kGather, kPipeline, kBoundary };
// to_string(Strategy) and from_string<Strategy>(text, parameter) (base/enum_names.hpp), found by ADL.
using gcnpart::from_string;
using gcnpart::to_string;

/// What a strategy's devices exchange during an epoch, besides the gradient, loss and accuracy all-reduces.
enum class Communication {
  kNone,            ///< one device
  kAllReduce,       ///< gradients and counts only: every device has what its rows need
  kAllGatherTable,  ///< every layer all-gathers the devices' rows into a table (backward: reduce-scatter)
  kPointToPoint,    ///< activations / gradients sent between neighbouring stages
  kAllToAll,        ///< every layer each device sends its peers the rows their edges touch (all_to_all_v;
                    ///< backward: the gradients of those rows return)
};

/// How many devices (parts) a strategy runs on.
enum class PartsRule {
  kOne,           ///< exactly one
  kAny,           ///< any count >= 1 (at most the node count: the partitioner checks)
  kAtMostLayers,  ///< 1..layers: each device runs at least one layer
};

struct StrategyTraits {
  Strategy value;
  const char* name;              ///< CLI and report name
  bool exact;                    ///< trains on the full graph's Â (losses as single, up to summation order);
                                 ///< inexact strategies lose the cut edges (PlanMetrics::lost_edges)
  bool splits_nodes;             ///< each device owns one part of a node partition; else every device holds the
                                 ///< whole graph
  PartsRule parts;
  const char* part_noun;         ///< what one part is called in messages ("devices", "stages")
  bool bf16;                     ///< trains in Precision::kBf16
  bool memory_model;             ///< the memory and cost models (gcnpart fit) cover it
  Communication communication;
  const char* description;       ///< one line for --help
};

/// One row per strategy, in Strategy order (the order the CLI lists them).
inline constexpr std::array<StrategyTraits, 6> kStrategies{{
    {Strategy::kSingle, "single", true, false, PartsRule::kOne, "devices", true, true, Communication::kNone,
     "one device holds the whole graph"},
    {Strategy::kDrop, "drop", false, true, PartsRule::kAny, "devices", true, true, Communication::kAllReduce,
     "each device trains on its part's subgraph; cut edges are lost (inexact)"},
    {Strategy::kHalo, "halo", true, true, PartsRule::kAny, "devices", true, true, Communication::kAllReduce,
     "each device adds its part's n-hop neighbourhood (exact, replicated nodes)"},
    {Strategy::kGather, "gather", true, true, PartsRule::kAny, "devices", true, true, Communication::kAllGatherTable,
     "each layer all-gathers the parts' rows into a table (exact, communication per layer)"},
    {Strategy::kPipeline, "pipeline", true, false, PartsRule::kAtMostLayers, "stages", false, false,
     Communication::kPointToPoint, "the layers are split into K stages over the whole graph (K <= layers, fp32/tf32)"},
    {Strategy::kBoundary, "boundary", true, true, PartsRule::kAny, "devices", true, true, Communication::kAllToAll,
     "each layer sends every device only the rows its edges touch (exact, communication per layer)"},
}};

/// The row of `s`.
[[nodiscard]] constexpr const StrategyTraits& traits(Strategy s) noexcept {
  return kStrategies[static_cast<std::size_t>(s)];
}

/// Whether `s` runs on exactly one device (its parts rule is kOne): the reference every split is compared with.
[[nodiscard]] constexpr bool one_device(Strategy s) noexcept { return traits(s).parts == PartsRule::kOne; }
/// Whether `s`'s devices hold layers (stages of the model over the whole graph) rather than parts of the nodes.
[[nodiscard]] constexpr bool splits_layers(Strategy s) noexcept { return traits(s).parts == PartsRule::kAtMostLayers; }

/// Why a strategy refuses a setting.
struct StrategyRefusal {
  enum class Kind { kParts, kPrecision } kind;
  std::string parameter;  ///< the option at fault ("--parts", "--precision")
  std::string value;      ///< its value
  std::string expected;   ///< what the strategy accepts
  std::string reason;     ///< a short sentence (compare's skip reason)
};

/// Why `strategy` cannot train `layers` layers on `parts` devices in `precision`, or nullopt when it can.
/// The rules come from the rows: PartsRule (single: parts == 1; pipeline: parts <= layers), bf16 support.
[[nodiscard]] std::optional<StrategyRefusal> strategy_refusal(Strategy strategy, int parts, int layers,
                                                              Precision precision);
/// @throws InvalidInput::parameter(parameter, value, expected) of strategy_refusal when there is one.
void check_strategy(Strategy strategy, int parts, int layers, Precision precision);

/// Names of the strategies whose row satisfies `pred`, in table order.
template <class Pred>
[[nodiscard]] std::vector<std::string> strategy_names_where(Pred pred) {
  std::vector<std::string> out;
  for (const auto& row : kStrategies)
    if (pred(row)) out.emplace_back(row.name);
  return out;
}

/// `--help` text listing every strategy with its description, one per line ("name: description").
[[nodiscard]] std::string strategies_help();

}  // namespace gcnpart::partition

namespace gcnpart {
template <>
struct EnumNames<partition::Strategy> {
  static constexpr const auto& table = partition::kStrategies;
};
}  // namespace gcnpart

static_assert(gcnpart::table_in_enum_order<gcnpart::partition::Strategy>(), "kStrategies rows follow the enum order");
