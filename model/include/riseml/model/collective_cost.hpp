// The time of one allreduce of S bytes on a cluster, per algorithm, in the alpha-beta-gamma
// model (docs/model.md): every algorithm step costs alpha + (bytes on the busiest link) * beta,
// and every reduced byte gamma. The algorithms are the ones riseml runs (docs/allreduce.md).
#pragma once

#include <string_view>

#include "riseml/model/links.hpp"

namespace riseml::model {

enum class Algorithm { automatic, ring, halving_doubling, hierarchical };
std::string_view to_string(Algorithm a);

struct Cost {
  double latency_s = 0;    // the alpha terms
  double bandwidth_s = 0;  // the beta terms
  double reduce_s = 0;     // the gamma terms
  // Of total(): the time the hosts' CPUs run it while the GPUs are free (Cluster::host_path).
  double host_s = 0;
  double total() const { return latency_s + bandwidth_s + reduce_s; }
  Cost& operator+=(const Cost& o) {
    latency_s += o.latency_s;
    bandwidth_s += o.bandwidth_s;
    reduce_s += o.reduce_s;
    host_s += o.host_s;
    return *this;
  }
};

// Ring over all ranks, laid out node by node: 2(p-1) steps of S/p bytes; each step waits for
// its slowest edge (a node's NIC carries one flow each way; the in-node edges use `intra`).
//   2(p-1) alpha + 2(p-1)/p S beta + (p-1)/p S gamma
Cost ring_cost(double bytes, const Cluster& c);
// Rabenseifner's halving-doubling: log2(p') halving steps (S/2, S/4, ...) and as many doubling
// steps, p' the largest power of two <= p; the r = p - p' extra ranks fold in and out first
// (+2 alpha + 2 S beta + S gamma). A step between ranks 2^k apart crosses nodes when
// 2^k >= ranks per node, and then all of a node's ranks share its NIC.
//   p a power of two, one rank a node: 2 log2(p) alpha + 2(p-1)/p S beta + (p-1)/p S gamma
Cost halving_doubling_cost(double bytes, const Cluster& c, double small_bytes = 65536);
// Hierarchical (L ranks a node, N nodes): ring reduce-scatter inside the node, L concurrent
// allreduces of S/L across nodes sharing the NIC (ring, or halving-doubling when a ring step
// would carry less than small_bytes/4), ring allgather inside:
//   2(L-1)(alpha_i + S/L beta_i) + (L-1)/L S gamma + [2(N-1) alpha_e + 2(N-1)/N S beta_e + (N-1)/(NL) S gamma]
// With a host path (GPU nodes) the bracket runs on the hosts, with the host's alpha and gamma,
// and the shard goes to pinned memory and back first: + 2 S/L / staging bandwidth.
Cost hierarchical_cost(double bytes, const Cluster& c, double small_bytes = 65536);

// What `auto` runs for S bytes (allreduce.md, "auto chooses"): hierarchical with several nodes,
// more than one rank each and S >= small_bytes; halving-doubling below small_bytes or when a ring
// step would carry less than small_bytes/4; the ring otherwise. `forced` other than automatic
// wins (hierarchical falls back to the ring with one node or one rank a node). On GPU nodes
// (a host path) the choice is the GPU engine's: NCCL's flat ring, or hierarchical when forced.
Algorithm choose_algorithm(double bytes, const Cluster& c, Algorithm forced = Algorithm::automatic,
                           double small_bytes = 65536);
Cost allreduce_cost(double bytes, const Cluster& c, Algorithm algorithm, double small_bytes = 65536);

}  // namespace riseml::model
