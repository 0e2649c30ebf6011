// The `riseml` subcommands; each returns the process exit status.
#pragma once

#include <string>

namespace riseml::cli {

// Exit statuses: 0 ok, 2 the user's input is wrong (nothing written), 1 anything else.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

int translate(const std::string& file, const std::string& output, const std::string& site);
int validate(const std::string& file, const std::string& site);
int submit(const std::string& file, const std::string& site, const std::string& sbatch,
           bool dry_run, bool follow);
int run_local(const std::string& file, const std::string& site, long long processes,
              long long index);
int tf_config(const std::string& role, long long index, const std::string& roles,
              const std::string& dir, double timeout_s);

// The job verbs (issue 15): ID is what riseml submit printed, or ID.K for experiment K of a
// sweep. A bad ID, no such job, a job riseml did not submit or another user's job: exit 2.
int status(const std::string& id, bool long_form, bool all_users);
int logs(const std::string& id, bool follow);
int kill_job(const std::string& id);
int monitor(const std::string& id, bool once, double interval_s);
int monitor_probe(const std::string& job_id);

}  // namespace riseml::cli
