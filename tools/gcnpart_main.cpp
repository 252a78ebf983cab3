// gcnpart: train GCNs on one or many GPUs and measure what splitting a graph costs.
#include <omp.h>
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <csignal>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "base/atomic_file.hpp"
#include "kernels/context.hpp"
#include "base/error.hpp"
#include "base/format.hpp"
#include "base/progress.hpp"
#include "tools/cli_common.hpp"

namespace {

/// SIGINT / SIGTERM: remove the temporaries of unfinished output files (a half-written OUT.tmp.<pid> of tens of MB
/// and its OUT.lock), say so, and exit 128 + the signal (130, 143) as a shell reports it. Async-signal-safe only.
extern "C" void on_terminate_signal(int sig) {
  gcnpart::remove_pending_temporaries();
  static const char kInt[] = "\ngcnpart: interrupted (SIGINT); unfinished output files removed\n";
  static const char kTerm[] = "\ngcnpart: terminated (SIGTERM); unfinished output files removed\n";
  const bool is_int = sig == SIGINT;
  ssize_t ignored = ::write(2, is_int ? kInt : kTerm, (is_int ? sizeof kInt : sizeof kTerm) - 1);
  (void)ignored;
  ::_exit(128 + sig);
}

void install_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_terminate_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    // A signal ignored by the launcher (nohup, a background job without job control) stays ignored.
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
    ::sigaction(sig, &sa, nullptr);
  }
}

/// The option `name` of the subcommand chain that was parsed, or null.
const CLI::Option* parsed_option(const CLI::App& app, const std::string& name) {
  for (const CLI::App* sub : app.get_subcommands()) {
    if (const CLI::Option* o = parsed_option(*sub, name)) return o;
    if (const CLI::Option* o = sub->get_option_no_throw(name); o != nullptr && o->count() > 0) return o;
  }
  return nullptr;
}


/// For a parse error: the first "--name" on the command line that the parsed subcommand chain does not know, with
/// the nearest option it does know ("--epoch": "--epochs"); empty when every one is known or none is near.
std::string unknown_option_hint(const CLI::App& app, int argc, char** argv) {
  std::vector<const CLI::App*> chain{&app};
  while (!chain.back()->get_subcommands().empty()) chain.push_back(chain.back()->get_subcommands().front());
  std::vector<std::string> known;
  for (const CLI::App* a : chain)
    for (const CLI::Option* o : a->get_options())
      for (const std::string& n : o->get_lnames()) known.push_back("--" + n);
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0 || arg.size() < 3) continue;
    if (const auto eq = arg.find('='); eq != std::string::npos) arg.resize(eq);
    if (std::find(known.begin(), known.end(), arg) != known.end()) continue;
    std::string best;
    std::size_t best_d = 3;  // at most two edits away, or the typed name a prefix of exactly one option
    int prefixed = 0;
    std::string prefix_match;
    for (const auto& k : known) {
      const std::size_t d = gcnpart::edit_distance(arg, k);
      if (d < best_d) best_d = d, best = k;
      if (k.rfind(arg, 0) == 0) ++prefixed, prefix_match = k;
    }
    if (best.empty() && prefixed == 1) best = prefix_match;
    std::string where = "gcnpart";
    for (std::size_t c = 1; c < chain.size(); ++c) where += " " + chain[c]->get_name();
    return "unknown option " + arg + (best.empty() ? "" : " (did you mean " + best + "?)") + "; see " + where +
           " --help";
  }
  return {};
}

/// A bad parameter's message shows the value as typed ("1.5", "99999999999999999999"), not as the library saw it
/// after conversion ("1.500000", an overflowed integer), when the option was given once with one value.
std::string as_typed(const CLI::App& app, const gcnpart::InvalidInput& e) {
  const std::string prefix = "parameter ";
  const std::string& where = e.where().file;
  if (where.rfind(prefix + "--", 0) != 0) return e.what();
  const CLI::Option* o = parsed_option(app, where.substr(prefix.size()));
  if (o == nullptr || o->get_expected_min() == 0 || o->results().size() != 1 || o->results()[0] == e.value())
    return e.what();  // not given, a flag, a list, or shown as typed already
  return gcnpart::InvalidInput(e.where(), e.problem(), o->results()[0], e.expected()).what();
}

/// The most OpenMP threads --threads accepts: libgomp crashes on absurd counts (100000 segfaulted).
constexpr int kMaxThreads = 4096;

}  // namespace

int main(int argc, char** argv) {
  install_signal_handlers();
  using gcnpart::ExitCode;
  CLI::App app{"gcnpart: train graph convolutional networks on one or many GPUs and measure what splitting a graph "
               "across GPUs costs (lost edges, halo growth, memory, communication, time, accuracy).\n"
               "Exit codes: 0 ok, 1 internal error, 2 usage, 3 invalid input, 4 I/O error, 5 out of memory, "
               "6 device/library error."};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("gcnpart 0.1.0 (commit ") + GCNPART_GIT_COMMIT +
                                        (gcnpart::kernels::kHaveCuda ? ", CPU and CUDA)" : ", CPU only: built without CUDA)"));
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "No progress bars");
  int threads = 0;
  app.add_option("--threads", threads, "OpenMP threads for host work, 1.." + std::to_string(kMaxThreads) +
                                           " (default: all cores)")
      ->check(CLI::Range(1, kMaxThreads));

  std::vector<gcnpart::cli::Command> commands;
  commands.push_back(gcnpart::cli::register_info(app));
  commands.push_back(gcnpart::cli::register_convert(app));
  commands.push_back(gcnpart::cli::register_generate(app));
  commands.push_back(gcnpart::cli::register_train(app));
  commands.push_back(gcnpart::cli::register_fit(app));
  commands.push_back(gcnpart::cli::register_cards(app));
  commands.push_back(gcnpart::cli::register_bench(app));
  commands.push_back(gcnpart::cli::register_compare(app));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    if (const std::string hint = unknown_option_hint(app, argc, argv); !hint.empty()) {
      std::fprintf(stderr, "gcnpart: error: %s\n", hint.c_str());
      return static_cast<int>(ExitCode::kUsage);
    }
    std::fprintf(stderr, "gcnpart: error: %s (see gcnpart --help)\n", e.what());
    return static_cast<int>(ExitCode::kUsage);
  }
  if (quiet) gcnpart::Progress::set_enabled(false);
  if (threads > 0) omp_set_num_threads(threads);
  try {
    for (auto& c : commands) {
      if (c.app->parsed()) c.run();
    }
  } catch (const gcnpart::InvalidInput& e) {
    std::fprintf(stderr, "gcnpart: error: %s\n", as_typed(app, e).c_str());
    return static_cast<int>(e.exit_code());
  } catch (const gcnpart::Error& e) {
    std::fprintf(stderr, "gcnpart: error: %s\n", e.what());
    return static_cast<int>(e.exit_code());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "gcnpart: error: out of host memory\n");
    return static_cast<int>(ExitCode::kOutOfMemory);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gcnpart: internal error: %s\n", e.what());
    return static_cast<int>(ExitCode::kInternal);
  }
  return 0;
}
