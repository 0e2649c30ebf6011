// The engine's behaviour over one step (the Horovod-style background loop of engine/):
// every cycle it negotiates the tensors ready on all ranks, packs them in order into fusion
// buffers of at most the fusion threshold, and reduces the buffers one after the other, while
// the backward pass goes on computing. The step ends when both are done.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "riseml/model/collective_cost.hpp"
#include "riseml/model/step_profile.hpp"

namespace riseml::model {

struct EngineSettings {
  double cycle_s = 1e-3;              // RISEML_CYCLE_TIME_MS (Horovod's default was 5 ms)
  // riseml's engine parks when no rank has work and starts a cycle the moment a gradient is
  // handed to it (engine/src/engine_loop.cpp): that gradient goes alone, the ones handed over
  // microseconds later wait for the next cycle, which starts as soon as this one's work ends.
  // The cycle time then never delays a step whose ranks submit alike (riseml-replay's timelines:
  // 10 collectives where a cycle grid would fuse 6). Horovod's loop sleeps out every cycle: false.
  bool start_when_idle = true;
  // riseml's engine on GPU nodes (with start_when_idle): after a cycle that ran work it waits
  // out the cycle time before the next, since a GPU cycle only enqueues and ends at once (a
  // cycle per gradient would be an NCCL call per gradient); after an idle stretch a gradient
  // still wakes it. The model leaves out that the caller's synchronize() runs the step's last
  // cycle at once (it puts it on the grid: up to a cycle late).
  bool linger_after_work = false;
  double fusion_bytes = 64u << 20;    // RISEML_FUSION_THRESHOLD; 0: no fusion
  bool fp16 = false;                  // gradients sent as float16: 2 bytes an element, not 4
  bool response_cache = true;         // negotiation is one small bit-vector allreduce a cycle
  Algorithm algorithm = Algorithm::automatic;  // RISEML_ALGORITHM
  double small_bytes = 65536;         // RISEML_SMALL_BYTES
  // riseml's engine runs a cycle's tensors of at most this many bytes first, fused among
  // themselves, then the larger ones (engine/src/executor.cpp): two collectives where one buffer
  // would do (riseml-replay's timelines: 31 collectives a step where a single buffer a cycle makes
  // 13). 0: one buffer for all (Horovod).
  double small_first_bytes = 65536;
  // Without the response cache: the bytes of one tensor's request (name, shape, type), gathered
  // by rank 0 from every rank and broadcast back as a response.
  double request_bytes = 96;
};

// One collective as the simulated engine runs it (riseml-replay's timeline shows the same
// phases, tools/sweeps/schedule_vs_timeline.py sets them side by side). Seconds from the step's
// start.
struct ScheduledCollective {
  int cycle = 0;
  std::vector<std::size_t> gradients;  // the gradients it carries (indices in backward order)
  double bytes = 0;
  Algorithm algorithm = Algorithm::ring;
  double cycle_start_s = 0;  // the cycle that took it began (negotiation follows)
  double start_s = 0;        // its copy-in (fused) or wire time begins
  double copy_s = 0;         // into and out of the fusion buffer
  double wire_s = 0;         // the allreduce itself
  double end_s = 0;
};

// Where the step's time goes. Times in seconds.
struct Prediction {
  double compute_s = 0;     // forward + backward (the step without communication)
  double step_s = 0;        // max(compute end, last allreduce end)
  double exposed_s = 0;     // step - compute: communication the backward pass did not hide
  double efficiency = 1;    // compute / step
  Cost wire;                // the collectives' alpha, beta and gamma terms, summed
  double copy_s = 0;        // into and out of fusion buffers
  double negotiation_s = 0; // per cycle with work: cache bit vector or requests
  double cycle_overhead_s = 0;  // per cycle with work: the engine's own (Cluster::cycle_overhead_s)
  double engine_busy_s = 0; // wire + copy + negotiation + cycle overhead
  double queue_s = 0;       // summed over tensors: ready until its cycle starts
  double backward_end_s = 0;   // when the last gradient's compute (and the tail) ends
  double compute_slowed_s = 0; // how much later that is because collectives slowed compute
  int cycles = 0, collectives = 0;
  double bytes_per_rank = 0;   // all gradients, as sent
  std::map<Algorithm, int> algorithms;  // collectives run by each algorithm
  std::vector<ScheduledCollective> schedule;  // every collective, in the order it ran
};

// What the step waits for longest: the backward pass (communication hidden), or, of the
// engine's work that ends the step, its largest part. The backward pass counts as the bound
// while the engine ends at most kHiddenBelowShare of the step after it: the last gradient's own
// collective can never be hidden, and a step 1% longer is below what the model resolves (its
// target is 5%). Without that, a step at efficiency 1.000 was "bounded by the link".
inline constexpr double kHiddenBelowShare = 0.01;
enum class Bound { compute, link_bandwidth, latency, reduction, fusion_copies };
Bound bounding_resource(const Prediction& p);
std::string_view to_string(Bound b);

Prediction simulate_step(const StepProfile& profile, const Cluster& cluster, const EngineSettings& engine);

}  // namespace riseml::model
