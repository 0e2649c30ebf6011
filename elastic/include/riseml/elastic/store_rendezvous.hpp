// The core's Rendezvous over the elastic store: keys under the rank that put them, fences
// numbered per member list, so the survivors of a failure fence among themselves while the
// ranks that are gone never answer again.
#pragma once

#include <riseml/elastic/store_client.hpp>
#include <riseml/rendezvous.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace riseml::elastic {

class StoreRendezvous : public Rendezvous {
 public:
  // `size`: how many job ranks there can be (ranks are never reused: a joining worker takes
  // new ones). `first_fence_wait`: how long the first fence may wait at least (a worker that
  // joins a running job waits for the others to reach their next commit).
  StoreRendezvous(std::shared_ptr<StoreClient> client, int rank, int size,
                  std::vector<std::byte> secret,
                  std::chrono::milliseconds first_fence_wait = std::chrono::milliseconds(0));

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  void put(std::string_view key, const std::vector<std::byte>& value) override;
  void fence(std::chrono::milliseconds timeout) override;
  void fence_among(const std::vector<int>& ranks, std::chrono::milliseconds timeout) override;
  std::vector<std::byte> get(int rank, std::string_view key,
                             std::chrono::milliseconds timeout) override;
  std::vector<std::byte> job_secret() override { return secret_; }

 private:
  std::shared_ptr<StoreClient> client_;
  int rank_;
  int size_;
  std::vector<std::byte> secret_;
  std::map<std::vector<int>, long long> fences_;  // how many fences each member list held
  std::chrono::milliseconds first_fence_wait_;
};

}  // namespace riseml::elastic
