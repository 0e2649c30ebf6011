// riseml status [ID] [--long] [--all]: the user's riseml jobs as a table, from squeue --json
// (and sacct --json where accounting is on): id, project, state, age, nodes x processes, and
// per sweep experiment its parameters, per distributed TensorFlow job its roles.
#include <ctime>
#include <fstream>
#include <map>
#include <iostream>

#include "../elastic_membership.hpp"
#include "../parameter_sweep.hpp"
#include "../printable_text.hpp"
#include "commands.hpp"
#include "slurm_client.hpp"
#include "table.hpp"

namespace riseml::cli {

namespace {

std::string shape(const SlurmJob& r) {
  if (r.node_count <= 0 || r.tasks <= 0) return "-";
  if (r.tasks % r.node_count == 0)
    return std::to_string(r.node_count) + "x" + std::to_string(r.tasks / r.node_count);
  return std::to_string(r.node_count) + " nodes/" + std::to_string(r.tasks) + " processes";
}

std::string state_text(const SlurmJob& r, const std::string& state) {
  std::string s = state;
  if (state == "PENDING" && !r.reason.empty() && r.reason != "None") s += " (" + r.reason + ")";
  if (is_final_state(state) && state != "COMPLETED" && r.exit_status && *r.exit_status != 0)
    s += " (exit " + std::to_string(*r.exit_status) + ")";
  return s;
}

std::string parameters_text(const RisemlJob& job, const Experiment& e) {
  if (!job.mark || job.mark->parameters.empty() || !e.index) return "";
  const auto& params = job.mark->parameters;
  if (static_cast<size_t>(*e.index) >= combination_count(params)) return "";
  auto values = combination(params, static_cast<size_t>(*e.index));
  std::string s;
  for (size_t i = 0; i < values.size(); ++i)
    s += (s.empty() ? "" : " ") + params[i].name + "=" + values[i];
  return s;
}

// Distributed TensorFlow: one heterogeneous component per role, in the order of the roles.
std::string roles_text(const RisemlJob& job, const Experiment& e) {
  if (!job.mark || job.mark->roles.empty()) return "";
  const auto& roles = job.mark->roles;
  std::string s;
  if (job.heterogeneous() && e.components.size() == roles.size()) {
    for (size_t i = 0; i < roles.size(); ++i) {
      const SlurmJob& c = *e.components[i];
      s += (s.empty() ? "" : ", ") + roles[i].first + " " + shape(c);
      if (!c.nodes.empty()) s += " on " + c.nodes;
    }
    return s;
  }
  for (const auto& [role, count] : roles) s += (s.empty() ? "" : ", ") + role + " " + std::to_string(count);
  return s + " (one allocation)";
}

// An elastic job's workers, from riseml-elastic's lines in its log (the last MiB is plenty).
std::optional<std::string> elastic_text(const SlurmJob& r) {
  std::ifstream in(expand_output_path(r, r.stdout_pattern), std::ios::binary);
  if (!in) return std::nullopt;
  in.seekg(0, std::ios::end);
  const auto size = static_cast<long long>(in.tellg());
  const long long keep = 1 << 20;
  in.seekg(size > keep ? size - keep : 0);
  std::string tail(static_cast<std::size_t>(size > keep ? keep : std::max(size, 0LL)), '\0');
  in.read(tail.data(), static_cast<std::streamsize>(tail.size()));
  tail.resize(static_cast<std::size_t>(in.gcount()));
  const auto text = elastic_membership(tail);
  if (!text) return std::nullopt;
  return printable(*text);
}

std::string details(const RisemlJob& job, const Experiment& e) {
  std::string s = roles_text(job, e);
  if (s.empty()) s = parameters_text(job, e);
  if (const auto elastic = elastic_text(e.main()))
    s += std::string(s.empty() ? "" : "; ") + *elastic;
  else if (s.empty() && !e.main().nodes.empty())
    s = "on " + e.main().nodes;
  if (e.main().restarts > 0)
    s += std::string(s.empty() ? "" : "; ") + "requeued " + std::to_string(e.main().restarts) + "x";
  return s;
}

void add_rows(const RisemlJob& job, bool long_form, const std::optional<long long>& only,
              long long now, std::vector<std::vector<std::string>>& rows) {
  const std::string id = std::to_string(job.id);
  const std::string project = job.first().name;
  auto es = job.experiments();
  if (!job.sweep()) {
    const Experiment& e = es.front();
    rows.push_back({id, project, state_text(e.main(), e.state()), age_text(now, e.main().submit_time),
                    job.heterogeneous() ? "-" : shape(e.main()), details(job, e)});
    return;
  }
  // A sweep: a summary row, then (--long, or when asked for by id) one row per experiment.
  std::map<std::string, int> counts;
  for (const auto& e : es) counts[e.state()]++;
  std::string summary = "sweep of " + std::to_string(es.size()) + ":";
  for (const auto& [state, n] : counts) summary += " " + std::to_string(n) + " " + state;
  long long submitted = 0;
  for (const auto& r : job.records)
    if (submitted == 0 || (r.submit_time > 0 && r.submit_time < submitted)) submitted = r.submit_time;
  if (!only) {
    rows.push_back({id, project, job.state(), age_text(now, submitted), shape(es.front().main()), summary});
  }
  if (!long_form && !only) return;
  for (const auto& e : es) {
    if (only && e.index != only) continue;
    const SlurmJob& r = e.main();
    rows.push_back({"  " + experiment_name(job, e), only ? project : "", state_text(r, e.state()),
                    age_text(now, r.submit_time), shape(r), details(job, e)});
  }
}

}  // namespace

int status(const std::string& id_text, bool long_form, bool all_users) {
  std::optional<JobRef> ref;
  if (!job_ref_argument(id_text, /*optional=*/true, ref)) return kExitBadInput;
  std::string error;
  auto snapshot = query_jobs(/*history=*/true, ref ? ref->id : 0, error);
  if (!snapshot) {
    std::cerr << "riseml: " << error << '\n';
    return kExitFailure;
  }
  const long long now = static_cast<long long>(std::time(nullptr));
  std::vector<std::vector<std::string>> rows = {
      {"ID", "PROJECT", "STATE", "AGE", "NODESxPROCS", "DETAILS"}};
  if (ref) {
    auto job = find_job(*snapshot, *ref, all_users, error);
    if (!job) {
      std::cerr << "riseml: " << error << '\n';
      return kExitBadInput;
    }
    add_rows(*job, true, std::nullopt, now, rows);
    if (ref->index) {
      rows.resize(1);
      add_rows(*job, true, ref->index, now, rows);
    }
    std::cout << format_table(rows);
    return kExitOk;
  }
  const std::string me = current_user();
  for (const auto& job : group_jobs(snapshot->records)) {
    if (!job.mark) continue;  // not riseml's
    if (!all_users && job.first().user != me) continue;
    add_rows(job, long_form, std::nullopt, now, rows);
  }
  if (rows.size() == 1) {
    std::cout << "No riseml jobs" << (all_users ? "" : " of " + printable(me))
              << (snapshot->accounting ? "" : " in the queue") << ". Submit one with: riseml submit\n";
    return kExitOk;
  }
  std::cout << format_table(rows);
  return kExitOk;
}

}  // namespace riseml::cli
