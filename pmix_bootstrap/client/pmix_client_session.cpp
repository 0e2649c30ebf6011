#include "pmix_client_session.hpp"

#include <pmix.h>
#include <string.h>  // explicit_bzero

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <optional>
#include <system_error>
#include <utility>

#include "call_completion.hpp"
#include "call_within.hpp"
#include "job_facts_query.hpp"
#include "launch_environment.hpp"
#include "pmix_info_list.hpp"
#include "pmix_init_timeout.hpp"
#include "pmix_status_text.hpp"
#include "pmix_value_reader.hpp"

namespace riseml::pmix {

namespace {

// PMIX_TIMEOUT counts whole seconds and 0 means "forever", so round up to at least 1.
int timeout_seconds(std::chrono::milliseconds timeout) {
  auto seconds = (std::max<std::chrono::milliseconds::rep>(timeout.count(), 1) + 999) / 1000;
  return static_cast<int>(std::min<std::chrono::milliseconds::rep>(seconds, 1 << 30));
}

std::string seconds_text(std::chrono::milliseconds timeout) {
  return std::to_string(timeout_seconds(timeout)) + " s";
}

std::string this_hostname() {
  char name[HOST_NAME_MAX + 1] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

// Set once a PMIx_Init was given up on: it may still return, or hang for good, and a second
// one would run beside it inside the same library.
std::atomic<bool> pmix_init_stuck{false};

}  // namespace

std::unique_ptr<Session> PmixClientSession::connect(const InitOptions& options) {
  EnvironmentLookup environment = [](const char* name) { return std::getenv(name); };
  const std::string who = rank_before_connecting(environment, this_hostname());
  std::chrono::milliseconds limit = pmix_init_timeout(options.pmix_init_timeout, environment, who);
  if (pmix_init_stuck.load()) {
    throw BootstrapError("riseml: " + who +
                         ": an earlier PMIx_Init of this process never returned, and PMIx "
                         "cannot be initialized twice at once; start the program again");
  }
  std::unique_ptr<PmixClientSession> session(new PmixClientSession());
  // PMIx_Init cannot be cancelled, so it runs on a thread of its own that is left behind if
  // it hangs; it writes only into the result it owns, never into the session.
  std::optional<std::pair<pmix_status_t, pmix_proc_t>> init;
  try {
    init = call_within(limit, [] {
      pmix_proc_t self{};
      pmix_status_t status = PMIx_Init(&self, nullptr, 0);
      return std::pair{status, self};
    });
  } catch (const std::system_error& error) {
    throw BootstrapError("riseml: " + who + ": cannot start a thread for PMIx_Init (" +
                         error.what() + "); the process is out of threads or memory");
  }
  if (!init) {
    pmix_init_stuck = true;
    const char* nspace = environment("PMIX_NAMESPACE");
    throw BootstrapError(
        "riseml: " + who + ": PMIx_Init did not return within " + seconds_text(limit) +
        ": the PMIx server that started this process (srun's, riseml-launch's or mpirun's" +
        (nspace != nullptr ? std::string(", job ") + nspace : std::string()) +
        ") does not answer. A libpmix 4.2.2 server gets stuck like this once it refused a "
        "connection from another user's process (see docs/launching.md); run the job again "
        "(RISEML_PMIX_INIT_TIMEOUT_S sets the limit)");
  }
  if (init->first != PMIX_SUCCESS) {
    throw BootstrapError("riseml: " + who + ": PMIx_Init failed: " + describe_status(init->first) +
                         "; the PMIx server named in this process's PMIX_* environment "
                         "cannot be reached (did its launcher exit?); " +
                         how_to_start_hint());
  }
  session->self_ = init->second;
  session->initialized_ = true;
  JobDataReader job_data(session->self_);
  session->facts_ = query_job_facts(session->self_, job_data);
  session->take_turn(job_data, options.timeout);
  session->secret_ = session->obtain_job_secret(job_data, options.timeout);
  return session;
}

PmixClientSession::~PmixClientSession() {
  if (!secret_.empty()) explicit_bzero(secret_.data(), secret_.size());
  // No PMIX_EMBED_BARRIER: finalizing must not wait for peers that may be gone.
  if (initialized_) PMIx_Finalize(nullptr, 0);
}

std::string PmixClientSession::user_key(std::string_view key) {
  return "riseml.kv." + std::string(key);
}

void PmixClientSession::put(std::string_view key, std::span<const std::byte> value) {
  if (key.empty()) fail("put: the key is empty");
  put_raw(user_key(key), value);
}

void PmixClientSession::put_raw(const std::string& key, std::span<const std::byte> value) {
  if (key.size() > PMIX_MAX_KEYLEN) {
    fail("put: key '" + key + "' is longer than PMIx's " + std::to_string(PMIX_MAX_KEYLEN) +
         " characters");
  }
  pmix_value_t staged{};
  staged.type = PMIX_BYTE_OBJECT;
  // PMIx_Put copies the value; it never writes through this pointer.
  staged.data.bo.bytes = reinterpret_cast<char*>(const_cast<std::byte*>(value.data()));
  staged.data.bo.size = value.size();
  pmix_status_t status = PMIx_Put(PMIX_GLOBAL, key.c_str(), &staged);
  if (status != PMIX_SUCCESS) fail("PMIx_Put of key '" + key + "' failed", status);
}

void PmixClientSession::commit() {
  pmix_status_t status = PMIx_Commit();
  if (status != PMIX_SUCCESS) fail("PMIx_Commit failed", status);
}

void PmixClientSession::fence(std::chrono::milliseconds timeout) { fence_procs({}, timeout); }

void PmixClientSession::fence_among(const std::vector<int>& ranks,
                                    std::chrono::milliseconds timeout) {
  std::vector<pmix_proc_t> procs;
  for (int r : ranks) {
    if (r < 0 || r >= facts_.size)
      fail("fence_among: rank " + std::to_string(r) + " is not in this job of " +
           std::to_string(facts_.size) + " ranks");
    pmix_proc_t p{};
    PMIX_LOAD_PROCID(&p, self_.nspace, static_cast<pmix_rank_t>(r));
    procs.push_back(p);
  }
  if (std::find(ranks.begin(), ranks.end(), facts_.rank) == ranks.end())
    fail("fence_among: this rank is not among the ranks");
  fence_procs(procs, timeout);
}

void PmixClientSession::fence_procs(const std::vector<pmix_proc_t>& procs,
                                    std::chrono::milliseconds timeout) {
  // PMIX_TIMEOUT lets the server give up on a missing rank; the server only watches local
  // ranks, so the wait below enforces the timeout when a rank on another node is missing.
  // No procs: the whole job.
  InfoArray directives = InfoList()
                             .add_bool(PMIX_COLLECT_DATA, true)
                             .add_int(PMIX_TIMEOUT, timeout_seconds(timeout))
                             .finish();
  CallCompletion completion;
  void* cbdata = completion.callback_data();
  pmix_status_t status = PMIx_Fence_nb(procs.empty() ? nullptr : procs.data(), procs.size(),
                                       directives.data(), directives.size(),
                                       &CallCompletion::on_complete, cbdata);
  if (status == PMIX_OPERATION_SUCCEEDED) {
    CallCompletion::discard_callback_data(cbdata);
    return;
  }
  if (status != PMIX_SUCCESS) {
    CallCompletion::discard_callback_data(cbdata);
    fail("PMIx_Fence failed to start", status);
  }
  // Half a second of slack, so a server that enforces the timeout itself reports first, with
  // its status.
  std::optional<pmix_status_t> outcome = completion.wait_for(
      std::chrono::seconds(timeout_seconds(timeout)) + std::chrono::milliseconds(500));
  if (!outcome) {
    fail("PMIx_Fence did not complete within " + seconds_text(timeout) + " (not all " +
         std::to_string(facts_.size) + " ranks arrived)");
  }
  if (*outcome == PMIX_ERR_TIMEOUT) {
    fail("PMIx_Fence did not complete within " + seconds_text(timeout) + " (not all " +
             std::to_string(facts_.size) + " ranks arrived)",
         *outcome);
  }
  if (*outcome != PMIX_SUCCESS) fail("PMIx_Fence failed", *outcome);
}

std::vector<std::byte> PmixClientSession::get(int rank, std::string_view key,
                                              std::chrono::milliseconds timeout) {
  if (key.empty()) fail("get: the key is empty");
  return get_raw(rank, user_key(key), key, timeout);
}

std::vector<std::byte> PmixClientSession::get_raw(int rank, const std::string& key,
                                                  std::string_view shown_key,
                                                  std::chrono::milliseconds timeout) {
  if (rank < 0 || rank >= facts_.size) {
    fail("get: rank " + std::to_string(rank) + " is not in this job of " +
         std::to_string(facts_.size) + " ranks");
  }
  pmix_proc_t peer{};
  PMIX_LOAD_PROCID(&peer, self_.nspace, static_cast<pmix_rank_t>(rank));
  std::string what = "key '" + std::string(shown_key) + "' of rank " + std::to_string(rank);
  // First what fences delivered (PMIX_OPTIONAL: no request to the server), ...
  InfoArray only_local = InfoList().add_bool(PMIX_OPTIONAL, true).finish();
  pmix_value_t* raw = nullptr;
  pmix_status_t status = PMIx_Get(&peer, key.c_str(), only_local.data(), only_local.size(), &raw);
  if (status != PMIX_SUCCESS && timeout.count() <= 0) {
    // Not here. With PMIx's shared-memory store (gds ds21) a fence leaves every local peer's
    // data in this process's reach; with the hash store (PMIx's fallback where ds21 does not
    // start, PMIX_MCA_gds=hash) a local peer's committed data stays with the server, so ask it,
    // without waiting: PMIX_IMMEDIATE answers NOT-FOUND at once when it has none.
    InfoArray immediate = InfoList().add_bool(PMIX_IMMEDIATE, true).finish();
    status = PMIx_Get(&peer, key.c_str(), immediate.data(), immediate.size(), &raw);
    if (status != PMIX_SUCCESS)
      fail("no " + what + ": it was not put and committed before the last fence", status);
  }
  if (status != PMIX_SUCCESS) {
    // ... then the server, which waits for the rank to commit it.
    InfoArray waiting = InfoList().add_int(PMIX_TIMEOUT, timeout_seconds(timeout)).finish();
    status = PMIx_Get(&peer, key.c_str(), waiting.data(), waiting.size(), &raw);
    if (status == PMIX_ERR_TIMEOUT) {
      fail("no " + what + " within " + seconds_text(timeout) + ": it was not put and committed",
           status);
    }
    if (status != PMIX_SUCCESS) fail("PMIx_Get of " + what + " failed", status);
  }
  OwnedValue value(raw);
  std::optional<std::vector<std::byte>> bytes = value_as_bytes(*value);
  if (!bytes) {
    fail("PMIx_Get of " + what + " returned PMIx type " + std::to_string(value->type) +
         ", not bytes");
  }
  return std::move(*bytes);
}

void PmixClientSession::fail(const std::string& what, pmix_status_t status) const {
  fail(what + ": " + describe_status(status));
}

void PmixClientSession::fail(const std::string& what) const {
  throw BootstrapError("riseml: rank " + std::to_string(facts_.rank) + " of " +
                       std::to_string(facts_.size) + " on host " + facts_.hostname + " (nspace " +
                       facts_.nspace + "): " + what);
}

}  // namespace riseml::pmix
