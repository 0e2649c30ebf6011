// Horovod's cross rank and size of this process, by the one definition the SPANK plugin and
// riseml-launch use too (common/horovod_ranks.hpp), from every rank's node: one allgather of the
// launcher's node ids (PMIx's node id, Slurm's node index) on the job's engine at init().
//
// Why node ids and not the communicator's host layout: they are the very facts the SPANK plugin
// computes HOROVOD_CROSS_* from, in the same node order, so hvd.cross_rank() agrees with the
// variables by construction; the host layout groups ranks by host key (hostname and boot id, or
// a RISEML_HOST_KEY that tests set to fake hosts) and lives inside the engine's communicator,
// which the engine does not expose.
#pragma once

#include <riseml/common/horovod_ranks.hpp>
#include <riseml/engine/engine.hpp>
#include <riseml/pmix/job_facts.hpp>

#include <optional>
#include <span>
#include <string>

namespace riseml::runtime {

// The cross numbers, or why there are none: the launcher's facts contradict each other.
struct CrossOfJob {
  std::optional<HorovodCross> cross;
  std::string why_unknown;
};

// Pure: from every rank's node id (node_of_rank[r]).
CrossOfJob horovod_cross_of(std::span<const int> node_of_rank, const pmix::JobFacts& facts);

// Collective on the job's engine: gathers every rank's node id, then horovod_cross_of.
// `regrouped`: the world is a part of the job (elastic): facts.local_rank/local_size are set
// from the gathered node ids.
CrossOfJob horovod_cross_of_job(engine::Engine& job, pmix::JobFacts& facts, bool regrouped = false);

}  // namespace riseml::runtime
