// The bootstrap Session of a process started without any launcher: rank 0 of 1, with its key
// exchange in memory, so the same program runs alone without a PMIx server.
#pragma once

#include <riseml/pmix/session.hpp>

#include <map>
#include <string>

namespace riseml::pmix {

class SingleProcessSession final : public Session {
 public:
  SingleProcessSession();
  ~SingleProcessSession() override;

  const JobFacts& facts() const override { return facts_; }
  void put(std::string_view key, std::span<const std::byte> value) override;
  void commit() override;
  void fence(std::chrono::milliseconds timeout) override;
  void fence_among(const std::vector<int>& ranks, std::chrono::milliseconds timeout) override;
  std::vector<std::byte> get(int rank, std::string_view key,
                             std::chrono::milliseconds timeout) override;
  const std::vector<std::byte>& job_secret() const override { return secret_; }

 private:
  [[noreturn]] void fail(const std::string& what) const;

  JobFacts facts_;
  std::vector<std::byte> secret_;
  std::map<std::string, std::vector<std::byte>, std::less<>> staged_;
  std::map<std::string, std::vector<std::byte>, std::less<>> visible_;
};

}  // namespace riseml::pmix
