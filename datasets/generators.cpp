#include "datasets/generators.hpp"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "datasets/detail/synthetic.hpp"
#include "base/error.hpp"
#include "base/philox.hpp"

namespace gcnpart::datasets {

namespace {

// A compact decimal for names and provenance: 16 -> "16", 0.57 -> "0.57".
std::string num(double x) {
  std::ostringstream s;
  s.precision(10);
  s << x;
  return s.str();
}

void check_probability(const char* name, double p) {
  if (!(p >= 0.0 && p <= 1.0)) throw InvalidInput::parameter(name, num(p), "a probability in [0, 1]");
}

}  // namespace

Dataset generate_rmat(const RmatParams& params) {
  // Node ids are int32: 2^30 is the largest power of two below 2^31 - 1.
  if (params.scale < 1 || params.scale > 30)
    throw InvalidInput::parameter("scale", std::to_string(params.scale), "1..30 (2^scale nodes, int32 ids)");
  if (!(params.edge_factor > 0.0) || !std::isfinite(params.edge_factor))
    throw InvalidInput::parameter("edge_factor", num(params.edge_factor), "a finite number > 0");
  check_probability("a", params.a);
  check_probability("b", params.b);
  check_probability("c", params.c);
  const double d = 1.0 - params.a - params.b - params.c;
  if (d < -1e-12)
    throw InvalidInput::parameter("a+b+c", num(params.a + params.b + params.c), "at most 1 (d = 1 - a - b - c)");
  if (params.features < 0) throw InvalidInput::parameter("features", std::to_string(params.features), ">= 0");
  if (params.classes < 0) throw InvalidInput::parameter("classes", std::to_string(params.classes), ">= 0");
  if ((params.features > 0) != (params.classes > 0))
    throw InvalidInput::parameter("features/classes", std::to_string(params.features) + "/" +
                                                          std::to_string(params.classes),
                                  "both > 0 (synthetic features) or both 0 (structure only)");

  const int scale = params.scale;
  const std::int64_t n = std::int64_t{1} << scale;
  const double m_real = std::round(params.edge_factor * static_cast<double>(n));
  // build_csr stores both directions of every edge with int64 offsets; 2^40 edges is far beyond any host.
  if (m_real > static_cast<double>(std::int64_t{1} << 40))
    throw InvalidInput::parameter("edge_factor", num(params.edge_factor),
                                  "at most 2^40 edges in all (edge_factor * 2^scale)");
  const auto m = static_cast<std::int64_t>(m_real);

  // Edge i, level l (from the top bit down) uses 32-bit word l % 4 of philox(edge_key, i, l / 4): x < ta -> quadrant
  // a (0,0), < tab -> b (0,1), < tabc -> c (1,0), else d (1,1).
  const double two32 = 4294967296.0;
  const auto ta = static_cast<std::uint64_t>(params.a * two32);
  const auto tab = static_cast<std::uint64_t>((params.a + params.b) * two32);
  const auto tabc = static_cast<std::uint64_t>(std::min(1.0, params.a + params.b + params.c) * two32);
  const std::uint64_t edge_key = rng::stream_key(params.seed, rng::kRmatEdges);
  const std::uint64_t perm_key = rng::stream_key(params.seed, rng::kRmatPermutation);

  EdgeList edges;
  edges.num_nodes = n;
  edges.src.resize(static_cast<std::size_t>(m));
  edges.dst.resize(static_cast<std::size_t>(m));
  // Edges in batches of kBatch: the Philox rounds of independent edges interleave (2x faster than one at a time).
  constexpr std::int64_t kBatch = 8;
  const std::int64_t batches = (m + kBatch - 1) / kBatch;
#pragma omp parallel for schedule(static)
  for (std::int64_t batch = 0; batch < batches; ++batch) {
    const std::int64_t first = batch * kBatch;
    std::uint64_t u[kBatch] = {}, v[kBatch] = {};
    for (int chunk = 0; 4 * chunk < scale; ++chunk) {
      rng::Philox4 r[kBatch];
      for (std::int64_t j = 0; j < kBatch; ++j)
        r[j] = rng::philox4x32(edge_key, static_cast<std::uint64_t>(first + j), static_cast<std::uint64_t>(chunk));
      for (int level = 4 * chunk; level < std::min(scale, 4 * chunk + 4); ++level) {
        for (std::int64_t j = 0; j < kBatch; ++j) {
          const std::uint64_t x = r[j].v[level & 3];
          const std::uint64_t ge_a = x >= ta, ge_ab = x >= tab, ge_abc = x >= tabc;
          u[j] = (u[j] << 1) | ge_ab;                     // lower half: quadrants c, d
          v[j] = (v[j] << 1) | (ge_a ^ ge_ab ^ ge_abc);  // right half: quadrants b, d
        }
      }
    }
    // Without the permutation node 0 would be the hub and ids would encode degree (Graph500 permutes too).
    for (std::int64_t j = 0; j < kBatch && first + j < m; ++j) {
      edges.src[first + j] = static_cast<NodeId>(rng::feistel_permute(u[j], static_cast<unsigned>(scale), perm_key));
      edges.dst[first + j] = static_cast<NodeId>(rng::feistel_permute(v[j], static_cast<unsigned>(scale), perm_key));
    }
  }

  Dataset ds;
  ds.graph = build_csr(edges, BuildOptions{}, &ds.build_stats);
  edges = EdgeList{};  // free the edge list before features are allocated

  ds.name = "rmat-s" + std::to_string(scale) + "-e" + num(params.edge_factor);
  ds.provenance = "generator rmat scale=" + std::to_string(scale) + " edge_factor=" + num(params.edge_factor) +
                  " a=" + num(params.a) + " b=" + num(params.b) + " c=" + num(params.c) + " d=" + num(std::max(0.0, d)) +
                  " seed=" + std::to_string(params.seed) + " nodes=" + std::to_string(n) +
                  " drawn_edges=" + std::to_string(m) + " (symmetrised, deduplicated, self loops dropped)";
  if (params.features > 0) add_synthetic_features(ds, params.features, params.classes, params.seed);
  return ds;
}

Dataset generate_sbm(const SbmParams& p) {
  if (p.nodes < 1 || p.nodes > std::int64_t{0x7fffffff})
    throw InvalidInput::parameter("nodes", std::to_string(p.nodes), "1..2147483647 (int32 node ids)");
  if (p.classes < 2 || p.classes > p.nodes)
    throw InvalidInput::parameter("classes", std::to_string(p.classes), "2.." + std::to_string(p.nodes));
  if (!(p.avg_degree >= 0.0) || !std::isfinite(p.avg_degree))
    throw InvalidInput::parameter("avg_degree", num(p.avg_degree), "a finite number >= 0");
  check_probability("p_intra", p.p_intra);
  if (p.features < 1) throw InvalidInput::parameter("features", std::to_string(p.features), ">= 1");
  if (!(p.feature_signal >= 0.0) || !std::isfinite(p.feature_signal))
    throw InvalidInput::parameter("feature_signal", num(p.feature_signal), "a finite number >= 0");
  if (p.nodes > (std::int64_t{1} << 62) / p.features)
    throw InvalidInput::parameter("features", std::to_string(p.features), "nodes * features below 2^62");
  const std::int64_t n = p.nodes;
  const std::int32_t k = p.classes;
  const std::int64_t smallest_class = n / k;
  if (p.train_per_class < 0 || p.train_per_class > smallest_class)
    throw InvalidInput::parameter("train_per_class", std::to_string(p.train_per_class),
                                  "0.." + std::to_string(smallest_class) + " (nodes of the smallest class)");
  if (p.valid < 0 || p.test < 0 || p.train_per_class * k + p.valid + p.test > n)
    throw InvalidInput::parameter("valid/test", std::to_string(p.valid) + "/" + std::to_string(p.test),
                                  "non-negative with train_per_class * classes + valid + test <= nodes (" +
                                      std::to_string(n) + ")");
  const double m_real = std::round(static_cast<double>(n) * p.avg_degree / 2.0);
  if (m_real > static_cast<double>(std::int64_t{1} << 40))
    throw InvalidInput::parameter("avg_degree", num(p.avg_degree), "at most 2^41 / nodes");
  const auto m = static_cast<std::int64_t>(m_real);

  // Balanced blocks: node u sits at position pos(u) of a keyed permutation and has class pos(u) mod k, so class
  // c is the positions c, c + k, c + 2k, ... and its j-th member is at_position[c + j k].
  const std::uint64_t class_key = rng::stream_key(p.seed, rng::kSbmEdges, 0);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(n));
  std::vector<NodeId> at_position(static_cast<std::size_t>(n));
#pragma omp parallel for schedule(static)
  for (std::int64_t u = 0; u < n; ++u) {
    const auto pos = static_cast<std::int64_t>(rng::permute_index(static_cast<std::uint64_t>(u), static_cast<std::uint64_t>(n), class_key));
    labels[u] = static_cast<std::int32_t>(pos % k);
    at_position[pos] = static_cast<NodeId>(u);
  }
  auto class_size = [&](std::int64_t c) { return (n - c + k - 1) / k; };

  // Edge i: a uniform source u; with probability p_intra a uniform target in u's class, else a uniform target
  // among the nodes of the other classes. Stored once, symmetrised by build_csr: expected degree 2m/n.
  const std::uint64_t edge_key = rng::stream_key(p.seed, rng::kSbmEdges, 1);
  const auto intra_threshold = static_cast<std::uint64_t>(p.p_intra * 4294967296.0);
  EdgeList edges;
  edges.num_nodes = n;
  edges.src.resize(static_cast<std::size_t>(m));
  edges.dst.resize(static_cast<std::size_t>(m));
#pragma omp parallel for schedule(static)
  for (std::int64_t i = 0; i < m; ++i) {
    const rng::Philox4 r = rng::philox4x32(edge_key, static_cast<std::uint64_t>(i), 0);
    const rng::Philox4 s = rng::philox4x32(edge_key, static_cast<std::uint64_t>(i), 1);
    const std::int64_t u = detail::uniform_below(r.v[0], r.v[1], n);
    const std::int64_t c = labels[u];
    std::int64_t pos;
    if (static_cast<std::uint64_t>(s.v[0]) < intra_threshold) {
      pos = c + k * detail::uniform_below(r.v[2], r.v[3], class_size(c));
    } else {
      // q-th position not congruent to c mod k (positions are laid out in rows of k, one of which is skipped).
      const std::int64_t q = detail::uniform_below(r.v[2], r.v[3], n - class_size(c));
      const std::int64_t row = q / (k - 1), col = q % (k - 1);
      pos = row * k + (col < c ? col : col + 1);
    }
    edges.src[i] = static_cast<NodeId>(u);
    edges.dst[i] = at_position[pos];
  }
  at_position = {};

  Dataset ds;
  ds.graph = build_csr(edges, BuildOptions{}, &ds.build_stats);
  edges = EdgeList{};

  ds.features = detail::class_gaussian_features(labels, k, p.features, p.feature_signal,
                                                rng::stream_key(p.seed, rng::kSbmFeatures, 0),
                                                rng::stream_key(p.seed, rng::kSbmFeatures, 1));
  ds.num_features = p.features;
  ds.labels = std::move(labels);
  ds.num_classes = k;

  // Walk a keyed permutation: the first train_per_class nodes of each class train, the next `valid` nodes (any
  // class) validate, the next `test` nodes test.
  const std::uint64_t split_key = rng::stream_key(p.seed, rng::kSbmSplit);
  std::vector<std::int64_t> taken(static_cast<std::size_t>(k), 0);
  std::vector<NodeId> train, valid, test;
  train.reserve(static_cast<std::size_t>(p.train_per_class * k));
  valid.reserve(static_cast<std::size_t>(p.valid));
  test.reserve(static_cast<std::size_t>(p.test));
  for (std::int64_t q = 0; q < n; ++q) {
    if (static_cast<std::int64_t>(test.size()) == p.test && static_cast<std::int64_t>(valid.size()) == p.valid &&
        static_cast<std::int64_t>(train.size()) == p.train_per_class * k)
      break;
    const auto u = static_cast<NodeId>(rng::permute_index(static_cast<std::uint64_t>(q), static_cast<std::uint64_t>(n), split_key));
    const std::int32_t c = ds.labels[u];
    if (taken[c] < p.train_per_class) {
      ++taken[c];
      train.push_back(u);
    } else if (static_cast<std::int64_t>(valid.size()) < p.valid) {
      valid.push_back(u);
    } else if (static_cast<std::int64_t>(test.size()) < p.test) {
      test.push_back(u);
    }
  }
  for (auto* ids : {&train, &valid, &test}) detail::sort_split(*ids);
  ds.splits["train"] = std::move(train);
  ds.splits["valid"] = std::move(valid);
  ds.splits["test"] = std::move(test);

  ds.name = "sbm-n" + std::to_string(n) + "-c" + std::to_string(k);
  ds.provenance = "generator sbm nodes=" + std::to_string(n) + " classes=" + std::to_string(k) +
                  " avg_degree=" + num(p.avg_degree) + " p_intra=" + num(p.p_intra) +
                  " features=" + std::to_string(p.features) + " feature_signal=" + num(p.feature_signal) +
                  " train_per_class=" + std::to_string(p.train_per_class) + " valid=" + std::to_string(p.valid) +
                  " test=" + std::to_string(p.test) + " seed=" + std::to_string(p.seed) +
                  " drawn_edges=" + std::to_string(m) + " (symmetrised, deduplicated, self loops dropped)";
  return ds;
}

Dataset generate_grid(const GridParams& p) {
  if (p.dims != 2 && p.dims != 3) throw InvalidInput::parameter("dims", std::to_string(p.dims), "2 or 3");
  const std::int64_t max_side = p.dims == 2 ? 46340 : 1290;  // side^dims below 2^31 (int32 node ids)
  if (p.side < 2 || p.side > max_side)
    throw InvalidInput::parameter("side", std::to_string(p.side),
                                  "2.." + std::to_string(max_side) + " (side^" + std::to_string(p.dims) +
                                      " nodes, int32 ids)");
  if (p.features < 0) throw InvalidInput::parameter("features", std::to_string(p.features), ">= 0");
  if (p.classes < 0) throw InvalidInput::parameter("classes", std::to_string(p.classes), ">= 0");
  if ((p.features > 0) != (p.classes > 0))
    throw InvalidInput::parameter("features/classes", std::to_string(p.features) + "/" + std::to_string(p.classes),
                                  "both > 0 (synthetic features) or both 0 (structure only)");
  const std::int64_t side = p.side, n = p.dims == 2 ? side * side : side * side * side;
  const std::uint64_t key = rng::stream_key(p.seed, rng::kGridPermutation);
  const auto id = [&](std::int64_t x) {
    return static_cast<NodeId>(p.shuffle ? rng::permute_index(static_cast<std::uint64_t>(x), static_cast<std::uint64_t>(n), key)
                                         : static_cast<std::uint64_t>(x));
  };
  // Each node's edges to its "forward" neighbours (build_csr symmetrises): 2-D right, down, both diagonals below;
  // 3-D +x, +y, +z.
  EdgeList edges;
  edges.num_nodes = n;
  const int per_node = p.dims == 2 ? 4 : 3;
  edges.src.reserve(static_cast<std::size_t>(n * per_node));
  edges.dst.reserve(static_cast<std::size_t>(n * per_node));
  const auto add = [&](std::int64_t a, std::int64_t b) {
    edges.src.push_back(id(a));
    edges.dst.push_back(id(b));
  };
  if (p.dims == 2) {
    for (std::int64_t y = 0; y < side; ++y)
      for (std::int64_t x = 0; x < side; ++x) {
        const std::int64_t u = y * side + x;
        if (x + 1 < side) add(u, u + 1);
        if (y + 1 < side) add(u, u + side);
        if (x + 1 < side && y + 1 < side) add(u, u + side + 1);
        if (x > 0 && y + 1 < side) add(u, u + side - 1);
      }
  } else {
    for (std::int64_t z = 0; z < side; ++z)
      for (std::int64_t y = 0; y < side; ++y)
        for (std::int64_t x = 0; x < side; ++x) {
          const std::int64_t u = (z * side + y) * side + x;
          if (x + 1 < side) add(u, u + 1);
          if (y + 1 < side) add(u, u + side);
          if (z + 1 < side) add(u, u + side * side);
        }
  }
  Dataset ds;
  ds.graph = build_csr(edges, BuildOptions{}, &ds.build_stats);
  edges = EdgeList{};
  ds.name = "grid" + std::to_string(p.dims) + "d-s" + std::to_string(side) + (p.shuffle ? "-shuffled" : "");
  ds.provenance = "generator grid dims=" + std::to_string(p.dims) + " side=" + std::to_string(side) +
                  (p.dims == 2 ? " (8 neighbours)" : " (6 neighbours)") +
                  (p.shuffle ? " ids shuffled seed=" + std::to_string(p.seed) : " row-major ids") +
                  " nodes=" + std::to_string(n);
  if (p.features > 0) add_synthetic_features(ds, p.features, p.classes, p.seed);
  return ds;
}

Dataset demo_dataset() {
  Dataset ds = generate_sbm(SbmParams{});
  ds.name = "demo";
  ds.provenance = "built-in demo dataset: " + ds.provenance;
  return ds;
}

}  // namespace gcnpart::datasets
