// Shared by the engine tests: n ranks as threads of this process (an in-memory rendezvous, the
// in-process transport), each with its own Engine.
#pragma once

#include <riseml/engine/engine.hpp>
#include <riseml/in_memory_rendezvous.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace riseml::engine::testing {

using Body = std::function<void(Engine&, int)>;

inline CommunicatorOptions inproc() {
  CommunicatorOptions o;
  o.transport = TransportChoice::inproc;
  o.timeout = std::chrono::seconds(20);
  return o;
}

// Runs `body` on n ranks; what a rank threw becomes a test failure naming the rank.
inline void run_engines(int n, const std::function<EngineOptions(int)>& options_for,
                        const Body& body, const CommunicatorOptions& communicator = inproc()) {
  auto hub = std::make_shared<InMemoryRendezvousHub>(n);
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        InMemoryRendezvous rendezvous(hub, r);
        Engine engine(rendezvous, communicator, options_for(r));
        body(engine, r);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
}

}  // namespace riseml::engine::testing
