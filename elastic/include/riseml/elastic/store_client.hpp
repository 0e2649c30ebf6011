// A worker's connection to the elastic rendezvous store (see store_server.hpp). One request at
// a time; every failure is a RendezvousError that names the store's address and says why.
#pragma once

#include <riseml/rendezvous.hpp>
#include <riseml/tcp_socket.hpp>

#include <chrono>
#include <cstddef>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace riseml::elastic {

class StoreClient {
 public:
  // Connects to "host:port" (retrying a refused connection until `timeout`) and proves the
  // job secret; the store must prove it too.
  StoreClient(std::string address, std::vector<std::byte> secret, std::chrono::milliseconds timeout);

  const std::string& address() const { return address_; }
  void put(const std::string& key, const std::string& value);
  std::optional<std::string> get(const std::string& key);
  // Returns once every member entered the fence `name`; else, after `timeout`, the members that
  // did not (never empty then).
  std::vector<int> fence(const std::string& name, const std::vector<int>& members, int rank,
                         std::chrono::milliseconds timeout);

  struct AnnouncedWorld {
    long long number = 0;
    std::vector<int> members;
    std::string why;  // start, added, removed, mixed or failure (StoreServer::announce_world)
  };
  // The world riseml-elastic announced last (StoreServer::announce_world); nullopt if none.
  std::optional<AnnouncedWorld> announced_world();
  // The number of the world riseml-elastic said is coming (StoreServer::announce_pending).
  std::optional<long long> pending_world();
  // Tells the driver that a collective failed on this rank, blaming `culprits` (maybe none),
  // while it had formed the announced world `world`; the driver announces the next world.
  void report_failure(int rank, long long world, const std::vector<int>& culprits);
  // A worker started into a running job: says it is up, then waits (up to `timeout`) for an
  // announced world that has `rank`. Fails naming the wait when none comes.
  AnnouncedWorld join(int rank, std::chrono::milliseconds timeout);

 private:
  struct Answer {
    unsigned char op;
    std::vector<std::string> fields;
  };
  Answer call(unsigned char op, std::vector<std::string> fields, std::chrono::milliseconds wait);
  [[noreturn]] void fail(const std::string& why) const;

  std::string address_;
  std::vector<std::byte> secret_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  Fd fd_;
};

}  // namespace riseml::elastic
