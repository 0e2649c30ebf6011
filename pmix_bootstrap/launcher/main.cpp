// riseml-launch: runs N ranks of a program on this machine as one PMIx job, so a worker
// behaves the same here as under `srun --mpi=pmix`.
#include <string.h>  // explicit_bzero
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>
#include <system_error>
#include <variant>
#include <vector>

#include "child_process.hpp"
#include "job_secret_key.hpp"
#include "job_supervisor.hpp"
#include "launch_options.hpp"
#include "lost_client_recount.hpp"
#include "pmix_host_server.hpp"
#include "pmix_progress_ping.hpp"
#include "private_tmpdir.hpp"
#include "program_path.hpp"
#include "random_bytes.hpp"
#include "registered_job.hpp"
#include "server_stall_watch.hpp"
#include "teardown_watchdog.hpp"
#include "wake_pipe.hpp"

namespace riseml::launch {
namespace {

constexpr int kCannotExecute = 126;
constexpr int kNotFound = 127;

struct LaunchResult {
  int exit_code = 0;
  bool pmix_abandoned = false;  // PMIx's threads may still run: leave with _exit
};

#ifdef RISEML_LAUNCH_TEST_HOOKS
// Only in riseml_launch_with_test_hooks (built by tests/pmix_bootstrap): lets a test make the
// teardown hang where libpmix 4.2.2 deadlocks, without another user's process to trigger it.
void hang_if_a_test_asks(const char* variable) {
  if (std::getenv(variable) == nullptr) return;
  while (true) pause();
}

// ... and lets a test make the PMIx server look stuck to the stall check, as libpmix 4.2.2's is
// after refusing another user's process, without root to start such a process.
class NeverAnsweringPing final : public ServerPing {
 public:
  bool send(std::function<void()>, std::string&) override { return true; }
};
#endif

std::shared_ptr<ServerPing> progress_ping() {
#ifdef RISEML_LAUNCH_TEST_HOOKS
  if (std::getenv("RISEML_LAUNCH_TEST_PMIX_NEVER_ANSWERS") != nullptr) {
    return std::make_shared<NeverAnsweringPing>();
  }
#endif
  return std::make_shared<PmixProgressPing>();
}

// Starts the stall check of the PMIx server in `watch` (none when --pmix-stall-timeout is 0).
// Without a thread for it the job still runs, unchecked, as it would with the check off.
void watch_for_stalls(const LaunchOptions& options, std::optional<ServerStallWatch>& watch) {
  if (!options.pmix_stall_timeout) return;
  try {
    watch.emplace(progress_ping(), StallWatchSettings{*options.pmix_stall_timeout});
  } catch (const std::system_error& error) {
    std::fprintf(stderr,
                 "riseml-launch: cannot check that the PMIx server keeps answering (%s); the job "
                 "runs without --pmix-stall-timeout\n",
                 error.what());
  }
}

// After a job whose ranks all exited 0: waiting for the stall check's last request,
// deregistering the job and finalizing the server can each block forever, so they run under a
// watchdog that ends the launcher with `exit_code` when they take longer than `limit`. Returns
// false when PMIx was left running instead (no thread for the watchdog: an unbounded finalize
// is worse than none).
bool end_pmix_within(std::chrono::milliseconds limit, int exit_code, const PrivateTmpdir& tmpdir,
                     std::optional<ServerStallWatch>& stall_watch,
                     std::optional<RegisteredJob>& job, PmixHostServer& server) {
  std::optional<TeardownWatchdog> watchdog;
  try {
    watchdog.emplace(limit, exit_code, tmpdir.path());
  } catch (const std::system_error&) {
    if (stall_watch) stall_watch->abandon();
    job->abandon();
    return false;
  }
  // Whichever first needs the progress thread after it touched the rank the refused process
  // claimed to be hangs.
  const char* why = "a libpmix 4.2.2 deadlock after a refused connection";
  if (stall_watch) {
    // Its request must not be left inside PMIx when the server goes.
    watchdog->entering("the stall check's request to the PMIx server", why);
    stall_watch->stop();
  }
  watchdog->entering("PMIx_server_deregister_nspace", why);
  job.reset();
  watchdog->entering("PMIx_server_finalize", why);
#ifdef RISEML_LAUNCH_TEST_HOOKS
  hang_if_a_test_asks("RISEML_LAUNCH_TEST_HANG_IN_FINALIZE");
#endif
  server.finalize();
  return true;
}

std::string this_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

struct JobOutcome {
  int exit_code = 1;
  bool all_ranks_succeeded = false;  // rather than a stop (see JobSupervisor::stopped)
};

// Registers the job in `job`, starts its ranks and supervises them until all have ended.
// Throws std::runtime_error when the job cannot be registered.
JobOutcome run_job(const LaunchOptions& options, const std::string& program, PmixHostServer& server,
                   ServerStallWatch* stall_watch, std::optional<RegisteredJob>& job,
                   const std::vector<std::string>& rank_overrides) {
  std::vector<std::byte> secret(pmix::kJobSecretBytes);
  pmix::fill_random(secret);
  job.emplace(
      JobLayout{"riseml-launch." + std::to_string(getpid()), options.ranks, this_hostname()},
      secret);
  explicit_bzero(secret.data(), secret.size());  // PMIx keeps the only copy now
  // Without it the job still runs; only forked children of ranks (pytest --forked) then cannot
  // fence after the first of them exits.
  std::optional<LostClientRecount> recount;
  try {
    recount.emplace(job->layout().nspace, options.ranks);
  } catch (const std::exception& error) {
    std::fprintf(stderr,
                 "riseml-launch: %s; after a forked child of a rank leaves without "
                 "PMIx_Finalize, fences may lack that rank or never complete\n",
                 error.what());
  }

  JobSupervisor supervisor({options.tag_output, options.elastic, options.timeout,
                            options.stop_grace, job->layout().hostname},
                           server, stall_watch);
  for (int rank = 0; rank < options.ranks; ++rank) {
    if (WakePipe::stop_signal_count() > 0) break;  // interrupted while starting: run() stops
    try {
      EnvironmentBlock environment = job->environment_for(rank, rank_overrides);
      StartedChild child = start_child(program, options.command, environment.entries());
      if (recount) recount->set_process(rank, child.pid);
      supervisor.add_rank(rank, std::move(child));
    } catch (const std::system_error& error) {
      supervisor.start_failed(rank, error.what(),
                              error.code().value() == ENOENT ? kNotFound : kCannotExecute);
      break;
    } catch (const std::exception& error) {
      supervisor.start_failed(rank, error.what(), 1);
      break;
    }
  }
  int exit_code = supervisor.run();
  return {exit_code, !supervisor.stopped()};
}

LaunchResult launch(const LaunchOptions& options) {
  const std::string& program_name = options.command.front();
  std::optional<std::string> program = find_program(program_name, std::getenv("PATH"));
  if (!program) {
    std::fprintf(stderr, "riseml-launch: cannot find program '%s' (%s)\n", program_name.c_str(),
                 program_name.find('/') != std::string::npos
                     ? "no executable file there"
                     : "no executable file of that name in any PATH directory");
    return {kNotFound};
  }

  WakePipe::install();
  // PMIx holds events back a second by default, to merge the cascade of a crash; a lost
  // client must reach LostClientRecount before its rank's next forked child fences. Set here,
  // before any thread runs; the ranks get the value they would have had.
  const char* event_window = "PMIX_MCA_pmix_event_caching_window";
  const char* users_window = std::getenv(event_window);
  std::vector<std::string> rank_overrides{std::string(event_window) + "=" +
                                          (users_window != nullptr ? users_window : "1")};
  setenv(event_window, "0", 1);
  PrivateTmpdir tmpdir("riseml-launch.");
  PmixHostServer server(tmpdir.path());
  // PMIx's threads run from here on: every way out below is bounded in time, and leaves with
  // _exit unless PMIx_server_finalize returned.
  std::optional<ServerStallWatch> stall_watch;
  watch_for_stalls(options, stall_watch);
  std::optional<RegisteredJob> job;
  JobOutcome outcome;
  try {
    outcome = run_job(options, *program, server, stall_watch ? &*stall_watch : nullptr, job,
                      rank_overrides);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "riseml-launch: %s\n", error.what());
  }
  if (!outcome.all_ranks_succeeded) {
    // PMIx 4.2.2 crashes (SIGSEGV) or deadlocks in PMIx_server_finalize when it runs while the
    // server still processes the lost connections of clients that died inside a fence (seen
    // in about a third of the runs of the fence-timeout and SIGTERM tests). After a stop, the
    // server is therefore left alone: its state dies with the process and its files with the
    // private tmpdir. So is the stall check, whose request may be stuck inside PMIx (the
    // stop may be its doing).
    if (stall_watch) stall_watch->abandon();
    if (job) job->abandon();
    return {outcome.exit_code, true};
  }
  bool finalized = end_pmix_within(options.finalize_timeout, outcome.exit_code, tmpdir, stall_watch,
                                   job, server);
  return {outcome.exit_code, !finalized};
}

}  // namespace
}  // namespace riseml::launch

int main(int argc, char** argv) {
  using namespace riseml::launch;
  std::variant<LaunchOptions, int> parsed =
      parse_launch_options(std::vector<std::string>(argv + 1, argv + argc));
  if (const int* exit_code = std::get_if<int>(&parsed)) return *exit_code;
  try {
    LaunchResult result = launch(std::get<LaunchOptions>(parsed));
    if (result.pmix_abandoned) {
      std::fflush(nullptr);
      _exit(result.exit_code);
    }
    return result.exit_code;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "riseml-launch: %s\n", error.what());
    return 1;
  }
}
