// The elastic driver's watch over its workers: one srun step per node, their output relabelled
// with job ranks, a log line for every membership change (a node's step ended, the world
// re-formed without some ranks), and the end of the job when fewer than --min-workers nodes
// still train, or after the others finished well and --grace passed.
#pragma once

#include "driver_options.hpp"
#include "node_plan.hpp"

#include <riseml/elastic/store_server.hpp>

#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace riseml::elastic {

class DriverLog;

// What the supervisor needs of the rest of the driver.
struct SupervisorLinks {
  // The variables a node's step gets beside the driver's own (the store, the ranks; `joining`:
  // a spare started into a running job).
  std::function<std::vector<std::pair<std::string, std::string>>(const NodePlan&, bool joining)>
      node_environment;
  // The world changes the store saw since the last call.
  std::function<std::vector<WorldChange>()> take_world_changes;
  // Tells the workers the world to form next (a spare joins).
  std::function<void(const std::vector<int>&)> announce_world;
};

// Runs the job to its end and returns the driver's exit status. When the world loses a node
// and the allocation has a spare, the spare's workers are started with new ranks and the world
// with them is announced: the workers form it at their next commit.
int supervise(const DriverOptions& options, const JobPlan& plan, const std::string& job_id,
              DriverLog& log, const SupervisorLinks& links);

// Lines from the driver and from the workers, whole, one writer at a time.
class DriverLog {
 public:
  void say(const std::string& message);          // "riseml-elastic: <time> <message>"
  void worker_line(const std::string& line);      // as it came, already relabelled
 private:
  std::mutex mutex_;
};

}  // namespace riseml::elastic
