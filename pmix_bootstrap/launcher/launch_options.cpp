#include "launch_options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>

namespace riseml::launch {

namespace {

constexpr int kUsageError = 2;

std::chrono::milliseconds to_milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(std::llround(seconds * 1000.0)));
}

}  // namespace

std::variant<LaunchOptions, int> parse_launch_options(const std::vector<std::string>& args) {
  CLI::App app{
      "Starts N processes of a program on this machine as one PMIx job (the way srun "
      "--mpi=pmix and mpirun do), forwards their output, and stops them all when one fails.",
      "riseml-launch"};
  app.footer(
      "Usage: riseml-launch -n N [options] [--] program [args...]\n"
      "Everything from the program name on is passed to the program. Exit status: 0 when all "
      "ranks exit 0; else the status of the rank blamed for the failure (the first to fail, but "
      "one killed by a signal within a second of the first failure before ranks that exited "
      "non-zero; 128+signal when killed by a signal), the PMIx_Abort status, 128+signal when "
      "riseml-launch itself got SIGINT/SIGTERM/SIGHUP, 124 after --timeout, or 125 when the "
      "embedded PMIx server stopped responding (--pmix-stall-timeout).");
  // Everything from the program name on belongs to the program, options included.
  app.prefix_command();

  LaunchOptions options;
  double timeout_seconds = 0;
  double grace_seconds = 5;
  double finalize_seconds = 5;
  double stall_seconds = 10;
  app.add_option("-n,--np", options.ranks, "number of processes (ranks) to start")
      ->required()
      ->check(CLI::Range(1, 4096));
  app.add_flag("--tag-output", options.tag_output,
               "prefix every output line with the rank that wrote it, as [rank]");
  app.add_flag("--elastic", options.elastic,
               "a failed rank does not stop the others (hvd.elastic re-forms the world without "
               "it); the job fails only when every rank failed");
  app.add_option("--timeout", timeout_seconds,
                 "stop the job after this many seconds (exit status 124)")
      ->check(CLI::PositiveNumber);
  app.add_option("--stop-grace", grace_seconds,
                 "seconds between SIGTERM and SIGKILL when stopping ranks (default 5)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--finalize-timeout", finalize_seconds,
                 "seconds the PMIx server may take to shut down after the ranks ended; past "
                 "that, riseml-launch says so and exits with the ranks' status (default 5)")
      ->check(CLI::PositiveNumber);
  app.add_option("--pmix-stall-timeout", stall_seconds,
                 "stop the job (exit status 125) when the embedded PMIx server leaves a request "
                 "unanswered this many seconds: it is stuck and ranks would hang in PMIx_Init "
                 "(default 10; 0 turns the check off)")
      ->check(CLI::NonNegativeNumber);

  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 parses from the back
  try {
    app.parse(reversed);
    options.command = app.remaining();
    if (!options.command.empty() && options.command.front() == "--") {
      options.command.erase(options.command.begin());
    }
    if (options.command.empty()) {
      throw CLI::RequiredError("a program to start (riseml-launch -n N program [args...])");
    }
    if (options.command.front().starts_with("-") &&
        std::find(args.begin(), args.end(), "--") == args.end()) {
      throw CLI::ExtrasError({options.command.front()});
    }
  } catch (const CLI::ParseError& error) {
    int exit_code = app.exit(error);  // prints help or the error
    return exit_code == 0 ? 0 : kUsageError;
  }
  if (app.count("--timeout") > 0) options.timeout = to_milliseconds(timeout_seconds);
  options.stop_grace = to_milliseconds(grace_seconds);
  options.finalize_timeout = to_milliseconds(finalize_seconds);
  if (std::chrono::milliseconds stall = to_milliseconds(stall_seconds); stall.count() > 0) {
    options.pmix_stall_timeout = stall;
  } else {
    options.pmix_stall_timeout.reset();
  }
  return options;
}

}  // namespace riseml::launch
