#include "driver_options.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>

namespace riseml::elastic {

namespace {
std::chrono::milliseconds to_milliseconds(double seconds) {
  return std::chrono::milliseconds(static_cast<long long>(std::llround(seconds * 1000.0)));
}
}  // namespace

std::variant<DriverOptions, int> parse_driver_options(const std::vector<std::string>& args) {
  CLI::App app{
      "Runs an elastic Horovod job inside its Slurm allocation: one srun step of workers per "
      "node, a rendezvous store the workers meet through (so the survivors of a node's loss "
      "form a new world and go on), a log line for every membership change, and the end of "
      "the job when fewer than --min-workers nodes remain.",
      "riseml-elastic"};
  app.footer(
      "Usage (in an sbatch script with #SBATCH --no-kill): riseml-elastic [options] [--] "
      "program [args...]\nThe program uses riseml.torch's hvd.elastic.run. Exit status: 0 when "
      "the workers of a node finished well; else the status of the first node's step that "
      "failed; 1 when fewer than --min-workers nodes remained; 2 on a usage error.");
  app.prefix_command();
  DriverOptions options;
  int workers = 0;
  double grace = 30, stop_grace = 10;
  std::string nodes;
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
  app.add_option("--nodes", nodes,
                 "comma-separated nodes to use instead of the allocation's (SLURM_JOB_NODELIST)");
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
  } catch (const CLI::ParseError& error) {
    const int code = app.exit(error);
    return code == 0 ? 0 : 2;
  }
  if (app.count("--workers") > 0) options.workers = workers;
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
