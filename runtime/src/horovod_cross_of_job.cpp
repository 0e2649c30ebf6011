#include "horovod_cross_of_job.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

namespace riseml::runtime {

namespace {

std::string where(const pmix::JobFacts& facts) {
  return "rank " + std::to_string(facts.rank) + " (host " + facts.hostname + ", node " +
         std::to_string(facts.node_id) + " of " + std::to_string(facts.num_nodes) +
         ", local rank " + std::to_string(facts.local_rank) + ")";
}

CrossOfJob unknown(const pmix::JobFacts& facts, const std::string& contradiction) {
  return {std::nullopt, "riseml: Horovod's cross rank and size are unknown on " + where(facts) +
                            ": " + contradiction +
                            "; the launcher's node facts (PMIx node id, number of nodes, local "
                            "rank) contradict each other"};
}

}  // namespace

CrossOfJob horovod_cross_of(std::span<const int> node_of_rank, const pmix::JobFacts& facts) {
  auto tasks = tasks_per_node(node_of_rank, facts.num_nodes);
  if (!tasks) {
    for (std::size_t r = 0; r < node_of_rank.size(); ++r)
      if (node_of_rank[r] < 0 || node_of_rank[r] >= facts.num_nodes)
        return unknown(facts, "rank " + std::to_string(r) + " is on node " +
                                  std::to_string(node_of_rank[r]) + ", not one of the " +
                                  std::to_string(facts.num_nodes) + " nodes");
    return unknown(facts, "there are " + std::to_string(facts.num_nodes) + " nodes");
  }
  auto cross = horovod_cross(*tasks, static_cast<std::uint32_t>(facts.node_id),
                             static_cast<std::uint32_t>(facts.local_rank));
  if (!cross)
    return unknown(facts, "its node runs " + std::to_string((*tasks)[static_cast<std::size_t>(facts.node_id)]) +
                              " of the job's ranks");
  return {cross, ""};
}

CrossOfJob horovod_cross_of_job(engine::Engine& job, pmix::JobFacts& facts, bool regrouped) {
  const std::int32_t mine = facts.node_id;
  engine::Handle h = job.allgather("riseml.runtime.node_ids", &mine, {1}, DataType::int32);
  const auto& bytes = h.allgather_output();
  std::vector<int> node_of_rank(static_cast<std::size_t>(job.size()));
  for (std::size_t r = 0; r < node_of_rank.size(); ++r) {
    std::int32_t node = 0;
    std::memcpy(&node, bytes.data() + r * sizeof node, sizeof node);
    node_of_rank[r] = node;
  }
  if (regrouped) {
    // The world is a part of the job: this node's ranks in it are counted anew.
    facts.local_rank = static_cast<int>(std::count(node_of_rank.begin(),
                                                   node_of_rank.begin() + facts.rank, mine));
    facts.local_size = static_cast<int>(std::count(node_of_rank.begin(), node_of_rank.end(), mine));
  }
  return horovod_cross_of(node_of_rank, facts);
}

}  // namespace riseml::runtime
