// The bootstrap Session over a PMIx server (srun --mpi=pmix, riseml-launch, mpirun).
#pragma once

#include <pmix_common.h>

#include <riseml/pmix/session.hpp>

#include <string>

#include "job_data_reader.hpp"

namespace riseml::pmix {

class PmixClientSession final : public Session {
 public:
  // PMIx_Init, job facts, job secret. Throws BootstrapError.
  static std::unique_ptr<Session> connect(const InitOptions& options);
  ~PmixClientSession() override;

  const JobFacts& facts() const override { return facts_; }
  void put(std::string_view key, std::span<const std::byte> value) override;
  void commit() override;
  void fence(std::chrono::milliseconds timeout) override;
  void fence_among(const std::vector<int>& ranks, std::chrono::milliseconds timeout) override;
  std::vector<std::byte> get(int rank, std::string_view key,
                             std::chrono::milliseconds timeout) override;
  const std::vector<std::byte>& job_secret() const override { return secret_; }

 private:
  PmixClientSession() = default;

  // User keys get a prefix so they can clash neither with PMIx's "pmix." keys nor with ours.
  static std::string user_key(std::string_view key);
  void put_raw(const std::string& key, std::span<const std::byte> value);
  // `shown_key` is the key as the caller knows it, for messages.
  std::vector<std::byte> get_raw(int rank, const std::string& key, std::string_view shown_key,
                                 std::chrono::milliseconds timeout);
  // Waits for the peers' processes of this process's turn (forked_rank_sequence.cpp).
  void take_turn(const JobDataReader& job_data, std::chrono::milliseconds timeout);
  // job_secret_exchange.cpp
  std::vector<std::byte> obtain_job_secret(const JobDataReader& job_data,
                                           std::chrono::milliseconds timeout);

  // "riseml: rank 2 of 4 on host n1 (nspace x): <what>: <PMIx status>"
  [[noreturn]] void fail(const std::string& what, pmix_status_t status) const;
  [[noreturn]] void fail(const std::string& what) const;
  void fence_procs(const std::vector<pmix_proc_t>& procs, std::chrono::milliseconds timeout);

  pmix_proc_t self_{};
  bool initialized_ = false;
  JobFacts facts_;
  std::vector<std::byte> secret_;
};

}  // namespace riseml::pmix
