// Horovod's rank variables for one task of a Slurm step: HOROVOD_RANK, HOROVOD_SIZE,
// HOROVOD_LOCAL_RANK, HOROVOD_LOCAL_SIZE, HOROVOD_CROSS_RANK, HOROVOD_CROSS_SIZE, which Horovod
// scripts read before init(). Pure: the SPANK glue (spank_stepd.cpp) gathers the facts in
// task_init and sets the result with spank_setenv, replacing values the step inherited, as
// horovodrun does for its workers.
//
// Horovod's cross communicator holds the ranks with the same local rank, one per node: cross
// size = the number of nodes with more than `local rank` tasks, cross rank = the index of this
// node among them (in node order, which is the order of their global ranks for Slurm's block,
// cyclic and plane distributions). Computing them needs every node's task count: when it is not
// known for certain, the two cross variables are left unset rather than guessed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace riseml::spank {

// What slurmstepd knows about one task (SPANK items and the step's environment).
struct HorovodTaskFacts {
  std::uint32_t global_id = 0;    // S_TASK_GLOBAL_ID
  std::uint32_t total_tasks = 0;  // S_JOB_TOTAL_TASK_COUNT (the step's)
  std::uint32_t local_id = 0;     // S_TASK_ID
  std::uint32_t local_tasks = 0;  // S_JOB_LOCAL_TASK_COUNT
  std::uint32_t node_id = 0;      // S_JOB_NODEID (this node's index in the step)
  std::uint32_t nodes = 0;        // S_JOB_NNODES (the step's)
  // The step's environment; nullopt: not set there.
  std::optional<std::string> tasks_per_node;  // SLURM_STEP_TASKS_PER_NODE, e.g. "2(x3),1"
  std::optional<std::string> distribution;    // SLURM_DISTRIBUTION, e.g. "block", "arbitrary"
  std::optional<std::string> procid;          // SLURM_PROCID, the task's rank as Slurm tells it
  bool heterogeneous_job = false;             // SLURM_HET_SIZE is set
};

struct HorovodEnvironment {
  std::vector<std::pair<std::string, std::string>> env;  // in the order to set them
  std::string not_set;  // why some or all of the six are missing; empty when all are set
};

HorovodEnvironment horovod_environment(const HorovodTaskFacts& facts);

// Slurm's compressed per-node counts ("2(x3),1" -> 2,2,2,1); nullopt when malformed or longer
// than `max_nodes` nodes.
std::optional<std::vector<std::uint32_t>> parse_tasks_per_node(std::string_view text, std::uint32_t max_nodes);

}  // namespace riseml::spank
