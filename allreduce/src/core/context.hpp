// What every algorithm runs on: this rank's place in the job, a Link to each peer, the peers'
// hosts (to name them in errors), the per-call timeout and the pre-allocated scratch space.
// Gloo calls the same thing a context. The transports see only its PeerLinks part.
#pragma once

#include <riseml/communicator.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "../transport/peer_links.hpp"
#include "placement.hpp"

namespace riseml {

struct Doorbell;

struct PeerInfo {
  std::string host_key;   // hostname + boot id: equal means "same machine, shared memory works"
  int pid = 0;
  std::vector<int> cpus;  // where it may run (its affinity at setup); empty: unknown
};

// An ordered subset of the ranks that runs an algorithm together (all ranks, the ranks of one
// host, one rank per host ...), with this rank's index in it.
struct Group {
  std::span<const int> ranks;
  int index = 0;
  int size() const { return static_cast<int>(ranks.size()); }
  int at(int i) const { return ranks[static_cast<std::size_t>(((i % size()) + size()) % size())]; }
};

class Context : public PeerLinks {
 public:
  Context(Rendezvous& rendezvous, const CommunicatorOptions& options);
  ~Context();
  // The fences of a setup, without joining it (see Communicator::stand_by).
  static void stand_by(Rendezvous& rendezvous, const CommunicatorOptions& options);

  int rank() const { return rank_; }
  int size() const { return size_; }
  const CommunicatorOptions& options() const { return options_; }
  const PeerInfo& peer(int r) const { return peers_[static_cast<std::size_t>(r)]; }

  // The whole job, and the layout used by the hierarchical algorithm.
  Group world() const { return {world_, rank_}; }
  Group local() const { return {local_ranks_, local_index_}; }        // my host's ranks
  Group column() const { return {column_ranks_, column_index_}; }     // my local index, every host
  bool uniform_hosts() const { return uniform_hosts_; }               // same #ranks on every host
  int hosts() const { return hosts_; }

  // Sets the deadline of the call that starts now.
  void start_call() { deadline_ = std::chrono::steady_clock::now() + timeout_; }
  std::uint64_t next_sequence() { return sequence_++; }

  // Scratch that grows to the largest size asked for and is then reused (which: 0..2).
  std::byte* scratch(std::size_t bytes, int which = 0);

  // A failed communicator stays failed; every later call throws `failure_`.
  void fail(const CollectiveError& error) noexcept;
  void throw_if_failed() const;

  std::string describe_transports() const;
  // The CPU lists of this host's ranks and how this rank waits, e.g. "cpus [0] [1], spin 50 us".
  std::string describe_placement() const;

  // See Communicator::wait_for_peers / interrupt_wait.
  void wait_for_peers(std::chrono::microseconds timeout, const std::function<bool()>& has_local_work,
                      std::mutex* links_guard);
  void interrupt_wait() noexcept;

 private:
  void exchange_host_facts(Rendezvous& rendezvous);
  void build_layout();
  void connect(Rendezvous& rendezvous);

  CommunicatorOptions options_;
  int rank_ = 0;
  int size_ = 1;
  std::vector<PeerInfo> peers_;
  std::vector<int> world_, local_ranks_, column_ranks_;
  int local_index_ = 0, column_index_ = 0, hosts_ = 1;
  bool uniform_hosts_ = true;
  SpinDecision spin_decision_;
  std::uint64_t sequence_ = 0;
  std::vector<std::byte> scratch_[3];
  int interrupt_fd_ = -1;         // an eventfd: wakes wait_for_peers when it polls
  Doorbell* doorbell_ = nullptr;  // this rank's, when it has shared-memory peers
  bool failed_ = false;
  ErrorKind failure_kind_ = ErrorKind::aborted;
  std::string failure_;
};

}  // namespace riseml
