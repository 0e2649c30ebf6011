// One rank, several processes in turn: under `pytest --forked` every test runs in a fresh child
// of the rank's process, which joins the job and leaves with _exit, without PMIx_Finalize. A
// PMIx server takes such a lost connection for the death of the rank: it drops the rank from
// the fences under way, including the one the rank's next child may already have joined, and
// that fence then fails (PARTIAL SUCCESS) or never completes. So a child that joins after an
// earlier one of its rank (it has no local copy of the job data: job_data_reader.hpp) waits,
// before its first fence, until every peer on its node (a server counts its own clients only)
// has a process of the same turn joined: that process exists only once the peer's earlier
// child has exited. Each process puts its turn under kTurnKey: a first connection 0, a later
// one its own rank's last turn + 1.
#include <pmix.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "job_facts_fallbacks.hpp"
#include "pmix_client_session.hpp"
#include "pmix_info_list.hpp"
#include "pmix_value_reader.hpp"

namespace riseml::pmix {

namespace {

constexpr const char* kTurnKey = "riseml.turn";

// `key` of `rank` as the server holds it now (not this process's cache of it), or nullopt.
std::optional<long long> server_integer(const pmix_proc_t& proc, const char* key) {
  InfoArray directives = InfoList()
                             .add_bool(PMIX_GET_REFRESH_CACHE, true)
                             .add_bool(PMIX_IMMEDIATE, true)
                             .add_int(PMIX_TIMEOUT, 1)  // a server asking another node
                             .finish();
  pmix_value_t* raw = nullptr;
  if (PMIx_Get(&proc, key, directives.data(), directives.size(), &raw) != PMIX_SUCCESS) {
    return std::nullopt;
  }
  OwnedValue value(raw);
  return value_as_integer(*value);
}

// The ranks on this node, from PMIX_LOCAL_PEERS ("0,1,2"); none when the server gives none.
std::vector<int> local_peer_ranks(const JobDataReader& job_data, const pmix_proc_t& self) {
  pmix_proc_t job{};
  PMIX_LOAD_PROCID(&job, self.nspace, PMIX_RANK_WILDCARD);
  std::vector<int> ranks;
  OwnedValue value = job_data.get(job, PMIX_LOCAL_PEERS);
  std::optional<std::string> peers = value ? value_as_string(*value) : std::nullopt;
  if (!peers) return ranks;
  for (const std::string& peer : split_comma_list(*peers)) {
    char* end = nullptr;
    long rank = std::strtol(peer.c_str(), &end, 10);
    if (end != peer.c_str() && *end == '\0' && rank >= 0 && rank <= INT_MAX)
      ranks.push_back(static_cast<int>(rank));
  }
  return ranks;
}

}  // namespace

void PmixClientSession::take_turn(const JobDataReader& job_data,
                                  std::chrono::milliseconds timeout) {
  long long turn = 0;
  if (job_data.asks_server()) {
    std::optional<long long> last = server_integer(self_, kTurnKey);
    turn = last ? *last + 1 : 1;
  }
  pmix_value_t value{};
  value.type = PMIX_INT64;
  value.data.int64 = turn;
  pmix_status_t status = PMIx_Put(PMIX_GLOBAL, kTurnKey, &value);
  if (status != PMIX_SUCCESS)
    fail("PMIx_Put of key '" + std::string(kTurnKey) + "' failed", status);
  commit();
  if (turn == 0) return;

  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int rank : local_peer_ranks(job_data, self_)) {
    if (rank >= facts_.size) continue;
    if (rank == facts_.rank) continue;
    pmix_proc_t peer{};
    PMIX_LOAD_PROCID(&peer, self_.nspace, static_cast<pmix_rank_t>(rank));
    while (true) {
      std::optional<long long> peers_turn = server_integer(peer, kTurnKey);
      if (peers_turn && *peers_turn >= turn) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        fail("rank " + std::to_string(rank) + " did not join for this process's turn " +
             std::to_string(turn) + " within " + std::to_string(timeout.count()) +
             " ms (this process is a later child of its rank, as under pytest --forked, and "
             "rank " +
             std::to_string(rank) +
             " still runs an earlier one, or no longer runs "
             "the same sequence of processes)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

}  // namespace riseml::pmix
