// riseml estimate: how many nodes are worth it for a model on this cluster, and with which
// settings. Predicts a training step with the model of docs/model.md (model/) from a workload
// (riseml-replay's files), the site file's network: section and the engine settings; prints the
// job's own shape, a table for 1..1024 GPUs and the settings that would help.
#include <sys/wait.h>
#include <unistd.h>

#include <riseml/model/advice.hpp>
#include <riseml/model/engine_schedule.hpp>
#include <riseml/model/workload.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "../job_layout.hpp"
#include "../printable_text.hpp"
#include "../site_config.hpp"
#include "../translation.hpp"
#include "commands.hpp"
#include "table.hpp"

namespace riseml::cli {

namespace {

namespace m = riseml::model;

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string algorithms_used(const m::Prediction& p) {
  std::string out;
  for (const auto& [a, count] : p.algorithms)
    out += (out.empty() ? "" : ", ") + std::string(m::to_string(a)) + " " + std::to_string(count);
  return out.empty() ? "none" : out;
}

std::string describe_settings(const m::EngineSettings& e, bool gpu_nodes) {
  // On GPU nodes the algorithm is RISEML_GPU_ALGORITHM's: NCCL over all ranks, or hierarchical.
  std::string algorithm(m::to_string(e.algorithm));
  if (gpu_nodes) algorithm = e.algorithm == m::Algorithm::hierarchical ? "hierarchical (GPU)" : "nccl (GPU)";
  char buf[256];
  std::snprintf(buf, sizeof buf, "cycle %g ms, fusion %g MiB, algorithm %s, %s, response cache %s", e.cycle_s * 1e3,
                e.fusion_bytes / (1 << 20), algorithm.c_str(), e.fp16 ? "float16 on the wire" : "float32",
                e.response_cache ? "on" : "off");
  return buf;
}

// The job's nodes and ranks a node, from its layout; 0 nodes when it is not an allreduce job.
bool job_shape(const std::string& file, const SiteConfig& site, int& nodes, int& per_node) {
  Translation t = translate_file(file, site);
  std::cerr << t.diagnostics.format();
  if (!t.script || !t.job) {
    const int n = t.diagnostics.error_count();
    std::cerr << "riseml estimate: " << n << (n == 1 ? " error" : " errors") << " in " << printable(file)
              << "; nothing was estimated\n";
    return false;
  }
  Diagnostics diags;
  auto layout = plan_layout(*t.job, site, diags);
  if (!layout || layout->groups.empty()) return false;
  if (layout->kind == JobKind::distributed) {
    Diagnostics d;
    d.error(t.job->train.where, "train.tensorflow.distributed",
            "riseml estimate predicts allreduce (Horovod) jobs, not parameter servers: give the job a "
            "horovod: section, or pass --nodes N --gpus-per-node G without a job file");
    std::cerr << d.format();
    return false;
  }
  const TaskGroup& g = layout->groups.front();
  // An elastic job's spare nodes do not train: its ranks are the workers started.
  nodes = static_cast<int>(layout->elastic ? layout->elastic->workers : g.nodes.value_or(1));
  per_node = static_cast<int>(g.ntasks_per_node.value_or(g.ntasks));
  return true;
}

bool write_plot(const std::string& png, const std::vector<std::vector<std::string>>& rows, const std::string& title) {
  char dir_template[] = "/tmp/riseml-estimate-XXXXXX";
  const char* dir = mkdtemp(dir_template);
  if (!dir) return false;
  const std::string csv = std::string(dir) + "/estimate.csv";
  {
    std::ofstream out(csv);
    out << "gpus,efficiency,link_bound\n";
    for (const auto& r : rows) out << r[0] << ',' << r[4] << ',' << r[5] << '\n';
  }
  // The installed script when there is one (a package), else the source tree's (a build).
  std::string script = RISEML_ESTIMATE_PLOT_INSTALLED;
  std::error_code ec;
  if (!std::filesystem::exists(script, ec)) script = RISEML_ESTIMATE_PLOT_SCRIPT;
  // argv without a shell: fork + exec python3.
  const pid_t pid = fork();
  if (pid == 0) {
    // Debian's python3 (python3-matplotlib) first, as the other plot scripts; then PATH's.
    execl("/usr/bin/python3", "python3", script.c_str(), csv.c_str(), png.c_str(), title.c_str(),
          static_cast<char*>(nullptr));
    execlp("python3", "python3", script.c_str(), csv.c_str(), png.c_str(), title.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 1;
  if (pid > 0) waitpid(pid, &status, 0);
  std::filesystem::remove_all(dir, ec);
  return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// Gradient indices in backward order as ranges ("0-3,7"): a cycle's small tensors go first, so a
// collective's gradients need not be consecutive.
std::string index_ranges(const std::vector<std::size_t>& v) {
  std::string out;
  for (std::size_t a = 0; a < v.size();) {
    std::size_t b = a;
    while (b + 1 < v.size() && v[b + 1] == v[b] + 1) ++b;
    if (!out.empty()) out += ',';
    out += std::to_string(v[a]);
    if (b > a) out += '-' + std::to_string(v[b]);
    a = b + 1;
  }
  return out;
}

}  // namespace

int estimate(const EstimateOptions& o) {
  Diagnostics site_diags;
  auto site = load_site_config(o.site, site_diags);
  std::cerr << site_diags.format();
  if (!site) return kExitBadInput;
  std::string network_path = site->path;
  if (!o.network.empty()) {
    // Measured links (riseml-bench --fit) over the site's description; the rest of the site
    // (partitions, images) still shapes the job.
    Diagnostics net_diags;
    auto measured = load_site_config(o.network, net_diags);
    std::cerr << net_diags.format();
    if (!measured) return kExitBadInput;
    if (!measured->network) {
      Diagnostics d;
      d.error(Location{o.network, 0, 0}, "network",
              "--network: this file has no network: section (riseml-bench --fit writes one; see docs/model.md)");
      std::cerr << d.format();
      return kExitBadInput;
    }
    site->network = measured->network;
    network_path = o.network;
  }
  if (!site->network) {
    Diagnostics d;
    d.error(Location{site->path.empty() ? std::string(kDefaultSitePath) : site->path, 0, 0}, "network",
            std::string(site->path.empty() ? "no site file, so no network to predict for: give --site FILE with"
                                           : "riseml estimate needs the cluster's network here: add") +
                " network: {gpus_per_node: 4, nodes_link: {bandwidth: 25gbit, latency: 5us}, intra_node: "
                "{bandwidth: 10gbyte, latency: 2us}} (see docs/model.md)");
    std::cerr << d.format();
    return kExitBadInput;
  }
  const SiteNetwork& net = *site->network;

  m::StepProfile profile;
  try {
    profile = m::load_profile(o.workload, m::shipped_workload_folders());
  } catch (const m::ProfileError& e) {
    std::cerr << "riseml estimate: --workload " << printable(e.what()) << '\n';
    return kExitBadInput;
  }
  if (o.compute_scale != 1.0) {
    profile.forward_s *= o.compute_scale;
    profile.tail_s *= o.compute_scale;
    for (auto& t : profile.tensors) t.compute_before_s *= o.compute_scale;
  }

  int nodes = o.nodes, per_node = o.gpus_per_node > 0 ? o.gpus_per_node : static_cast<int>(net.gpus_per_node);
  if (nodes <= 0) {
    int job_per_node = per_node;
    if (!job_shape(o.file, *site, nodes, job_per_node)) return kExitBadInput;
    if (o.gpus_per_node <= 0) per_node = job_per_node;
  }

  m::Cluster base;
  base.inter = {net.nodes_link.latency_s, net.nodes_link.bandwidth_Bps};
  base.intra = {net.intra_node.latency_s, net.intra_node.bandwidth_Bps};
  base.reduce_s_per_byte = net.reduce_Bps > 0 ? 1 / net.reduce_Bps : 0;
  base.copy_Bps = net.copy_Bps;
  base.cycle_overhead_s = net.cycle_overhead_s;
  if (net.hand_over_lag) base.hand_over_lag_s = net.hand_over_lag->median_s;
  base.overlap_slowdown = o.overlap_slowdown >= 0 ? o.overlap_slowdown : net.overlap_slowdown;
  if (net.host_path) {
    base.host_path.on = true;
    base.host_path.staging_Bps = net.host_path->staging_Bps;
    base.host_path.reduce_s_per_byte = 1 / net.host_path->reduce_Bps;
    base.host_path.latency_s = net.host_path->latency_s;
  }
  base.nodes = nodes;
  base.ranks_per_node = per_node;

  m::EngineSettings engine;
  if (o.settings == "horovod") {
    // Horovod 0.9-0.11 (2017-2018), as in its paper's runs: a 5 ms cycle, 64 MiB fusion, NCCL's
    // flat ring over all GPUs, no response cache, float32.
    engine.cycle_s = 5e-3;
    engine.algorithm = m::Algorithm::ring;
    engine.response_cache = false;
    engine.start_when_idle = false;  // its loop sleeps out every cycle
    engine.small_first_bytes = 0;    // and fuses a cycle's tensors in one buffer
  }
  // riseml's GPU path waits out the cycle after a cycle's work (engine/src/engine_loop.cpp).
  if (o.settings != "horovod" && base.host_path.on) engine.linger_after_work = true;
  if (o.cycle_ms >= 0) engine.cycle_s = o.cycle_ms / 1e3;
  if (!o.fusion.empty()) {
    auto v = m::parse_bytes(o.fusion);
    if (!v) {
      std::cerr << "riseml estimate: --fusion '" << printable(o.fusion)
                << "' is not a size: write bytes, or e.g. 64MiB, 16m, 0 (no fusion)\n";
      return kExitBadInput;
    }
    engine.fusion_bytes = *v;
  }
  if (o.fp16) engine.fp16 = true;
  if (!o.algorithm.empty()) {
    if (o.algorithm == "auto") engine.algorithm = m::Algorithm::automatic;
    else if (o.algorithm == "ring") engine.algorithm = m::Algorithm::ring;
    else if (o.algorithm == "hd") engine.algorithm = m::Algorithm::halving_doubling;
    else if (o.algorithm == "hierarchical") engine.algorithm = m::Algorithm::hierarchical;
  }

  const double bytes = profile.elements() * (engine.fp16 ? 2 : 4);
  std::printf("riseml estimate: %s, %.2f M parameters in %zu tensors (%.1f MB a step as %s); compute %.1f ms a step "
              "at batch %d%s\n",
              printable(profile.model).c_str(), profile.elements() / 1e6, profile.tensors.size(), bytes / 1e6,
              engine.fp16 ? "float16" : "float32", profile.compute_s() * 1e3, profile.batch,
              o.compute_scale != 1.0 ? " (scaled)" : "");
  if (!profile.source.empty()) std::printf("  compute from: %s\n", printable(profile.source).c_str());
  std::printf("  network (%s): between nodes %s, %s; inside a node %s, %s; reduce %s; fusion copies %s\n",
              printable(network_path).c_str(), m::format_rate(net.nodes_link.bandwidth_Bps).c_str(),
              m::format_duration(net.nodes_link.latency_s).c_str(), m::format_rate(net.intra_node.bandwidth_Bps).c_str(),
              m::format_duration(net.intra_node.latency_s).c_str(),
              net.reduce_Bps > 0 ? m::format_rate(net.reduce_Bps).c_str() : "free",
              net.copy_Bps > 0 ? m::format_rate(net.copy_Bps).c_str() : "free");
  if (net.cycle_overhead_s > 0)
    std::printf("  the engine's own time, measured by the fit: %s a cycle\n",
                m::format_duration(net.cycle_overhead_s).c_str());
  if (net.hand_over_lag)
    std::printf("  a gradient reaches the engine on the slowest rank %s after its compute (measured by the fit "
                "after idle: %s - %s)\n",
                m::format_duration(net.hand_over_lag->median_s).c_str(),
                m::format_duration(net.hand_over_lag->fast_s).c_str(),
                m::format_duration(net.hand_over_lag->slow_s).c_str());
  if (net.host_path)
    std::printf("  hierarchical between nodes on the hosts: staging %s each way, reduce %s, %s a step\n",
                m::format_rate(net.host_path->staging_Bps).c_str(), m::format_rate(net.host_path->reduce_Bps).c_str(),
                m::format_duration(net.host_path->latency_s).c_str());
  if (base.overlap_slowdown > 0)
    std::printf("  compute runs at %.0f%% of its speed while a collective runs on the GPU (overlap_slowdown %g)\n",
                100 * (1 - base.overlap_slowdown), base.overlap_slowdown);
  std::printf("  engine (%s settings): %s\n", o.settings.c_str(), describe_settings(engine, base.host_path.on).c_str());

  const m::Cluster job = base;
  const m::Prediction p = m::simulate_step(profile, job, engine);
  std::printf("\nthis job: %d node%s x %d GPU%s = %d ranks\n", job.nodes, job.nodes == 1 ? "" : "s",
              job.ranks_per_node, job.ranks_per_node == 1 ? "" : "s", job.ranks());
  std::printf("  step %.1f ms, compute %.1f ms, not hidden %.1f ms: efficiency %.3f (the links allow <= %.3f)\n",
              p.step_s * 1e3, p.compute_s * 1e3, p.exposed_s * 1e3, p.efficiency,
              m::link_bound(profile, job, engine.fp16));
  std::printf("  engine busy %.1f ms of the step: bandwidth %.1f, latency %.1f, reduction %.1f, fusion copies %.1f, "
              "negotiation %.1f%s; %d collectives in %d cycles (%s)\n",
              p.engine_busy_s * 1e3, p.wire.bandwidth_s * 1e3, p.wire.latency_s * 1e3, p.wire.reduce_s * 1e3,
              p.copy_s * 1e3, p.negotiation_s * 1e3,
              p.cycle_overhead_s > 0 ? (", engine cycles " + fixed(p.cycle_overhead_s * 1e3, 1)).c_str() : "",
              p.collectives, p.cycles, algorithms_used(p).c_str());
  if (net.spread || net.hand_over_lag) {
    // The point charges the fitted medians, which matched riseml-replay's median steps best
    // (docs/scaling.md); the range is every part of the engine's work as fast and as slow as the
    // fit's bursts through the engine ran against the model (the fastest and slowest burst): a
    // stalled TCP flow, a busy host, the engine's own gaps; and the hand-over's lag (all a
    // compute-bound step exposes) as short and as long as the fit's tries of it.
    const SiteNetwork::Spread spread = net.spread.value_or(SiteNetwork::Spread{});
    m::Cluster fastest = m::with_engine_scaled(job, spread.fast);
    m::Cluster slowest = m::with_engine_scaled(job, spread.slow);
    if (net.hand_over_lag) {
      fastest.hand_over_lag_s = net.hand_over_lag->fast_s;
      slowest.hand_over_lag_s = net.hand_over_lag->slow_s;
    }
    const double fast = m::simulate_step(profile, fastest, engine).step_s;
    const double slow = m::simulate_step(profile, slowest, engine).step_s;
    const double low = std::min(p.step_s, fast), high = std::max(p.step_s, slow);
    std::printf("  range %.1f - %.1f ms (%+.1f%% / %+.1f%%):", low * 1e3, high * 1e3, 100 * (low / p.step_s - 1),
                100 * (high / p.step_s - 1));
    if (net.spread)
      std::printf(" the engine's work as fast and as slow as the fit's bursts ran (spread fast %.3f, slow %.3f; "
                  "their mean %.3f of the median: a long run's average step)",
                  spread.fast, spread.slow, spread.mean);
    if (net.hand_over_lag)
      std::printf("%s the hand-over's lag from %s to %s", net.spread ? ";" : "",
                  m::format_duration(net.hand_over_lag->fast_s).c_str(),
                  m::format_duration(net.hand_over_lag->slow_s).c_str());
    std::printf("\n");
  } else {
    std::printf("  range: none (the network file has no spread: riseml-bench --fit measures it)\n");
  }
  const m::Bound bound = m::bounding_resource(p);
  std::printf("  bounded by %s\n", std::string(m::to_string(bound)).c_str());
  if (bound == m::Bound::compute && p.step_s > p.backward_end_s + 5e-5)
    std::printf("    (the engine ends %.1f ms after the backward pass: the last gradients' own collectives)\n",
                (p.step_s - p.backward_end_s) * 1e3);
  if (p.compute_slowed_s > 0)
    std::printf("  compute slowed by collectives: %.1f ms longer than alone\n", p.compute_slowed_s * 1e3);
  if (o.schedule) {
    // Every collective as the simulated engine runs it, to set beside riseml-replay's timeline
    // (RISEML_TIMELINE; tools/sweeps/schedule_vs_timeline.py).
    std::vector<std::vector<std::string>> rows;
    rows.push_back({"cycle", "gradients", "first", "bytes", "algorithm", "cycle start ms", "start ms", "copies ms",
                    "wire ms", "end ms", "indices"});
    for (const auto& c : p.schedule)
      rows.push_back({std::to_string(c.cycle), std::to_string(c.gradients.size()),
                      printable(profile.tensors[c.gradients.front()].name), fixed(c.bytes, 0),
                      std::string(m::to_string(c.algorithm)), fixed(c.cycle_start_s * 1e3, 3),
                      fixed(c.start_s * 1e3, 3), fixed(c.copy_s * 1e3, 3), fixed(c.wire_s * 1e3, 3),
                      fixed(c.end_s * 1e3, 3), index_ranges(c.gradients)});
    std::printf("\nthe step's collectives (times from the step's start):\n%s", format_table(rows).c_str());
  }

  std::vector<std::vector<std::string>> rows;
  rows.push_back({"GPUs", "nodes x GPUs", "step ms", "not hidden ms", "efficiency", "links allow", "images/s"});
  std::vector<std::vector<std::string>> plot_rows;
  for (int gpus = 1; gpus <= 1024; gpus *= 2) {
    const m::Cluster c = m::cluster_for(base, gpus, per_node);
    const m::Prediction q = m::simulate_step(profile, c, engine);
    std::vector<std::string> row = {std::to_string(c.ranks()),
                                    std::to_string(c.nodes) + " x " + std::to_string(c.ranks_per_node),
                                    fixed(q.step_s * 1e3, 1),
                                    fixed(q.exposed_s * 1e3, 1),
                                    fixed(q.efficiency, 3),
                                    fixed(m::link_bound(profile, c, engine.fp16), 3),
                                    fixed(profile.batch * c.ranks() / q.step_s, 0)};
    rows.push_back(row);
    plot_rows.push_back(row);
  }
  std::printf("\nother sizes (%d GPUs a node):\n%s", per_node, format_table(rows).c_str());

  const auto advice = m::advise(profile, job, engine);
  std::printf("\nsettings that would help this job:\n");
  if (advice.empty()) std::printf("  none gains half a point of efficiency over these settings\n");
  for (const auto& a : advice)
    std::printf("  %s: efficiency %.3f (%+.1f points); %s\n", a.setting.c_str(), a.prediction.efficiency,
                a.gain * 100, a.why.c_str());
  std::printf("(a prediction from the alpha-beta model of docs/model.md, not a measurement)\n");
  std::fflush(stdout);

  if (!o.plot.empty()) {
    if (!write_plot(o.plot, plot_rows, profile.model + " on " + m::format_rate(net.nodes_link.bandwidth_Bps) +
                                           " links, " + std::to_string(per_node) + " GPUs a node")) {
      std::cerr << "riseml estimate: --plot: could not draw " << printable(o.plot)
                << " (needs python3 with matplotlib: apt-get install python3-matplotlib)\n";
      return kExitFailure;
    }
    std::cerr << "riseml estimate: wrote " << printable(o.plot) << '\n';
  }
  return kExitOk;
}

}  // namespace riseml::cli
