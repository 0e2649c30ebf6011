#include "riseml/model/advice.hpp"

#include <algorithm>
#include <cstdio>

namespace riseml::model {

namespace {

std::string mib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f", bytes / (1 << 20));
  return buf;
}

}  // namespace

std::vector<Advice> advise(const StepProfile& profile, const Cluster& cluster, const EngineSettings& engine,
                           double min_gain) {
  const double base = simulate_step(profile, cluster, engine).efficiency;
  std::vector<Advice> out;
  // Tries each candidate of one kind and keeps the best that gains enough.
  auto best_of = [&](const std::vector<Advice>& candidates) {
    const Advice* best = nullptr;
    std::vector<Advice> scored = candidates;
    for (auto& a : scored) {
      a.prediction = simulate_step(profile, cluster, a.engine);
      a.gain = a.prediction.efficiency - base;
      if (a.gain >= min_gain && (!best || a.gain > best->gain)) best = &a;
    }
    if (best) out.push_back(*best);
  };
  if (!engine.fp16) {
    EngineSettings e = engine;
    e.fp16 = true;
    best_of({{"fp16 compression (riseml.torch: compression=Compression.fp16; riseml-replay --fp16)",
              "half the bytes on the wire", e, {}, 0}});
  }
  std::vector<Advice> fusion;
  for (double mb : {0.0, 4.0, 16.0, 32.0, 64.0, 128.0, 256.0}) {
    if (mb * (1 << 20) == engine.fusion_bytes) continue;
    EngineSettings e = engine;
    e.fusion_bytes = mb * (1 << 20);
    fusion.push_back({"RISEML_FUSION_THRESHOLD=" + std::to_string(static_cast<long long>(e.fusion_bytes)) + " (" +
                          mib(e.fusion_bytes) + " MiB)",
                      mb == 0 ? "no fusion: every tensor starts as soon as it is negotiated"
                              : "fusion buffers of this size balance per-collective latency against waiting",
                      e, {}, 0});
  }
  best_of(fusion);
  std::vector<Advice> algorithms;
  const bool multi_node = cluster.nodes >= 2 && cluster.ranks_per_node >= 2;
  if (cluster.host_path.on) {
    // GPU nodes: NCCL over all ranks (the default, auto) or the hierarchical mode (docs/gpu.md).
    const bool hierarchical = engine.algorithm == Algorithm::hierarchical;
    EngineSettings e = engine;
    e.algorithm = hierarchical ? Algorithm::automatic : Algorithm::hierarchical;
    if (hierarchical)
      algorithms.push_back({"RISEML_GPU_ALGORITHM=nccl", "one NCCL communicator over all GPUs", e, {}, 0});
    else if (multi_node)
      algorithms.push_back({"RISEML_GPU_ALGORITHM=hierarchical (or HOROVOD_HIERARCHICAL_ALLREDUCE=1)",
                            "NCCL inside each node, the hosts' CPUs between nodes: the GPUs compute undisturbed "
                            "while the step between nodes runs",
                            e, {}, 0});
  } else {
    for (Algorithm a : {Algorithm::automatic, Algorithm::ring, Algorithm::halving_doubling, Algorithm::hierarchical}) {
      if (a == engine.algorithm) continue;
      if (a == Algorithm::hierarchical && !multi_node) continue;
      EngineSettings e = engine;
      e.algorithm = a;
      algorithms.push_back({"RISEML_ALGORITHM=" + std::string(a == Algorithm::halving_doubling ? "hd" : to_string(a)),
                            a == Algorithm::hierarchical ? "only 1/L of the bytes of each node's ranks cross its link"
                                                         : "a different allreduce algorithm for every buffer",
                            e, {}, 0});
    }
  }
  best_of(algorithms);
  std::vector<Advice> cycles;
  for (double ms : {0.25, 0.5, 1.0, 2.0, 5.0}) {
    // riseml's engine starts a cycle when work arrives: its cycle time does not shape the step.
    if (engine.start_when_idle || ms / 1e3 == engine.cycle_s) continue;
    EngineSettings e = engine;
    e.cycle_s = ms / 1e3;
    char buf[64];
    std::snprintf(buf, sizeof buf, "RISEML_CYCLE_TIME_MS=%g", ms);
    cycles.push_back({buf,
                      e.cycle_s < engine.cycle_s ? "gradients wait less for the next cycle"
                                                 : "fewer, larger collectives: less latency a step",
                      e, {}, 0});
  }
  best_of(cycles);
  std::sort(out.begin(), out.end(), [](const Advice& a, const Advice& b) { return a.gain > b.gain; });
  return out;
}

Cluster cluster_for(const Cluster& base, int gpus, int per_node) {
  Cluster c = base;
  per_node = std::max(1, per_node);
  c.ranks_per_node = std::min(gpus, per_node);
  c.nodes = std::max(1, (gpus + per_node - 1) / per_node);
  if (c.nodes > 1 && gpus % per_node != 0) c.ranks_per_node = per_node;  // rounded up to whole nodes
  return c;
}

double link_bound(const StepProfile& profile, const Cluster& c, bool fp16) {
  const double compute = profile.compute_s();
  if (c.nodes <= 1) return 1;
  const double bytes = profile.elements() * (fp16 ? 2 : 4);
  const double wire = bytes * 2 * (c.nodes - 1) / c.nodes / c.inter.bandwidth_Bps;
  return compute / std::max(compute, profile.forward_s + wire);
}

}  // namespace riseml::model
