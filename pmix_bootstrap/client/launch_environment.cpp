#include "launch_environment.hpp"

#include <charconv>
#include <string_view>

namespace riseml::pmix {

namespace {

// Variables PMIx servers (srun --mpi=pmix, mpirun, riseml-launch) set for their clients.
constexpr const char* kPmixServerVariables[] = {
    "PMIX_NAMESPACE",   "PMIX_SERVER_URI",  "PMIX_SERVER_URI2",  "PMIX_SERVER_URI21",
    "PMIX_SERVER_URI3", "PMIX_SERVER_URI4", "PMIX_SERVER_URI41",
};

struct TaskCountVariable {
  const char* name;
  const char* launcher;
};

// Task counts that launchers export even when they provide no PMIx server.
constexpr TaskCountVariable kTaskCountVariables[] = {
    {"SLURM_STEP_NUM_TASKS", "srun"},
    {"OMPI_COMM_WORLD_SIZE", "mpirun"},
    {"PMI_SIZE", "a PMI launcher"},
};

std::optional<long> parse_count(const char* text) {
  if (text == nullptr) return std::nullopt;
  std::string_view view(text);
  long value = 0;
  auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
  if (error != std::errc() || end != view.data() + view.size()) return std::nullopt;
  return value;
}

}  // namespace

LaunchEnvironment inspect_launch_environment(const EnvironmentLookup& getenv) {
  LaunchEnvironment result;
  for (const char* name : kPmixServerVariables) {
    if (getenv(name) != nullptr) result.has_pmix_server = true;
  }
  for (const auto& variable : kTaskCountVariables) {
    const char* text = getenv(variable.name);
    std::optional<long> count = parse_count(text);
    if (count && *count > 1) {
      result.sibling_tasks_without_pmix = std::string(variable.launcher) + " started " +
                                          std::to_string(*count) + " tasks (" + variable.name +
                                          "=" + text + ")";
      break;
    }
  }
  return result;
}

std::string rank_before_connecting(const EnvironmentLookup& getenv, const std::string& hostname) {
  std::optional<long> rank = parse_count(getenv("PMIX_RANK"));
  return (rank && *rank >= 0 ? "rank " + std::to_string(*rank) : std::string("the process")) +
         " on host " + hostname;
}

std::string how_to_start_hint() {
  return "start the program with a PMIx launcher: `srun --mpi=pmix ...` on Slurm, "
         "`riseml-launch -n N ...` on one machine, or `mpirun -np N ...`; "
         "started alone it runs as rank 0 of 1";
}

}  // namespace riseml::pmix
