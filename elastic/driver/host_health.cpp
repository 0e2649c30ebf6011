#include "host_health.hpp"

#include <algorithm>
#include <memory>
#include <random>

namespace riseml::elastic {

HostHealth::HostHealth(std::optional<std::pair<double, double>> cooldown_seconds,
                       std::function<double()> uniform01)
    : cooldown_(cooldown_seconds), uniform01_(std::move(uniform01)) {
  if (!uniform01_) {
    auto engine = std::make_shared<std::mt19937_64>(std::random_device{}());
    uniform01_ = [engine] { return std::uniform_real_distribution<double>(0.0, 1.0)(*engine); };
  }
}

std::optional<HostHealth::Clock::duration> HostHealth::blacklist(const std::string& host,
                                                                 Clock::time_point now) {
  State& s = hosts_[host];
  if (s.failures > 0 && (!s.back || *s.back > now))  // still out: the same failure
    return s.back ? std::optional<Clock::duration>(*s.back - now) : std::nullopt;
  ++s.failures;
  if (!cooldown_) {
    s.back.reset();
    return std::nullopt;
  }
  const auto [low, high] = *cooldown_;
  const double doubled = low * static_cast<double>(1ull << std::min(s.failures, 40));
  const double seconds = std::clamp(doubled + uniform01_() * low, low, high);
  const auto out = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  s.back = now + out;
  return out;
}

bool HostHealth::usable(const std::string& host, Clock::time_point now) const {
  const auto it = hosts_.find(host);
  return it == hosts_.end() || it->second.failures == 0 || (it->second.back && *it->second.back <= now);
}

bool HostHealth::cooling(const std::string& host, Clock::time_point now) const {
  const auto it = hosts_.find(host);
  return it != hosts_.end() && it->second.failures > 0 && it->second.back && *it->second.back > now;
}

int HostHealth::failures(const std::string& host) const {
  const auto it = hosts_.find(host);
  return it == hosts_.end() ? 0 : it->second.failures;
}

}  // namespace riseml::elastic
