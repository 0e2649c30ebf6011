#include "riseml/model/engine_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <utility>
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

// The backward pass's clock: compute runs at full speed, and slower while the engine runs
// collectives on the GPU (its busy intervals, added in time order as the engine decides them,
// each with the rate compute keeps in it).
class ComputeClock {
 public:
  explicit ComputeClock(double start) : now_(start) {}
  // When `work` seconds of full-speed compute started at the clock's time would end, given the
  // busy intervals known so far. Exact while no interval is added before that time.
  double finish(double work) const {
    double t = now_;
    for (std::size_t k = first_; k < busy_.size() && work > 0; ++k) {
      const auto [from, to, rate] = busy_[k];
      if (to <= t) continue;
      if (from > t) {
        if (work <= from - t) return t + work;
        work -= from - t;
        t = from;
      }
      if (work <= (to - t) * rate) return t + work / rate;
      work -= (to - t) * rate;
      t = to;
    }
    return t + work;
  }
  // The clock moves on to `t` (a finish() it has committed to).
  void advance_to(double t) {
    now_ = t;
    while (first_ < busy_.size() && busy_[first_].to <= now_) ++first_;
  }
  // Runs `work` now; returns when it ends.
  double run(double work) {
    advance_to(finish(work));
    return now_;
  }
  // From `from` to `to` compute runs at `rate` of its speed (< 1).
  void busy(double from, double to, double rate) {
    if (rate < 1 && to > from) busy_.push_back({from, to, rate});
  }

 private:
  struct Interval {
    double from, to, rate;
  };
  double now_;
  std::size_t first_ = 0;
  std::vector<Interval> busy_;
};

}  // namespace

Prediction simulate_step(const StepProfile& profile, const Cluster& c, const EngineSettings& e) {
  Prediction out;
  const std::size_t n = profile.tensors.size();
  const double esize = e.fp16 ? 2 : 4;
  // ready[i]: when gradient i's compute ends. Known only up to the engine's last decision when
  // collectives slow compute: a gradient counts as ready for a cycle once the clock, knowing
  // every earlier busy interval, puts it at or before the cycle's start.
  std::vector<double> ready(n, 0);
  for (std::size_t i = 0; i < n; ++i) out.bytes_per_rank += profile.tensors[i].elements * esize;
  out.compute_s = profile.compute_s();
  ComputeClock clock(profile.forward_s);
  const double slowdown = std::clamp(c.overlap_slowdown, 0.0, 0.99);
  std::size_t computed = 0;  // gradients whose ready time is settled
  auto next_ready = [&] { return clock.finish(profile.tensors[computed].compute_before_s); };
  // When the engine has the gradient on every rank: the slowest rank's lag after its compute.
  const double lag = std::max(0.0, c.hand_over_lag_s);

  double engine_free = 0;
  double last_start = 0;  // the engine loop starts with the step
  const double cycle = std::max(e.cycle_s, 1e-9);
  std::size_t i = 0;
  while (c.ranks() > 1 && i < n) {
    // Horovod's loop: the next cycle starts a cycle after the previous one began, or when the
    // previous one's work ends if that is later; cycles with nothing ready pass without cost.
    // riseml's: as soon as the previous one's work ends, or the next gradient is handed over.
    // riseml's on GPU nodes (linger_after_work): after a cycle that ran work, a cycle after it.
    const bool grid = !e.start_when_idle || (e.linger_after_work && out.cycles > 0);
    double start = grid ? std::max(engine_free, last_start + cycle) : engine_free;
    bool woken = false;  // the cycle starts because a gradient reached the idle engine
    if (computed == i) {  // nothing waiting: the next gradient (exact: the engine is idle until it)
      const double first = next_ready() + lag;
      if (first > start) {
        woken = e.start_when_idle;
        start = woken ? first : start + std::ceil((first - start) / cycle - 1e-12) * cycle;
      }
    }
    for (double t; computed < n && (t = next_ready()) + lag <= start + 1e-12; ++computed) {
      if (woken && computed > i) break;  // handed over after the engine woke: the next cycle
      ready[computed] = t;
      clock.advance_to(t);
    }
    const std::size_t end = computed;
    ++out.cycles;
    for (std::size_t k = i; k < end; ++k) out.queue_s += start - ready[k] - lag;
    double now = start;
    const double negotiation = negotiation_cost(static_cast<int>(end - i), static_cast<int>(n), c, e);
    out.negotiation_s += negotiation;
    out.cycle_overhead_s += c.cycle_overhead_s;
    now += negotiation + c.cycle_overhead_s;
    const double collectives_from = now;
    double on_host = 0;  // of this cycle's collectives: the hosts' part, the GPUs free
    // The small tensors first, then the others (riseml's engine; EngineSettings); each group in
    // order, fused into buffers up to the threshold; a tensor at or over it alone, in place.
    std::vector<std::size_t> order;
    order.reserve(end - i);
    auto small = [&](std::size_t g) {
      return e.small_first_bytes > 0 && profile.tensors[g].elements * esize <= e.small_first_bytes;
    };
    for (std::size_t g = i; g < end; ++g)
      if (small(g)) order.push_back(g);
    const std::size_t small_count = order.size();
    for (std::size_t g = i; g < end; ++g)
      if (!small(g)) order.push_back(g);
    std::size_t k = 0;
    while (k < order.size()) {
      const std::size_t group_end = k < small_count ? small_count : order.size();
      double bytes = profile.tensors[order[k]].elements * esize;
      std::size_t m = k + 1;
      if (bytes < e.fusion_bytes) {
        while (m < group_end && bytes + profile.tensors[order[m]].elements * esize <= e.fusion_bytes) {
          bytes += profile.tensors[order[m]].elements * esize;
          ++m;
        }
      }
      ScheduledCollective sc;
      sc.cycle = out.cycles;
      sc.gradients.assign(order.begin() + static_cast<std::ptrdiff_t>(k),
                          order.begin() + static_cast<std::ptrdiff_t>(m));
      sc.bytes = bytes;
      sc.cycle_start_s = start;
      sc.start_s = now;
      if (m - k > 1 && c.copy_Bps > 0) {
        const double copy = 2 * bytes / c.copy_Bps;
        out.copy_s += copy;
        now += copy;
        sc.copy_s = copy;
      }
      const Algorithm a = choose_algorithm(bytes, c, e.algorithm, e.small_bytes);
      const Cost cost = allreduce_cost(bytes, c, a, e.small_bytes);
      out.wire += cost;
      out.algorithms[a]++;
      ++out.collectives;
      now += cost.total();
      sc.algorithm = a;
      sc.wire_s = cost.total();
      sc.end_s = now;
      out.schedule.push_back(sc);
      on_host += cost.host_s;
      k = m;
    }
    // Within the cycle the GPU steps and the host steps alternate by collective; the compute
    // lost is the same spread evenly over the cycle's work, which keeps the clock simple.
    if (now > collectives_from)
      clock.busy(collectives_from, now, 1 - slowdown * (1 - on_host / (now - collectives_from)));
    out.engine_busy_s = out.wire.total() + out.copy_s + out.negotiation_s + out.cycle_overhead_s;
    engine_free = now;
    last_start = start;
    i = end;
  }
  for (; computed < n; ++computed) ready[computed] = clock.run(profile.tensors[computed].compute_before_s);
  out.backward_end_s = clock.run(profile.tail_s);
  out.compute_slowed_s = std::max(0.0, out.backward_end_s - out.compute_s);
  out.step_s = std::max(out.backward_end_s, engine_free);
  out.exposed_s = out.step_s - out.compute_s;
  out.efficiency = out.step_s > 0 ? out.compute_s / out.step_s : 1;
  return out;
}

Bound bounding_resource(const Prediction& p) {
  if (p.step_s - p.backward_end_s <= kHiddenBelowShare * p.step_s + 1e-12) return Bound::compute;
  const std::pair<double, Bound> parts[] = {{p.wire.bandwidth_s, Bound::link_bandwidth},
                                            {p.wire.latency_s + p.negotiation_s + p.cycle_overhead_s, Bound::latency},
                                            {p.wire.reduce_s, Bound::reduction},
                                            {p.copy_s, Bound::fusion_copies}};
  return std::max_element(std::begin(parts), std::end(parts),
                          [](const auto& a, const auto& b) { return a.first < b.first; })
      ->second;
}

std::string_view to_string(Bound b) {
  switch (b) {
    case Bound::compute: return "compute (the backward pass ends last, or within 1% of the step: communication is hidden)";
    case Bound::link_bandwidth: return "the link between nodes (bandwidth)";
    case Bound::latency: return "latency (per-message alpha, negotiation and the engine's cycles)";
    case Bound::reduction: return "reduction (memory bandwidth of the ranks' adds)";
    case Bound::fusion_copies: return "memory copies (into and out of fusion buffers)";
  }
  return "?";
}

}  // namespace riseml::model
