#include "spank_stepd.hpp"

#include <dlfcn.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cpu_list.hpp"
#include "horovod_environment.hpp"
#include "torch_environment.hpp"
#include "read_topology.hpp"
#include "spank_state.hpp"
#include "task_binding.hpp"

namespace riseml::spank {
namespace {

std::optional<std::string> step_env(spank_t sp, const char* name) {
  char buf[4096];
  if (spank_getenv(sp, name, buf, sizeof buf) != ESPANK_SUCCESS) return std::nullopt;
  return std::string(buf);
}

std::string getenv_of(spank_t sp, const char* name) { return step_env(sp, name).value_or(""); }

// Reports a failure the way the admin chose: fail the step (-1) or warn and go on (0).
int fail_or_warn(const std::string& what, const char* fix) {
  if (state().config.on_error == OnError::warn) {
    slurm_error("riseml: %s; %s. Continuing without --riseml-bind (on_error=warn)", what.c_str(), fix);
    state().active = false;
    return 0;
  }
  slurm_error("riseml: %s; %s", what.c_str(), fix);
  return -1;
}

// The step's GPUs: Slurm's numbers (SLURM_STEP_GPUS, else the step's CUDA_VISIBLE_DEVICES /
// ROCR_VISIBLE_DEVICES, numbers or GPU UUIDs) and what the step calls them; none of these: every
// GPU of the node. False (with `error`) when the step names GPUs the topology cannot match.
bool step_gpus(spank_t sp, const placement::NodeTopology& topology, placement::StepFacts& facts, std::string& error) {
  std::string visible = getenv_of(sp, "CUDA_VISIBLE_DEVICES");
  if (visible.empty()) visible = getenv_of(sp, "ROCR_VISIBLE_DEVICES");
  const std::string step = getenv_of(sp, "SLURM_STEP_GPUS");
  slurm_debug("riseml: SLURM_STEP_GPUS=%s CUDA/ROCR_VISIBLE_DEVICES=%s", step.c_str(), visible.c_str());
  if (step == "NoDevFiles" || visible == "NoDevFiles") {  // Slurm: a gres step without GPUs here
    facts.gpus = std::vector<unsigned>{};
    return true;
  }
  const auto names = placement::split(visible, ',');
  auto numbers = placement::parse_number_list(step);
  if (!numbers) numbers = placement::parse_number_list(visible);
  if (numbers) {
    facts.gpus = *numbers;
    // Names by position: Slurm lists both in ascending GPU order (global numbers, or 0..k-1 when
    // ConstrainDevices renumbers them).
    if (names.size() == numbers->size()) facts.gpu_names = names;
    return true;
  }
  if (visible.empty()) return true;
  std::vector<unsigned> by_uuid;
  for (const auto& name : names) {
    unsigned i = 0;
    while (i < topology.gpus.size() && topology.gpus[i].uuid != name) ++i;
    if (i == topology.gpus.size()) {
      error = "the step's CUDA_VISIBLE_DEVICES/ROCR_VISIBLE_DEVICES=" + visible + " names " + name +
              ", which is neither a GPU number nor a UUID of the topology (" + topology.source + ")";
      return false;
    }
    by_uuid.push_back(i);
  }
  facts.gpus = by_uuid;
  facts.gpu_names = names;
  return true;
}

// The folder spank_riseml.so was loaded from: in a build tree riseml-topology lies beside it.
std::string plugin_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&stepd_user_init), &info) == 0 || info.dli_fname == nullptr ||
      info.dli_fname[0] != '/') {
    return {};
  }
  const std::string path = info.dli_fname;
  return path.substr(0, path.rfind('/'));
}

// The topology is read by the riseml-topology helper, never in slurmstepd: hwloc may crash or
// hang on a malformed XML, and that must end the helper, not the step's daemon.
bool step_topology(const PluginConfig& config, placement::NodeTopology& topology, placement::TopologyProblem& problem) {
  placement::TopologySource source;
  source.xml_path = config.topology;
  source.helper.helper = placement::choose_topology_helper(config.topology_helper, plugin_folder());
  source.helper.timeout = std::chrono::seconds(config.topology_timeout_s);
  source.cache_base = config.topology_cache;
  std::vector<std::string> notes;
  const bool ok = placement::read_topology(source, topology, problem, notes);
  for (const auto& note : notes) slurm_debug("riseml: %s", note.c_str());
  return ok;
}

// Horovod's rank variables for local task `task_id` (horovod_environment.hpp); none, with the
// reason in `not_set`, when Slurm does not say enough. Never fails the step.
HorovodEnvironment horovod_variables(spank_t sp, int task_id) {
  HorovodTaskFacts facts;
  facts.local_id = static_cast<std::uint32_t>(task_id);
  if (spank_get_item(sp, S_TASK_GLOBAL_ID, &facts.global_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &facts.total_tasks) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &facts.local_tasks) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_NODEID, &facts.node_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_NNODES, &facts.nodes) != ESPANK_SUCCESS) {
    return {{}, "HOROVOD_* not set: Slurm did not give the task's global id, task counts or node count"};
  }
  facts.tasks_per_node = step_env(sp, "SLURM_STEP_TASKS_PER_NODE");
  facts.distribution = step_env(sp, "SLURM_DISTRIBUTION");
  facts.procid = step_env(sp, "SLURM_PROCID");
  facts.heterogeneous_job = step_env(sp, "SLURM_HET_SIZE").has_value();
  return horovod_environment(facts);
}

// torch.distributed's variables for local task `task_id` (torch_environment.hpp); the rank ones
// only, with the reason in `not_set`, when the step's first node cannot be told.
TorchEnvironment torch_variables(spank_t sp, int task_id) {
  TorchTaskFacts facts;
  facts.local_id = static_cast<std::uint32_t>(task_id);
  if (spank_get_item(sp, S_TASK_GLOBAL_ID, &facts.global_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_TOTAL_TASK_COUNT, &facts.total_tasks) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &facts.local_tasks) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_ID, &facts.job_id) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_STEPID, &facts.step_id) != ESPANK_SUCCESS) {
    return {{}, "RANK, WORLD_SIZE, MASTER_ADDR ... not set: Slurm did not give the task's ids and counts"};
  }
  facts.step_nodelist = step_env(sp, "SLURM_STEP_NODELIST");
  facts.master_addr = step_env(sp, "MASTER_ADDR");
  facts.master_port = step_env(sp, "MASTER_PORT");
  return torch_environment(facts);
}

}  // namespace

int stepd_init_post_opt(spank_t /*sp*/) {
  PluginState& s = state();
  s.bind = s.user_bind ? *s.user_bind : s.config.default_bind;
  return 0;
}

int stepd_user_init(spank_t sp) {
  PluginState& s = state();
  s.active = false;
  if (s.bind.mode == BindRequest::Mode::none) return 0;
  std::uint32_t step_id = 0;
  if (spank_get_item(sp, S_JOB_STEPID, &step_id) != ESPANK_SUCCESS || step_id >= first_special_step) return 0;

  placement::StepFacts facts;
  std::uint32_t ntasks = 0, node_id = 0;
  if (spank_get_item(sp, S_JOB_LOCAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS ||
      spank_get_item(sp, S_JOB_NODEID, &node_id) != ESPANK_SUCCESS) {
    return fail_or_warn("cannot read the step's local task count and node id", "this is a Slurm problem");
  }
  facts.local_tasks = ntasks;
  facts.node_id = node_id;
  facts.cpus = current_cpus();
  if (!facts.cpus) return fail_or_warn("sched_getaffinity failed", "this is a system problem");

  placement::NodeTopology topology;
  placement::TopologyProblem problem;
  if (!step_topology(s.config, topology, problem)) return fail_or_warn(problem.what, problem.fix.c_str());
  std::string error;
  if (!step_gpus(sp, topology, facts, error)) {
    return fail_or_warn(error, "unset it or run with --riseml-bind=none");
  }
  try {
    s.plans = placement::make_plan(topology, facts, s.config.plan);
  } catch (const placement::PlanError& e) {
    return fail_or_warn(e.what(), "check it with riseml-plan, or run with --riseml-bind=none");
  }
  char host[256] = "";
  gethostname(host, sizeof host - 1);
  s.hostname = host;
  s.active = true;
  for (const auto& p : s.plans) slurm_verbose("riseml: node %u: %s", node_id, placement::one_line(p).c_str());
  return 0;
}

int stepd_task_init(spank_t sp) {
  PluginState& s = state();
  if (!s.active) return 0;
  int task_id = -1;
  if (spank_get_item(sp, S_TASK_ID, &task_id) != ESPANK_SUCCESS || task_id < 0 ||
      static_cast<std::size_t>(task_id) >= s.plans.size()) {
    return fail_or_warn("no plan for local task " + std::to_string(task_id), "this is a bug in spank_riseml.so");
  }
  const placement::TaskPlan& plan = s.plans[static_cast<std::size_t>(task_id)];
  std::vector<std::pair<std::string, std::string>> env = plan.env;
  if (s.config.plan.env.horovod) {
    HorovodEnvironment horovod = horovod_variables(sp, task_id);
    env.insert(env.end(), horovod.env.begin(), horovod.env.end());
    if (!horovod.not_set.empty()) {
      slurm_verbose("riseml: task %d: %s", task_id, horovod.not_set.c_str());
      if (s.bind.verbose) {
        slurm_spank_log("riseml-bind: %s task %d: %s", s.hostname.c_str(), task_id, horovod.not_set.c_str());
      }
    }
  }
  if (s.config.plan.env.torch) {
    TorchEnvironment torch = torch_variables(sp, task_id);
    env.insert(env.end(), torch.env.begin(), torch.env.end());
    if (!torch.not_set.empty()) {
      slurm_verbose("riseml: task %d: %s", task_id, torch.not_set.c_str());
      if (s.bind.verbose) {
        slurm_spank_log("riseml-bind: %s task %d: %s", s.hostname.c_str(), task_id, torch.not_set.c_str());
      }
    }
  }
  for (const auto& name : plan.unset_env) spank_unsetenv(sp, name.c_str());
  // Overwriting: the step's values (inherited from srun's environment) would name another rank.
  for (const auto& [name, value] : env) {
    if (spank_setenv(sp, name.c_str(), value.c_str(), 1) != ESPANK_SUCCESS) {
      return fail_or_warn("cannot set " + name + " for task " + std::to_string(task_id), "this is a Slurm problem");
    }
  }
  std::string error;
  if (s.bind.mode == BindRequest::Mode::full) {
    error = bind_cpus(plan.cpus);
    if (!error.empty()) {
      return fail_or_warn("task " + std::to_string(task_id) + ": binding to CPUs " +
                              placement::format_number_list(plan.cpus) + " failed: " + error,
                          "run with --riseml-bind=env to set only the environment");
    }
    error = bind_memory(plan.mems, s.config.membind);
    if (!error.empty()) {
      return fail_or_warn("task " + std::to_string(task_id) + ": binding memory to NUMA node(s) " +
                              placement::format_number_list(plan.mems) + " failed: " + error,
                          "set membind=prefer or membind=none in plugstack.conf, or run with --riseml-bind=env");
    }
  }
  // Like --cpu-bind=verbose, on the user's stderr (slurm_spank_log reaches srun; the task's own
  // stderr is not connected yet).
  if (s.bind.verbose) {
    std::string line = "riseml-bind: " + s.hostname + " " + placement::one_line(plan);
    for (const auto& [name, value] : env) {
      if (name != "RISEML_PLAN") line += " " + name + "=" + value;
    }
    slurm_spank_log("%s", line.c_str());
  }
  if (s.bind.verbose || task_id == 0) {
    for (const auto& w : plan.warnings) {
      slurm_spank_log("riseml-bind: %s task %d: warning: %s", s.hostname.c_str(), task_id, w.c_str());
    }
  }
  return 0;
}

}  // namespace riseml::spank
