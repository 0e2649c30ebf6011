#include "slurm_client.hpp"

#include <pwd.h>
#include <unistd.h>

#include <iostream>

#include "../printable_text.hpp"
#include "process.hpp"

namespace riseml::cli {

namespace {

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > 200) line = line.substr(0, 200) + "...";
  return printable(line);
}

}  // namespace

std::optional<JobSnapshot> query_jobs(bool history, long long id, std::string& error) {
  const std::string squeue = program_from_env("RISEML_SQUEUE", "squeue");
  // 22.05's squeue --json ignores filters and lists every job slurmctld still holds, finished
  // ones included for MinJobAge seconds; we filter ourselves.
  ProcessResult q = run_program({squeue, "--json"}, "", "", /*capture_stderr=*/true);
  if (!q.error.empty() || q.status != 0) {
    error = "squeue --json failed" + (q.error.empty() ? " with status " + std::to_string(q.status)
                                                     : ": " + q.error) +
            (q.err.empty() ? "" : " (" + first_line(q.err) + ")") +
            "; is Slurm up (sinfo)? Slurm 21.08 or later is needed for --json";
    return std::nullopt;
  }
  JobSnapshot snapshot;
  std::string why;
  auto records = parse_squeue_json(q.out, why);
  if (!records) {
    error = "cannot read squeue --json: " + why;
    return std::nullopt;
  }
  snapshot.records = std::move(*records);
  if (!history) return snapshot;
  // Finished jobs leave squeue after MinJobAge; sacct keeps them where accounting is set up.
  // Without accounting (sacct fails: "accounting storage is disabled") there is no history.
  const std::string sacct = program_from_env("RISEML_SACCT", "sacct");
  std::vector<std::string> argv = {sacct, "--json", "--allusers"};
  if (id > 0) {
    argv.push_back("--jobs=" + std::to_string(id));
  } else {
    argv.push_back("--starttime=now-7days");
  }
  ProcessResult a = run_program(argv, "", "", /*capture_stderr=*/true);
  if (a.error.empty() && a.status == 0) {
    if (auto old = parse_sacct_json(a.out, why)) {
      snapshot.accounting = true;
      snapshot.records.insert(snapshot.records.end(), old->begin(), old->end());
    }
  }
  return snapshot;
}

std::string current_user() {
  if (const passwd* pw = getpwuid(geteuid()); pw && pw->pw_name) return pw->pw_name;
  return std::to_string(geteuid());
}

std::optional<JobRef> job_ref_or_error(const std::string& text, std::string& error) {
  auto ref = parse_job_ref(text);
  if (!ref)
    error = "'" + printable(text) + "' is not a job id: give the number riseml submit printed, "
            "or ID.K for experiment K of a sweep (riseml status lists them)";
  return ref;
}

bool job_ref_argument(const std::string& text, bool optional, std::optional<JobRef>& ref) {
  if (optional && text.empty()) return true;
  std::string error;
  ref = job_ref_or_error(text, error);
  if (!ref) std::cerr << "riseml: " << error << '\n';
  return ref.has_value();
}

std::optional<RisemlJob> find_job(const JobSnapshot& snapshot, const JobRef& ref, bool others_ok,
                                  std::string& error) {
  auto jobs = group_jobs(snapshot.records);
  const RisemlJob* found = nullptr;
  for (const auto& j : jobs)
    if (j.id == ref.id) found = &j;
  if (!found) {
    // The id of one array task or heterogeneous component: name the job it belongs to.
    for (const auto& j : jobs)
      for (const auto& r : j.records)
        if (r.job_id == ref.id && j.id != ref.id) {
          error = "job " + std::to_string(ref.id) + " is part of job " + std::to_string(j.id) +
                  (r.array_task_id ? " (experiment " + std::to_string(j.id) + "." +
                                         std::to_string(*r.array_task_id) + ")"
                                   : "") +
                  "; use that id";
          return std::nullopt;
        }
    error = "no job " + std::to_string(ref.id) +
            (snapshot.accounting
                 ? " in the queue or in the accounting records"
                 : " in the queue (without Slurm accounting, finished jobs are kept only for "
                   "MinJobAge, 5 minutes by default)") +
            "; riseml status lists your jobs";
    return std::nullopt;
  }
  if (!found->mark) {
    error = "job " + std::to_string(ref.id) +
            " was not submitted by riseml submit (it has no riseml comment); use squeue, "
            "scancel or its output file for it";
    return std::nullopt;
  }
  const std::string owner = found->first().user;
  if (!others_ok && !owner.empty() && owner != current_user()) {
    error = "job " + std::to_string(ref.id) + " belongs to " + printable(owner) + ", not to " +
            printable(current_user()) + "; riseml works on your own jobs only";
    return std::nullopt;
  }
  if (ref.index) {
    if (!found->sweep()) {
      error = "job " + std::to_string(ref.id) + " is not a sweep, so it has no experiment " +
              ref.text() + "; use " + std::to_string(ref.id);
      return std::nullopt;
    }
    bool has = false;
    auto es = found->experiments();
    for (const auto& e : es) has = has || e.index == ref.index;
    if (!has) {
      std::string range = es.empty() ? "none"
                                     : std::to_string(ref.id) + "." + std::to_string(*es.front().index) +
                                           " to " + std::to_string(ref.id) + "." +
                                           std::to_string(*es.back().index);
      error = "job " + std::to_string(ref.id) + " has no experiment " + ref.text() +
              " (its experiments: " + range + ")";
      return std::nullopt;
    }
  }
  return *found;
}

std::vector<Experiment> selected_experiments(const RisemlJob& job, const JobRef& ref) {
  std::vector<Experiment> out;
  for (auto& e : job.experiments())
    if (!ref.index || e.index == ref.index) out.push_back(e);
  return out;
}

std::string age_text(long long now, long long then) {
  if (then <= 0 || now < then) return "-";
  long long s = now - then;
  if (s < 120) return std::to_string(s) + "s";
  if (s < 7200) return std::to_string(s / 60) + "m";
  if (s < 172800) return std::to_string(s / 3600) + "h";
  return std::to_string(s / 86400) + "d";
}

}  // namespace riseml::cli
