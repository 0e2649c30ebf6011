#include "riseml/model/engine_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

namespace riseml::model {

namespace {

// One negotiation: with the response cache a bit per tensor, allreduced (halving-doubling,
// latency-bound); without it, every rank's requests gathered to rank 0 and the responses
// broadcast (binomial trees: log2(p) steps each, the gather's bytes growing to (p-1)k requests).
double negotiation_cost(int ready, int total_tensors, const Cluster& c, const EngineSettings& e) {
  const int p = c.ranks();
  if (p <= 1) return 0;
  if (e.response_cache) {
    const double bits = std::max(8.0, std::ceil(total_tensors / 8.0));
    return halving_doubling_cost(bits, c).total();
  }
  const double steps = std::ceil(std::log2(p));
  const Link& l = c.nodes > 1 ? c.inter : c.intra;
  const double request = ready * e.request_bytes;
  return 2 * steps * l.latency_s + ((p - 1) * request + steps * request) / l.bandwidth_Bps;
}

}  // namespace

Prediction simulate_step(const StepProfile& profile, const Cluster& c, const EngineSettings& e) {
  Prediction out;
  const std::size_t n = profile.tensors.size();
  const double esize = e.fp16 ? 2 : 4;
  std::vector<double> ready(n);
  double t = profile.forward_s;
  for (std::size_t i = 0; i < n; ++i) {
    t += profile.tensors[i].compute_before_s;
    ready[i] = t;
    out.bytes_per_rank += profile.tensors[i].elements * esize;
  }
  out.backward_end_s = t + profile.tail_s;
  out.compute_s = profile.compute_s();

  double engine_free = 0;
  double last_start = 0;  // the engine loop starts with the step
  const double cycle = std::max(e.cycle_s, 1e-9);
  std::size_t i = 0;
  while (c.ranks() > 1 && i < n) {
    // The next cycle starts a cycle after the previous one began, or when the previous one's
    // work ends if that is later; cycles with nothing ready pass without cost.
    double start = std::max(engine_free, last_start + cycle);
    if (ready[i] > start) start += std::ceil((ready[i] - start) / cycle - 1e-12) * cycle;
    std::size_t end = i;
    while (end < n && ready[end] <= start + 1e-12) ++end;
    ++out.cycles;
    for (std::size_t k = i; k < end; ++k) out.queue_s += start - ready[k];
    double now = start;
    const double negotiation = negotiation_cost(static_cast<int>(end - i), static_cast<int>(n), c, e);
    out.negotiation_s += negotiation;
    now += negotiation;
    // Fusion: in order, a buffer of tensors up to the threshold; a larger tensor alone, in place.
    std::size_t k = i;
    while (k < end) {
      double bytes = profile.tensors[k].elements * esize;
      std::size_t m = k + 1;
      if (bytes < e.fusion_bytes) {
        while (m < end && bytes + profile.tensors[m].elements * esize <= e.fusion_bytes) {
          bytes += profile.tensors[m].elements * esize;
          ++m;
        }
      }
      if (m - k > 1 && c.copy_Bps > 0) {
        const double copy = 2 * bytes / c.copy_Bps;
        out.copy_s += copy;
        now += copy;
      }
      const Algorithm a = choose_algorithm(bytes, c, e.algorithm, e.small_bytes);
      const Cost cost = allreduce_cost(bytes, c, a, e.small_bytes);
      out.wire += cost;
      out.algorithms[a]++;
      ++out.collectives;
      now += cost.total();
      k = m;
    }
    out.engine_busy_s = out.wire.total() + out.copy_s + out.negotiation_s;
    engine_free = now;
    last_start = start;
    i = end;
  }
  out.step_s = std::max(out.backward_end_s, engine_free);
  out.exposed_s = out.step_s - out.compute_s;
  out.efficiency = out.step_s > 0 ? out.compute_s / out.step_s : 1;
  return out;
}

}  // namespace riseml::model
