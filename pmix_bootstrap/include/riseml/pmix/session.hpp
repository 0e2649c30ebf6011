// The bootstrap client: job facts and a key exchange, over PMIx or, for a lone process started
// without a launcher, in memory. Every error is a BootstrapError whose message names the rank,
// the host and, for PMIx failures, the PMIx status.
#pragma once

#include <riseml/pmix/bootstrap_error.hpp>
#include <riseml/pmix/job_facts.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace riseml::pmix {

// Use a session from one thread at a time.
class Session {
 public:
  virtual ~Session() = default;

  virtual const JobFacts& facts() const = 0;

  // Stages key=value under this rank; peers can get it after the next commit() + fence().
  virtual void put(std::string_view key, std::span<const std::byte> value) = 0;
  virtual void commit() = 0;

  // Collective over the whole job, collecting every rank's committed data. Throws when not every
  // rank arrives within `timeout`.
  virtual void fence(std::chrono::milliseconds timeout) = 0;
  // The same among `ranks` only (sorted, this rank among them); the others take no part.
  virtual void fence_among(const std::vector<int>& ranks, std::chrono::milliseconds timeout) = 0;

  // The value `rank` put under `key`. What a fence delivered is returned at once; otherwise
  // this waits up to `timeout` for `rank` to commit it (a zero timeout does not wait), then
  // throws.
  virtual std::vector<std::byte> get(int rank, std::string_view key,
                                     std::chrono::milliseconds timeout) = 0;

  // 32 random bytes known to exactly this job's processes; never print or export them.
  virtual const std::vector<std::byte>& job_secret() const = 0;
};

struct InitOptions {
  // Bounds the exchange init() itself may need (the job secret, when the launcher gave none).
  std::chrono::milliseconds timeout = std::chrono::minutes(5);
  // Bounds PMIx_Init, which blocks for good when the PMIx server accepts the connection but
  // never answers (a stuck server). Unset: RISEML_PMIX_INIT_TIMEOUT_S, else 60 s.
  std::optional<std::chrono::milliseconds> pmix_init_timeout;
};

// Connects to the PMIx server that started this process, giving up (BootstrapError) when the
// server does not answer within options.pmix_init_timeout. Without one, a lone process becomes
// rank 0 of 1; a process that was evidently started as one of several (srun without
// --mpi=pmix, for instance) gets a BootstrapError that says how to start it. Collective when
// the launcher provides no job secret: every rank must call it.
std::unique_ptr<Session> init(const InitOptions& options = {});

}  // namespace riseml::pmix
