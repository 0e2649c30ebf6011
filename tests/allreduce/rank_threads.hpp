// Runs N ranks as threads of this process, each with its own Communicator over an in-memory
// rendezvous, and collects what each rank threw.
#pragma once

#include <riseml/communicator.hpp>
#include <riseml/in_memory_rendezvous.hpp>

#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace riseml::test {

struct RankOutcome {
  bool ok = true;
  std::string error;
  ErrorKind kind = ErrorKind::aborted;
  int culprit = -1;
};

using RendezvousFactory =
    std::function<std::unique_ptr<Rendezvous>(std::shared_ptr<InMemoryRendezvousHub>, int)>;

// `options_for(rank)` lets a test give ranks different options (fake hosts, bad algorithms);
// `make_rendezvous` lets it wrap a rank's rendezvous (a wrong secret, a rogue connection).
inline std::vector<RankOutcome> run_ranks(
    int n, const std::function<CommunicatorOptions(int)>& options_for,
    const std::function<void(Communicator&)>& body, RendezvousFactory make_rendezvous = {}) {
  if (!make_rendezvous)
    make_rendezvous = [](std::shared_ptr<InMemoryRendezvousHub> hub, int r) {
      return std::make_unique<InMemoryRendezvous>(std::move(hub), r);
    };
  auto hub = std::make_shared<InMemoryRendezvousHub>(n);
  std::vector<RankOutcome> outcomes(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      RankOutcome& o = outcomes[static_cast<std::size_t>(r)];
      try {
        auto rendezvous = make_rendezvous(hub, r);
        Communicator comm(*rendezvous, options_for(r));
        body(comm);
      } catch (const CollectiveError& e) {
        o = {false, e.what(), e.kind(), e.culprit_rank()};
      } catch (const std::exception& e) {
        o = {false, e.what(), ErrorKind::aborted, -1};
      }
    });
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

inline std::vector<RankOutcome> run_ranks(int n, const CommunicatorOptions& options,
                                          const std::function<void(Communicator&)>& body) {
  return run_ranks(n, [&](int) { return options; }, body);
}

inline CommunicatorOptions inproc_options(std::chrono::milliseconds timeout = std::chrono::seconds(30)) {
  CommunicatorOptions o;
  o.transport = TransportChoice::inproc;
  o.timeout = timeout;
  return o;
}

}  // namespace riseml::test
