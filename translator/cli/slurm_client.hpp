// What the status, logs, kill, monitor and submit --follow verbs ask Slurm: the job records
// (squeue --json, plus sacct --json for finished jobs where accounting is on), and which job an
// ID on the command line means. The programs come from $RISEML_SQUEUE, $RISEML_SACCT,
// $RISEML_SCANCEL, $RISEML_SRUN (tests point them at scripts that print recorded output).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../slurm_jobs.hpp"

namespace riseml::cli {

struct JobSnapshot {
  std::vector<SlurmJob> records;  // squeue's first, then sacct's
  bool accounting = false;        // sacct answered
};

// squeue --json, and (with `history`) sacct --json for `id` (0: the last days). nullopt, with
// a one-line `error`, when squeue fails or prints something that is not its JSON.
std::optional<JobSnapshot> query_jobs(bool history, long long id, std::string& error);

// The user riseml runs as (jobs of others are left out unless --all).
std::string current_user();

// The riseml job `ref` names, checked: it exists, riseml submit made it, it is the user's
// (unless `others_ok`), and ID.K names one of its experiments. nullopt with a one-line error
// (meant for exit status 2) otherwise.
std::optional<RisemlJob> find_job(const JobSnapshot& snapshot, const JobRef& ref, bool others_ok,
                                  std::string& error);

// parse_job_ref, with the error message for text that is not an ID.
std::optional<JobRef> job_ref_or_error(const std::string& text, std::string& error);

// A verb's ID argument: `ref` is set from `text` (left empty when `text` is empty and the ID is
// optional). False, after printing the one-line error, when it is not an ID (exit status 2).
bool job_ref_argument(const std::string& text, bool optional, std::optional<JobRef>& ref);

// The experiments `ref` selects: all of the job's, or experiment K.
std::vector<Experiment> selected_experiments(const RisemlJob& job, const JobRef& ref);

// "3s", "5m", "2h", "4d": how long ago `then` was.
std::string age_text(long long now, long long then);

}  // namespace riseml::cli
