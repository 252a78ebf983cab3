// The JSON reports of the built `gcnpart` binary carry the fields README.md documents for several devices:
// the communication / compute split per device, a memory check per device, the link comparison, and
// `bench nccl`'s results (here on virtual CPU devices; the same code path serves GPUs).
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "test_support.hpp"

namespace {

nlohmann::json run_json(const std::string& args, const std::string& json) {
  const std::string command = std::string(GCNPART_CLI) + " -q --threads 2 " + args + " --json " + json + " >/dev/null";
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream in(json);
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

void check_split(const nlohmann::json& j, std::size_t devices) {
  REQUIRE(j.contains("comm_ms_per_epoch"));
  REQUIRE(j["comm_ms_per_epoch"].size() == devices);
  REQUIRE(j["compute_ms_per_epoch"].size() == devices);
  REQUIRE(j["device_epoch_ms"].size() == devices);
  for (std::size_t d = 0; d < devices; ++d) {
    const double comm = j["comm_ms_per_epoch"][d].get<double>();
    const double compute = j["compute_ms_per_epoch"][d].get<double>();
    const double wait = j["wait_ms_per_epoch"][d].get<double>();
    CHECK(comm >= 0.0);
    CHECK(wait >= 0.0);
    CHECK(compute >= 0.0);
    CHECK(comm + wait + compute == doctest::Approx(j["device_epoch_ms"][d].get<double>()).epsilon(1e-9));
  }
  REQUIRE(j["memory_check"].size() == devices);
  for (const auto& m : j["memory_check"])
    for (const char* key : {"available", "measured", "tracked_peak", "cache_slack", "context", "nccl", "libraries",
                            "accounted", "rel_error", "within_5pct"})
      CHECK_MESSAGE(m.contains(key), key);
}

}  // namespace

TEST_CASE("train on 2 virtual devices reports the time split, memory checks and, when asked, the link") {
  gcnpart::testing::TempDir tmp;
  const auto j = run_json("train demo --strategy gather --parts 2 --epochs 3 --link-bench on", tmp.file("t.json"));
  check_split(j, 2);
  CHECK(j["memory_check"][0]["available"] == false);
  CHECK(j["memory_check"][0]["measured"].is_null());
  const auto& link = j["link"];
  REQUIRE(link.is_object());
  CHECK(link["collective"] == "all_gather");
  CHECK(link["bytes_per_call"].get<std::int64_t>() > 0);
  for (const char* key : {"train_GBps", "train_same_GBps", "plain_GBps", "plain_allgather_GBps", "ratio"})
    CHECK_MESSAGE(link[key].get<double>() > 0.0, key);
  CHECK(link["devices"].size() == 2);

  const auto halo = run_json("train demo --strategy halo --parts 2 --epochs 2", tmp.file("h.json"));
  check_split(halo, 2);
  CHECK(halo["link"].is_null());  // auto: GPUs only
}

TEST_CASE("train --strategy boundary reports its boundary rows and the bytes each device sent per epoch") {
  gcnpart::testing::TempDir tmp;
  const auto j = run_json("train demo --strategy boundary --parts 3 --epochs 2", tmp.file("b.json"));
  check_split(j, 3);
  CHECK(j["strategy"] == "boundary");
  REQUIRE(j["boundary_rows"].size() == 3);
  REQUIRE(j["bytes_sent_per_epoch"].size() == 3);
  for (std::size_t d = 0; d < 3; ++d) {
    CHECK(j["boundary_rows"][d].get<std::int64_t>() > 0);
    CHECK(j["bytes_sent_per_epoch"][d].get<std::int64_t>() > 0);
  }
  CHECK(j["link"].is_null());  // no plain collective to compare an all-to-all with
}

TEST_CASE("compare rows carry the time split and memory checks, single-device rows included") {
  gcnpart::testing::TempDir tmp;
  const auto j = run_json("compare demo --parts 2 --layers 2 --strategies drop,gather --measure-epochs 2",
                          tmp.file("c.json"));
  REQUIRE(j["rows"].size() == 3);
  for (const auto& r : j["rows"]) {
    INFO(r["strategy"]);
    check_split(r, static_cast<std::size_t>(r["parts"].get<int>()));
    CHECK(r.contains("link"));
  }
  CHECK(j["rows"][0]["comm_ms_per_epoch"][0].get<double>() == 0.0);  // single: no communication
}

TEST_CASE("compare rows give the median epoch time with its min-max spread over the timed epochs") {
  gcnpart::testing::TempDir tmp;
  const auto j = run_json("compare demo --parts 2 --layers 2 --strategies halo --measure-epochs 5", tmp.file("s.json"));
  REQUIRE(j["rows"].size() == 2);
  for (const auto& r : j["rows"]) {
    INFO(r["strategy"]);
    CHECK(r["epoch_ms_samples"] == 4);  // the first epoch warms up
    const double lo = r["epoch_ms_min"].get<double>(), mid = r["epoch_ms_median"].get<double>(),
                 hi = r["epoch_ms_max"].get<double>();
    CHECK(lo > 0.0);
    CHECK(lo <= mid);
    CHECK(mid <= hi);
    CHECK(1e3 * r["epoch_seconds"].get<double>() == doctest::Approx(mid).epsilon(1e-12));  // the same median
  }
}

TEST_CASE("compare's table gives each row's epoch time as median (min-max) under its heading") {
  gcnpart::testing::TempDir tmp;
  const std::string text = tmp.file("c.txt");
  const std::string command = std::string(GCNPART_CLI) + " -q --threads 2 compare demo --parts 2 --layers 2 "
                              "--strategies gather --json " + tmp.file("c.json") + " > " + text;
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream in(text);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(out);
  std::ifstream json_in(tmp.file("c.json"));
  const auto j = nlohmann::json::parse(json_in);
  REQUIRE(j["rows"].size() == 2);
  CHECK(j["rows"][0]["epoch_ms_samples"] == 3);  // the default --measure-epochs 4: 3 timed epochs
  for (const auto& r : j["rows"]) {
    char cell[64];
    std::snprintf(cell, sizeof cell, "%.2f (%.2f-%.2f)", r["epoch_ms_median"].get<double>(),
                  r["epoch_ms_min"].get<double>(), r["epoch_ms_max"].get<double>());
    CHECK_MESSAGE(out.find(cell) != std::string::npos, cell);
  }
  CHECK(out.find("epoch ms = the median of the timed epochs") != std::string::npos);
}

TEST_CASE("bench nccl on virtual CPU devices reports algorithm and bus bandwidth per collective and size") {
  gcnpart::testing::TempDir tmp;
  const auto j = run_json("bench nccl --device cpu --gpus 2 --bytes 64KiB,1MiB --ops all_gather,all_reduce",
                          tmp.file("n.json"));
  REQUIRE(j["results"].size() == 4);
  for (const auto& r : j["results"]) {
    CHECK(r["median_ms"].get<double>() > 0.0);
    CHECK(r["bus_GBps"].get<double>() > 0.0);
    CHECK(r["alg_GBps"].get<double>() > 0.0);
  }
  CHECK(j["results"][1]["collective"] == "all_reduce");
  CHECK(j["results"][2]["bytes_per_rank"] == 1 << 20);
}

TEST_CASE("compare --precision bf16 records the precision, trains halo and gather, and skips bf16 pipeline rows") {
  gcnpart::testing::TempDir tmp;
  const auto j = run_json("compare demo --parts 2 --layers 2 --strategies halo,gather,pipeline --measure-epochs 2 "
                          "--precision bf16",
                          tmp.file("b.json"));
  CHECK(j["precision"] == "bf16");
  REQUIRE(j["rows"].size() == 4);
  for (const auto& r : j["rows"]) {
    INFO(r["strategy"]);
    if (r["strategy"] == "pipeline") {
      CHECK(r["status"] == "skipped");
      CHECK(r["reason"].get<std::string>().find("bf16") != std::string::npos);
    } else {
      check_split(r, static_cast<std::size_t>(r["parts"].get<int>()));
    }
  }
}

TEST_CASE("fit prints what would fit instead of \"largest hidden none\", \"0 layers\" or empty sections") {
  gcnpart::testing::TempDir tmp;
  const std::string text = tmp.file("fit.txt");
  // Far too large for one RTX 3080 and for two: every line must still say something useful.
  const std::string command = std::string(GCNPART_CLI) +
                              " -q fit --nodes 2000000 --edges 60000000 --features 100 --classes 47 --layers 3"
                              " --hidden 160 --card rtx3080 --card rtx3080:2 --rank-gpus 1 --json " +
                              tmp.file("fit.json") + " > " + text;
  INFO(command);
  REQUIRE(std::system(command.c_str()) == 0);
  std::ifstream in(text);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(out);
  CHECK(out.find("none with") == std::string::npos);
  CHECK(out.find("hidden none") == std::string::npos);
  CHECK(out.find(" 0 layers") == std::string::npos);
  CHECK(out.find("would fit    hidden ") != std::string::npos);
  CHECK(out.find("--precision bf16") != std::string::npos);
  CHECK(out.find("x rtx3080 (") != std::string::npos);  // more cards, with a strategy
  CHECK(out.find("1 x ") != std::string::npos);         // a larger card
  // One memory figure per configuration: the single-card line and the verdict print the same per-card figure.
  std::ifstream jin(tmp.file("fit.json"));
  const auto j = nlohmann::json::parse(jin);
  const auto per_card = j["configurations"][0]["single"]["memory"]["per_card_bytes"].get<double>();
  char gib[32];
  std::snprintf(gib, sizeof gib, "%.2f GiB", per_card / (1024.0 * 1024 * 1024));
  CHECK(out.find(std::string("memory       ") + gib + " per card") != std::string::npos);
  CHECK(j["verdict"].get<std::string>().find(std::string("needs ") + gib + " per card") != std::string::npos);
}

TEST_CASE("train prints '-' for a split without rows, fit's one-card verdict reads as sentences, bf16 needs a card with bf16") {
  gcnpart::testing::TempDir tmp;
  const std::string graph = tmp.file("novalid.gcsr");
  const std::string gen = std::string(GCNPART_CLI) + " -q generate sbm --nodes 600 --classes 3 --valid 0 --test 100 -o " +
                          graph + " > /dev/null";
  REQUIRE(std::system(gen.c_str()) == 0);
  const std::string text = tmp.file("train.txt");
  const std::string train = std::string(GCNPART_CLI) + " train " + graph + " --epochs 2 --json " + tmp.file("t.json") +
                            " > " + text;
  REQUIRE(std::system(train.c_str()) == 0);
  std::ifstream in(text);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(out);
  CHECK(out.find("valid - (no rows)") != std::string::npos);
  CHECK(out.find("valid 0.00") == std::string::npos);
  std::ifstream jin(tmp.file("t.json"));
  CHECK(nlohmann::json::parse(jin)["split_rows"]["valid"] == 0);

  // One configuration that does not fit: sentences end once, the verdict says how it fits (streamed).
  const std::string fit = std::string(GCNPART_CLI) +
                          " -q fit --nodes 2000000 --edges 60000000 --features 100 --classes 47 --layers 3 --hidden 160"
                          " --card rtx3060 --rank-gpus 1 --host-ram 64GiB --json " + tmp.file("f.json") + " > /dev/null";
  REQUIRE(std::system(fit.c_str()) == 0);
  std::ifstream fin(tmp.file("f.json"));
  const auto f = nlohmann::json::parse(fin);
  const std::string verdict = f["verdict"];
  INFO(verdict);
  CHECK(verdict.find("..") == std::string::npos);
  CHECK(verdict.find(") 1 x") == std::string::npos);  // a sentence ends before the next begins
  CHECK(verdict.find("Verdict: it fits streamed through host memory") != std::string::npos);

  // bf16 on a V100 (no bf16 tensor cores): cannot run there, not "FITS", not ranked.
  const std::string v100 = std::string(GCNPART_CLI) +
                           " -q fit --nodes 20000 --edges 60000 --features 100 --classes 7 --precision bf16"
                           " --card v100-16gb --rank-gpus 1 --json " + tmp.file("v.json") + " > " + tmp.file("v.txt");
  REQUIRE(std::system(v100.c_str()) == 0);
  std::ifstream vin(tmp.file("v.json"));
  const auto v = nlohmann::json::parse(vin);
  CHECK(v["configurations"][0].contains("refusal"));
  CHECK(v["verdict"].get<std::string>().find("cannot run") != std::string::npos);
  for (const auto& op : v["ranking"]["all_options"]) CHECK(op["card"] != "v100-16gb");
}

TEST_CASE("train --help groups its options: data, basic, model, several devices, memory, outputs, performance tuning") {
  gcnpart::testing::TempDir tmp;
  const std::string text = tmp.file("help.txt");
  REQUIRE(std::system((std::string(GCNPART_CLI) + " train --help > " + text).c_str()) == 0);
  std::ifstream in(text);
  const std::string out((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  INFO(out);
  for (const char* group : {"\nData:", "\nBasic:", "\nModel:", "\nSeveral devices:", "\nMemory:",
                            "\nOutputs and checkpoints:", "\nPerformance tuning:"})
    CHECK(out.find(group) != std::string::npos);
  const auto tuning = out.find("\nPerformance tuning:");
  CHECK(out.find("--spmm-long-row") > tuning);  // the SpMM's knobs sit with the tuning, not among the basics
  CHECK(out.find("--hidden") < tuning);
  CHECK(out.find("--fault-kill") == std::string::npos);  // tests' options stay hidden
}
