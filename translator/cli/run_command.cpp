// riseml run --local: try a riseml.yml's commands on this machine before submitting it.
// install lines run once; each run line runs as N processes under riseml-launch (PMIx), so a
// Horovod-style program sees the same rank/size/peers it would see under srun --mpi=pmix.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "../job_layout.hpp"
#include "../parameter_sweep.hpp"
#include "../printable_text.hpp"
#include "commands.hpp"
#include "translate_common.hpp"

namespace riseml::cli {

namespace {

// riseml-launch beside this program (installed), in the build tree, or on PATH.
std::string find_launcher() {
  if (const char* env = std::getenv("RISEML_LAUNCH"); env && *env) return env;
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    for (auto candidate : {self.parent_path() / "riseml-launch",
                           self.parent_path().parent_path() / "pmix_bootstrap" / "riseml-launch"}) {
      if (std::filesystem::exists(candidate, ec)) return candidate.string();
    }
  }
  return "riseml-launch";
}

int run_process(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid < 0) return kExitFailure;
  if (pid == 0) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::cerr << "riseml: cannot run " << printable(argv[0]) << '\n';
    _exit(127);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

}  // namespace

int run_local(const std::string& file, const std::string& site_path, long long processes,
              long long index) {
  auto t = translate_with_site(file, site_path);
  if (!t) return kExitBadInput;
  const TrainSection& train = t->job->train;
  if (train.distributed) {
    std::cerr << "riseml: run --local does not run distributed TensorFlow (ps/worker roles); "
                 "submit it, or try it with one process by removing 'distributed'\n";
    return kExitBadInput;
  }
  Diagnostics unused;
  SiteConfig site;
  auto layout = plan_layout(*t->job, site, unused);
  long long n = processes > 0 ? processes : (layout ? layout->groups.front().ntasks : 1);

  std::vector<std::string> values;
  const size_t combinations = combination_count(train.parameters);
  if (!train.parameters.empty()) {
    if (index < 0 || static_cast<size_t>(index) >= combinations) {
      std::cerr << "riseml: --index must be 0.." << combinations - 1 << " (the sweep has "
                << combinations << " combinations)\n";
      return kExitBadInput;
    }
    values = combination(train.parameters, static_cast<size_t>(index));
    for (size_t i = 0; i < values.size(); ++i)
      setenv(parameter_env_name(train.parameters[i].name).c_str(), values[i].c_str(), 1);
  }

  auto dir = std::filesystem::absolute(file).parent_path();
  std::string experiment = "local-" + std::to_string(getpid());
  auto output = dir / "riseml-output" / t->job->project / experiment;
  std::filesystem::create_directories(output);
  setenv("RISEML_PROJECT", t->job->project.c_str(), 1);
  setenv("EXPERIMENT_ID", experiment.c_str(), 1);
  setenv("OUTPUT_DIR", output.c_str(), 1);
  if (chdir(dir.c_str()) != 0) {
    std::cerr << "riseml: cannot enter " << printable(dir.string()) << '\n';
    return kExitFailure;
  }
  std::cerr << "riseml: running " << t->job->project << " locally with " << n
            << " process(es); OUTPUT_DIR=" << printable(output.string()) << '\n';

  for (const auto& line : train.install) {
    std::string cmd = substitute(line.text, train.parameters, values);
    if (int rc = run_process({"bash", "-c", cmd}); rc != 0) {
      std::cerr << "riseml: install line failed with status " << rc << ": " << printable(cmd)
                << '\n';
      return rc;
    }
  }
  const std::string launcher = find_launcher();
  for (const auto& line : train.run) {
    std::string cmd = substitute(line.text, train.parameters, values);
    int rc = run_process({launcher, "-n", std::to_string(n), "--tag-output", "--", "bash", "-c", cmd});
    if (rc != 0) {
      std::cerr << "riseml: run line failed with status " << rc << ": " << printable(cmd) << '\n';
      return rc;
    }
  }
  return kExitOk;
}

}  // namespace riseml::cli
