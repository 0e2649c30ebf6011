// What the runtime is started with. The binding (the edge) fills it, usually with
// CommunicatorOptions::from_environment() and engine::EngineOptions::from_environment(); the
// runtime itself reads no environment.
#pragma once

#include <riseml/communicator.hpp>
#include <riseml/engine/engine_options.hpp>

namespace riseml::runtime {

struct RuntimeOptions {
  // For the job's communicator and every process set's. rendezvous_prefix is the runtime's to
  // set: it keys communicators apart by generation and process set.
  CommunicatorOptions communicator;
  // For the job's engine and every process set's; only the job's engine writes the timeline.
  engine::EngineOptions engine;
  // Elastic training: an init() after a failure that blamed a rank (a dead or silent one)
  // re-forms the world without it: the survivors, numbered anew in their old order, meet
  // among themselves (they do not wait for the lost rank). Off: init() always takes the whole
  // job, as the launcher started it.
  bool elastic = false;
};

}  // namespace riseml::runtime
