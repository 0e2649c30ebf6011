#include "host_list.hpp"

#include "piped_child.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <set>
#include <stdexcept>

namespace riseml::elastic {

namespace {
bool host_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
         c == '-' || c == '_';
}

std::string shown(std::string_view text) {
  std::string out;
  for (char c : text.substr(0, 60)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out + (text.size() > 60 ? "..." : "");
}
}  // namespace

HostSlots parse_host(std::string_view item, int default_slots, const std::string& where) {
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(where + ": '" + shown(item) + "' " + why +
                                 " (want 'host' or 'host:slots')");
  };
  HostSlots h;
  const auto colon = item.find(':');
  const std::string_view name = item.substr(0, colon);
  if (name.empty() || name.size() > 255) throw bad("has no host name");
  for (char c : name)
    if (!host_character(c)) throw bad("is not a host name");
  h.host = std::string(name);
  h.slots = default_slots;
  if (colon != std::string_view::npos) {
    const std::string_view slots = item.substr(colon + 1);
    int n = 0;
    const auto [end, ec] = std::from_chars(slots.data(), slots.data() + slots.size(), n);
    if (ec != std::errc() || end != slots.data() + slots.size() || n < 1 || n > 4096)
      throw bad("has no slot count from 1 to 4096 after the ':'");
    h.slots = n;
  }
  return h;
}

std::vector<HostSlots> parse_hosts(const std::vector<std::string>& items, int default_slots,
                                   const std::string& where) {
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  for (const auto& item : items) {
    hosts.push_back(parse_host(item, default_slots, where));
    if (!seen.insert(hosts.back().host).second)
      throw std::invalid_argument(where + ": host " + hosts.back().host + " is listed twice");
  }
  return hosts;
}

std::vector<HostSlots> run_discovery_script(const std::string& script, int default_slots,
                                            std::chrono::milliseconds timeout) {
  const std::string who = "host discovery script " + script;
  // Its own process group: a script that runs too long is stopped with everything it started
  // (a child left behind would hold the driver's standard error open).
  const PipedChild child = start_piped({script}, {}, false, true);
  std::string output;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  bool timed_out = false;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      timed_out = true;
      break;
    }
    pollfd p{child.output, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(child.output, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    output.append(buf, static_cast<std::size_t>(n));
    if (output.size() > (1u << 20)) {
      ::kill(-child.pid, SIGKILL);
      ::close(child.output);
      ::waitpid(child.pid, nullptr, 0);
      throw std::runtime_error(who + " printed more than 1 MiB: not a host list");
    }
  }
  ::close(child.output);
  if (timed_out) ::kill(-child.pid, SIGKILL);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out)
    throw std::runtime_error(who + " ran longer than " + std::to_string(timeout.count()) +
                             " ms and was killed");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(who + (WIFEXITED(status)
                                        ? " exited with status " + std::to_string(WEXITSTATUS(status))
                                        : std::string(" was killed by a signal")) +
                             (WIFEXITED(status) && WEXITSTATUS(status) == 127 ? " (can it be run?)" : ""));
  std::vector<std::string> lines;
  std::vector<int> numbers;
  int number = 0;
  for (std::size_t at = 0; at < output.size();) {
    const auto nl = output.find('\n', at);
    std::string line = output.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
    at = nl == std::string::npos ? output.size() : nl + 1;
    ++number;
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) line.pop_back();
    std::size_t lead = 0;
    while (lead < line.size() && (line[lead] == ' ' || line[lead] == '\t')) ++lead;
    line.erase(0, lead);
    if (line.empty()) continue;
    lines.push_back(line);
    numbers.push_back(number);
  }
  std::vector<HostSlots> hosts;
  std::set<std::string> seen;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string where = who + ", line " + std::to_string(numbers[i]);
    try {
      hosts.push_back(parse_host(lines[i], default_slots, where));
    } catch (const std::invalid_argument& e) {
      throw std::runtime_error(e.what());
    }
    if (!seen.insert(hosts.back().host).second)
      throw std::runtime_error(where + ": host " + hosts.back().host + " is listed twice");
  }
  return hosts;
}

}  // namespace riseml::elastic
