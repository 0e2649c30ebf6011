// Alpha-beta link parameters: a message of b bytes over a link takes latency + b / bandwidth.
// Also the parsers for the units people write them in ("25gbit", "5us").
#pragma once

#include <optional>
#include <string>

namespace riseml::model {

struct Link {
  double latency_s = 0;       // alpha: per message (per algorithm step), seconds
  double bandwidth_Bps = 0;   // 1/beta: bytes per second, one direction (both ways at once)
  // alpha + b * beta.
  double time(double bytes) const { return latency_s + bytes / bandwidth_Bps; }
};

// The machines: `nodes` hosts of `ranks_per_node` ranks (GPUs), linked inside a node by `intra`
// (shared memory, NVLink or PCIe) and between nodes by `inter` (each node's NIC, full duplex).
struct Cluster {
  int nodes = 1;
  int ranks_per_node = 1;
  Link inter{5e-6, 25e9 / 8};
  Link intra{2e-6, 10e9};
  // gamma: seconds per byte to reduce (add) a received block into a local one. CPU engine with
  // AVX2 kernels: ~0.1 ns/B (10 GB/s); on a GPU (NCCL) it hides in the copy: ~0.
  double reduce_s_per_byte = 0;
  // Copying tensors into and out of the fusion buffer, bytes per second (0: free).
  double copy_Bps = 0;
  // The engine's own time a cycle beyond its negotiation and collectives (waking, completing
  // handles; riseml-bench --fit measures it through the engine). 0: none.
  double cycle_overhead_s = 0;
  // How much later than its own compute the slowest rank's gradient reaches the engine's
  // negotiation, beyond what a cycle costs back to back: the ranks start a step apart (the last
  // step's results reach them at different times) and the parked engine and caller wake late.
  // Each gradient joins a cycle this much after its compute ends, while the compute itself does
  // not move: a compute-bound step ends this much later (riseml-bench --fit measures it as
  // a gradient handed over after idle; docs/model.md). 0: none.
  double hand_over_lag_s = 0;
  // The share of compute speed lost while a collective runs (fusion copies and transfer), 0..<1:
  // on a GPU, NCCL's kernels take SMs and memory bandwidth from the backward pass, and on a
  // PCIe machine its copies take the bus. 0: compute never slows (riseml-replay sleeps its
  // compute, so 0 is exact there).
  double overlap_slowdown = 0;
  // GPU nodes: the hierarchical mode's step between nodes runs on the hosts (engine/'s
  // GPU path, docs/gpu.md): each rank's shard is copied to pinned host memory and back at
  // staging_Bps, allreduced across nodes by the CPU ring over TCP (latency_s a step, the NIC's
  // bandwidth) and reduced by a CPU core at reduce_s_per_byte. Meanwhile the GPU computes
  // undisturbed: overlap_slowdown applies to the steps on the GPU only. Off: tensors are on
  // the host already (CPU jobs, riseml-replay), and every step is as above.
  struct HostPath {
    bool on = false;
    double staging_Bps = 0;
    double reduce_s_per_byte = 0;
    double latency_s = 0;
  } host_path;
  int ranks() const { return nodes * ranks_per_node; }
};

// The cluster with every part of the engine's work taking `f` times as long: links, reduction,
// fusion copies, the engine's own time a cycle. riseml-bench --fit measures the f its bursts
// ran at (the spread: the fastest and slowest); riseml estimate prints the step at both
// (the range).
Cluster with_engine_scaled(Cluster c, double f);

// "25gbit", "25Gbit/s", "10gbyte", "3.1GB/s", "800mbit", plain number = bytes per second.
// Returns bytes per second, nullopt when not understood or not positive.
std::optional<double> parse_rate(const std::string& text);
// "5us", "1.5ms", "0.2s", "800ns"; a plain number is seconds. nullopt when not understood or < 0.
std::optional<double> parse_duration(const std::string& text);
// "64MiB", "1m" (MiB), "65536", "16KiB", "0": bytes. nullopt when not understood.
std::optional<double> parse_bytes(const std::string& text);

// For output: "2.9 GB/s", "5.0 us".
std::string format_rate(double bytes_per_s);
std::string format_duration(double seconds);

}  // namespace riseml::model
