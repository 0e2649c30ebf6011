// What the runtime is started with. The binding (the edge) fills it, usually with
// CommunicatorOptions::from_environment() and engine::EngineOptions::from_environment(); the
// runtime itself reads no environment.
#pragma once

#include <chrono>

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
  // Under a launcher that decides every next world (riseml-elastic), how long an elastic init()
  // after a failure waits for it (the launcher may wait for hosts to reach its minimum).
  std::chrono::milliseconds next_world_wait = std::chrono::minutes(10);
  // This init() follows a collective failure the caller saw (hvd.elastic: HorovodInternalError),
  // even when the engine stopped by a peer's shutdown (a peer that exits shuts the engine down
  // on every rank): under riseml-elastic it is reported as a failure.
  bool after_failure = false;
};

}  // namespace riseml::runtime
