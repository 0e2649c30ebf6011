// Derivations for job facts a PMIx server may not provide (Slurm and Open MPI differ in which
// keys they set). Pure functions over the strings PMIx does provide.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace riseml::pmix {

// Splits a comma-separated PMIx list ("n1,n2" from PMIx_Resolve_nodes, "0,1,5" local peers).
std::vector<std::string> split_comma_list(std::string_view list);

// Position of `rank` in a local-peers list such as "4,5,6,7" (ranks sorted as the server gave
// them), which is the local rank; nullopt when absent or malformed.
std::optional<int> local_rank_from_peers(std::string_view peers, int rank);

// Node id as the position of `hostname` in the job's node list; nullopt when absent.
std::optional<int> node_id_from_node_list(std::string_view nodes, std::string_view hostname);

}  // namespace riseml::pmix
