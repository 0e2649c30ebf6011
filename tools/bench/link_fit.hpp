// riseml-bench --fit: measures the alpha-beta-gamma parameters of the step model (model/,
// docs/model.md) on the machines the job runs on, and writes them as a site file's network:
// section that `riseml estimate --site` (or --network) reads.
//  - between nodes: a ring allgather over one rank per host (every host's link sends and
//    receives at once, as in a ring step), timed for blocks of 8 B to 16 MiB; per step
//    t = alpha + m beta, alpha (a step's latency) from the blocks of at most 512 B, beta
//    (1/bandwidth) from those of 1 MiB and more, by least squares on relative error;
//  - inside a node: the same over the ranks of the first host (shared memory);
//  - gamma and fusion copies: float32 adds and memcpy of 16 MiB on every rank at once (so ranks
//    that share cores share them here too).
// Then it times the ring allreduce over the hosts at a few sizes beside what the model makes
// of the fitted parameters, so the fit's use is checked where it is made.
#pragma once

#include <riseml/communicator.hpp>
#include <riseml/rendezvous.hpp>

#include <string>

namespace riseml::bench {

// Runs the whole fit collectively and writes `path` on rank 0 (atomically). Returns the exit
// status: 0, or 1 with a message on stderr.
int run_link_fit(Rendezvous& rendezvous, Communicator& comm, const std::string& path, int rounds);

}  // namespace riseml::bench
