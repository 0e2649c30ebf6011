// The command line of riseml-elastic, the elastic driver in the batch step:
//   riseml-elastic [--workers C] [--min-workers M] [--tasks-per-node P] [--grace S]
//                  [--srun-arg ARG]... [--iface IF] [--] program args...
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace riseml::elastic {

struct DriverOptions {
  std::optional<int> workers;  // nodes to start workers on; unset: every node of the allocation
  int min_workers = 1;         // end the job when fewer nodes than this still train
  int tasks_per_node = 1;
  // After the first node's workers finished well, how long the others may take before they are
  // stopped (a node cut off by its link never ends by itself).
  std::chrono::milliseconds grace = std::chrono::seconds(30);
  std::chrono::milliseconds stop_grace = std::chrono::seconds(10);  // SIGTERM -> SIGKILL
  std::vector<std::string> srun_args;  // added to each node's srun, e.g. --cpus-per-task=2
  std::string iface;                   // where the store listens (RISEML_IFACE's forms)
  std::string srun = "srun";           // the program that starts a node's step
  std::vector<std::string> nodes;      // instead of the allocation's (--nodes a,b,c)
  std::vector<std::string> command;
};

// `args` excludes the program name. The options, or the exit code after CLI11 printed help (0)
// or a usage error (2).
std::variant<DriverOptions, int> parse_driver_options(const std::vector<std::string>& args);

}  // namespace riseml::elastic
