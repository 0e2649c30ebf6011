// The plugin's settings: the plugstack.conf arguments (admin) and the --riseml-bind value (user).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "planner.hpp"

namespace riseml::spank {

struct BindRequest {
  enum class Mode { none, full, env_only };  // full: environment + CPU and memory binding
  Mode mode = Mode::none;
  bool verbose = false;
};

enum class OnError { fail, warn };
enum class MemBind { bind, prefer, none };

struct PluginConfig {
  BindRequest default_bind;  // when the user gives no --riseml-bind
  std::string topology;      // absolute path of an hwloc XML export; empty: this node
  placement::PlanOptions plan;
  OnError on_error = OnError::fail;
  MemBind membind = MemBind::bind;
  // The riseml-topology helper that reads the topology in its own process (read_topology.hpp).
  std::string topology_helper;          // absolute path; empty: beside the plugin, else installed
  unsigned topology_timeout_s = 30;     // then the helper is killed and placement fails
  std::string topology_cache = "/tmp";  // folder for the per-user cache; empty: no cache
};

// "auto", "none", "verbose", "env", "auto,verbose", "env,verbose". Returns false with a message
// naming the accepted values.
bool parse_bind(std::string_view value, BindRequest& out, std::string& error);
std::string bind_help();

// key=value arguments of plugstack.conf; unknown keys and bad values are errors.
bool parse_plugin_config(const std::vector<std::string>& args, PluginConfig& out, std::string& error);

}  // namespace riseml::spank
