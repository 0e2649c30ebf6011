// The command line of riseml-elastic, the elastic driver:
//   riseml-elastic [--workers C] [--min-workers M] [--tasks-per-node P] [--grace S]
//                  [--srun-arg ARG]... [--iface IF] [--launcher srun|local]
//                  [--hosts h[:slots],...] [--host-discovery-script PATH] [--min-np N]
//                  [--max-np N] [--reset-limit N] [--blacklist-cooldown-range LOW HIGH]
//                  [--elastic-timeout S] [--] program args...
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace riseml::elastic {

// How a host's workers start: one `srun --overlap` step per node of the Slurm allocation, or
// one process per worker on this machine (its hosts are names: Horovod's tests, riseml's own).
enum class Launcher { srun, local };

struct DriverOptions {
  Launcher launcher = Launcher::srun;
  std::optional<int> workers;  // nodes to start workers on; unset: every node of the allocation
  int min_workers = 1;         // end the job when fewer nodes than this still train
  int tasks_per_node = 1;      // workers of a host whose slots are not given
  std::optional<int> min_np;   // instead of --min-workers, in workers (Horovod's --min-np)
  std::optional<int> max_np;   // instead of --workers, in workers (Horovod's --max-np)
  // After the first node's workers finished well, how long the others may take before they are
  // stopped (a node cut off by its link never ends by itself).
  std::chrono::milliseconds grace = std::chrono::seconds(30);
  std::chrono::milliseconds stop_grace = std::chrono::seconds(10);  // SIGTERM -> SIGKILL
  std::vector<std::string> srun_args;  // added to each node's srun, e.g. --cpus-per-task=2
  std::string iface;                   // where the store listens (RISEML_IFACE's forms)
  std::string srun = "srun";           // the program that starts a node's step
  // Hosts to use instead of the allocation's (--nodes/--hosts a,b:2,c), "host" or "host:slots".
  std::vector<std::string> nodes;
  // A program that prints the usable hosts, one "host[:slots]" per line, run every
  // discovery_interval (Horovod's --host-discovery-script): hosts come and go as it says.
  std::string discovery_script;
  std::chrono::milliseconds discovery_interval = std::chrono::seconds(1);
  // Job resets (new worlds after the first) allowed; more end the job (Horovod's --reset-limit).
  std::optional<int> reset_limit;
  // A failed host comes back after a cooldown within [low, high] seconds that doubles with
  // each failure (Horovod's --blacklist-cooldown-range); unset: never.
  std::optional<std::pair<double, double>> cooldown;
  // How long the job may have fewer workers than its minimum before it ends.
  std::chrono::milliseconds elastic_timeout = std::chrono::seconds(600);
  // How long a joining host's workers may take to be up (Horovod's --start-timeout).
  std::chrono::milliseconds start_timeout = std::chrono::seconds(120);
  std::vector<std::string> command;

  // The job's bounds in workers (ranks): from --min-np/--max-np, else from the node counts.
  int min_ranks() const;
  int max_ranks() const;  // INT_MAX: every slot there is
};

// `args` excludes the program name. The options, or the exit code after CLI11 printed help (0)
// or a usage error (2).
std::variant<DriverOptions, int> parse_driver_options(const std::vector<std::string>& args);

}  // namespace riseml::elastic
