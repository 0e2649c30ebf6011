// riseml kill ID | ID.K: cancels a whole job (every experiment of a sweep) or experiment K
// (array task K), after checking that it is the user's riseml job.
#include <iostream>

#include "../printable_text.hpp"
#include "commands.hpp"
#include "process.hpp"
#include "slurm_client.hpp"

namespace riseml::cli {

int kill_job(const std::string& id_text) {
  std::optional<JobRef> ref;
  if (!job_ref_argument(id_text, /*optional=*/false, ref)) return kExitBadInput;
  std::string error;
  auto snapshot = query_jobs(/*history=*/true, ref->id, error);
  if (!snapshot) {
    std::cerr << "riseml: " << error << '\n';
    return kExitFailure;
  }
  auto job = find_job(*snapshot, *ref, /*others_ok=*/false, error);
  if (!job) {
    std::cerr << "riseml: " << error << '\n';
    return kExitBadInput;
  }
  bool running = false;
  std::string last_state;
  for (const auto& e : selected_experiments(*job, *ref)) {
    running = running || !is_final_state(e.state());
    last_state = e.state();
  }
  if (!running) {
    std::cerr << "riseml: job " << ref->text() << " has already ended (" << last_state
              << "); nothing to cancel\n";
    return kExitOk;
  }
  // scancel ID cancels every task of an array; ID_K one task.
  const std::string target =
      std::to_string(ref->id) + (ref->index ? "_" + std::to_string(*ref->index) : "");
  ProcessResult r = run_program({program_from_env("RISEML_SCANCEL", "scancel"), target});
  if (!r.error.empty() || r.status != 0) {
    std::cerr << "riseml: scancel " << target << " failed"
              << (r.error.empty() ? " with status " + std::to_string(r.status) : ": " + r.error)
              << "; its message is above\n";
    return kExitFailure;
  }
  std::cerr << "riseml: cancelled " << (ref->index ? "experiment " : "job ") << ref->text() << " ("
            << printable(job->first().name) << ")\n";
  return kExitOk;
}

}  // namespace riseml::cli
