// riseml submit: translate, hand the script to sbatch in the riseml.yml's folder, print the id.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "../printable_text.hpp"
#include "../shell_quote.hpp"
#include "commands.hpp"
#include "translate_common.hpp"

namespace riseml::cli {

namespace {

struct ProcessResult {
  int status = -1;
  std::string out;
  std::string error;  // why it could not run at all
};

// Runs argv in `dir` with `input` on stdin and stdout captured; stderr passes through.
ProcessResult run_with_input(const std::vector<std::string>& argv, const std::string& input,
                             const std::string& dir) {
  ProcessResult result;
  int in_pipe[2], out_pipe[2];
  if (pipe(in_pipe) != 0) return {.status = -1, .out = "", .error = "pipe failed"};
  if (pipe(out_pipe) != 0) {
    close(in_pipe[0]);
    close(in_pipe[1]);
    return {.status = -1, .out = "", .error = "pipe failed"};
  }
  pid_t pid = fork();
  if (pid < 0) return {.status = -1, .out = "", .error = "fork failed"};
  if (pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    close(in_pipe[0]);
    close(in_pipe[1]);
    close(out_pipe[0]);
    close(out_pipe[1]);
    if (chdir(dir.c_str()) != 0) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  // The script is small (well under the pipe buffer), so writing before reading cannot block
  // for long; sbatch reads all of stdin before it prints.
  size_t written = 0;
  while (written < input.size()) {
    ssize_t n = write(in_pipe[1], input.data() + written, input.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  close(in_pipe[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(out_pipe[0], buf, sizeof buf)) > 0) result.out.append(buf, static_cast<size_t>(n));
  close(out_pipe[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) {
    result.status = WEXITSTATUS(status);
    if (result.status == 127) result.error = "cannot run " + argv[0] + " (is Slurm installed?)";
    if (result.status == 126) result.error = "cannot enter " + dir;
  } else {
    result.status = 128 + WTERMSIG(status);
  }
  return result;
}

}  // namespace

int submit(const std::string& file, const std::string& site_path, const std::string& sbatch,
           bool dry_run) {
  auto t = translate_with_site(file, site_path);
  if (!t) return kExitBadInput;
  std::string program = sbatch;
  if (program.empty()) {
    const char* env = std::getenv("RISEML_SBATCH");
    program = env && *env ? env : "sbatch";
  }
  std::error_code ec;
  auto dir = std::filesystem::absolute(std::filesystem::path(file), ec).parent_path();
  // Jobs run where the riseml.yml is, as RiseML ran them in the project folder; sbatch runs
  // there too, so SLURM_SUBMIT_DIR (and the default OUTPUT_DIR) is that folder.
  std::vector<std::string> argv = {program, "--parsable"};
  if (dry_run) {
    std::cout << "# would run, in " << printable(dir.string()) << ":";
    for (const auto& a : argv) std::cout << ' ' << shell_quote(a);
    std::cout << " < script\n" << *t->script;
    return kExitOk;
  }
  ProcessResult r = run_with_input(argv, *t->script, dir.string());
  if (!r.error.empty()) {
    std::cerr << "riseml: " << printable(r.error) << '\n';
    return kExitFailure;
  }
  if (r.status != 0) {
    std::cerr << "riseml: sbatch failed with status " << r.status
              << "; its message is above. Check the script with: riseml translate "
              << printable(file) << '\n';
    return kExitFailure;
  }
  // --parsable prints "jobid" or "jobid;cluster".
  std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
  if (id.empty()) {
    std::cerr << "riseml: sbatch printed no job id\n";
    return kExitFailure;
  }
  std::cout << id << '\n';
  std::cerr << "riseml: submitted " << t->job->project << " as job " << printable(id) << '\n';
  return kExitOk;
}

}  // namespace riseml::cli
