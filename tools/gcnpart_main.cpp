// gcnpart: train GCNs on one or many GPUs and measure what splitting a graph costs.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "kernels/context.hpp"
#include "kernels/core/error.hpp"
#include "kernels/core/progress.hpp"
#include "tools/cli_common.hpp"

int main(int argc, char** argv) {
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
  app.add_option("--threads", threads, "OpenMP threads for host work (default: all cores)")
      ->check(CLI::NonNegativeNumber);

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
    std::fprintf(stderr, "gcnpart: error: %s (see gcnpart --help)\n", e.what());
    return static_cast<int>(ExitCode::kUsage);
  }
  if (quiet) gcnpart::Progress::set_enabled(false);
  if (threads > 0) omp_set_num_threads(threads);
  try {
    for (auto& c : commands) {
      if (c.app->parsed()) c.run();
    }
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
