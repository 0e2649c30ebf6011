// The hosts a job may use, each with its slots (workers on it): from the command line
// (--hosts a,b:2) or from a discovery script's lines, as Horovod's --host-discovery-script prints
// them ("host" or "host:slots", one per line).
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace riseml::elastic {

struct HostSlots {
  std::string host;
  int slots = 1;
  bool operator==(const HostSlots&) const = default;
};

// "host" or "host:slots" (slots 1 to 4096; a host name of letters, digits, '.', '-', '_').
// Throws std::invalid_argument naming `where` and saying what is wrong.
HostSlots parse_host(std::string_view item, int default_slots, const std::string& where);

// Every item of a host list; a host listed twice is an error.
std::vector<HostSlots> parse_hosts(const std::vector<std::string>& items, int default_slots,
                                   const std::string& where);

// Runs the discovery script (no shell, no arguments) and parses what it prints, blank lines
// skipped. Throws std::runtime_error naming the script: it cannot run, it exits nonzero, it runs
// past `timeout` (then it is killed), or a line is not a host (the line number is given).
std::vector<HostSlots> run_discovery_script(const std::string& script, int default_slots,
                                            std::chrono::milliseconds timeout);

}  // namespace riseml::elastic
