// The job as the PMIx server knows it: one nspace with N ranks on this one node, its job-level
// data (sizes, maps, the job secret) and per-rank data, and each rank registered as a client.
#pragma once

#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "environment_block.hpp"

namespace riseml::launch {

struct JobLayout {
  std::string nspace;  // at most PMIX_MAX_NSLEN characters
  int ranks = 1;
  std::string hostname;
};

class RegisteredJob {
 public:
  // Registers with the running PmixHostServer; throws std::runtime_error.
  RegisteredJob(JobLayout layout, std::span<const std::byte> job_secret);
  RegisteredJob(const RegisteredJob&) = delete;
  RegisteredJob& operator=(const RegisteredJob&) = delete;
  ~RegisteredJob();

  const JobLayout& layout() const { return layout_; }

  // Skip deregistering in the destructor; see abandon_pmix_after_stop() in main.cpp.
  void abandon() { abandoned_ = true; }

  // What rank `rank` is exec'd with: the launcher's environment minus inherited PMIx client
  // variables, with Horovod's rank variables (rank_environment.hpp) set for this rank, plus
  // what PMIx_server_setup_fork adds to find this server.
  // `overrides` ("NAME=value") replace what the launcher's environment has.
  EnvironmentBlock environment_for(int rank, const std::vector<std::string>& overrides = {}) const;

 private:
  JobLayout layout_;
  bool abandoned_ = false;
};

}  // namespace riseml::launch
