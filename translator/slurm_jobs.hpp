// Jobs as Slurm reports them (squeue --json, sacct --json), and the riseml view of them: which
// jobs riseml submit made, their experiments (array tasks) and roles (heterogeneous components).
// Pure: parsing and grouping only; running squeue/sacct is the CLI's business (cli/slurm_client).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "job_model.hpp"

namespace riseml {

// One job record: a plain job, one array task (or the record of the tasks not started yet),
// or one component of a heterogeneous job.
struct SlurmJob {
  long long job_id = 0;
  long long array_job_id = 0;              // 0 when not part of an array
  std::optional<long long> array_task_id;  // unset on the record of the pending tasks
  std::string array_pending;               // "1-3%1": the tasks that record stands for
  long long het_job_id = 0;                // 0 when not heterogeneous
  long long het_job_offset = 0;
  std::string name, user, comment, state, reason, nodes, batch_host, cwd;
  std::string stdout_pattern, stderr_pattern;  // as given to sbatch: %j, %A... not expanded
  long long user_id = -1;
  long long node_count = 0, tasks = 0;
  long long submit_time = 0, start_time = 0, end_time = 0;  // seconds since the epoch; 0 unknown
  std::optional<int> exit_status;  // the batch script's: its exit code, or 128 + signal
  long long restarts = 0;
};

// Parses squeue --json (or sacct --json, whose records are shaped differently). Every field is
// optional: a record without a usable job id is skipped. Returns nullopt, with `error`, only
// when the text is not JSON or has no "jobs" list.
std::optional<std::vector<SlurmJob>> parse_squeue_json(const std::string& text, std::string& error);
std::optional<std::vector<SlurmJob>> parse_sacct_json(const std::string& text, std::string& error);

// A wait status as Slurm stores it (exit code << 8 | signal) -> exit code, or 128 + signal.
int decode_wait_status(long long raw);

// A state after which the job (or array task) never runs again.
bool is_final_state(const std::string& state);

// The indices of an array_task_string: "1-3%1", "0,4-8:2". Empty when malformed; at most
// `limit` indices.
std::vector<long long> expand_task_string(const std::string& text, size_t limit = 100000);

// The file a record's output went to: its --output pattern with %j %A %a %x %u %N %% (and
// widths, %3a) filled in, relative to its working folder; Slurm's default when none was given.
std::string expand_output_path(const SlurmJob& job, const std::string& pattern);

// What riseml submit writes into sbatch --comment: the mark, and what status shows per
// experiment (the parameters) and per component (the roles).
struct RisemlMark {
  std::vector<Parameter> parameters;
  std::vector<std::pair<std::string, long long>> roles;  // distributed: (role, count)
};
inline constexpr const char* kRisemlCommentPrefix = "riseml";
std::string format_riseml_comment(const RisemlMark& mark);
// nullopt when the comment is not riseml's; an unreadable payload gives an empty mark.
std::optional<RisemlMark> parse_riseml_comment(const std::string& comment);

// One experiment: a plain job, or one task of a sweep. `components` holds the records (one,
// or one per heterogeneous component in offset order); a sweep's not-yet-started tasks share
// the pending record.
struct Experiment {
  std::optional<long long> index;  // the array task; unset for a plain job
  std::vector<const SlurmJob*> components;
  const SlurmJob& main() const { return *components.front(); }
  std::string state() const;
};

// A job as riseml submit made it: every record of one sbatch.
struct RisemlJob {
  long long id = 0;  // what sbatch printed: the array or heterogeneous job's id
  std::vector<SlurmJob> records;
  std::optional<RisemlMark> mark;  // nullopt: not submitted by riseml
  bool sweep() const;
  bool heterogeneous() const;
  const SlurmJob& first() const { return records.front(); }
  std::vector<Experiment> experiments() const;  // by index
  // RUNNING when an experiment runs, else PENDING when one waits, else COMPLETED when all
  // did, else the first other final state.
  std::string state() const;
  // The job's exit status once every experiment ended: the first non-zero one, else 0.
  std::optional<int> exit_status() const;
};

// Groups records into jobs (by array / heterogeneous / own id), ordered by id. Records with the
// same job id from two sources: the first one seen wins (pass squeue's before sacct's).
std::vector<RisemlJob> group_jobs(const std::vector<SlurmJob>& records);

// "12" or "12.3" / "12_3" (experiment 3 of sweep 12). nullopt when it is neither.
struct JobRef {
  long long id = 0;
  std::optional<long long> index;
  std::string text() const;
};
std::optional<JobRef> parse_job_ref(const std::string& text);

// The experiment's name in tables and log prefixes: "12" or "12.3".
std::string experiment_name(const RisemlJob& job, const Experiment& e);

}  // namespace riseml
