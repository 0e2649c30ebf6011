// The rendezvous store of an elastic job: riseml-elastic serves it in the batch step, and every
// worker's bootstrap meets the others through it (PMIx cannot: Slurm 22.05 cancels a PMIx step
// when one of its tasks dies, and refuses fences among a subset). Only processes that prove the
// job secret get in. It keeps key/value pairs and holds fences among any set of ranks, so the
// survivors of a failure can form a new world without the ranks that are gone.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace riseml::elastic {

// A fence completed among other ranks than the one before it: the world re-formed.
struct WorldChange {
  std::vector<int> members;            // job ranks of the new world
  std::vector<int> left;               // job ranks of the last world that are not in it
  std::vector<int> joined;             // job ranks in it that the last world did not have
};

// A worker's word after a collective failed: the ranks its failure blamed (none when it blamed
// nobody) and the announced world it had formed. The driver decides the next world from it.
struct FailureReport {
  int rank = 0;
  long long world = -1;    // the number of the announced world the reporter had formed
  std::vector<int> culprits;
};

struct StoreServerOptions {
  std::string listen_address = "127.0.0.1";  // an IPv4 address of this host
  std::vector<std::byte> secret;             // the job secret (at least 16 bytes)
  // Strangers turned away and requests refused (one line each, no newline).
  std::function<void(const std::string&)> log;
  std::function<void(const WorldChange&)> on_world_change;
  std::function<void(const FailureReport&)> on_failure_report;
  // A worker started into a running job is up and waits for a world that has it.
  std::function<void(int rank)> on_worker_ready;
  std::chrono::milliseconds handshake_timeout{10000};
  int max_connections = 4096;
};

class StoreServer {
 public:
  // Listens on an ephemeral port of options.listen_address. Throws std::runtime_error saying why
  // it cannot.
  explicit StoreServer(StoreServerOptions options);
  ~StoreServer();  // closes every connection; waiting fences end
  StoreServer(const StoreServer&) = delete;
  StoreServer& operator=(const StoreServer&) = delete;

  std::string address() const;  // "a.b.c.d:port", for the workers
  // Tells the workers the world to form at their next re-formation (and a joining worker the
  // world it joins): the key "world" holds "<number>:<ranks>:<why>", numbered from 0. `why`
  // (one word: start, added, removed, mixed, failure) says what changed, for hvd.elastic's
  // host update (a world with only removed hosts needs no sync). Returns the number.
  long long announce_world(const std::vector<int>& members, const std::string& why);
  // Tells the workers that the world `number` (the next announcement) is coming: hosts were
  // added, and their workers are starting. At their next commit the workers wait for it (the key
  // "pending" holds the number).
  void announce_pending(long long number);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace riseml::elastic
