// One rank, several processes in turn: under `pytest --forked` every test runs in a fresh child
// of the rank's process, which joins the job and leaves with _exit, without PMIx_Finalize. A
// PMIx server takes such a lost connection for the death of the rank: it drops the rank from
// the fences under way, including the one the rank's next child may already have joined, and
// that fence then fails (PARTIAL SUCCESS) or never completes. So a child that joins after an
// earlier one of its rank (it has no local copy of the job data: job_data_reader.hpp) waits,
// before its first fence, until every peer on its node (a server counts its own clients only)
// has a process of the same turn joined: that process exists only once the peer's earlier
// child has exited. Each process puts its turn under kTurnKey: a first connection 0, a later
// one its own rank's last turn + 1. With libpmix's hash store (PMIX_MCA_gds=hash) instead of
// its default shared-memory one a later child gets a copy of the job data too, so every
// process takes turn 0 and this protection is off (the race stays; see docs/python.md).
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

// `key` of `proc` as the server's shared store holds it now (PMIX_GET_REFRESH_CACHE: not
// this process's cache of it, which a peer's earlier process filled), or nullopt. A Get that
// fetched the peer's data into the cache instead would also cache the keys its earlier process
// put, and later Gets of those would answer with them.
std::optional<long long> server_integer(const pmix_proc_t& proc, const char* key) {
  InfoArray directives =
      InfoList().add_bool(PMIX_GET_REFRESH_CACHE, true).add_bool(PMIX_IMMEDIATE, true).finish();
  pmix_value_t* raw = nullptr;
  if (PMIx_Get(&proc, key, directives.data(), directives.size(), &raw) != PMIX_SUCCESS) {
    return std::nullopt;
  }
  OwnedValue value(raw);
  return value_as_integer(*value);
}

// The ranks on this node, from PMIX_LOCAL_PEERS ("0,1,2"). A server that gives none leaves the
// wait out: nothing to wait for is known.
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
    if (rank == facts_.rank || rank >= facts_.size) continue;
    pmix_proc_t peer{};
    PMIX_LOAD_PROCID(&peer, self_.nspace, static_cast<pmix_rank_t>(rank));
    while (true) {
      std::optional<long long> peers_turn = server_integer(peer, kTurnKey);
      if (peers_turn && *peers_turn >= turn) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        fail("rank " + std::to_string(rank) + " on this node did not join for turn " +
             std::to_string(turn) + " within " + std::to_string(timeout.count() / 1000) +
             " s. This process is a later child of its rank (as under pytest --forked), and "
             "the ranks' children must join in the same order: every rank must run the same "
             "sequence of children that initialise riseml (the same tests and -k selection, "
             "none failing or skipped on one rank only before its init)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
}

}  // namespace riseml::pmix
