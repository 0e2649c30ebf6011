// riseml-replay: replays a model's backward pass on every rank to measure scaling honestly on a
// small machine. Each step sleeps the forward time, then, gradient by gradient in backward order,
// sleeps that layer's compute and hands the gradient to the real engine (negotiation, fusion,
// cycle time, the real transports and links), then waits for all of them. The compute is slept,
// not burned, so 8-16 ranks fit on 2 cores; what is measured is what the step loses to
// communication that the backward pass does not hide. Prints the step time, the time not hidden,
// the scaling efficiency against the same step without communication, and the efficiency the
// links allow.
//   srun -N4 --mpi=pmix riseml-replay resnet50 [--steps 10] [--fp16]
//   riseml-launch -n 2 riseml-replay model/workloads/vgg16.workload
#include <riseml/communicator.hpp>
#include <riseml/engine/engine.hpp>
#include <riseml/pmix/session.hpp>
#include <riseml/pmix/session_rendezvous.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include <riseml/half_float.hpp>
#include "hand_over.hpp"
#include "measure.hpp"
#include "stream_limit.hpp"
#include <riseml/model/workload.hpp>

namespace riseml::bench {
namespace {

using Clock = std::chrono::steady_clock;

struct ReplayOptions {
  std::string workload;
  int steps = 10, warmup = 2;
  bool fp16 = false;
  double compute_scale = 1.0;
};

// The workload's gradients as they are handed over, its compute scaled, in `buffers`.
std::vector<HandedGradient> handed_gradients(const model::Workload& w, double scale,
                                             std::vector<std::vector<std::byte>>& buffers) {
  std::vector<HandedGradient> out;
  for (std::size_t i = 0; i < w.gradients.size(); ++i) {
    const model::Gradient& g = w.gradients[i];
    out.push_back({g.name, buffers[i].data(), g.shape, g.compute_before_us * scale * 1e-6});
  }
  return out;
}

// One replayed step; with `engine` null the compute alone (the one-rank baseline). Seconds.
double replay_step(const model::Workload& w, double scale, engine::Engine* engine, DataType type,
                   const std::vector<HandedGradient>& gradients) {
  const auto start = Clock::now();
  auto at = start + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double, std::milli>(w.forward_ms * scale));
  std::this_thread::sleep_until(at);
  const std::vector<engine::Handle> handles = hand_over(engine, gradients, type, at);
  at += std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::micro>(w.tail_us * scale));
  std::this_thread::sleep_until(at);
  for (const auto& h : handles) h.wait();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int run(const ReplayOptions& o) {
  const std::string path = model::find_workload(o.workload);
  const model::Workload w = model::read_workload(path);
  auto session = std::shared_ptr<pmix::Session>(pmix::init());
  pmix::SessionRendezvous rendezvous(session);

  // A communicator of its own for timing and for the link measurement, beside the engine's.
  CommunicatorOptions stats_options = CommunicatorOptions::from_environment();
  stats_options.rendezvous_prefix = "riseml-replay";
  Communicator comm(rendezvous, stats_options);
  const int n = comm.size();
  const HostLayout layout = comm.host_layout();
  double stream_bytes_per_s = 0;
  if (layout.hosts > 1 && links_use_tcp(comm)) {
    StreamLimit stream(comm);
    const std::size_t probe = 16u << 20;
    const double t = stream.seconds(comm, probe, 3);
    stream_bytes_per_s = static_cast<double>(stream.stream_bytes(probe)) / t;
  }

  const DataType type = o.fp16 ? DataType::float16 : DataType::float32;
  const std::size_t esize = element_size(type);
  // Rank r's gradients start at r+1 and are averaged as Horovod does: after the first step every
  // rank holds (n+1)/2 and keeps it (exact in float16 too), so a wrong or missing reduction
  // shows at the end.
  const float start = static_cast<float>(comm.rank() + 1), want = static_cast<float>(n + 1) / 2;
  std::vector<std::vector<std::byte>> buffers;
  buffers.reserve(w.gradients.size());
  for (const auto& g : w.gradients) {
    buffers.emplace_back(g.elements * esize);
    for (std::size_t i = 0; i < g.elements; ++i) {
      if (o.fp16) {
        const std::uint16_t h = kernels::float_to_float16(start);
        std::memcpy(buffers.back().data() + i * 2, &h, 2);
      } else {
        std::memcpy(buffers.back().data() + i * 4, &start, 4);
      }
    }
  }

  // The step without communication, on every rank at once (the sleeps' own overshoot included).
  const std::vector<HandedGradient> gradients = handed_gradients(w, o.compute_scale, buffers);
  std::vector<double> alone;
  for (int s = 0; s < 3; ++s) alone.push_back(max_over_ranks(comm, replay_step(w, o.compute_scale, nullptr, type, gradients)));

  const engine::EngineOptions engine_options = engine::EngineOptions::from_environment();
  engine::Engine engine(rendezvous, CommunicatorOptions::from_environment(), engine_options);
  std::vector<double> steps;
  for (int s = 0; s < o.warmup + o.steps; ++s) {
    comm.barrier();
    const double t = max_over_ranks(comm, replay_step(w, o.compute_scale, &engine, type, gradients));
    if (s >= o.warmup) steps.push_back(t);
  }
  long long wrong = 0;
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const std::size_t last = w.gradients[i].elements - 1;
    for (std::size_t at : {std::size_t{0}, last}) {
      float v;
      if (o.fp16) {
        std::uint16_t h;
        std::memcpy(&h, buffers[i].data() + at * 2, 2);
        v = kernels::float16_to_float(h);
      } else {
        std::memcpy(&v, buffers[i].data() + at * 4, 4);
      }
      if (v != want) ++wrong;
    }
  }
  std::int64_t wrong_all = wrong;
  comm.allreduce(&wrong_all, &wrong_all, 1, DataType::int64, ReduceOp::sum);
  engine.shutdown();

  if (comm.rank() == 0) {
    const double step = quantile(steps, 0.5), compute = quantile(alone, 0.5);
    const double bytes = static_cast<double>(w.elements() * esize);
    const double efficiency = compute / step;
    std::printf("# riseml-replay: %s, %d ranks on %d hosts, %zu gradients, %.2f M elements (%.1f MB as %s)\n",
                w.model.c_str(), n, layout.hosts, w.gradients.size(), static_cast<double>(w.elements()) / 1e6,
                bytes / 1e6, std::string(to_string(type)).c_str());
    std::printf("# compute is slept, not burned (so many ranks fit on few cores): %.1f ms a step at batch %d%s;"
                " source: %s\n", w.compute_ms() * o.compute_scale, w.batch,
                o.compute_scale != 1.0 ? " (scaled)" : "", w.source.c_str());
    std::printf("# engine: fusion %zu bytes, cycle %.3f ms; transports of rank 0: %s; algorithm for 64 MiB: %s\n",
                engine_options.fusion_threshold, static_cast<double>(engine_options.cycle_time.count()) / 1e3,
                comm.describe_transports().c_str(), std::string(to_string(comm.algorithm_for(64u << 20))).c_str());
    std::printf("# %d steps after %d warm-up, the slowest rank's time each\n", o.steps, o.warmup);
    std::printf("%-18s %10s\n", "#", "ms");
    std::printf("%-18s %10.1f\n", "step p10", quantile(steps, 0.1) * 1e3);
    std::printf("%-18s %10.1f\n", "step median", step * 1e3);
    std::printf("%-18s %10.1f\n", "step p90", quantile(steps, 0.9) * 1e3);
    std::printf("%-18s %10.1f\n", "compute alone", compute * 1e3);
    std::printf("%-18s %10.1f\n", "not hidden", (step - compute) * 1e3);
    std::printf("efficiency %.3f (compute alone / step; images/s: %.0f of an ideal %.0f)\n", efficiency,
                w.batch * n / step, w.batch * n / compute);
    double bound = 1, serial = 1;
    if (stream_bytes_per_s > 0) {
      // The links at best: a ring across hosts moves 2(h-1)/h of the bytes over each host's link,
      // and cannot start before the forward pass ends.
      const int h = layout.hosts;
      const double wire = bytes * 2 * (h - 1) / h / stream_bytes_per_s;
      const double forward = w.forward_ms * o.compute_scale / 1e3;
      bound = compute / std::max(compute, forward + wire);
      serial = compute / (compute + wire);
      std::printf("links: %.3f GB/s per host link (a plain TCP stream); all gradients over them %.1f ms; efficiency "
                  "the links allow <= %.3f, with no overlap at all %.3f\n",
                  stream_bytes_per_s / 1e9, wire * 1e3, bound, serial);
    }
    std::printf("replay: model=%s ranks=%d hosts=%d dtype=%s step_ms=%.2f compute_ms=%.2f efficiency=%.4f "
                "link_bound=%.4f no_overlap=%.4f wrong=%lld\n",
                w.model.c_str(), n, layout.hosts, std::string(to_string(type)).c_str(), step * 1e3, compute * 1e3,
                efficiency, bound, serial, static_cast<long long>(wrong_all));
    std::fflush(stdout);
  }
  return wrong_all ? 1 : 0;
}

}  // namespace
}  // namespace riseml::bench

int main(int argc, char** argv) {
  riseml::bench::ReplayOptions o;
  CLI::App app{"riseml-replay: a model's backward pass on every rank, through the real engine"};
  app.add_option("workload", o.workload, "a workload file, or a model: resnet50, resnet101, inception_v3, vgg16")
      ->required();
  app.add_option("--steps", o.steps, "timed steps")->check(CLI::Range(1, 100000));
  app.add_option("--warmup", o.warmup, "untimed steps first")->check(CLI::Range(0, 1000));
  app.add_flag("--fp16", o.fp16, "send gradients as float16 (Horovod's fp16 compression; the cast is not replayed)");
  app.add_option("--compute-scale", o.compute_scale, "multiply every compute time (0.5: a GPU twice as fast)")
      ->check(CLI::Range(0.0, 1000.0));
  CLI11_PARSE(app, argc, argv);
  try {
    return riseml::bench::run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "riseml-replay: %s\n", e.what());
    return 1;
  }
}
