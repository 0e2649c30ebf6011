#include "link_fit.hpp"

#include <riseml/model/collective_cost.hpp>
#include <riseml/model/engine_schedule.hpp>
#include <riseml/model/links.hpp>
#include <riseml/subset_rendezvous.hpp>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#ifdef RISEML_BENCH_HAVE_ENGINE
#include <riseml/engine/engine.hpp>
#endif

#include "alpha_beta_fit.hpp"
#ifdef RISEML_BENCH_HAVE_ENGINE
#include "hand_over.hpp"
#endif
#include <riseml/common/atomic_file.hpp>
#include <riseml/reduce_kernels.hpp>
#include "measure.hpp"

namespace riseml::bench {
namespace {

// Blocks each rank contributes to the allgather: latency-bound to bandwidth-bound.
constexpr double kBlocks[] = {8, 64, 512, 4096, 32768, 262144, 1 << 20, 4 << 20, 16 << 20};
constexpr std::size_t kGammaBytes = 16u << 20;
// Fusion copies as the engine makes them (engine/src/host_allreduce.cpp): gradients copied one
// after another into a buffer of the default fusion threshold and back out. Measured so, not as
// one memcpy of 16 MiB, which runs from cache at 1.5-2.5x the rate the engine's copies got in
// riseml-replay's timelines (3-6 GB/s against 7-11 GB/s on the testbed, issue 37).
constexpr std::size_t kFusionBytes = 64u << 20;
constexpr std::size_t kFusionTensors = 16;
constexpr double kLoopSeconds = 0.15;  // target time of one timed loop
// The spread: bursts through the engine, each a step's worth of gradients (kBurstLarge of
// 4 MiB, each followed by a 16 KiB "bias", as a layer's weight and bias), in two shapes that
// alternate: handed over at once, and handed over as a backward pass does, a weight every half
// of its modelled allreduce time (riseml-replay's sleeps), so cycles are woken, negotiated and
// queued behind one another as in a step. Each burst is timed alone (slowest rank) and turned
// into the factor on the engine's modelled work (model::with_engine_scaled) that makes the
// model's schedule of that burst last as long. The fit above takes medians, which leave out the
// calls a stalled TCP flow or a busy host slows, and the model leaves out what the engine does
// between collectives beyond its measured cycle time; the fastest and slowest factor bound the
// printed range.
constexpr int kSpreadCalls = 32;  // both shapes together
constexpr std::size_t kBurstLarge = 16;

struct Measured {
  LinkParameters link;
  int ranks = 0;
};

struct Spread {
  double fast = 1, mean = 1, slow = 1;
};

// The hand-over's lag: a gradient handed to an idle engine after a sleep, as the last gradient
// of a compute-bound step is, ends later on the slowest rank than the same call back to back:
// the ranks leave the barrier, as they start a step, apart; a sleep ends late (as riseml-replay's
// slept compute does; on GPUs a rank's compute varies instead); the parked engine and the
// waiting caller wake late. kLagTries tries after kLagIdle of sleep, each beside the sleep alone
// (printed, to tell the sleep's part).
constexpr int kLagTries = 32;
constexpr double kLagIdle = 2e-3;
struct HandOverLag {
  double fast = 0, median = 0, slow = 0;
};

// Seconds per call of `call`, slowest rank, median over rounds of loops of ~kLoopSeconds.
double median_seconds(Communicator& comm, const std::function<void()>& call, int rounds) {
  call();  // warm: connections, buffers
  const double once = time_back_to_back(comm, call, 1);
  const int iterations = static_cast<int>(std::clamp(kLoopSeconds / std::max(once, 1e-7), 2.0, 2000.0));
  std::vector<double> t;
  for (int r = 0; r < rounds; ++r) t.push_back(time_back_to_back(comm, call, iterations));
  return quantile(t, 0.5);
}

// Ring allgather steps of each block size over `comm`; the fit of alpha and beta per step.
Measured measure_link(Communicator& comm, int rounds) {
  const int n = comm.size();
  std::vector<float> in((16u << 20) / sizeof(float), 1.0f);
  std::vector<float> out(in.size() * static_cast<std::size_t>(n));
  std::vector<double> blocks, per_step;
  for (double b : kBlocks) {
    const auto count = static_cast<std::size_t>(b) / sizeof(float);
    const double t = median_seconds(comm, [&] { comm.allgather(in.data(), out.data(), count, DataType::float32); }, rounds);
    blocks.push_back(b);
    per_step.push_back(t / (n - 1));
  }
  return {fit_alpha_beta(blocks, per_step), n};
}

#ifdef RISEML_BENCH_HAVE_ENGINE
// Seconds per one-float allreduce through the engine (all ranks), one at a time: each wakes the
// parked engine, negotiates, reduces and completes the caller's handle, as a gradient that
// reaches an idle engine in a training step does.
double engine_call_seconds(engine::Engine& engine, Communicator& comm, int rounds) {
  float x = 1;  // averaged: stays 1
  return median_seconds(comm, [&] {
    engine.allreduce("riseml-fit-cycle", &x, &x, {1}, DataType::float32, ReduceOp::average).wait();
  }, rounds);
}

// kLagTries pairs of tries, in turn: after a barrier every rank sleeps kLagIdle and hands a
// one-float gradient to the engine (riseml-replay's hand-over), then waits; and the same sleep
// alone (its overshoot). Each try is the slowest rank's time from its own start, as
// riseml-replay times a step. The lag is a try beyond kLagIdle and beyond what the model charges
// that cycle (`cycle_s`: the larger of the measured back-to-back call and the model's
// negotiation and allreduce).
HandOverLag measure_hand_over_lag(engine::Engine& engine, Communicator& comm, double cycle_s) {
  float x = 1;  // averaged: stays 1
  const HandedGradient gradient{"riseml-fit-lag", &x, {1}, kLagIdle};
  auto try_once = [&](engine::Engine* e) {
    comm.barrier();
    const auto start = std::chrono::steady_clock::now();
    auto at = start;
    for (const auto& h : hand_over(e, {&gradient, 1}, DataType::float32, at)) h.wait();
    return max_over_ranks(comm, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  };
  try_once(&engine);  // warm: the name's first negotiation
  std::vector<double> alone, handed;
  for (int k = 0; k < kLagTries; ++k) {
    alone.push_back(try_once(nullptr));
    handed.push_back(try_once(&engine));
  }
  const double sleep_s = quantile(alone, 0.5);
  std::vector<double> lags;
  for (double t : handed) lags.push_back(std::max(0.0, t - kLagIdle - cycle_s));
  HandOverLag lag{*std::min_element(lags.begin(), lags.end()), quantile(lags, 0.5),
                  *std::max_element(lags.begin(), lags.end())};
  if (comm.rank() == 0) {
    std::printf("# hand-over after idle: %d tries of a one-float gradient after %.1f ms of sleep, the slowest "
                "rank: %.1f us median after the sleep's end (the sleep alone ends %.1f us late, median), "
                "%.1f us beyond the %.1f us the model charges the cycle (fastest %.1f, slowest %.1f us); "
                "every try after the sleep's end, us:",
                kLagTries, kLagIdle * 1e3, (quantile(handed, 0.5) - kLagIdle) * 1e6, (sleep_s - kLagIdle) * 1e6,
                lag.median * 1e6, cycle_s * 1e6, lag.fast * 1e6, lag.slow * 1e6);
    for (double t : handed) std::printf(" %.0f", (t - kLagIdle) * 1e6);
    std::printf("\n");
  }
  return lag;
}

// The factor f on the engine's modelled work (model::with_engine_scaled) for which the model's
// step of `profile` lasts `seconds`: the step grows with f, so bisect (clamped to 1/4..4).
double engine_factor(const model::StepProfile& profile, const model::Cluster& c, double seconds) {
  auto step = [&](double f) {
    return model::simulate_step(profile, model::with_engine_scaled(c, f), model::EngineSettings{}).step_s;
  };
  double lo = 0.25, hi = 4;
  if (seconds <= step(lo)) return lo;
  if (seconds >= step(hi)) return hi;
  for (int i = 0; i < 30; ++i) {
    const double mid = std::sqrt(lo * hi);
    (step(mid) < seconds ? lo : hi) = mid;
  }
  return std::sqrt(lo * hi);
}

// kSpreadCalls bursts through the engine, the two shapes in turn (see kSpreadCalls).
Spread measure_spread(engine::Engine& engine, Communicator& comm, const model::Cluster& c) {
  constexpr std::size_t kLarge = (4u << 20) / sizeof(float), kSmall = (16u << 10) / sizeof(float);
  std::vector<std::vector<float>> grads;
  model::StepProfile pair;  // one weight and its bias: the gap between weights handed over
  pair.tensors = {{"w", static_cast<double>(kLarge), 0}, {"b", static_cast<double>(kSmall), 0}};
  const double gap_s = 0.5 * model::simulate_step(pair, c, model::EngineSettings{}).step_s;
  model::StepProfile at_once, handed_over;
  for (std::size_t i = 0; i < kBurstLarge; ++i) {
    grads.emplace_back(kLarge, 1.0f);
    grads.emplace_back(kSmall, 1.0f);
    for (auto* p : {&at_once, &handed_over}) {
      p->tensors.push_back({"w" + std::to_string(i), static_cast<double>(kLarge), p == &at_once ? 0 : gap_s});
      p->tensors.push_back({"b" + std::to_string(i), static_cast<double>(kSmall), 0});
    }
  }
  const model::StepProfile* shapes[] = {&at_once, &handed_over};
  // Each shape as the engine gets it: the same buffers, the shape's compute before each.
  std::vector<HandedGradient> bursts[2];
  for (int k = 0; k < 2; ++k)
    for (std::size_t i = 0; i < grads.size(); ++i)
      bursts[k].push_back({"riseml-fit-burst." + std::to_string(i), grads[i].data(),
                           {static_cast<std::int64_t>(grads[i].size())}, shapes[k]->tensors[i].compute_before_s});
  int call = 0;
  auto one_burst = [&] {
    auto at = std::chrono::steady_clock::now();
    for (const auto& h : hand_over(&engine, bursts[call++ % 2], DataType::float32, at)) h.wait();
  };
  one_burst();  // warm: the names' first negotiation, the response cache
  one_burst();
  call = 0;
  const std::vector<double> calls = time_per_call(comm, one_burst, kSpreadCalls);
  std::vector<double> factors;
  for (std::size_t k = 0; k < calls.size(); ++k) factors.push_back(engine_factor(*shapes[k % 2], c, calls[k]));
  // The range spans every burst. Its 5th and 95th percentiles (printed below) made a range a
  // third to a half narrower that held on the grids it was chosen on and missed 24 of 60 cells
  // on the next one; the extremes held 236 of 240 cells over four grids (docs/scaling.md).
  Spread s;
  s.fast = *std::min_element(factors.begin(), factors.end());
  s.slow = *std::max_element(factors.begin(), factors.end());
  double sum = 0;
  for (double f : factors) sum += f;
  const double median = quantile(factors, 0.5);
  s.mean = sum / static_cast<double>(factors.size()) / median;
  if (comm.rank() == 0) {
    std::printf("# spread: %d bursts of %zu gradients (%zu of 4 MiB, each with a 16 KiB one) through the engine, "
                "in turn handed over at once (the model's %.2f ms) and a weight every %.2f ms (the model's %.2f ms); "
                "the engine's work over the model's: fastest %.3f, 5th percentile %.3f, median %.3f, "
                "95th percentile %.3f, slowest %.3f, mean %+.1f%% over the median; every burst, ms (factor):",
                kSpreadCalls, grads.size(), kBurstLarge,
                1e3 * model::simulate_step(at_once, c, model::EngineSettings{}).step_s, 1e3 * gap_s,
                1e3 * model::simulate_step(handed_over, c, model::EngineSettings{}).step_s,
                *std::min_element(factors.begin(), factors.end()), s.fast, median, s.slow,
                *std::max_element(factors.begin(), factors.end()), 100 * (s.mean - 1));
    for (std::size_t k = 0; k < calls.size(); ++k) std::printf(" %.1f(%.3f)", calls[k] * 1e3, factors[k]);
    std::printf("\n");
  }
  return s;
}
#endif

// A communicator over `members` (job ranks) while the others stand by; null on non-members.
std::unique_ptr<Communicator> sub_communicator(Rendezvous& rendezvous, Communicator& comm,
                                               const std::vector<int>& members,
                                               std::unique_ptr<SubsetRendezvous>& holder,
                                               const std::string& prefix) {
  CommunicatorOptions options = CommunicatorOptions::from_environment();
  options.rendezvous_prefix = prefix;
  if (std::find(members.begin(), members.end(), comm.rank()) == members.end()) {
    Communicator::stand_by(rendezvous, options);
    return nullptr;
  }
  holder = std::make_unique<SubsetRendezvous>(rendezvous, members);
  return std::make_unique<Communicator>(*holder, options);
}

std::string rate_text(double Bps) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4gGB/s", Bps / 1e9);
  return buf;
}

std::string latency_text(double s) {
  // %g turns 1486 us into 1.49e+03us; past a millisecond write milliseconds instead.
  char buf[64];
  if (s < 1e-3)
    std::snprintf(buf, sizeof buf, "%.3gus", s * 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.4gms", s * 1e3);
  return buf;
}

void print_fit(const char* what, const Measured& m) {
  std::printf("# %s: ring allgather over %d ranks; per step: measured, fitted alpha + m beta\n", what, m.ranks);
  std::printf("%12s %14s %14s %8s\n", "block_bytes", "measured_us", "fitted_us", "error");
  for (const auto& p : m.link.points)
    std::printf("%12.0f %14.2f %14.2f %+7.1f%%\n", p.block_bytes, p.measured_s * 1e6, p.fitted_s * 1e6,
                100 * (p.fitted_s - p.measured_s) / p.measured_s);
  std::printf("# %s: latency %s, bandwidth %s (one direction, both at once); fit within %.1f%%\n\n", what,
              model::format_duration(m.link.latency_s).c_str(), model::format_rate(m.link.bandwidth_Bps).c_str(),
              100 * m.link.max_relative_error);
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

std::string hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

}  // namespace

int run_link_fit(Rendezvous& rendezvous, Communicator& comm, const std::string& path, int rounds) {
  const HostLayout layout = comm.host_layout();
  const int per_node = static_cast<int>(layout.local_ranks.size());
  if (!layout.uniform) {
    if (comm.rank() == 0)
      std::fprintf(stderr, "riseml-bench --fit: the hosts run different numbers of ranks; start the same "
                           "number on every host (srun --ntasks-per-node)\n");
    return 1;
  }
  if (comm.rank() == 0)
    std::printf("# riseml-bench --fit: %d hosts x %d ranks; every time is the slowest rank's, median of %d rounds\n\n",
                layout.hosts, per_node, rounds);

  // gamma and fusion copies: every rank at once.
  std::vector<float> a(kGammaBytes / sizeof(float), 1.0f), b(a.size(), 2.0f);
  const double reduce_s = median_seconds(comm, [&] {
    kernels::reduce(DataType::float32, ReduceOp::sum, a.data(), a.data(), b.data(), a.size());
  }, rounds);
  std::vector<std::vector<std::byte>> gradients(kFusionTensors, std::vector<std::byte>(kFusionBytes / kFusionTensors));
  std::vector<std::byte> fusion(kFusionBytes);
  const double copy_s = median_seconds(comm, [&] {
    std::size_t at = 0;
    for (const auto& g : gradients) {
      std::memcpy(fusion.data() + at, g.data(), g.size());
      at += g.size();
    }
    at = 0;
    for (auto& g : gradients) {
      std::memcpy(g.data(), fusion.data() + at, g.size());
      at += g.size();
    }
  }, rounds);
  const double reduce_Bps = kGammaBytes / reduce_s, copy_Bps = 2.0 * kFusionBytes / copy_s;
  if (comm.rank() == 0)
    std::printf("# reduce (float32 add, 16 MiB, every rank at once): %s; fusion copies (16 gradients of 4 MiB "
                "into a 64 MiB buffer and back out, every rank at once): %s\n\n",
                model::format_rate(reduce_Bps).c_str(), model::format_rate(copy_Bps).c_str());

  // Between nodes: one rank a host (the column of local index 0).
  std::optional<Measured> nodes;
  std::vector<std::string> checks;
  if (layout.hosts > 1) {
    // Every rank needs the column (to stand by or join): rank r is in it when its local index is 0.
    std::vector<int> flags(static_cast<std::size_t>(comm.size()), 0);
    std::int32_t mine = layout.local_index == 0 ? 1 : 0;
    comm.allgather(&mine, flags.data(), 1, DataType::int32);
    std::vector<int> column;
    for (int r = 0; r < comm.size(); ++r)
      if (flags[static_cast<std::size_t>(r)]) column.push_back(r);
    std::unique_ptr<SubsetRendezvous> holder;
    auto sub = sub_communicator(rendezvous, comm, column, holder, "riseml-fit-nodes");
    if (sub) {
      nodes = measure_link(*sub, rounds);
      if (sub->rank() == 0) print_fit("between nodes", *nodes);
      // The fit where it is used: the ring allreduce beside the model's ring with these numbers.
      model::Cluster cluster;
      cluster.nodes = sub->size();
      cluster.inter = {nodes->link.latency_s, nodes->link.bandwidth_Bps};
      cluster.reduce_s_per_byte = 1 / reduce_Bps;
      std::vector<float> buf((64u << 20) / sizeof(float), 1.0f);
      for (std::size_t bytes : {std::size_t{1} << 20, std::size_t{16} << 20, std::size_t{64} << 20}) {
        const std::size_t count = bytes / sizeof(float);
        const double t = median_seconds(*sub, [&] {
          sub->allreduce(buf.data(), buf.data(), count, DataType::float32, ReduceOp::sum, Algorithm::ring);
        }, rounds);
        const double predicted = model::ring_cost(static_cast<double>(bytes), cluster).total();
        char line[160];
        std::snprintf(line, sizeof line, "%10zu %14.2f %14.2f %+7.1f%%", bytes, t * 1e3, predicted * 1e3,
                      100 * (predicted - t) / t);
        checks.push_back(line);
      }
      if (sub->rank() == 0) {
        std::printf("# check: ring allreduce over the %d hosts, float32, in place; the model's ring with the fit\n",
                    sub->size());
        std::printf("%10s %14s %14s %8s\n", "bytes", "measured_ms", "model_ms", "error");
        for (const auto& c : checks) std::printf("%s\n", c.c_str());
        std::printf("\n");
      }
    }
  }
  comm.barrier();

  // Inside a node: the ranks of the first host.
  std::optional<Measured> intra;
  if (per_node > 1) {
    std::unique_ptr<SubsetRendezvous> holder;
    std::unique_ptr<Communicator> sub;
    Communicator* on = &comm;  // one host: all of it
    if (layout.hosts > 1) {
      // The first host's ranks: the host of rank 0, known to all through a broadcast.
      std::vector<std::int32_t> host0(static_cast<std::size_t>(per_node), -1);
      if (comm.rank() == 0) std::copy(layout.local_ranks.begin(), layout.local_ranks.end(), host0.begin());
      comm.broadcast(host0.data(), host0.size(), DataType::int32, 0);
      sub = sub_communicator(rendezvous, comm, std::vector<int>(host0.begin(), host0.end()), holder,
                             "riseml-fit-intra");
      on = sub.get();
    }
    if (on) {
      intra = measure_link(*on, rounds);
      if (on->rank() == 0) print_fit("inside a node", *intra);
    }
  }
  comm.barrier();

  // The engine's own time a cycle: what a one-float allreduce through it takes beyond what the
  // model charges such a cycle (its negotiation and the allreduce of 4 bytes, with the links
  // just fitted). riseml-replay's timelines put 0.3-2 ms between collectives on the testbed
  // where the model had only the negotiation (issue 37). Every rank takes part.
  std::optional<double> cycle_overhead_s;
  std::optional<Spread> spread;
  std::optional<HandOverLag> lag;
#ifdef RISEML_BENCH_HAVE_ENGINE
  if (comm.size() > 1) {
    CommunicatorOptions options = CommunicatorOptions::from_environment();
    options.rendezvous_prefix = "riseml-fit-engine";
    engine::Engine engine(rendezvous, options, engine::EngineOptions::from_environment());
    const double call_s = engine_call_seconds(engine, comm, rounds);
    model::Cluster c;
    c.nodes = layout.hosts;
    c.ranks_per_node = per_node;
    if (nodes) c.inter = {nodes->link.latency_s, nodes->link.bandwidth_Bps};
    if (intra) c.intra = {intra->link.latency_s, intra->link.bandwidth_Bps};
    const double charged = model::halving_doubling_cost(8, c).total() +
                           model::allreduce_cost(4, c, model::choose_algorithm(4, c)).total();
    cycle_overhead_s = std::max(0.0, call_s - charged);
    if (comm.rank() == 0)
      std::printf("# engine cycle: a one-float allreduce through the engine takes %.1f us a call; the model charges "
                  "%.1f us (negotiation and allreduce): %.1f us a cycle its own\n",
                  call_s * 1e6, charged * 1e6, *cycle_overhead_s * 1e6);
    if (layout.hosts > 1) {  // every rank takes part (only the column of rank 0 has `nodes`)
      c.reduce_s_per_byte = 1 / reduce_Bps;
      c.copy_Bps = copy_Bps;
      c.cycle_overhead_s = *cycle_overhead_s;
      lag = measure_hand_over_lag(engine, comm, std::max(call_s, charged));
      c.hand_over_lag_s = lag->median;  // the bursts' factors are over the model with it
      spread = measure_spread(engine, comm, c);
    }
    if (comm.rank() == 0) std::printf("\n");
  }
#endif

  // Rank 0 (in both sub-communicators) holds every result; it writes the file.
  if (comm.rank() != 0) return 0;
  std::ostringstream y;
  y << "# Written by riseml-bench --fit (docs/model.md) on " << hostname() << ", " << utc_now() << ": "
    << layout.hosts << " host(s) x " << per_node << " rank(s); median of " << rounds << " rounds.\n"
    << "# Links: a ring allgather's steps, alpha + m beta per step: latency from blocks <= 512 B, bandwidth\n"
    << "# from blocks >= 1 MiB (least squares on relative error); the error over 8 B - 16 MiB in the comment.\n"
    << "# reduce: float32 add of 16 MiB; copy: 16 gradients of 4 MiB into a 64 MiB fusion buffer and back,\n"
    << "# every rank at once.\n"
    << "network:\n"
    << "  gpus_per_node: " << per_node << "\n";
  auto link = [&](const char* key, const std::optional<Measured>& m, const char* over, const char* absent) {
    if (!m) {
      y << "  # " << key << ": not measured (" << absent << ")\n";
      return;
    }
    y << "  " << key << ": {bandwidth: " << rate_text(m->link.bandwidth_Bps) << ", latency: "
      << latency_text(m->link.latency_s) << "}   # " << m->ranks << over << "; fit within "
      << std::lround(100 * m->link.max_relative_error) << "%\n";
  };
  link("nodes_link", nodes, " hosts", "one host); run the fit across nodes (srun -N2 or more");
  link("intra_node", intra, " ranks of one host", "one rank a host); the model's default applies");
  if (spread) {
    char line[320];
    std::snprintf(line, sizeof line, "  spread: {fast: %.3f, mean: %.3f, slow: %.3f}   # %d bursts of %zu gradients "
                  "through the engine, at once and handed over: the engine's work over the model's, "
                  "fastest and slowest; mean over their median\n",
                  spread->fast, spread->mean, spread->slow, kSpreadCalls, 2 * kBurstLarge);
    y << line;
  }
  y << "  reduce_bandwidth: " << rate_text(reduce_Bps) << "\n"
    << "  copy_bandwidth: " << rate_text(copy_Bps) << "\n";
  if (cycle_overhead_s)
    y << "  cycle_overhead: " << latency_text(*cycle_overhead_s)
      << "   # the engine's own time a cycle, beyond negotiation and collectives\n";
  if (lag)
    y << "  hand_over_lag: {fast: " << latency_text(lag->fast) << ", median: " << latency_text(lag->median)
      << ", slow: " << latency_text(lag->slow) << "}   # a gradient handed over after idle, slowest rank, "
      << "beyond a cycle back to back; " << kLagTries << " tries\n";
  const std::string error = write_file_atomically(path, y.str());
  if (!error.empty()) {
    std::fprintf(stderr, "riseml-bench --fit: cannot write %s: %s\n", path.c_str(), error.c_str());
    return 1;
  }
  std::printf("# wrote %s%s\n", path.c_str(),
              nodes ? "" : " (without nodes_link: riseml estimate needs it; fit across nodes)");
  return 0;
}

}  // namespace riseml::bench
