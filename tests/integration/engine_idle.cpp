// An idle engine costs nothing measurable, and still answers at once: each rank starts an
// engine, submits nothing for a while and measures its own CPU time meanwhile, then allreduces
// one small tensor and times it. Exit 1 when a rank used more than `--max-cpu` of a core while
// idle or the first allreduce after the idle time took longer than `--max-first-ms`.
//   riseml-launch -n 2 riseml-engine-idle [--idle-s 3] [--max-cpu 0.01] [--max-first-ms 50]
#include <sys/resource.h>

#include <riseml/engine/engine.hpp>
#include <riseml/pmix/session.hpp>
#include <riseml/pmix/session_rendezvous.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace riseml;
using Clock = std::chrono::steady_clock;

namespace {
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}
}  // namespace

int main(int argc, char** argv) {
  double idle_s = 3, max_cpu = 0.01, max_first_ms = 50;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--idle-s") idle_s = std::stod(argv[i + 1]);
    else if (a == "--max-cpu") max_cpu = std::stod(argv[i + 1]);
    else if (a == "--max-first-ms") max_first_ms = std::stod(argv[i + 1]);
  }
  try {
    auto rendezvous = pmix::SessionRendezvous(std::shared_ptr<pmix::Session>(pmix::init()));
    engine::Engine e(rendezvous, CommunicatorOptions::from_environment(), engine::EngineOptions{});
    std::vector<float> warm(1000, 1.0f);
    e.allreduce("warm", warm.data(), warm.data(), {1000}, DataType::float32, ReduceOp::sum).wait();
    // Idle: the engine thread alone runs (the main thread sleeps).
    const double cpu0 = cpu_seconds();
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(idle_s));
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    const double share = (cpu_seconds() - cpu0) / wall;
    // The first tensor after the idle time, on every rank at once (rank 0 a bit later, so the
    // others wait parked for it).
    if (e.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::vector<float> v(1000, static_cast<float>(e.rank() + 1));
    const auto t1 = Clock::now();
    e.allreduce("first", v.data(), v.data(), {1000}, DataType::float32, ReduceOp::sum).wait();
    const double first_ms = std::chrono::duration<double, std::milli>(Clock::now() - t1).count();
    const float want = static_cast<float>(e.size() * (e.size() + 1) / 2);
    const bool right = v[0] == want && v[999] == want;
    std::printf("rank %d: idle %.1f s: %.3f%% of a core; first allreduce after it: %.2f ms%s\n",
                e.rank(), wall, share * 100, first_ms, right ? "" : " WRONG RESULT");
    const bool ok = right && share <= max_cpu && first_ms <= max_first_ms;
    if (!ok)
      std::fprintf(stderr, "rank %d: FAILED (limits: %.3f%% of a core, %.1f ms)\n", e.rank(), max_cpu * 100,
                   max_first_ms);
    return ok ? 0 : 1;
  } catch (const std::exception& ex) {
    std::fprintf(stderr, "riseml-engine-idle: %s\n", ex.what());
    return 1;
  }
}
