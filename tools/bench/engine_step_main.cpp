// riseml-engine-step: the engine's cost per tensor, as a training step hands it gradients.
// Each step enqueues `tensors` float32 allreduces (names g0..gN-1, as a backward pass does) and
// waits for them all; the same bytes as one tensor is the floor the fusion could reach. Ranks
// are threads of this process (in-memory rendezvous, the in-process transport), so what is
// measured is the engine's own work: enqueue, negotiation (the response cache), fusion, the
// handles, not a network. Two paths: host tensors (the CPU path) and device tensors on the
// host-memory stand-in of the GPU path (GpuOptions::host_standin), which runs the GPU path's
// engine work (per-tensor bookkeeping, deferred completion by the path's watcher) with host
// copies in place of CUDA kernels; on a GPU, riseml-gpu-bench's engine rows add the CUDA calls.
//
//   riseml-engine-step [--ranks N] [--steps S] [--rounds R] [--cycle-us C] [--quick]
//                      [--case TENSORSxBYTES] [--path host|standin]
//
// Prints, per path and case: the step's p10/p50/p90 over all steps of all rounds, the floor's
// p50, and (step - floor) / tensors: the engine's cost per tensor. Each round is a fresh engine.
#include <riseml/engine/engine.hpp>
#include <riseml/in_memory_rendezvous.hpp>

#include "measure.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using riseml::engine::Engine;
using riseml::engine::EngineOptions;
using riseml::engine::Handle;
using riseml::engine::Request;

struct Options {
  int ranks = 1;
  int steps = 200;
  int rounds = 3;
  int cycle_us = 1000;
  bool full_wait = false;
  bool long_names = false;
};

struct Case {
  int tensors;
  std::size_t bytes;  // of each
};

// Seconds of each step (rank 0's clock; every rank waits for all its tensors, and a fused
// collective ends on all ranks together).
std::vector<double> run_steps(const Options& o, bool device, int tensors, std::size_t bytes) {
  auto hub = std::make_shared<riseml::InMemoryRendezvousHub>(o.ranks);
  std::vector<double> seconds;
  std::vector<std::string> errors(static_cast<std::size_t>(o.ranks));
  std::vector<std::string> names;
  for (int t = 0; t < tensors; ++t)
    names.push_back((o.long_names ? "allreduce.module.layer3.5.conv2.weight." : "g") + std::to_string(t));
  std::vector<std::thread> threads;
  for (int r = 0; r < o.ranks; ++r) {
    threads.emplace_back([&, r] {
      try {
        riseml::InMemoryRendezvous rendezvous(hub, r);
        riseml::CommunicatorOptions copts;
        copts.transport = riseml::TransportChoice::inproc;
        EngineOptions eopts;
        eopts.cycle_time = std::chrono::microseconds(o.cycle_us);
        eopts.gpu.host_standin = device;
        Engine engine(rendezvous, copts, eopts);
        std::vector<float> block(bytes / sizeof(float) * static_cast<std::size_t>(tensors), 1.0f);
        const std::int64_t count = static_cast<std::int64_t>(bytes / sizeof(float));
        std::vector<Handle> handles(static_cast<std::size_t>(tensors));
        auto step = [&] {
          for (int t = 0; t < tensors; ++t) {
            Request q;
            q.name = names[static_cast<std::size_t>(t)];
            float* p = block.data() + static_cast<std::size_t>(t) * static_cast<std::size_t>(count);
            q.tensors.push_back({p, p, {count}, device ? 0 : -1});
            handles[static_cast<std::size_t>(t)] = engine.enqueue(std::move(q));
          }
          for (const Handle& h : handles) {
            if (device && !o.full_wait)
              h.wait_stream_ordered();
            else
              h.wait();
          }
        };
        for (int k = 0; k < 5; ++k) step();  // warm-up: buffers, the response cache
        for (int k = 0; k < o.steps; ++k) {
          const auto t0 = Clock::now();
          step();
          if (r == 0) seconds.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
        }
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < o.ranks; ++r)
    if (!errors[static_cast<std::size_t>(r)].empty())
      throw std::runtime_error("rank " + std::to_string(r) + ": " + errors[static_cast<std::size_t>(r)]);
  return seconds;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "riseml-engine-step: %s\nusage: riseml-engine-step [--ranks N] [--steps S] "
               "[--rounds R] [--cycle-us C] [--quick] [--case TENSORSxBYTES] [--path host|standin] "
               "[--full-wait] [--long-names]\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  std::vector<Case> cases = {{64, 4}, {64, 16 << 10}, {256, 4}, {160, 256 << 10}};
  std::vector<bool> paths = {false, true};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto number = [&](int& out, int low) {
      if (i + 1 >= argc) return false;
      char* end = nullptr;
      const long v = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || v < low || v > 1000000) return false;
      out = static_cast<int>(v);
      return true;
    };
    bool ok = true;
    if (a == "--ranks") ok = number(o.ranks, 1);
    else if (a == "--steps") ok = number(o.steps, 1);
    else if (a == "--rounds") ok = number(o.rounds, 1);
    else if (a == "--cycle-us") ok = number(o.cycle_us, 0);
    else if (a == "--quick") o.steps = 30, o.rounds = 1;
    else if (a == "--full-wait") o.full_wait = true;
    else if (a == "--long-names") o.long_names = true;
    else if (a == "--path" && i + 1 < argc && (argv[i + 1] == std::string("host") || argv[i + 1] == std::string("standin")))
      paths = {argv[++i] == std::string("standin")};
    else if (a == "--case" && i + 1 < argc) {
      int n = 0;
      long bytes = 0;
      char tail = 0;
      if (std::sscanf(argv[++i], "%dx%ld%c", &n, &bytes, &tail) != 2 || n < 1 || n > 100000 || bytes < 4 ||
          bytes > (1L << 30) || bytes % 4 != 0)
        return usage("--case needs TENSORSxBYTES (bytes a multiple of 4, at most 1 GiB), e.g. 64x16384");
      cases = {{n, static_cast<std::size_t>(bytes)}};
    }
    else return usage(("unknown option '" + a + "'").c_str());
    if (!ok) return usage(("'" + a + "' needs a whole number in range").c_str());
  }
  std::printf("# riseml-engine-step: %d rank(s) as threads, cycle %d us, %d rounds x %d steps, "
              "device tensors waited %s, %s names\n",
              o.ranks, o.cycle_us, o.rounds, o.steps, o.full_wait ? "until done" : "until enqueued",
              o.long_names ? "long" : "short");
  std::printf("%-8s %8s %10s %10s %10s %10s %10s %12s\n", "path", "tensors", "each_B",
              "step_p10", "step_p50", "step_p90", "floor_p50", "per_tensor");
  try {
    for (bool device : paths) {
      for (const Case& c : cases) {
        std::vector<double> steps, floor;
        for (int round = 0; round < o.rounds; ++round) {
          for (double s : run_steps(o, device, c.tensors, c.bytes)) steps.push_back(s);
          for (double s : run_steps(o, device, 1, c.bytes * static_cast<std::size_t>(c.tensors)))
            floor.push_back(s);
        }
        using riseml::bench::quantile;
        const double p50 = quantile(steps, 0.5) * 1e6, f50 = quantile(floor, 0.5) * 1e6;
        std::printf("%-8s %8d %10zu %10.1f %10.1f %10.1f %10.1f %12.2f\n",
                    device ? "standin" : "host", c.tensors, c.bytes, quantile(steps, 0.1) * 1e6, p50,
                    quantile(steps, 0.9) * 1e6, f50, (p50 - f50) / c.tensors);
        std::fflush(stdout);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "riseml-engine-step: %s\n", e.what());
    return 1;
  }
  return 0;
}
