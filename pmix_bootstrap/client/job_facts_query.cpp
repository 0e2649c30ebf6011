#include "job_facts_query.hpp"

#include <pmix.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <optional>
#include <string>

#include <riseml/pmix/bootstrap_error.hpp>

#include "job_facts_fallbacks.hpp"
#include "pmix_status_text.hpp"
#include "pmix_value_reader.hpp"

namespace riseml::pmix {

namespace {

std::optional<int> get_int(const JobDataReader& data, const pmix_proc_t& proc, const char* key) {
  OwnedValue value = data.get(proc, key);
  if (!value) return std::nullopt;
  std::optional<long long> number = value_as_integer(*value);
  if (!number || *number < 0 || *number > INT_MAX) return std::nullopt;
  return static_cast<int>(*number);
}

std::optional<std::string> get_string(const JobDataReader& data, const pmix_proc_t& proc,
                                      const char* key) {
  OwnedValue value = data.get(proc, key);
  if (!value) return std::nullopt;
  return value_as_string(*value);
}

std::string local_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

std::optional<std::string> job_node_list(const pmix_proc_t& self) {
  char* nodes = nullptr;
  if (PMIx_Resolve_nodes(self.nspace, &nodes) != PMIX_SUCCESS || nodes == nullptr) {
    return std::nullopt;
  }
  std::string list(nodes);
  std::free(nodes);
  return list;
}

}  // namespace

JobFacts query_job_facts(const pmix_proc_t& self, const JobDataReader& data) {
  pmix_proc_t job{};
  PMIX_LOAD_PROCID(&job, self.nspace, PMIX_RANK_WILDCARD);

  JobFacts facts;
  facts.rank = static_cast<int>(self.rank);
  facts.nspace = self.nspace;
  facts.hostname = get_string(data, self, PMIX_HOSTNAME).value_or(local_hostname());

  std::optional<int> size = get_int(data, job, PMIX_JOB_SIZE);
  if (!size || *size < 1) {
    throw BootstrapError("riseml: rank " + std::to_string(facts.rank) + " on host " +
                         facts.hostname + " (nspace " + facts.nspace +
                         "): the PMIx server gave no job size (" PMIX_JOB_SIZE ")");
  }
  facts.size = *size;

  std::optional<std::string> peers = get_string(data, job, PMIX_LOCAL_PEERS);
  std::optional<int> local_rank = get_int(data, self, PMIX_LOCAL_RANK);
  if (!local_rank && peers) local_rank = local_rank_from_peers(*peers, facts.rank);
  facts.local_rank = local_rank.value_or(0);

  std::optional<int> local_size = get_int(data, job, PMIX_LOCAL_SIZE);
  if (!local_size && peers) local_size = static_cast<int>(split_comma_list(*peers).size());
  facts.local_size = local_size.value_or(1);

  facts.node_rank = get_int(data, self, PMIX_NODE_RANK).value_or(facts.local_rank);

  std::optional<std::string> nodes = job_node_list(self);
  std::optional<int> num_nodes = get_int(data, job, PMIX_NUM_NODES);
  if (!num_nodes && nodes) num_nodes = static_cast<int>(split_comma_list(*nodes).size());
  facts.num_nodes = num_nodes.value_or(1);

  std::optional<int> node_id = get_int(data, self, PMIX_NODEID);
  if (!node_id && nodes) node_id = node_id_from_node_list(*nodes, facts.hostname);
  facts.node_id = node_id.value_or(0);

  facts.job_id = get_string(data, job, PMIX_JOBID).value_or(facts.nspace);
  return facts;
}

}  // namespace riseml::pmix
