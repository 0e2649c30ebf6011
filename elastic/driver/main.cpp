// riseml-elastic: the elastic driver of a Horovod job inside one Slurm allocation (see
// supervisor.hpp). The environment is read here and nowhere else in the driver.
#include "allocation_nodes.hpp"
#include "driver_options.hpp"
#include "node_plan.hpp"
#include "supervisor.hpp"

#include <riseml/elastic/store_server.hpp>
#include <riseml/elastic/worker_settings.hpp>
#include <riseml/tcp_socket.hpp>

#include <cstdlib>
#include <exception>
#include <mutex>

namespace {
std::string variable(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}
}  // namespace

int main(int argc, char** argv) {
  using namespace riseml::elastic;
  auto parsed = parse_driver_options(std::vector<std::string>(argv + 1, argv + argc));
  if (const int* code = std::get_if<int>(&parsed)) return *code;
  DriverOptions options = std::get<DriverOptions>(std::move(parsed));
  DriverLog log;
  try {
    const std::string job_id = variable("SLURM_JOB_ID");
    if (options.nodes.empty()) {
      const std::string nodelist = variable("SLURM_JOB_NODELIST");
      if (nodelist.empty())
        throw std::runtime_error("not inside a Slurm allocation (SLURM_JOB_NODELIST is not set): "
                                 "run riseml-elastic in an sbatch script, or give --nodes");
      options.nodes = allocation_nodes(nodelist);
    }
    if (options.iface.empty()) options.iface = variable("RISEML_IFACE");
    const JobPlan plan = plan_job(options.nodes, options);

    std::mutex changes_mutex;
    std::vector<WorldChange> changes;
    StoreServerOptions store;
    store.listen_address = riseml::listen_address(options.iface);
    store.secret = new_job_secret();
    store.log = [&log](const std::string& line) { log.say("store: " + line); };
    store.on_world_change = [&](const WorldChange& c) {
      std::lock_guard lock(changes_mutex);
      changes.push_back(c);
    };
    const std::string secret_hex = to_hex(store.secret);
    StoreServer server(std::move(store));
    log.say("rendezvous store at " + server.address());
    // Ranks are never reused: the job's ranks can be at most every node's tasks.
    const int nodes = static_cast<int>(options.nodes.size());
    SupervisorLinks links;
    links.node_environment = [&](const NodePlan& node, bool joining) {
      return worker_environment(NodeAssignment{
          server.address(), secret_hex, node.rank_base,
          joining ? node.rank_base + node.tasks : plan.size, node.node_id, nodes,
          nodes * options.tasks_per_node, joining});
    };
    links.take_world_changes = [&] {
      std::lock_guard lock(changes_mutex);
      return std::exchange(changes, {});
    };
    links.announce_world = [&](const std::vector<int>& members) { server.announce_world(members); };
    return supervise(options, plan, job_id, log, links);
  } catch (const std::exception& e) {
    log.say(std::string("error: ") + e.what());
    return 1;
  }
}
