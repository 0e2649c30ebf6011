// riseml monitor [ID] [--once]: a refreshing table of CPU, memory and GPU use per node and rank
// of the user's running riseml jobs. On each node of a job it runs `riseml monitor-probe`
// through an overlapping step (srun --overlap --jobid), which reads /proc and nvidia-smi:
// read-only, one short step per node and refresh, nothing installed in the job.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "../printable_text.hpp"
#include "commands.hpp"
#include "process.hpp"
#include "slurm_client.hpp"
#include "table.hpp"

namespace riseml::cli {

namespace {

using nlohmann::json;

std::string self_path() {
  std::error_code ec;
  auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "riseml" : p.string();
}

std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  return fixed(b, u == 0 ? 0 : 1) + units[u];
}

double num(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::string text(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// The probe's lines -> table rows. A rank's GPUs are its CUDA_VISIBLE_DEVICES; their use
// comes from the node's nvidia-smi table.
void add_probe_rows(const std::string& experiment, const std::string& out,
                    std::vector<std::vector<std::string>>& rows) {
  std::vector<json> nodes;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    json node = json::parse(line, nullptr, false);
    if (node.is_object() && node.contains("ranks") && node["ranks"].is_array())
      nodes.push_back(std::move(node));
  }
  // srun prints the nodes' lines as they finish: order them by node name.
  std::stable_sort(nodes.begin(), nodes.end(), [](const json& a, const json& b) {
    return text(a, "node") < text(b, "node");
  });
  for (auto& node : nodes) {
    std::map<long long, json> gpus;
    if (node.contains("gpus") && node["gpus"].is_array())
      for (const auto& g : node["gpus"])
        if (g.is_object()) gpus[static_cast<long long>(num(g, "index"))] = g;
    if (node["ranks"].empty())
      rows.push_back({experiment, text(node, "node"), "-", "-", "-", "-", "-", "-", "-"});
    for (const auto& r : node["ranks"]) {
      if (!r.is_object()) continue;
      std::string visible = text(r, "gpus");
      std::string util = "-", mem = "-";
      double u = 0, m = 0;
      int n = 0;
      std::istringstream ids(visible);
      std::string id;
      while (std::getline(ids, id, ',')) {
        auto it = gpus.find(std::atoll(id.c_str()));
        if (id.empty() || it == gpus.end()) continue;
        u += num(it->second, "util");
        m += num(it->second, "mem_used_mb");
        ++n;
      }
      if (n > 0) {
        util = fixed(u / n, 0) + "%";
        mem = bytes_text(m * 1024 * 1024);
      }
      rows.push_back({experiment, text(node, "node"), text(r, "step"),
                      std::to_string(static_cast<long long>(num(r, "rank"))),
                      fixed(num(r, "cpu_percent"), 0) + "%", bytes_text(num(r, "rss_bytes")),
                      visible.empty() ? "-" : visible, util, mem});
    }
  }
}

// One probe per node of a running record (per component of a heterogeneous job).
std::string probe(const RisemlJob& job, const SlurmJob& r, const std::string& role,
                  std::vector<std::vector<std::string>>& rows, const std::string& experiment) {
  const long long target = job.heterogeneous() ? job.id : r.job_id;
  const long long nodes = r.node_count > 0 ? r.node_count : 1;
  std::vector<std::string> argv = {program_from_env("RISEML_SRUN", "srun"), "--overlap",
                                   "--jobid=" + std::to_string(target)};
  if (job.heterogeneous()) argv.push_back("--het-group=" + std::to_string(r.het_job_offset));
  argv.insert(argv.end(), {"--nodes=" + std::to_string(nodes), "--ntasks=" + std::to_string(nodes),
                           "--ntasks-per-node=1", "--quiet", self_path(), "monitor-probe",
                           "--job", std::to_string(target)});
  ProcessResult p = run_program(argv, "", "", /*capture_stderr=*/true, 30);
  if (!p.error.empty() || p.status != 0) {
    std::string why = p.error.empty() ? p.err.substr(0, p.err.find('\n')) : p.error;
    return experiment + (role.empty() ? "" : " " + role) + ": cannot probe its nodes (" +
           printable(why) + ")";
  }
  add_probe_rows(experiment + (role.empty() ? "" : " " + role), p.out, rows);
  return "";
}

// Rows for every running experiment; `running` tells whether there was one.
std::string snapshot_table(const std::optional<JobRef>& ref, bool& running, bool& bad_id) {
  std::string error;
  running = false;
  bad_id = false;
  auto snapshot = query_jobs(/*history=*/false, ref ? ref->id : 0, error);
  if (!snapshot) return "riseml: " + error + "\n";
  std::vector<RisemlJob> jobs;
  if (ref) {
    auto job = find_job(*snapshot, *ref, false, error);
    if (!job) {
      bad_id = true;
      return "riseml: " + error + "\n";
    }
    jobs.push_back(*job);
  } else {
    const std::string me = current_user();
    for (auto& j : group_jobs(snapshot->records))
      if (j.mark && j.first().user == me) jobs.push_back(std::move(j));
  }
  std::vector<std::vector<std::string>> rows = {
      {"EXPERIMENT", "NODE", "STEP", "RANK", "CPU", "MEMORY", "GPUS", "GPU-UTIL", "GPU-MEM"}};
  std::string problems;
  for (const auto& job : jobs) {
    std::vector<Experiment> es = ref ? selected_experiments(job, *ref) : job.experiments();
    for (const auto& e : es) {
      if (e.state() != "RUNNING") continue;
      running = true;
      const std::string name = experiment_name(job, e);
      for (size_t i = 0; i < e.components.size(); ++i) {
        std::string role;
        if (job.mark && job.heterogeneous() && i < job.mark->roles.size())
          role = job.mark->roles[i].first;
        std::string problem = probe(job, *e.components[i], role, rows, name);
        if (!problem.empty()) problems += "riseml: " + problem + "\n";
      }
    }
  }
  if (!running) {
    return ref ? "riseml: job " + ref->text() + " is not running\n"
               : "riseml: no running riseml jobs of " + printable(current_user()) + "\n";
  }
  return format_table(rows) + problems;
}

}  // namespace

int monitor(const std::string& id_text, bool once, double interval_s) {
  std::optional<JobRef> ref;
  if (!job_ref_argument(id_text, /*optional=*/true, ref)) return kExitBadInput;
  if (interval_s < 1) interval_s = 1;
  const bool tty = isatty(1);
  for (;;) {
    bool running = false, bad_id = false;
    std::string table = snapshot_table(ref, running, bad_id);
    if (bad_id) {
      std::cerr << table;
      return kExitBadInput;
    }
    if (!running) {
      std::cerr << table;
      return kExitOk;
    }
    if (!once && tty) std::cout << "\033[H\033[2J";  // clear the screen: a live view
    if (!once) {
      std::time_t now = std::time(nullptr);
      char when[32];
      std::strftime(when, sizeof when, "%H:%M:%S", std::localtime(&now));
      std::cout << "riseml monitor  " << when << "  (every " << fixed(interval_s, 0)
                << " s; Ctrl-C stops)\n";
    }
    std::cout << table;
    std::cout.flush();
    if (once) return kExitOk;
    std::this_thread::sleep_for(std::chrono::duration<double>(interval_s));
  }
}

}  // namespace riseml::cli
