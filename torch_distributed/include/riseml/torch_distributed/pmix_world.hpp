// torch.distributed's world from PMIx, for jobs started by srun --mpi=pmix, mpirun or
// riseml-launch with no MASTER_ADDR and no torchrun: the ranks, and the address of the store
// that rank 0 serves (rank 0 opens it, then tells the others through PMIx).
#pragma once

#include <riseml/pmix/job_facts.hpp>
#include <riseml/pmix/session.hpp>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace riseml::torch_distributed {

class PmixWorld {
 public:
  // Connects to the launcher's PMIx server (collective when it gave no job secret). Throws
  // riseml::pmix::BootstrapError saying how to start the job when there is none.
  explicit PmixWorld(std::chrono::milliseconds timeout);

  const pmix::JobFacts& facts() const { return facts_; }
  // The job's secret: every riseml process group of the job authenticates with it.
  const std::vector<std::byte>& job_secret() const { return secret_; }

  // The IPv4 address rank 0 serves the store on: RISEML_IFACE (an interface or address), else
  // the first non-loopback interface that is up.
  static std::string root_address(const std::string& iface);

  // Collective: rank 0 passes "address:port" of the store it opened, every rank gets it back.
  std::string share_root(const std::string& root_endpoint);

  // PMIx_Finalize now (idempotent). A process that exits still connected looks to the launcher
  // like one that died: Slurm's PMIx plugin then cancels the whole step. Python does not promise
  // to destroy module globals at exit, so riseml.torch.distributed calls this from atexit.
  void close();

 private:
  std::unique_ptr<pmix::Session> session_;
  pmix::JobFacts facts_;
  std::vector<std::byte> secret_;
  std::chrono::milliseconds timeout_;
};

}  // namespace riseml::torch_distributed
