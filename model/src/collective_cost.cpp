#include "riseml/model/collective_cost.hpp"

#include <algorithm>
#include <cmath>

namespace riseml::model {

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::automatic: return "auto";
    case Algorithm::ring: return "ring";
    case Algorithm::halving_doubling: return "halving-doubling";
    case Algorithm::hierarchical: return "hierarchical";
  }
  return "?";
}

namespace {

// One step of `chunk` bytes over `link` shared by `flows` concurrent messages.
Cost step(const Link& link, double chunk, double flows = 1) {
  return Cost{link.latency_s, chunk * flows / link.bandwidth_Bps, 0};
}

// The slower of two steps (a ring step ends when its slowest edge does).
Cost slower(const Cost& a, const Cost& b) { return a.total() >= b.total() ? a : b; }

// A flat ring of p ranks on one link kind: 2(p-1) steps of S/p.
Cost plain_ring(double bytes, int p, const Link& link, double gamma, double flows = 1) {
  if (p <= 1) return {};
  Cost c;
  const double chunk = bytes / p;
  for (int i = 0; i < 2 * (p - 1); ++i) c += step(link, chunk, flows);
  c.reduce_s = (p - 1) * chunk * gamma;
  return c;
}

// Halving-doubling among p ranks, `per_node` of them on each node (consecutive ranks),
// `flows` messages sharing each cross-node link besides those of this allreduce.
Cost plain_hd(double bytes, int p, int per_node, const Cluster& c, double extra_flows = 1) {
  if (p <= 1) return {};
  int p2 = 1;
  while (p2 * 2 <= p) p2 *= 2;
  const int r = p - p2;
  Cost cost;
  // A step between ranks `distance` apart crosses nodes when distance >= per_node; then every
  // rank of a node sends across at once, so per_node messages share its NIC.
  auto link_at = [&](int distance, double& flows) -> const Link& {
    if (c.nodes > 1 && distance >= per_node) {
      flows = per_node * extra_flows;
      return c.inter;
    }
    flows = 1;
    return c.intra;
  };
  if (r > 0) {  // fold in and out: one whole message each way
    double flows = 1;
    const Link& l = link_at(1, flows);
    cost += step(l, bytes, flows);
    cost += step(l, bytes, flows);
    cost.reduce_s += bytes * c.reduce_s_per_byte;
  }
  double chunk = bytes;
  for (int d = 1; d < p2; d *= 2) {
    chunk /= 2;
    double flows = 1;
    const Link& l = link_at(d, flows);
    cost += step(l, chunk, flows);  // halving: send half, reduce the other half
    cost += step(l, chunk, flows);  // doubling: the same sizes in reverse
    cost.reduce_s += chunk * c.reduce_s_per_byte;
  }
  return cost;
}

}  // namespace

Cost ring_cost(double bytes, const Cluster& c) {
  const int p = c.ranks();
  if (p <= 1) return {};
  if (c.nodes == 1) return plain_ring(bytes, p, c.intra, c.reduce_s_per_byte);
  if (c.ranks_per_node == 1) return plain_ring(bytes, p, c.inter, c.reduce_s_per_byte);
  const double chunk = bytes / p;
  const Cost one = slower(step(c.inter, chunk), step(c.intra, chunk));
  Cost cost;
  for (int i = 0; i < 2 * (p - 1); ++i) cost += one;
  cost.reduce_s = (p - 1) * chunk * c.reduce_s_per_byte;
  return cost;
}

Cost halving_doubling_cost(double bytes, const Cluster& c, double /*small_bytes*/) {
  return plain_hd(bytes, c.ranks(), c.nodes == 1 ? c.ranks() : c.ranks_per_node, c);
}

Cost hierarchical_cost(double bytes, const Cluster& c, double small_bytes) {
  const int L = c.ranks_per_node, N = c.nodes;
  if (L <= 1 || N <= 1) return ring_cost(bytes, c);
  const double block = bytes / L;
  Cost cost;
  // Reduce-scatter and allgather inside the node: (L-1) steps of S/L each.
  for (int i = 0; i < 2 * (L - 1); ++i) cost += step(c.intra, block);
  cost.reduce_s += (L - 1) * block * c.reduce_s_per_byte;
  // Across nodes: L allreduces of S/L at once, all through the node's NIC; on GPU nodes by the
  // hosts' CPUs, after the shard is staged to pinned memory (and before it is copied back).
  Cluster across = c;
  across.ranks_per_node = 1;
  if (c.host_path.on) {
    across.inter.latency_s = c.host_path.latency_s;
    across.reduce_s_per_byte = c.host_path.reduce_s_per_byte;
    if (c.host_path.staging_Bps > 0) cost.bandwidth_s += 2 * block / c.host_path.staging_Bps;
  }
  Cost cross = block / N < small_bytes / 4
                   ? plain_hd(block, N, 1, across, L)
                   : plain_ring(block, N, across.inter, across.reduce_s_per_byte, L);
  if (c.host_path.on) cross.host_s = cross.total();
  cost += cross;
  return cost;
}

Algorithm choose_algorithm(double bytes, const Cluster& c, Algorithm forced, double small_bytes) {
  const int p = c.ranks();
  if (forced == Algorithm::hierarchical)
    return c.nodes > 1 && c.ranks_per_node > 1 ? Algorithm::hierarchical : Algorithm::ring;
  // GPU nodes run one NCCL communicator over all ranks unless told otherwise
  // (RISEML_GPU_ALGORITHM=nccl, docs/gpu.md): NCCL's ring, whatever the size.
  if (c.host_path.on) return Algorithm::ring;
  if (forced != Algorithm::automatic) return forced;
  if (c.nodes > 1 && c.ranks_per_node > 1 && bytes >= small_bytes) return Algorithm::hierarchical;
  if (bytes < small_bytes || bytes / p < small_bytes / 4) return Algorithm::halving_doubling;
  return Algorithm::ring;
}

Cost allreduce_cost(double bytes, const Cluster& c, Algorithm algorithm, double small_bytes) {
  if (c.ranks() <= 1 || bytes <= 0) return {};
  switch (choose_algorithm(bytes, c, algorithm, small_bytes)) {
    case Algorithm::ring: return ring_cost(bytes, c);
    case Algorithm::halving_doubling: return halving_doubling_cost(bytes, c, small_bytes);
    case Algorithm::hierarchical: return hierarchical_cost(bytes, c, small_bytes);
    case Algorithm::automatic: break;
  }
  return ring_cost(bytes, c);
}

}  // namespace riseml::model
