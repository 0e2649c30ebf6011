// How the runtime joins its job: where this process sits and a rendezvous to find the others.
// In production the PMIx session (srun --mpi=pmix, mpirun, riseml-launch, or a lone process);
// tests give threads of one process an in-memory rendezvous and facts of their choosing.
#pragma once

#include <riseml/pmix/job_facts.hpp>
#include <riseml/rendezvous.hpp>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace riseml::runtime {

// The world a launcher announced (riseml-elastic: the first one, then one for every change of
// membership it decided): the job ranks in it, numbered announcements, and what changed (start,
// added, removed, mixed, failure).
struct AnnouncedWorld {
  long long number = 0;
  std::vector<int> members;
  std::string why;
};

struct JobBootstrap {
  pmix::JobFacts facts;
  // Owns the bootstrap session: it ends when the last owner lets go.
  std::shared_ptr<Rendezvous> rendezvous;
  // The launcher's last announced world; empty (or nullopt) when it announces none (PMIx).
  std::function<std::optional<AnnouncedWorld>()> announced_world;
  // Set when the launcher decides every next world (riseml-elastic): after a failure, a worker
  // reports the ranks it blamed and the world it had formed (its number), then forms the world
  // announced next instead of deciding among the survivors.
  std::function<void(long long world, const std::vector<int>& culprits)> report_failure;
  // The number of the world the launcher said is coming (hosts added, their workers starting),
  // when it decides every world; nullopt when none was said.
  std::function<std::optional<long long>()> pending_world;
};

// Called once, at the first init() (and again at the init() after a finalize()).
using BootstrapFactory = std::function<JobBootstrap()>;

// Connects to the PMIx server that started this process (pmix::init with its default options):
// throws pmix::BootstrapError, whose message says how to start the process, when it cannot.
JobBootstrap pmix_job_bootstrap();

// A worker of riseml-elastic (RISEML_ELASTIC_STORE set) meets the others through the driver's
// rendezvous store; any other process through PMIx (pmix_job_bootstrap). Throws
// CollectiveError(setup) naming the variable when the driver's settings are malformed.
JobBootstrap environment_job_bootstrap();

}  // namespace riseml::runtime
