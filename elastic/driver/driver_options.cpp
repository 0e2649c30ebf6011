#include "driver_options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>

namespace riseml::elastic {

namespace {
std::chrono::milliseconds to_milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(std::llround(seconds * 1000.0)));
}
}  // namespace

int DriverOptions::min_ranks() const { return min_np.value_or(min_workers * tasks_per_node); }

int DriverOptions::max_ranks() const {
  if (max_np) return *max_np;
  if (workers) return *workers * tasks_per_node;
  return INT_MAX;
}

std::variant<DriverOptions, int> parse_driver_options(const std::vector<std::string>& args) {
  CLI::App app{
      "Runs an elastic Horovod job inside its Slurm allocation: one srun step of workers per "
      "node, a rendezvous store the workers meet through (so the survivors of a node's loss "
      "form a new world and go on), a log line for every membership change, and the end of "
      "the job when fewer than --min-workers nodes remain.",
      "riseml-elastic"};
  app.footer(
      "Usage (in an sbatch script with #SBATCH --no-kill): riseml-elastic [options] [--] "
      "program [args...]\nThe program uses riseml.torch's hvd.elastic.run. A worker that fails "
      "blacklists its host: the host's other workers leave too, and the driver announces the "
      "next world (a spare host's workers join it). On one machine, --launcher local runs each "
      "worker as a process of its own, on hosts that are names (--hosts, or a "
      "--host-discovery-script as Horovod's).\nExit status: 0 when the workers of a host "
      "finished well; else the status of the first worker (or node's step) that failed; 1 when "
      "fewer workers than the minimum remained, every host was blacklisted or the reset limit "
      "was passed; 2 on a usage error.");
  app.prefix_command();
  DriverOptions options;
  int workers = 0;
  double grace = 30, stop_grace = 10, discovery_interval = 1, elastic_timeout = 600, start_timeout = 120;
  std::string nodes;
  std::vector<double> cooldown;
  int min_np = 0, max_np = 0, reset_limit = 0;
  app.add_option("--workers", workers,
                 "nodes to start workers on (default: every node of the allocation; the others "
                 "are spares)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--min-workers", options.min_workers,
                 "end the job when fewer nodes than this still train (default 1)")
      ->check(CLI::Range(1, 65536));
  app.add_option("--tasks-per-node", options.tasks_per_node, "workers per node (default 1)")
      ->check(CLI::Range(1, 4096));
  app.add_option("--grace", grace,
                 "seconds the other nodes' workers may take after the first node's finished "
                 "well, before they are stopped (default 30)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--start-timeout", start_timeout,
                 "seconds a joining host's workers may take to be up before the host is "
                 "blacklisted (default 120)")
      ->check(CLI::PositiveNumber);
  app.add_option("--stop-grace", stop_grace,
                 "seconds between SIGTERM and SIGKILL when stopping a node's step (default 10)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--srun-arg", options.srun_args,
                 "an option for each node's srun, e.g. --srun-arg=--cpus-per-task=2 (repeat it)")
      ->allow_extra_args(false);
  app.add_option("--iface", options.iface,
                 "the address or interface the rendezvous store listens on (default: "
                 "RISEML_IFACE, else the first interface that is up and not loopback)");
  app.add_option("--srun", options.srun, "the program that starts a node's step (default srun)");
  app.add_option("--nodes,--hosts", nodes,
                 "comma-separated hosts to use instead of the allocation's (SLURM_JOB_NODELIST), "
                 "each 'host' or 'host:slots' (workers on it; default --tasks-per-node)");
  const std::map<std::string, Launcher> launchers{{"srun", Launcher::srun}, {"local", Launcher::local}};
  app.add_option("--launcher", options.launcher,
                 "srun: one srun step per node of the allocation (default); local: every "
                 "worker a process on this machine, its host a name")
      ->transform(CLI::CheckedTransformer(launchers, CLI::ignore_case));
  app.add_option("--host-discovery-script", options.discovery_script,
                 "a program that prints the usable hosts, one 'host[:slots]' per line; run "
                 "every --discovery-interval: workers start on hosts that appear and leave hosts "
                 "that disappear");
  app.add_option("--discovery-interval", discovery_interval,
                 "seconds between runs of the discovery script (default 1)")
      ->check(CLI::Range(0.01, 3600.0));
  app.add_option("--min-np", min_np,
                 "end the job when fewer workers than this remain (instead of --min-workers)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--max-np", max_np, "start at most this many workers (instead of --workers)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--reset-limit", reset_limit,
                 "end the job when the world was re-formed more often than this")
      ->check(CLI::Range(0, 1 << 20));
  app.add_option("--blacklist-cooldown-range", cooldown,
                 "LOW HIGH: a blacklisted host comes back after LOW * 2^failures seconds (plus "
                 "up to LOW), at least LOW and at most HIGH (default: never)")
      ->expected(2);
  app.add_option("--elastic-timeout", elastic_timeout,
                 "seconds the job may have fewer workers than its minimum, waiting for hosts, "
                 "before it ends (default 600)")
      ->check(CLI::NonNegativeNumber);
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
    options.command = app.remaining();
    if (!options.command.empty() && options.command.front() == "--")
      options.command.erase(options.command.begin());
    if (options.command.empty())
      throw CLI::RequiredError("a program to start (riseml-elastic [options] -- program [args...])");
    if (options.command.front().starts_with("-") &&
        std::find(args.begin(), args.end(), "--") == args.end())
      throw CLI::ExtrasError({options.command.front()});
    if (app.count("--workers") > 0 && options.min_workers > workers)
      throw CLI::ValidationError("--min-workers " + std::to_string(options.min_workers) +
                                 " is more than --workers " + std::to_string(workers) +
                                 ": lower --min-workers or start more workers");
    if (app.count("--min-np") > 0 && app.count("--max-np") > 0 && min_np > max_np)
      throw CLI::ValidationError("--min-np " + std::to_string(min_np) + " is more than --max-np " +
                                 std::to_string(max_np) + ": lower --min-np or raise --max-np");
    if (!cooldown.empty() && !(cooldown[0] > 0 && cooldown[0] <= cooldown[1]))
      throw CLI::ValidationError("--blacklist-cooldown-range LOW HIGH needs 0 < LOW <= HIGH (seconds)");
    if (!options.discovery_script.empty() && !nodes.empty())
      throw CLI::ValidationError("give --hosts or --host-discovery-script, not both");
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : 2;
  }
  if (app.count("--workers") > 0) options.workers = workers;
  if (app.count("--min-np") > 0) options.min_np = min_np;
  if (app.count("--max-np") > 0) options.max_np = max_np;
  if (app.count("--reset-limit") > 0) options.reset_limit = reset_limit;
  if (!cooldown.empty()) options.cooldown = std::make_pair(cooldown[0], cooldown[1]);
  options.discovery_interval = to_milliseconds(discovery_interval);
  options.elastic_timeout = to_milliseconds(elastic_timeout);
  options.start_timeout = to_milliseconds(start_timeout);
  options.grace = to_milliseconds(grace);
  options.stop_grace = to_milliseconds(stop_grace);
  for (std::size_t at = 0; !nodes.empty() && at <= nodes.size();) {
    const auto comma = nodes.find(',', at);
    const std::string node = nodes.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!node.empty()) options.nodes.push_back(node);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return options;
}

}  // namespace riseml::elastic
