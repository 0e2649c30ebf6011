// The cluster's side of the translation: how frameworks are provided, whether the SPANK plugin
// and pyxis are there, where outputs go. Written by the admin at /etc/riseml/site.yml.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "diagnostics.hpp"
#include "job_model.hpp"

namespace riseml {

inline constexpr const char* kDefaultSitePath = "/etc/riseml/site.yml";

// How one framework version is provided: a container image, environment modules, a venv.
struct FrameworkEnvironment {
  std::optional<std::string> image;      // for jobs without GPUs, or all jobs
  std::optional<std::string> gpu_image;  // for jobs with GPUs, when it differs
  std::vector<std::string> modules;
  std::optional<std::string> venv;  // a folder with bin/activate
};

// The cluster's network, for `riseml estimate` (docs/model.md): alpha-beta parameters of the
// links between nodes and inside a node. Rates in bytes per second, latencies in seconds.
struct SiteLink {
  double bandwidth_Bps = 0;
  double latency_s = 0;
};
struct SiteNetwork {
  Location where;
  long long gpus_per_node = 1;
  SiteLink nodes_link{25e9 / 8, 5e-6};   // each node's NIC, one direction
  SiteLink intra_node{10e9, 2e-6};       // shared memory, NVLink or PCIe between a node's ranks
  double reduce_Bps = 0;                 // bytes a second a rank reduces; 0: free (GPU)
  double copy_Bps = 0;                   // fusion buffer copies; 0: free (GPU)
  double cycle_overhead_s = 0;           // the engine's own time a cycle (riseml-bench --fit)
  double overlap_slowdown = 0;           // compute speed lost while collectives run (0..<1)
  // The fit's bursts of gradients through the engine (riseml-bench --fit), each over the
  // model's time for it: the fastest and slowest bound the range riseml estimate prints;
  // their mean over their median says how much a long run's average step lies above a typical
  // one.
  struct Spread {
    double fast = 1;  // <= slow
    double mean = 1;
    double slow = 1;
  };
  std::optional<Spread> spread;
  // How late the slowest rank's gradient reaches the engine after idle, beyond a cycle back to
  // back (riseml-bench --fit: a gradient handed over after a sleep): the median is the point,
  // the fastest and slowest of the fit's tries bound the range.
  struct HandOverLag {
    double fast_s = 0;  // <= median_s <= slow_s
    double median_s = 0;
    double slow_s = 0;
  };
  std::optional<HandOverLag> hand_over_lag;
  // GPU nodes: how the hierarchical mode's step between nodes runs on the hosts (docs/model.md):
  // staging to pinned memory and back, the CPU's reduction, TCP's latency a step.
  struct HostPath {
    double staging_Bps = 0;
    double reduce_Bps = 0;
    double latency_s = 0;
  };
  std::optional<HostPath> host_path;
};

struct SiteConfig {
  std::string path;  // empty: no site file, defaults below
  // --riseml-bind on run steps; "off" when spank_riseml.so is not in plugstack.conf.
  std::string bind = "auto";
  // "pyxis" (srun --container-image) or "none" (images cannot run here).
  std::string containers = "pyxis";
  std::optional<std::string> output_root;  // default: $SLURM_SUBMIT_DIR/riseml-output
  size_t max_array_size = 1001;            // Slurm's default MaxArraySize
  std::string riseml_command = "riseml";   // how compute nodes reach this program
  SlurmSection defaults;                   // sbatch defaults; the job's slurm: wins
  // framework -> version ("default" for any version not listed) -> environment
  std::map<std::string, std::map<std::string, FrameworkEnvironment>> frameworks;
  std::optional<SiteNetwork> network;  // absent: riseml estimate needs --nodes-link etc.
};

// `path` empty: the default path if it exists, else built-in defaults. A path given
// explicitly must exist. nullopt after reporting errors.
std::optional<SiteConfig> load_site_config(const std::string& path, Diagnostics& diags);
std::optional<SiteConfig> parse_site_config_text(const std::string& text, const std::string& file,
                                                 Diagnostics& diags);

}  // namespace riseml
