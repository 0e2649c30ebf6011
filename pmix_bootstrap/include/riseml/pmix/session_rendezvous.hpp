// The collectives core's rendezvous interface, served by a bootstrap Session.
#pragma once

#include <riseml/pmix/session.hpp>
#include <riseml/rendezvous.hpp>

#include <memory>

namespace riseml::pmix {

class SessionRendezvous : public Rendezvous {
 public:
  explicit SessionRendezvous(std::shared_ptr<Session> session);

  int rank() const override;
  int size() const override;
  void put(std::string_view key, const std::vector<std::byte>& value) override;
  // Commits this rank's puts first, so a put is visible after the next fence as promised.
  void fence(std::chrono::milliseconds timeout) override;
  void fence_among(const std::vector<int>& ranks, std::chrono::milliseconds timeout) override;
  // Every rank's values arrived with the fence, so nothing is waited for: a key that was not
  // put before the last fence is an error at once.
  std::vector<std::byte> get(int rank, std::string_view key,
                             std::chrono::milliseconds timeout) override;
  std::vector<std::byte> job_secret() override;

  Session& session() const { return *session_; }

 private:
  std::shared_ptr<Session> session_;
};

}  // namespace riseml::pmix
