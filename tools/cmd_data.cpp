// gcnpart info | convert | generate
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>

#include "datasets/gcsr.hpp"
#include "datasets/generators.hpp"
#include "base/error.hpp"
#include "tools/cli_common.hpp"

namespace gcnpart::cli {

namespace {

nlohmann::json dataset_summary(const datasets::Dataset& ds, double load_seconds) {
  nlohmann::json j = engine::dataset_info_json(ds);
  j["load_seconds"] = load_seconds;
  return j;
}

void print_summary(const nlohmann::json& j) {
  auto i64 = [&](const char* k) { return with_commas(j[k].get<std::int64_t>()); };
  // Names and paths come from the input: escape sequences in them must not reach the terminal.
  std::printf("dataset      %s\n", escape_text(j["name"].get<std::string>()).c_str());
  std::printf("source       %s\n", escape_text(j["provenance"].get<std::string>()).c_str());
  std::printf("nodes        %s\n", i64("nodes").c_str());
  if (j["symmetric"].get<bool>())
    std::printf("edges        %s directed (%s undirected, symmetric)\n", i64("edges_directed").c_str(),
                i64("edges_undirected").c_str());
  else
    std::printf("edges        %s directed (not symmetric)\n", i64("edges_directed").c_str());
  const auto& d = j["degree"];
  std::printf("degree       min %lld  mean %.2f  median %.0f  p99 %.0f  max %lld\n",
              static_cast<long long>(d["min"].get<std::int64_t>()), d["mean"].get<double>(),
              d["median"].get<double>(), d["p99"].get<double>(),
              static_cast<long long>(d["max"].get<std::int64_t>()));
  std::printf("isolated     %s\n", i64("isolated_nodes").c_str());
  std::printf("features     %s\n", i64("features").c_str());
  std::printf("classes      %s (%s labelled nodes)\n", i64("classes").c_str(), i64("labelled_nodes").c_str());
  std::string splits;
  for (const auto& s : j["splits"])
    splits += (splits.empty() ? "" : " / ") + s["name"].get<std::string>() + " " +
              with_commas(s["size"].get<std::int64_t>());
  std::printf("splits       %s\n", splits.empty() ? "none" : splits.c_str());
  const auto& b = j["bytes"];
  std::printf("bytes        CSR %s, features %s\n", human_bytes(b["csr"].get<double>()).c_str(),
              human_bytes(b["features"].get<double>()).c_str());
  const auto& bs = j["build"];
  if (bs["input_edges"].get<std::int64_t>() > 0)
    std::printf("built from   %s input entries: %s self loops removed, %s after symmetrising, %s duplicates "
                "removed\n",
                with_commas(bs["input_edges"].get<std::int64_t>()).c_str(),
                with_commas(bs["self_loops_removed"].get<std::int64_t>()).c_str(),
                with_commas(bs["after_symmetrize"].get<std::int64_t>()).c_str(),
                with_commas(bs["duplicates_removed"].get<std::int64_t>()).c_str());
  std::printf("loaded in    %.2f s\n", j["load_seconds"].get<double>());
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Command register_info(CLI::App& app) {
  auto* cmd = app.add_subcommand("info", "Print a dataset's size, degree statistics, features, classes and splits");
  auto opts = std::make_shared<DataOptions>();
  auto json = std::make_shared<std::string>();
  add_data_options(*cmd, *opts);
  cmd->add_option("--json", *json, "Also write the figures as JSON to this file ('-' for stdout)");
  return {cmd, [opts, json] {
            check_outputs({{"--json", json.get()}}, *opts);
            const auto t0 = std::chrono::steady_clock::now();
            const auto ds = load_data(*opts);
            const auto j = dataset_summary(ds, seconds_since(t0));
            if (!json_to_stdout(*json)) print_summary(j);
            if (!json->empty()) write_json(*json, j);
          }};
}

Command register_convert(CLI::App& app) {
  auto* cmd = app.add_subcommand("convert", "Convert a dataset of any supported format to .gcsr");
  auto opts = std::make_shared<DataOptions>();
  auto out = std::make_shared<std::string>();
  auto json = std::make_shared<std::string>();
  add_data_options(*cmd, *opts);
  cmd->add_option("OUT", *out, "Output .gcsr file (written atomically)")->required();
  cmd->add_option("--json", *json, "Write a summary as JSON to this file ('-' for stdout, then only the JSON)");
  return {cmd, [opts, out, json] {
            check_outputs({{"OUT", out.get()}, {"--json", json.get()}}, *opts);
            JsonOnStdout json_only(*json);
            const auto t0 = std::chrono::steady_clock::now();
            const auto ds = load_data(*opts);
            const double load_s = seconds_since(t0);
            const auto t1 = std::chrono::steady_clock::now();
            datasets::save_gcsr(ds, *out);
            const double save_s = seconds_since(t1);
            std::printf("wrote %s: %s nodes, %s directed edges, %lld features, %d classes (load %.2f s, save %.2f s)\n",
                        escape_text(*out).c_str(), with_commas(ds.num_nodes()).c_str(), with_commas(ds.graph.num_edges()).c_str(),
                        static_cast<long long>(ds.num_features), ds.num_classes, load_s, save_s);
            if (!json->empty()) {
              auto j = dataset_summary(ds, load_s);
              j["output"] = *out;
              j["save_seconds"] = save_s;
              json_only.release();
              write_json(*json, j);
            }
          }};
}

Command register_generate(CLI::App& app) {
  auto* cmd = app.add_subcommand("generate", "Generate a synthetic graph (RMAT, stochastic block model or grid mesh) as .gcsr");
  cmd->require_subcommand(1);
  auto out = std::make_shared<std::string>();
  auto json = std::make_shared<std::string>();
  auto rmat = std::make_shared<datasets::RmatParams>();
  auto sbm = std::make_shared<datasets::SbmParams>();

  auto* r = cmd->add_subcommand("rmat", "Graph500 RMAT (a=0.57 b=0.19 c=0.19 d=0.05), symmetrised and deduplicated");
  r->add_option("--scale", rmat->scale, "log2 of the node count")->check(CLI::Range(1, 30))->capture_default_str();
  r->add_option("--edge-factor", rmat->edge_factor, "Edges generated per node before symmetrising")
      ->check(CLI::PositiveNumber)->capture_default_str();
  r->add_option("--a", rmat->a, "RMAT probability a")->capture_default_str();
  r->add_option("--b", rmat->b, "RMAT probability b")->capture_default_str();
  r->add_option("--c", rmat->c, "RMAT probability c")->capture_default_str();
  r->add_option("--features", rmat->features, "Synthetic feature count (0 = structure only)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  r->add_option("--classes", rmat->classes, "Synthetic class count")->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  r->add_option("--seed", rmat->seed, "Seed")->capture_default_str();
  r->add_option("-o,--output", *out, "Output .gcsr file")->required();
  r->add_option("--json", *json, "Write a summary as JSON to this file ('-' for stdout, then only the JSON)");

  auto* s = cmd->add_subcommand("sbm", "Stochastic block model with class-dependent Gaussian features and a fixed split");
  s->add_option("--nodes", sbm->nodes, "Node count")->check(CLI::PositiveNumber)->capture_default_str();
  s->add_option("--classes", sbm->classes, "Blocks = classes")->check(CLI::Range(2, 100000))->capture_default_str();
  s->add_option("--avg-degree", sbm->avg_degree, "Expected degree")->check(CLI::PositiveNumber)
      ->capture_default_str();
  s->add_option("--p-intra", sbm->p_intra, "Fraction of edges inside a block")->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  s->add_option("--features", sbm->features, "Feature count")->check(CLI::PositiveNumber)->capture_default_str();
  s->add_option("--signal", sbm->feature_signal, "Class-mean separation of the features")->capture_default_str();
  s->add_option("--train-per-class", sbm->train_per_class, "Training nodes per class")->capture_default_str();
  s->add_option("--valid", sbm->valid, "Validation nodes")->capture_default_str();
  s->add_option("--test", sbm->test, "Test nodes")->capture_default_str();
  s->add_option("--seed", sbm->seed, "Seed")->capture_default_str();
  s->add_option("-o,--output", *out, "Output .gcsr file")->required();
  s->add_option("--json", *json, "Write a summary as JSON to this file ('-' for stdout, then only the JSON)");

  auto grid = std::make_shared<datasets::GridParams>();
  auto* m = cmd->add_subcommand("grid", "A mesh: 2-D grid with diagonals (8 neighbours) or 3-D grid (6 neighbours)");
  m->add_option("--side", grid->side, "Nodes along each side (side^dims nodes)")->check(CLI::Range(2, 46340))
      ->capture_default_str();
  m->add_option("--dims", grid->dims, "2 or 3")->check(CLI::Range(2, 3))->capture_default_str();
  m->add_flag("!--natural-order", grid->shuffle, "Keep row-major node ids (default: ids shuffled, a mesh file in no "
                                                  "particular order)");
  m->add_option("--features", grid->features, "Synthetic feature count (0 = structure only)")
      ->check(CLI::NonNegativeNumber)->capture_default_str();
  m->add_option("--classes", grid->classes, "Synthetic class count")->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  m->add_option("--seed", grid->seed, "Seed")->capture_default_str();
  m->add_option("-o,--output", *out, "Output .gcsr file")->required();
  m->add_option("--json", *json, "Write a summary as JSON to this file ('-' for stdout, then only the JSON)");

  return {cmd, [r, m, out, json, rmat, sbm, grid] {
            check_outputs({{"-o", out.get()}, {"--json", json.get()}});
            JsonOnStdout json_only(*json);
            const auto t0 = std::chrono::steady_clock::now();
            datasets::Dataset ds;
            if (r->parsed()) {
              if (rmat->a < 0 || rmat->b < 0 || rmat->c < 0 || rmat->a + rmat->b + rmat->c > 1.0)
                throw InvalidInput::parameter("--a/--b/--c",
                                              std::to_string(rmat->a) + "/" + std::to_string(rmat->b) + "/" +
                                                  std::to_string(rmat->c),
                                              "non-negative probabilities with a + b + c <= 1");
              ds = datasets::generate_rmat(*rmat);
            } else if (m->parsed()) {
              ds = datasets::generate_grid(*grid);
            } else {
              ds = datasets::generate_sbm(*sbm);
            }
            const double gen_s = seconds_since(t0);
            const auto t1 = std::chrono::steady_clock::now();
            datasets::save_gcsr(ds, *out);
            const double save_s = seconds_since(t1);
            std::printf("generated %s: %s nodes, %s directed edges, %lld features, %d classes in %.2f s; wrote %s in "
                        "%.2f s\n",
                        ds.name.c_str(), with_commas(ds.num_nodes()).c_str(), with_commas(ds.graph.num_edges()).c_str(),
                        static_cast<long long>(ds.num_features), ds.num_classes, gen_s, escape_text(*out).c_str(),
                        save_s);
            if (!json->empty()) {
              auto j = dataset_summary(ds, gen_s);
              j["output"] = *out;
              j["generate_seconds"] = gen_s;
              j["save_seconds"] = save_s;
              json_only.release();
              write_json(*json, j);
            }
          }};
}

}  // namespace gcnpart::cli
