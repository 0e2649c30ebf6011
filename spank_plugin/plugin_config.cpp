#include "plugin_config.hpp"

#include <algorithm>
#include <charconv>

#include "cpu_list.hpp"

namespace riseml::spank {

std::string bind_help() {
  return "auto (GPU, CPU, memory and NIC binding), env (only the environment), none, "
         "verbose (auto, printing each task's plan), or auto,verbose / env,verbose";
}

bool parse_bind(std::string_view value, BindRequest& out, std::string& error) {
  BindRequest r;
  bool mode_set = false;
  const auto parts = placement::split(value, ',');
  if (parts.empty()) {
    error = "--riseml-bind needs a value: " + bind_help();
    return false;
  }
  for (const std::string& p : parts) {
    BindRequest::Mode m;
    if (p == "verbose") {
      r.verbose = true;
      continue;
    } else if (p == "auto") {
      m = BindRequest::Mode::full;
    } else if (p == "env") {
      m = BindRequest::Mode::env_only;
    } else if (p == "none") {
      m = BindRequest::Mode::none;
    } else {
      error = "--riseml-bind=" + std::string(value) + ": '" + p + "' is not a choice; use " + bind_help();
      return false;
    }
    if (mode_set && m != r.mode) {
      error = "--riseml-bind=" + std::string(value) + ": choose one of auto, env and none";
      return false;
    }
    r.mode = m;
    mode_set = true;
  }
  if (!mode_set) r.mode = BindRequest::Mode::full;  // plain "verbose"
  if (r.mode == BindRequest::Mode::none && r.verbose) {
    error = "--riseml-bind=" + std::string(value) + ": none binds nothing, so there is nothing to print";
    return false;
  }
  out = r;
  return true;
}

namespace {

// A step waits this long at most for its topology; longer is a misconfiguration.
constexpr unsigned max_topology_timeout_s = 600;

bool parse_names(const std::string& key, const std::string& value, std::vector<std::string>& out,
                 std::string& error) {
  out = placement::split(value, ',');
  if (out.empty()) {
    error = key + "= needs a comma-separated list of device names, like mlx5_0,mlx5_1";
    return false;
  }
  return true;
}

bool parse_env(const std::string& value, placement::EnvChoice& out, std::string& error) {
  placement::EnvChoice e{false, false, false, false, false, false, false};
  for (const std::string& part : placement::split(value, ',')) {
    if (part == "all") {
      e = placement::EnvChoice{};
    } else if (part == "gpu") {
      e.gpu = true;
    } else if (part == "nccl") {
      e.nccl = true;
    } else if (part == "ucx") {
      e.ucx = true;
    } else if (part == "omp") {
      e.omp = true;
    } else if (part == "riseml") {
      e.riseml = true;
    } else if (part == "horovod") {
      e.horovod = true;
    } else if (part == "torch") {
      e.torch = true;
    } else if (part == "none") {
    } else {
      error = "env=" + value + ": '" + part + "' is not a group; use all, none, or a list of gpu,nccl,ucx,omp,riseml,horovod,torch";
      return false;
    }
  }
  out = e;
  return true;
}

}  // namespace

bool parse_plugin_config(const std::vector<std::string>& args, PluginConfig& out, std::string& error) {
  PluginConfig c;
  for (const std::string& arg : args) {
    const std::size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    const std::string value = eq == std::string::npos ? std::string() : arg.substr(eq + 1);
    if (eq == std::string::npos) {
      error = "plugstack.conf argument '" + arg + "' is not key=value";
      return false;
    }
    if (key == "default") {
      std::string e;
      if (!parse_bind(value, c.default_bind, e)) {
        error = "default=" + value + ": use " + bind_help();
        return false;
      }
    } else if (key == "topology") {
      if (value.empty() || value.front() != '/') {
        error = "topology=" + value + ": give the absolute path of an hwloc XML export (lstopo --of xml)";
        return false;
      }
      c.topology = value;
    } else if (key == "nic_include") {
      if (!parse_names(key, value, c.plan.nic_include, error)) return false;
    } else if (key == "nic_exclude") {
      if (!parse_names(key, value, c.plan.nic_exclude, error)) return false;
    } else if (key == "env") {
      if (!parse_env(value, c.plan.env, error)) return false;
    } else if (key == "gpu_ids") {
      if (value == "auto") {
        c.plan.gpu_ids = placement::GpuIds::auto_ids;
      } else if (value == "uuid") {
        c.plan.gpu_ids = placement::GpuIds::uuid;
      } else if (value == "index") {
        c.plan.gpu_ids = placement::GpuIds::index;
      } else {
        error = "gpu_ids=" + value + ": use auto, uuid or index";
        return false;
      }
    } else if (key == "on_error") {
      if (value == "fail") {
        c.on_error = OnError::fail;
      } else if (value == "warn") {
        c.on_error = OnError::warn;
      } else {
        error = "on_error=" + value + ": use fail or warn";
        return false;
      }
    } else if (key == "membind") {
      if (value == "bind") {
        c.membind = MemBind::bind;
      } else if (value == "prefer") {
        c.membind = MemBind::prefer;
      } else if (value == "none") {
        c.membind = MemBind::none;
      } else {
        error = "membind=" + value + ": use bind, prefer or none";
        return false;
      }
    } else if (key == "topology_helper") {
      if (value.empty() || value.front() != '/') {
        error = "topology_helper=" + value + ": give the absolute path of riseml-topology";
        return false;
      }
      c.topology_helper = value;
    } else if (key == "topology_timeout") {
      unsigned seconds = 0;
      const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), seconds);
      if (value.empty() || ec != std::errc() || end != value.data() + value.size() || seconds < 1 ||
          seconds > max_topology_timeout_s) {
        error = "topology_timeout=" + value + ": give whole seconds, 1 to " + std::to_string(max_topology_timeout_s);
        return false;
      }
      c.topology_timeout_s = seconds;
    } else if (key == "topology_cache") {
      if (value == "none") {
        c.topology_cache.clear();
      } else if (value.empty() || value.front() != '/') {
        error = "topology_cache=" + value + ": give an absolute folder (the default is /tmp), or none";
        return false;
      } else {
        c.topology_cache = value;
      }
    } else {
      error = "unknown plugstack.conf argument '" + arg +
              "'; known: default, topology, nic_include, nic_exclude, env, gpu_ids, on_error, membind, "
              "topology_helper, topology_timeout, topology_cache";
      return false;
    }
  }
  out = std::move(c);
  return true;
}

}  // namespace riseml::spank
