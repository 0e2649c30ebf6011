// The core's rendezvous interface over a c10d Store (TCPStore, FileStore, a PrefixStore of a
// subgroup, torchrun's): keys are scoped to this group's instance on the store, a fence is a
// counter plus a "done" key, and a fence that times out names the ranks that never arrived.
#pragma once

#include <riseml/rendezvous.hpp>

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace riseml::torch_distributed {

class StoreRendezvous : public Rendezvous {
 public:
  // Collective only in that every member must construct one (it numbers the instances made
  // on one store, so a group created twice on the same store does not see the old keys).
  // `secret`: the job secret to hand out; unset, rank 0 draws one and shares it in the store.
  StoreRendezvous(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                  std::chrono::milliseconds timeout, std::optional<std::vector<std::byte>> secret);

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void put(std::string_view key, const std::vector<std::byte>& value) override;
  void fence(std::chrono::milliseconds timeout) override;
  std::vector<std::byte> get(int rank, std::string_view key,
                             std::chrono::milliseconds timeout) override;
  std::vector<std::byte> job_secret() override;

  // Waits until every rank has passed the same number of arrive() calls (a barrier through the
  // store, for the monitored barrier). Returns the ranks missing after `timeout` (empty: all
  // arrived); rank 0 is the only one that waits for the others, the others wait for rank 0.
  // Throws RendezvousError("Rank 0 timed out ...") when rank 0's time is up before it could
  // look for a rank, as gloo says it.
  std::vector<int> monitored_arrival(std::uint64_t number, std::chrono::milliseconds timeout,
                                     bool wait_all_ranks);

  // Key names of this group instance.
  std::string key(std::string_view name) const;

 private:
  void wait_for(const std::string& key, std::chrono::milliseconds timeout, const char* what);

  c10::intrusive_ptr<c10d::Store> store_;
  int rank_;
  int size_;
  std::chrono::milliseconds timeout_;
  std::string prefix_;
  std::uint64_t fences_ = 0;
  std::optional<std::vector<std::byte>> secret_;
};

}  // namespace riseml::torch_distributed
