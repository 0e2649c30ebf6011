// What to change: the engine settings tried one at a time against the given ones, and the
// cluster shapes for a scaling table.
#pragma once

#include <string>
#include <vector>

#include "riseml/model/engine_schedule.hpp"

namespace riseml::model {

struct Advice {
  std::string setting;   // how to set it, e.g. "RISEML_FUSION_THRESHOLD=134217728"
  std::string why;       // one line
  EngineSettings engine;
  Prediction prediction;
  double gain = 0;       // efficiency points over the given settings (0.05 = 5 points)
};

// Each kind of change (fp16 compression, fusion threshold, algorithm, cycle time), its best
// value if it gains at least `min_gain`, best first.
std::vector<Advice> advise(const StepProfile& profile, const Cluster& cluster, const EngineSettings& engine,
                           double min_gain = 0.005);

// `gpus` ranks on nodes of `per_node` (fewer on one node when gpus < per_node); links as `base`.
Cluster cluster_for(const Cluster& base, int gpus, int per_node);

// The most the links allow, as riseml-replay prints it: compute / max(compute, forward + all
// gradients through a ring across the nodes, bandwidth only).
double link_bound(const StepProfile& profile, const Cluster& cluster, bool fp16);

}  // namespace riseml::model
