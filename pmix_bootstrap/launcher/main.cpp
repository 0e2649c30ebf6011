// riseml-launch: runs N ranks of a program on this machine as one PMIx job, so a worker
// behaves the same here as under `srun --mpi=pmix`.
#include <string.h>  // explicit_bzero
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <system_error>
#include <variant>

#include "child_process.hpp"
#include "job_secret_key.hpp"
#include "job_supervisor.hpp"
#include "launch_options.hpp"
#include "pmix_host_server.hpp"
#include "private_tmpdir.hpp"
#include "program_path.hpp"
#include "random_bytes.hpp"
#include "registered_job.hpp"
#include "wake_pipe.hpp"

namespace riseml::launch {
namespace {

constexpr int kCannotExecute = 126;
constexpr int kNotFound = 127;

struct LaunchResult {
  int exit_code = 0;
  bool pmix_abandoned = false;  // PMIx's threads may still run: leave with _exit
};

// PMIx 4.2.2 crashes (SIGSEGV) or deadlocks in PMIx_server_finalize when it runs while the
// server still processes the lost connections of clients that died inside a fence (seen in
// about a third of the runs of the fence-timeout and SIGTERM tests). After a stop, the server
// is therefore left alone: its state dies with the process and its files with the private
// tmpdir.
void abandon_pmix_after_stop(RegisteredJob& job, PmixHostServer& server) {
  job.abandon();
  server.abandon();
}

std::string this_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
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
  PrivateTmpdir tmpdir("riseml-launch.");
  PmixHostServer server(tmpdir.path());

  std::vector<std::byte> secret(pmix::kJobSecretBytes);
  pmix::fill_random(secret);
  RegisteredJob job({"riseml-launch." + std::to_string(getpid()), options.ranks, this_hostname()},
                    secret);
  explicit_bzero(secret.data(), secret.size());  // PMIx keeps the only copy now

  JobSupervisor supervisor({options.tag_output, options.timeout, options.stop_grace}, server);
  for (int rank = 0; rank < options.ranks; ++rank) {
    if (WakePipe::stop_signal_count() > 0) break;  // interrupted while starting: run() stops
    try {
      EnvironmentBlock environment = job.environment_for(rank);
      supervisor.add_rank(rank, start_child(*program, options.command, environment.entries()));
    } catch (const std::system_error& error) {
      supervisor.start_failed(rank, error.what(),
                              error.code().value() == ENOENT ? kNotFound : kCannotExecute);
      break;
    } catch (const std::exception& error) {
      supervisor.start_failed(rank, error.what(), 1);
      break;
    }
  }
  LaunchResult result{supervisor.run()};
  if (supervisor.stopped()) {
    abandon_pmix_after_stop(job, server);
    result.pmix_abandoned = true;
  }
  return result;
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
