// riseml-plan: runs the placement planner outside Slurm, so an admin sees what spank_riseml.so
// would do on a node (or on an exported topology). Like the plugin it lets the riseml-topology
// helper read the topology, so a malformed XML that crashes hwloc gives a message, not a crash.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

#include "cpu_list.hpp"
#include "plan_format.hpp"
#include "planner.hpp"
#include "plugin_config.hpp"
#include "read_topology.hpp"

namespace pl = riseml::placement;

namespace {

// The folder of this executable: in a build tree riseml-topology lies beside it.
std::string own_folder() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"riseml-plan: what spank_riseml.so (--riseml-bind=auto) does with each local task"};
  std::string topology_file, gpus, cpus, format = "table";
  unsigned tasks = 1, node_id = 0;
  std::vector<std::string> args;
  app.add_option("--topology", topology_file, "hwloc XML export of the node (lstopo --of xml); default: this node")
      ->check(CLI::ExistingFile);
  app.add_option("--tasks", tasks, "local tasks (srun -n on this node)")->required()->check(CLI::Range(1, 4096));
  app.add_option("--gpus", gpus, "the step's GPUs as Slurm numbers them (0,2-3), i.e. PCI order; default: all");
  app.add_option("--cpus", cpus, "the step's OS cpu numbers (0-15,32-47); default: all");
  app.add_option("--node-id", node_id, "RISEML_NODE_ID to print");
  app.add_option("--arg", args, "a plugstack.conf argument (key=value), repeatable: nic_exclude=mlx5_2, env=...");
  app.add_option("--format", format, "table or json")->check(CLI::IsMember({"table", "json"}));
  CLI11_PARSE(app, argc, argv);

  try {
    riseml::spank::PluginConfig config;
    std::string error;
    if (!riseml::spank::parse_plugin_config(args, config, error)) {
      std::cerr << "riseml-plan: " << error << "\n";
      return 2;
    }
    if (topology_file.empty()) topology_file = config.topology;
    pl::TopologySource source;
    // The helper runs in /, so it gets an absolute path (messages name it that way too).
    if (!topology_file.empty()) source.xml_path = std::filesystem::absolute(topology_file).lexically_normal().string();
    source.helper.helper = pl::choose_topology_helper(config.topology_helper, own_folder());
    source.helper.timeout = std::chrono::seconds(config.topology_timeout_s);
    pl::NodeTopology topology;
    pl::TopologyProblem problem;
    std::vector<std::string> notes;  // no cache here: riseml-plan always reads afresh
    if (!pl::read_topology(source, topology, problem, notes)) {
      std::cerr << "riseml-plan: " << problem.what << "; " << problem.fix << "\n";
      return 1;
    }
    pl::StepFacts facts;
    facts.local_tasks = tasks;
    facts.node_id = node_id;
    if (!gpus.empty()) {
      auto list = gpus == "none" ? std::optional<std::vector<unsigned>>(std::vector<unsigned>{}) : pl::parse_number_list(gpus);
      if (!list) {
        std::cerr << "riseml-plan: --gpus " << gpus << ": want a list like 0,2-3 (or none)\n";
        return 2;
      }
      facts.gpus = *list;
    }
    if (!cpus.empty()) {
      auto list = pl::parse_number_list(cpus);
      if (!list) {
        std::cerr << "riseml-plan: --cpus " << cpus << ": want a list like 0-15,32-47\n";
        return 2;
      }
      facts.cpus = *list;
    }
    const auto plans = pl::make_plan(topology, facts, config.plan);
    std::cout << (format == "json" ? pl::plans_to_json(plans) : pl::plans_to_table(plans));
    return 0;
  } catch (const pl::PlanError& e) {
    std::cerr << "riseml-plan: " << e.what() << "\n";
  } catch (const std::exception& e) {
    std::cerr << "riseml-plan: internal error: " << e.what() << "\n";
  }
  return 1;
}
