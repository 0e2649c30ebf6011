// The rendezvous interface the collectives core takes to find its peers.
// The core owns this header; pmix_bootstrap/ implements it over PMIx, tests implement it in memory.
// Errors are thrown as riseml::RendezvousError (never across a C ABI).
#pragma once

#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace riseml {

class RendezvousError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Publishes key=value under this rank; visible to the other ranks after the next fence().
  virtual void put(std::string_view key, const std::vector<std::byte>& value) = 0;

  // Collective: every rank must call it. Returns once every rank's puts are visible to all.
  virtual void fence(std::chrono::milliseconds timeout) = 0;

  // fence() among `ranks` only (sorted, distinct, this rank among them): the others do not
  // take part, so the survivors of a job can meet without a rank that died (elastic training).
  // A rendezvous that cannot throws RendezvousError unless `ranks` is every rank.
  virtual void fence_among(const std::vector<int>& ranks, std::chrono::milliseconds timeout) {
    if (static_cast<int>(ranks.size()) == size()) return fence(timeout);
    throw RendezvousError("this rendezvous cannot fence a subset of the ranks");
  }

  // The value `rank` put under `key` before the last fence. Throws RendezvousError when absent.
  virtual std::vector<std::byte> get(int rank, std::string_view key,
                                     std::chrono::milliseconds timeout) = 0;

  // A secret shared by exactly the processes of this job, for authenticating connections.
  virtual std::vector<std::byte> job_secret() = 0;
};

}  // namespace riseml
