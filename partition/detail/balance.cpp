// The work model's per-plan figures and the greedy work refinement behind Balance::kWork.
#include <algorithm>
#include <numeric>
#include <vector>

#include "partition/detail/plan_detail.hpp"

namespace gcnpart::partition::detail {

namespace {

double max_over_mean(const std::vector<std::int64_t>& x) {
  const std::int64_t sum = std::accumulate(x.begin(), x.end(), std::int64_t{0});
  if (x.empty() || sum == 0) return 1.0;
  return static_cast<double>(*std::max_element(x.begin(), x.end())) * static_cast<double>(x.size()) /
         static_cast<double>(sum);
}

// Per-part totals of both measures. gather: sum of (degree + 1 + kRowWork); drop: sum of (1 + kRowWork + in-part
// neighbours). Moving v from s to t moves its gather weight, and changes drop work by -(1 + a + 2 ns) on s and
// +(1 + a + 2 nt) on t (v's own row and, once per in-part neighbour, that neighbour's entry for v).
// Only the measure of the strategy asked for is balanced (the other's cap is infinite).
struct Loads {
  std::vector<std::int64_t> gather, drop;
  std::int64_t gather_total = 0, drop_total = 0;
  double target = 1;
  bool gather_on = true, drop_on = false;

  [[nodiscard]] double gather_cap() const {
    return gather_on ? target * static_cast<double>(gather_total) / gather.size() : kNoCap;
  }
  [[nodiscard]] double drop_cap() const {
    return drop_on ? target * static_cast<double>(drop_total) / drop.size() : kNoCap;
  }
  // The larger of the active measures of part p over their means.
  [[nodiscard]] double ratio(std::size_t p) const {
    const double k = static_cast<double>(gather.size());
    return std::max(gather_on ? gather[p] * k / gather_total : 0.0, drop_on ? drop[p] * k / drop_total : 0.0);
  }
  static constexpr double kNoCap = 1e300;
  // Sum over parts of the load above the cap, each measure relative to its mean: 0 once both are balanced.
  [[nodiscard]] double excess() const {
    const double k = static_cast<double>(gather.size());
    const double gm = static_cast<double>(gather_total) / k, dm = static_cast<double>(drop_total) / k;
    double e = 0;
    for (std::size_t p = 0; p < gather.size(); ++p) {
      if (gather_on) e += std::max(0.0, gather[p] - target * gm) / gm;
      if (drop_on) e += std::max(0.0, drop[p] - target * dm) / dm;
    }
    return e;
  }
  // How far part p is below its cap (negative when over), relative to the mean.
  [[nodiscard]] double room(std::size_t p) const { return target - ratio(p); }
};

}  // namespace

void fill_work(PlanMetrics& m, Strategy strategy) {
  // boundary computes its own rows only (like gather); the received rows are columns it reads.
  const auto& rows = strategy == Strategy::kBoundary ? m.inner_nodes : m.local_nodes;
  m.work.assign(rows.size(), 0);
  for (std::size_t d = 0; d < m.work.size(); ++d)
    m.work[d] = device_work(d < m.local_edges.size() ? m.local_edges[d] : 0, rows[d]);
  m.work_imbalance = max_over_mean(m.work);
}

RefineStats refine_work_balance(const datasets::Csr& graph, int parts, double target, bool drop_work,
                                std::int32_t* part_of) {
  RefineStats stats;
  const std::int64_t n = graph.num_nodes;
  const auto* off = graph.row_offsets.data();
  const auto* col = graph.col_ids.data();
  const auto k = static_cast<std::size_t>(parts);
  constexpr std::int64_t a = kRowWork;

  Loads loads;
  loads.target = target;
  loads.gather_on = !drop_work;
  loads.drop_on = drop_work;
  loads.gather.assign(k, 0);
  loads.drop.assign(k, 0);
  for (std::int64_t v = 0; v < n; ++v) {
    const std::int32_t p = part_of[v];
    std::int64_t same = 0;
    for (RowOffset e = off[v]; e < off[v + 1]; ++e) same += part_of[col[e]] == p;
    loads.gather[p] += off[v + 1] - off[v] + 1 + a;
    loads.drop[p] += 1 + a + same;
  }
  loads.gather_total = std::accumulate(loads.gather.begin(), loads.gather.end(), std::int64_t{0});
  loads.drop_total = std::accumulate(loads.drop.begin(), loads.drop.end(), std::int64_t{0});

  auto over = [&](std::size_t p) { return loads.gather[p] > loads.gather_cap() || loads.drop[p] > loads.drop_cap(); };
  std::vector<std::int64_t> count(k, 0);  // neighbours of one node per part
  auto count_neighbours = [&](std::int64_t v) {
    std::fill(count.begin(), count.end(), 0);
    for (RowOffset e = off[v]; e < off[v + 1]; ++e) ++count[part_of[col[e]]];
  };
  // The best destination of v (neighbours counted) away from h. Among the parts that stay under both caps with v:
  // most neighbours there (lowest cut), then most room. When none can take v (every other part at its gather
  // cap while h is over its drop cap: h holds a dense core), the same order over all parts; such a move is kept
  // only if it leaves that part lighter than h (see below), so a hub cannot bounce between parts.
  auto destination = [&](std::int64_t v, std::size_t h) {
    const std::int64_t wg = off[v + 1] - off[v] + 1 + a;
    std::size_t best = k;
    bool best_fits = false;
    for (std::size_t t = 0; t < k; ++t) {
      if (t == h) continue;
      const bool fits = loads.gather[t] + wg <= loads.gather_cap() &&
                        loads.drop[t] + 1 + a + 2 * count[t] <= loads.drop_cap();
      bool better = best == k || (fits && !best_fits);
      if (!better && fits == best_fits) {
        better = count[t] > count[best] || (count[t] == count[best] && loads.room(t) > loads.room(best));
      }
      if (better) {
        best = t;
        best_fits = fits;
      }
    }
    return best;
  };
  auto ratio = [&](std::size_t p) { return loads.ratio(p); };
  auto apply = [&](std::int64_t v, std::size_t s, std::size_t t) {
    const std::int64_t wg = off[v + 1] - off[v] + 1 + a;
    loads.gather[s] -= wg;
    loads.gather[t] += wg;
    loads.drop[s] -= 1 + a + 2 * count[s];
    loads.drop[t] += 1 + a + 2 * count[t];
    loads.drop_total += 2 * (count[t] - count[s]);
    part_of[v] = static_cast<std::int32_t>(t);
  };

  struct Candidate {
    std::int64_t gain;  // cut change if moved to its best part (neighbours there - neighbours at home)
    NodeId node;
  };
  std::vector<Candidate> candidates;
  const int max_rounds = 64 * parts;
  for (int round = 0; round < max_rounds; ++round) {
    // The part most over its cap, either measure, relative to the mean.
    std::size_t h = 0;
    double worst = -1;
    for (std::size_t p = 0; p < k; ++p) {
      const double r = ratio(p);
      if (r > worst) {
        worst = r;
        h = p;
      }
    }
    if (!over(h)) break;
    candidates.clear();
    for (std::int64_t v = 0; v < n; ++v) {
      if (static_cast<std::size_t>(part_of[v]) != h) continue;
      count_neighbours(v);
      const std::size_t t = destination(v, h);
      candidates.push_back({count[t] - count[h], static_cast<NodeId>(v)});
    }
    std::sort(candidates.begin(), candidates.end(), [](const Candidate& x, const Candidate& y) {
      return x.gain != y.gain ? x.gain > y.gain : x.node < y.node;
    });
    std::int64_t moved = 0;
    double excess = loads.excess();
    for (const Candidate& c : candidates) {
      if (!over(h)) break;
      count_neighbours(c.node);  // gains go stale as neighbours move: recount
      const std::size_t t = destination(c.node, h);
      apply(c.node, h, t);
      const double after = loads.excess();
      if (after < excess - 1e-12 && (ratio(t) <= loads.target || ratio(t) < ratio(h))) {
        excess = after;
        ++moved;
      } else {
        apply(c.node, t, h);  // the exact inverse: v's neighbours did not move
      }
    }
    stats.moves += moved;
    if (moved == 0) break;
  }
  stats.gather_imbalance = max_over_mean(loads.gather);
  stats.drop_imbalance = max_over_mean(loads.drop);
  return stats;
}

}  // namespace gcnpart::partition::detail
