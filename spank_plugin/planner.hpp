// The placement planner: node topology + what the step may use + options -> one plan per local
// task (GPUs, CPUs, memory nodes, NICs, environment). Pure: no hwloc, no Slurm, no syscalls.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "node_topology.hpp"

namespace riseml::placement {

struct EnvChoice {  // which groups of variables a plan sets
  bool gpu = true;     // CUDA_VISIBLE_DEVICES / ROCR_VISIBLE_DEVICES, CUDA_DEVICE_ORDER
  bool nccl = true;    // NCCL_IB_HCA, NCCL_SOCKET_IFNAME, NCCL_IB_DISABLE
  bool ucx = true;     // UCX_NET_DEVICES
  bool omp = true;     // OMP_NUM_THREADS
  bool riseml = true;  // RISEML_LOCAL_RANK, RISEML_LOCAL_SIZE, RISEML_NODE_ID, RISEML_PLAN
  // HOROVOD_RANK, _SIZE, _LOCAL_RANK, _LOCAL_SIZE, _CROSS_RANK, _CROSS_SIZE: set per task by the
  // SPANK glue from Slurm's task facts (horovod_environment.hpp), not by the planner.
  bool horovod = true;
  // RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (torch.distributed's
  // env://): set per task by the SPANK glue (torch_environment.hpp).
  bool torch = true;
};

enum class GpuIds { auto_ids, index, uuid };  // auto: UUID where the topology knows it

struct PlanOptions {
  EnvChoice env;
  GpuIds gpu_ids = GpuIds::auto_ids;
  std::vector<std::string> nic_include;  // empty: every OpenFabrics device
  std::vector<std::string> nic_exclude;  // e.g. storage NICs
};

struct StepFacts {
  unsigned local_tasks = 1;
  unsigned node_id = 0;
  // Slurm's GPU indices on this node (index i = the topology's i-th GPU in PCI order);
  // nullopt: every GPU of the node (no gres).
  std::optional<std::vector<unsigned>> gpus;
  // What the step calls those GPUs (Slurm's CUDA_VISIBLE_DEVICES, same order as `gpus`); empty:
  // each vendor's PCI-order index.
  std::vector<std::string> gpu_names;
  // OS cpu numbers the step may use; nullopt: all of the topology's.
  std::optional<std::vector<unsigned>> cpus;
};

struct TaskPlan {
  unsigned task = 0;
  std::vector<unsigned> gpu_indices;  // into NodeTopology::gpus
  std::vector<std::string> gpus;      // PCI bus ids
  std::vector<unsigned> cpus;         // OS cpu numbers, sorted
  std::vector<unsigned> mems;         // NUMA node numbers, sorted
  std::vector<std::string> nics;
  std::vector<std::pair<std::string, std::string>> env;  // in the order they are set
  std::vector<std::string> unset_env;  // Slurm's GPU variables that would contradict the plan
  std::vector<std::string> warnings;
};

struct PlanError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws PlanError when the facts contradict the topology (a GPU index it does not have, no CPU
// in common, zero tasks).
std::vector<TaskPlan> make_plan(const NodeTopology& topology, const StepFacts& facts,
                                const PlanOptions& options);

// "task=0 gpus=0000:07:00.0 cpus=0-5 mems=0 nics=mlx5_0" (RISEML_PLAN, verbose output).
std::string one_line(const TaskPlan& plan);

}  // namespace riseml::placement
