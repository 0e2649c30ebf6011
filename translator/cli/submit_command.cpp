// riseml submit: translate, hand the script to sbatch in the riseml.yml's folder, print the id;
// with --follow, then show the job's state changes and output until it ends.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

#include "../printable_text.hpp"
#include "../shell_quote.hpp"
#include "../slurm_jobs.hpp"
#include "commands.hpp"
#include "follow.hpp"
#include "process.hpp"
#include "translate_common.hpp"

namespace riseml::cli {

namespace {

// The comment marks the job as riseml's (riseml status, logs, kill, monitor look for it) and
// carries what status shows: the swept parameters and the distributed roles.
std::string riseml_comment(const JobFile& job) {
  RisemlMark mark;
  mark.parameters = job.train.parameters;
  if (const auto& d = job.train.distributed)
    mark.roles = {{"master", 1}, {"ps", d->ps.count}, {"worker", d->worker.count}};
  return format_riseml_comment(mark);
}

}  // namespace

int submit(const std::string& file, const std::string& site_path, const std::string& sbatch,
           bool dry_run, bool follow) {
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
  std::vector<std::string> argv = {program, "--parsable",
                                   "--comment=" + riseml_comment(*t->job)};
  if (dry_run) {
    std::cout << "# would run, in " << printable(dir.string()) << ":";
    for (const auto& a : argv) std::cout << ' ' << shell_quote(a);
    std::cout << " < script\n" << *t->script;
    return kExitOk;
  }
  ProcessResult r = run_program(argv, *t->script, dir.string());
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
  if (!follow) return kExitOk;
  auto ref = parse_job_ref(id);
  if (!ref) {
    std::cerr << "riseml: cannot follow job '" << printable(id) << "': not a job id\n";
    return kExitFailure;
  }
  return show_logs(*ref, FollowOptions{.follow = true, .report_states = true});
}

}  // namespace riseml::cli
