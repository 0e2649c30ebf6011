// riseml-elastic: the elastic driver of a Horovod job inside one Slurm allocation, or on this
// machine with --launcher local (see supervisor.hpp). The environment is read here and nowhere
// else in the driver.
#include "allocation_nodes.hpp"
#include "driver_options.hpp"
#include "host_list.hpp"
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

// What the store's threads hear, for the supervisor's loop to take.
template <typename T>
class Inbox {
 public:
  void put(T item) {
    std::lock_guard lock(mutex_);
    items_.push_back(std::move(item));
  }
  std::vector<T> take() {
    std::lock_guard lock(mutex_);
    return std::exchange(items_, {});
  }

 private:
  std::mutex mutex_;
  std::vector<T> items_;
};
}  // namespace

int main(int argc, char** argv) {
  using namespace riseml::elastic;
  auto parsed = parse_driver_options(std::vector<std::string>(argv + 1, argv + argc));
  if (const int* code = std::get_if<int>(&parsed)) return *code;
  DriverOptions options = std::get<DriverOptions>(std::move(parsed));
  DriverLog log;
  try {
    const std::string job_id = options.launcher == Launcher::local ? "" : variable("SLURM_JOB_ID");
    std::vector<HostSlots> static_hosts;
    if (options.discovery_script.empty()) {
      if (!options.nodes.empty()) {
        static_hosts = parse_hosts(options.nodes, options.tasks_per_node, "--hosts");
      } else if (options.launcher == Launcher::local) {
        throw std::invalid_argument("--launcher local needs --hosts or --host-discovery-script");
      } else {
        const std::string nodelist = variable("SLURM_JOB_NODELIST");
        if (nodelist.empty())
          throw std::runtime_error("not inside a Slurm allocation (SLURM_JOB_NODELIST is not set): "
                                   "run riseml-elastic in an sbatch script, or give --nodes");
        for (const auto& node : allocation_nodes(nodelist))
          static_hosts.push_back(HostSlots{node, options.tasks_per_node});
      }
      if (static_cast<int>(static_hosts.size()) < options.workers.value_or(0))
        throw std::invalid_argument("--workers " + std::to_string(*options.workers) + " needs that many nodes, "
                                    "the allocation has " + std::to_string(static_hosts.size()) +
                                    ": ask sbatch for --nodes=" + std::to_string(*options.workers));
    }
    if (options.iface.empty()) options.iface = variable("RISEML_IFACE");
    if (options.iface.empty() && options.launcher == Launcher::local) options.iface = "127.0.0.1";

    Inbox<WorldChange> changes;
    Inbox<FailureReport> reports;
    Inbox<int> ready;
    StoreServerOptions store;
    store.listen_address = riseml::listen_address(options.iface);
    store.secret = new_job_secret();
    store.log = [&log](const std::string& line) { log.say("store: " + line); };
    store.on_world_change = [&](const WorldChange& c) { changes.put(c); };
    store.on_failure_report = [&](const FailureReport& r) { reports.put(r); };
    store.on_worker_ready = [&](int rank) { ready.put(rank); };
    const std::string secret_hex = to_hex(store.secret);
    StoreServer server(std::move(store));
    log.say("rendezvous store at " + server.address());

    SupervisorLinks links;
    links.worker_environment = [&](const StartWorkers& w, int local_rank) {
      // Ranks are never reused, and hosts may come and go: there is no last rank.
      auto env = worker_environment(NodeAssignment{
          server.address(), secret_hex, w.rank_base, w.rank_base + w.count, w.node_id,
          w.node_id + 1, 1 << 20, w.joining});
      env.emplace_back("HOROVOD_HOSTNAME", w.host);  // Horovod's workers read it
      if (local_rank >= 0) {
        env.emplace_back("RISEML_ELASTIC_LOCAL_RANK", std::to_string(local_rank));
        env.emplace_back("RISEML_ELASTIC_LOCAL_SIZE", std::to_string(w.count));
        env.emplace_back("HOROVOD_RANK", std::to_string(w.rank_base + local_rank));
      }
      return env;
    };
    links.discover_hosts = [&]() -> std::vector<HostSlots> {
      if (options.discovery_script.empty()) return static_hosts;
      return run_discovery_script(options.discovery_script, options.tasks_per_node, std::chrono::seconds(60));
    };
    links.take_world_changes = [&] { return changes.take(); };
    links.take_failure_reports = [&] { return reports.take(); };
    links.take_ready_workers = [&] { return ready.take(); };
    links.announce_world = [&](const Announcement& a) { server.announce_world(a.members, a.why); };
    links.announce_pending = [&](long long number) { server.announce_pending(number); };
    return supervise(options, job_id, log, links);
  } catch (const std::exception& e) {
    log.say(std::string("error: ") + e.what());
    return 1;
  }
}
