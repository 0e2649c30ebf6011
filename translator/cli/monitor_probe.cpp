// riseml monitor-probe --job ID (hidden; riseml monitor runs it on each node of a job through
// `srun --overlap`): CPU and memory per rank from /proc, GPU use from nvidia-smi when there is
// one, as one line of JSON. Read-only; it samples the processes' CPU time twice, 0.5 s apart.
#include <dirent.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <riseml/common/small_file.hpp>
#include <sstream>
#include <thread>

#include "commands.hpp"
#include "process.hpp"

namespace riseml::cli {

namespace {

using nlohmann::json;

std::map<std::string, std::string> environment_of(const std::string& pid) {
  std::map<std::string, std::string> env;
  // Whole: an environment may pass read_small_file's default 1 MiB (the kernel allows a quarter
  // of the stack limit), and a cut one could lose the SLURM_ variables that name the rank.
  const std::optional<std::string> all = read_small_file("/proc/" + pid + "/environ", std::size_t{256} << 20);
  if (!all) return env;  // gone, or not ours to read
  std::istringstream in(*all);
  std::string entry;
  while (std::getline(in, entry, '\0')) {
    auto eq = entry.find('=');
    if (eq != std::string::npos &&
        (entry.compare(0, 5, "SLURM") == 0 || entry.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0))
      env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

// utime + stime in clock ticks, and the resident set in bytes.
bool usage_of(const std::string& pid, long long& ticks, long long& rss) {
  // Read without exceptions: a rank exiting now makes the read fail (ESRCH).
  const std::optional<std::string> text = read_small_file("/proc/" + pid + "/stat");
  if (!text) return false;
  auto close_paren = text->rfind(')');  // the command name may hold spaces and parentheses
  if (close_paren == std::string::npos || close_paren + 2 > text->size()) return false;
  std::istringstream fields(text->substr(close_paren + 2));
  std::string f;
  long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::atoll(f.c_str());
    if (i == 15) stime = std::atoll(f.c_str());
  }
  ticks = utime + stime;
  const std::optional<std::string> memory = read_small_file("/proc/" + pid + "/statm");
  if (!memory) return false;
  std::istringstream statm(*memory);
  long long size = 0, resident = 0;
  statm >> size >> resident;
  rss = resident * sysconf(_SC_PAGESIZE);
  return true;
}

struct Rank {
  std::string step, gpus;
  long long rank = 0;
  std::vector<std::string> pids;
  long long ticks0 = 0, ticks1 = 0, rss = 0;
};

json gpu_table() {
  json gpus = json::array();
  ProcessResult r = run_program({"nvidia-smi",
                                 "--query-gpu=index,utilization.gpu,memory.used,memory.total",
                                 "--format=csv,noheader,nounits"},
                                "", "", true, 10);
  if (!r.error.empty() || r.status != 0) return gpus;  // no NVIDIA GPUs here
  std::istringstream lines(r.out);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<long long> v;
    std::istringstream cells(line);
    std::string cell;
    while (std::getline(cells, cell, ',')) v.push_back(std::atoll(cell.c_str()));
    if (v.size() == 4)
      gpus.push_back({{"index", v[0]}, {"util", v[1]}, {"mem_used_mb", v[2]}, {"mem_total_mb", v[3]}});
  }
  return gpus;
}

}  // namespace

int monitor_probe(const std::string& job_id) {
  const char* node_env = std::getenv("SLURMD_NODENAME");
  const char* step_env = std::getenv("SLURM_STEP_ID");
  const std::string node = node_env ? node_env : "";
  const std::string own_step = step_env ? step_env : "";
  std::map<std::pair<std::string, long long>, Rank> ranks;
  if (DIR* proc = opendir("/proc")) {
    while (dirent* d = readdir(proc)) {
      std::string pid = d->d_name;
      if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
      auto env = environment_of(pid);
      // A task of one of the job's steps on this node (the batch script and srun itself have
      // no SLURM_STEP_ID); not this probe's own step.
      if (env["SLURM_JOB_ID"] != job_id || env["SLURMD_NODENAME"] != node) continue;
      auto step = env.find("SLURM_STEP_ID");
      if (step == env.end() || step->second == own_step) continue;
      Rank& r = ranks[{step->second, std::atoll(env["SLURM_PROCID"].c_str())}];
      r.step = step->second;
      r.rank = std::atoll(env["SLURM_PROCID"].c_str());
      r.gpus = env["CUDA_VISIBLE_DEVICES"];
      r.pids.push_back(pid);
    }
    closedir(proc);
  }
  for (auto& [key, r] : ranks)
    for (const auto& pid : r.pids) {
      long long t = 0, rss = 0;
      if (usage_of(pid, t, rss)) r.ticks0 += t;
    }
  const double interval = 0.5;
  std::this_thread::sleep_for(std::chrono::duration<double>(interval));
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  json out = {{"node", node}, {"ranks", json::array()}, {"gpus", gpu_table()}};
  for (auto& [key, r] : ranks) {
    for (const auto& pid : r.pids) {
      long long t = 0, rss = 0;
      if (usage_of(pid, t, rss)) {
        r.ticks1 += t;
        r.rss += rss;
      }
    }
    double cpu = r.ticks1 > r.ticks0 ? 100.0 * static_cast<double>(r.ticks1 - r.ticks0) / hz / interval : 0.0;
    out["ranks"].push_back({{"step", r.step}, {"rank", r.rank}, {"cpu_percent", cpu},
                            {"rss_bytes", r.rss}, {"gpus", r.gpus},
                            {"processes", r.pids.size()}});
  }
  std::cout << out.dump() << '\n';
  return kExitOk;
}

}  // namespace riseml::cli
