#include "registered_job.hpp"

#include <pmix_server.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <stdexcept>

#include "call_completion.hpp"
#include "job_secret_key.hpp"
#include "pmix_info_list.hpp"
#include "pmix_status_text.hpp"
#include "rank_environment.hpp"

namespace riseml::launch {

namespace {

using pmix::CallCompletion;
using pmix::InfoArray;
using pmix::InfoList;

struct FreeDeleter {
  void operator()(char* pointer) const { std::free(pointer); }
};

std::unique_ptr<char, FreeDeleter> generate(pmix_status_t (*generator)(const char*, char**),
                                            const std::string& input, const char* what) {
  char* output = nullptr;
  pmix_status_t status = generator(input.c_str(), &output);
  if (status != PMIX_SUCCESS || output == nullptr) {
    throw std::runtime_error(std::string(what) + " failed: " + pmix::describe_status(status));
  }
  return std::unique_ptr<char, FreeDeleter>(output);
}

std::string all_ranks_list(int ranks) {
  std::string list;
  for (int rank = 0; rank < ranks; ++rank) {
    if (rank > 0) list += ',';
    list += std::to_string(rank);
  }
  return list;
}

pmix_proc_t proc_of(const std::string& nspace, int rank) {
  pmix_proc_t proc{};
  PMIX_LOAD_PROCID(&proc, nspace.c_str(), static_cast<pmix_rank_t>(rank));
  return proc;
}

void check(pmix_status_t status, const std::string& what) {
  if (status != PMIX_SUCCESS && status != PMIX_OPERATION_SUCCEEDED) {
    throw std::runtime_error(what + " failed: " + pmix::describe_status(status));
  }
}

// Every rank lives on node 0, so local rank = node rank = rank.
InfoArray rank_data(const JobLayout& layout, int rank) {
  return InfoList()
      .add_rank(PMIX_RANK, static_cast<pmix_rank_t>(rank))
      .add_uint16(PMIX_LOCAL_RANK, static_cast<std::uint16_t>(rank))
      .add_uint16(PMIX_NODE_RANK, static_cast<std::uint16_t>(rank))
      .add_uint32(PMIX_NODEID, 0)
      .add_string(PMIX_HOSTNAME, layout.hostname)
      .add_uint32(PMIX_APPNUM, 0)
      .finish();
}

InfoArray job_data(const JobLayout& layout, std::span<const std::byte> job_secret) {
  const auto ranks = static_cast<std::uint32_t>(layout.ranks);
  std::string peers = all_ranks_list(layout.ranks);
  auto node_map = generate(&PMIx_generate_regex, layout.hostname, "PMIx_generate_regex");
  auto proc_map = generate(&PMIx_generate_ppn, peers, "PMIx_generate_ppn");

  InfoList job;
  job.add_uint32(PMIX_UNIV_SIZE, ranks)
      .add_uint32(PMIX_JOB_SIZE, ranks)
      .add_uint32(PMIX_MAX_PROCS, ranks)
      .add_uint32(PMIX_LOCAL_SIZE, ranks)
      .add_uint32(PMIX_NUM_NODES, 1)
      .add_uint32(PMIX_JOB_NUM_APPS, 1)
      .add_string(PMIX_LOCAL_PEERS, peers)
      .add_regex(PMIX_NODE_MAP, node_map.get())
      .add_regex(PMIX_PROC_MAP, proc_map.get())
      .add_string(PMIX_JOBID, layout.nspace)
      .add_bytes(pmix::kJobSecretKey, job_secret);
  for (int rank = 0; rank < layout.ranks; ++rank) {
    job.add_info_array(PMIX_PROC_INFO_ARRAY, rank_data(layout, rank));
  }
  return job.finish();
}

}  // namespace

RegisteredJob::RegisteredJob(JobLayout layout, std::span<const std::byte> job_secret)
    : layout_(std::move(layout)) {
  if (layout_.nspace.empty() || layout_.nspace.size() > PMIX_MAX_NSLEN) {
    throw std::invalid_argument("nspace name must have 1.." + std::to_string(PMIX_MAX_NSLEN) +
                                " characters");
  }
  pmix_nspace_t nspace;  // a 256-byte buffer, not a pointer
  PMIX_LOAD_NSPACE(nspace, layout_.nspace.c_str());

  {
    // PMIx reads `data` until the callback runs, so wait for it unconditionally.
    InfoArray data = job_data(layout_, job_secret);
    CallCompletion done;
    void* cbdata = done.callback_data();
    pmix_status_t status = PMIx_server_register_nspace(
        nspace, layout_.ranks, data.data(), data.size(), &CallCompletion::on_complete, cbdata);
    if (status != PMIX_SUCCESS) CallCompletion::discard_callback_data(cbdata);
    if (status == PMIX_SUCCESS) status = done.wait();
    check(status, "PMIx_server_register_nspace");
  }

  for (int rank = 0; rank < layout_.ranks; ++rank) {
    pmix_proc_t proc = proc_of(layout_.nspace, rank);
    CallCompletion done;
    void* cbdata = done.callback_data();
    pmix_status_t status = PMIx_server_register_client(&proc, getuid(), getgid(), nullptr,
                                                       &CallCompletion::on_complete, cbdata);
    if (status != PMIX_SUCCESS) CallCompletion::discard_callback_data(cbdata);
    if (status == PMIX_SUCCESS) status = done.wait();
    check(status, "PMIx_server_register_client for rank " + std::to_string(rank));
  }
}

RegisteredJob::~RegisteredJob() {
  if (abandoned_) return;
  pmix_nspace_t nspace;
  PMIX_LOAD_NSPACE(nspace, layout_.nspace.c_str());
  CallCompletion done;
  PMIx_server_deregister_nspace(nspace, &CallCompletion::on_complete, done.callback_data());
  // PMIx copied the name; if it never answers, finalizing the server cleans up anyway.
  done.wait_for(std::chrono::seconds(10));
}

EnvironmentBlock RegisteredJob::environment_for(int rank,
                                                const std::vector<std::string>& overrides) const {
  std::vector<std::string> variables = horovod_rank_variables(rank, layout_.ranks);
  variables.insert(variables.end(), overrides.begin(), overrides.end());
  EnvironmentBlock environment =
      EnvironmentBlock::inherited_without_pmix_client_variables(variables);
  pmix_proc_t proc = proc_of(layout_.nspace, rank);
  pmix_status_t status = PMIx_server_setup_fork(&proc, environment.address());
  check(status, "PMIx_server_setup_fork for rank " + std::to_string(rank));
  return environment;
}

}  // namespace riseml::launch
