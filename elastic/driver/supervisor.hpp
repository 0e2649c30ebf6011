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

// Runs the job to its end and returns the driver's exit status. `environment`: the variables
// every node's step gets beside the driver's own (the store's address and secret), and each
// node's own from `node_environment`.
int supervise(const DriverOptions& options, const JobPlan& plan, const std::string& job_id,
              DriverLog& log,
              const std::function<std::vector<std::pair<std::string, std::string>>(const NodePlan&)>&
                  node_environment,
              const std::function<std::vector<WorldChange>()>& take_world_changes);

// Lines from the driver and from the workers, whole, one writer at a time.
class DriverLog {
 public:
  void say(const std::string& message);          // "riseml-elastic: <time> <message>"
  void worker_line(const std::string& line);      // as it came, already relabelled
 private:
  std::mutex mutex_;
};

}  // namespace riseml::elastic
