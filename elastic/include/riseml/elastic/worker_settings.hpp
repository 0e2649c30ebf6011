// Where a worker of riseml-elastic sits and how it reaches the store: read from the variables
// the driver sets (RISEML_ELASTIC_*) and the ones srun sets for the task (its step runs the
// tasks of one node, so SLURM_PROCID and SLURM_NTASKS count within the node).
#pragma once

#include <riseml/pmix/job_facts.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace riseml::elastic {

class SettingsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct WorkerSettings {
  std::string store_address;  // host:port
  std::vector<std::byte> secret;
  pmix::JobFacts facts;
  int rank_limit = 1;    // job ranks there can be: every node of the allocation's tasks
  bool joining = false;  // a spare started into a running job
};

// nullopt unless RISEML_ELASTIC_STORE is set. Throws SettingsError naming the variable that is
// missing or malformed. `lookup` returns the variable's value, nullopt when unset.
using Lookup = std::function<std::optional<std::string>(const std::string&)>;
std::optional<WorkerSettings> worker_settings(const Lookup& lookup, const std::string& hostname);

// The variables the driver sets for the workers of one node.
struct NodeAssignment {
  std::string store_address;
  std::string secret_hex;
  int rank_base = 0;
  int size = 1;
  int node_id = 0;
  int num_nodes = 1;
  int rank_limit = 1;
  bool joining = false;
};
std::vector<std::pair<std::string, std::string>> worker_environment(const NodeAssignment& a);

std::string to_hex(const std::vector<std::byte>& bytes);

}  // namespace riseml::elastic

namespace riseml::elastic {
// A new random job secret (OpenSSL), for the driver to hand its workers.
std::vector<std::byte> new_job_secret();
}  // namespace riseml::elastic
