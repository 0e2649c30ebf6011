// Which hosts may run workers: a host whose worker failed is blacklisted; with a cooldown range
// it comes back after a while that grows with each failure (Horovod's rule: LOW * 2^failures
// plus up to LOW more, kept within [LOW, HIGH] seconds), else never.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace riseml::elastic {

class HostHealth {
 public:
  using Clock = std::chrono::steady_clock;
  // `uniform01`: a random number in [0, 1) (tests give their own).
  explicit HostHealth(std::optional<std::pair<double, double>> cooldown_seconds,
                      std::function<double()> uniform01 = {});

  // A worker of `host` failed. Returns how long the host is out (nullopt: for good). A host that
  // fails again while it is still out stays out as long as it was (not counted twice).
  std::optional<Clock::duration> blacklist(const std::string& host, Clock::time_point now);
  // Not blacklisted, or its cooldown has passed.
  bool usable(const std::string& host, Clock::time_point now) const;
  // Blacklisted now, but with a cooldown that ends: it will be usable again.
  bool cooling(const std::string& host, Clock::time_point now) const;
  int failures(const std::string& host) const;

 private:
  struct State {
    int failures = 0;
    std::optional<Clock::time_point> back;  // when it may run workers again; nullopt: never
  };
  std::optional<std::pair<double, double>> cooldown_;
  std::function<double()> uniform01_;
  std::map<std::string, State> hosts_;
};

}  // namespace riseml::elastic
