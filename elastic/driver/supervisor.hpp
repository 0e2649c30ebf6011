// The elastic driver's watch over its workers: it starts them (one srun step per node, or one
// process per worker with --launcher local), relabels their output with job ranks, feeds what
// happens (exits, survivors' failure reports, workers that are up, discovered hosts, worlds that
// formed) to the WorldPlanner, carries out its decisions (start, announce, stop, end), logs every
// membership change, and ends the job after the first host's workers finished well and --grace
// passed.
#pragma once

#include "driver_options.hpp"
#include "host_list.hpp"
#include "world_planner.hpp"

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
  // The variables a host's workers get beside the driver's own (the store, the ranks).
  // `local_rank`: the worker's index on its host with --launcher local; -1 for an srun step
  // (srun numbers its tasks).
  std::function<std::vector<std::pair<std::string, std::string>>(const StartWorkers&, int local_rank)>
      worker_environment;
  // The hosts to use now (the static list, or the discovery script's answer). Throws
  // std::runtime_error saying why there is no answer.
  std::function<std::vector<HostSlots>()> discover_hosts;
  // What the store heard since the last call.
  std::function<std::vector<WorldChange>()> take_world_changes;
  std::function<std::vector<FailureReport>()> take_failure_reports;
  std::function<std::vector<int>()> take_ready_workers;
  // Tells the workers the world to form next, or the number of one that is coming.
  std::function<void(const Announcement&)> announce_world;
  std::function<void(long long)> announce_pending;
};

// Runs the job to its end and returns the driver's exit status.
int supervise(const DriverOptions& options, const std::string& job_id, DriverLog& log,
              const SupervisorLinks& links);

// Lines from the driver and from the workers, whole, one writer at a time.
class DriverLog {
 public:
  void say(const std::string& message);          // "riseml-elastic: <time> <message>"
  void worker_line(const std::string& line);      // as it came, already relabelled
 private:
  std::mutex mutex_;
};

}  // namespace riseml::elastic
