// riseml-fault-trials: kill -9 (or SIGSTOP: alive but silent, like a hung GPU) of a random rank
// at a random moment of a stream of collectives, many times, and check what the survivors say. The ranks are forked here (a launcher would
// tear the survivors down itself) and meet through a rendezvous in a temporary directory; each
// survivor must find the death on its own. Every collective that returns is checked element by
// element against the exact expected bytes, so a call that "succeeds" with wrong data is seen.
//
// Modes: shm and tcp (one host), hierarchical (two pretend hosts: shared memory inside, TCP
// between), engine (the background engine with fused tensors, on two pretend hosts), elastic
// (two pretend hosts, 4-5 ranks, two ranks killed one after the other: after each death the
// survivors re-form their world without the rank their error blamed, as elastic training does,
// and go on; every result of every world is checked).
//
//   riseml-fault-trials [--trials N] [--modes shm,tcp,hierarchical,engine,elastic] [--fault kill|stop]
//                       [--min-ranks 3] [--max-ranks 4] [--timeout-s 5] [--seed S] [--verbose]
//
// A trial passes when every survivor exits within the timeout (plus slack) with an error that
// blames the victim (its culprit rank) and names it and its host first (not a healthy rank it
// waited on), and no call ever returned wrong bytes. Prints one row per
// mode and exits 1 when any trial failed.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <riseml/communicator.hpp>
#include <riseml/subset_rendezvous.hpp>
#include <riseml/engine/engine.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <map>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "file_rendezvous.hpp"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;
using riseml::Algorithm;
using riseml::CollectiveError;
using riseml::Communicator;
using riseml::CommunicatorOptions;
using riseml::DataType;
using riseml::ReduceOp;
using riseml::TransportChoice;

enum class Mode { shm, tcp, hierarchical, engine, elastic };

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::shm: return "shm";
    case Mode::tcp: return "tcp";
    case Mode::hierarchical: return "hierarchical";
    case Mode::engine: return "engine";
    case Mode::elastic: return "elastic";
  }
  return "?";
}

// What each rank contributes: small integers, so float sums are exact in any order.
float value(int rank, std::size_t i, std::uint64_t step) {
  const std::uint64_t h = (i * 2654435761u) ^ (static_cast<std::uint64_t>(rank) * 40503u) ^ (step * 97);
  return static_cast<float>(h & 1023);
}

// The collectives of one step, the same on every rank (drawn from a generator every rank seeds
// alike).
struct Step {
  enum Kind { allreduce, broadcast, allgatherv, reduce_scatter } kind;
  Algorithm algorithm = Algorithm::automatic;
  std::size_t count = 0;            // allreduce/broadcast elements, reduce_scatter per rank
  std::vector<std::size_t> counts;  // allgatherv
  int root = 0;
};

Step draw_step(std::mt19937_64& rng, int size, Mode mode) {
  Step s;
  const int k = static_cast<int>(rng() % 10);
  s.kind = k < 6 ? Step::allreduce : k < 7 ? Step::broadcast : k < 8 ? Step::allgatherv
                                                                     : Step::reduce_scatter;
  // Mostly large (a long call is where a kill lands), sometimes small (latency algorithms).
  auto count = [&] {
    const int band = static_cast<int>(rng() % 8);
    if (band == 0) return static_cast<std::size_t>(1 + rng() % 1000);
    if (band == 1) return static_cast<std::size_t>(1000 + rng() % 64000);
    return static_cast<std::size_t>((256 << 10) + rng() % (3 << 20));
  };
  s.count = count();
  if (s.kind == Step::allreduce) {
    const Algorithm choices[] = {Algorithm::automatic, Algorithm::ring, Algorithm::halving_doubling,
                                 Algorithm::direct};
    s.algorithm = mode == Mode::hierarchical ? Algorithm::hierarchical : choices[rng() % 4];
  }
  if (s.kind == Step::reduce_scatter) s.count = std::max<std::size_t>(1, s.count / static_cast<std::size_t>(size));
  if (s.kind == Step::allgatherv) {
    for (int r = 0; r < size; ++r) s.counts.push_back(rng() % (s.count / static_cast<std::size_t>(size) + 1));
  }
  s.root = static_cast<int>(rng() % static_cast<std::uint64_t>(size));
  return s;
}

// Runs steps until a collective fails (or `steps` are done: ""); returns a description of the
// first wrong element, or throws the CollectiveError.
std::string run_steps(Communicator& comm, Mode mode, std::uint64_t seed,
                      std::uint64_t steps = ~std::uint64_t{0}) {
  const int rank = comm.rank(), size = comm.size();
  std::mt19937_64 rng(seed);
  std::vector<float> in, out;
  for (std::uint64_t step = 0; step < steps; ++step) {
    const Step s = draw_step(rng, size, mode);
    auto check = [&](std::size_t n, auto expected) -> std::string {
      std::size_t wrong = 0, first = 0;
      for (std::size_t i = 0; i < n; ++i)
        if (out[i] != expected(i) && wrong++ == 0) first = i;
      if (wrong == 0) return "";
      std::ostringstream o;
      o << "step " << step << " (kind " << s.kind << ", " << n << " elements): element " << first
        << " is " << out[first] << ", want " << expected(first) << " (" << wrong << " wrong)";
      return o.str();
    };
    std::string bad;
    switch (s.kind) {
      case Step::allreduce: {
        in.resize(s.count);
        out.assign(s.count, -1.0f);
        for (std::size_t i = 0; i < s.count; ++i) in[i] = value(rank, i, step);
        // In place half the time: the fusion buffer and the engine reduce in place.
        const bool in_place = step % 2 == 0;
        if (in_place) out = in;
        comm.allreduce(in_place ? out.data() : in.data(), out.data(), s.count, DataType::float32,
                       ReduceOp::sum, s.algorithm);
        bad = check(s.count, [&](std::size_t i) {
          float sum = 0;
          for (int r = 0; r < size; ++r) sum += value(r, i, step);
          return sum;
        });
        break;
      }
      case Step::broadcast: {
        out.resize(s.count);
        for (std::size_t i = 0; i < s.count; ++i) out[i] = rank == s.root ? value(rank, i, step) : -1.0f;
        comm.broadcast(out.data(), s.count, DataType::float32, s.root);
        bad = check(s.count, [&](std::size_t i) { return value(s.root, i, step); });
        break;
      }
      case Step::allgatherv: {
        std::size_t total = 0;
        std::vector<std::size_t> start;
        for (std::size_t c : s.counts) start.push_back(total), total += c;
        const std::size_t mine = s.counts[static_cast<std::size_t>(rank)];
        in.resize(mine);
        for (std::size_t i = 0; i < mine; ++i) in[i] = value(rank, i, step);
        out.assign(total, -1.0f);
        comm.allgatherv(in.data(), out.data(), s.counts, DataType::float32);
        bad = check(total, [&](std::size_t i) {
          int owner = 0;
          while (i >= start[static_cast<std::size_t>(owner)] + s.counts[static_cast<std::size_t>(owner)]) ++owner;
          return value(owner, i - start[static_cast<std::size_t>(owner)], step);
        });
        break;
      }
      case Step::reduce_scatter: {
        const std::size_t all = s.count * static_cast<std::size_t>(size);
        in.resize(all);
        for (std::size_t i = 0; i < all; ++i) in[i] = value(rank, i, step);
        out.assign(s.count, -1.0f);
        comm.reduce_scatter(in.data(), out.data(), s.count, DataType::float32, ReduceOp::sum);
        bad = check(s.count, [&](std::size_t i) {
          float sum = 0;
          for (int r = 0; r < size; ++r) sum += value(r, static_cast<std::size_t>(rank) * s.count + i, step);
          return sum;
        });
        break;
      }
    }
    if (!bad.empty()) return bad;
  }
  return "";
}

// Elastic mode: worlds one after the other. After a failure the survivors leave out the rank
// the error blamed (the same on every survivor, or their fences would not meet) and go on in
// a world numbered anew; after `failures` failures the last world runs a few steps and ends.
// Writes gen<g>.<rank> when world g is set up, error<g>/culprit<g> (a job rank) when it failed.
int run_elastic(riseml::test::FileRendezvous& job, CommunicatorOptions o, int rank, int n,
                std::uint64_t seed, int failures, const std::function<void(const std::string&,
                                                                           const std::string&)>& write) {
  std::vector<int> members(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) members[static_cast<std::size_t>(r)] = r;
  for (int generation = 0;; ++generation) {
    riseml::SubsetRendezvous world(job, members, riseml::SubsetRendezvous::Fences::members);
    o.rendezvous_prefix = "g" + std::to_string(generation);
    Communicator comm(world, o);
    write("gen" + std::to_string(generation), "ready\n");
    try {
      const std::string bad =
          run_steps(comm, Mode::elastic, seed + static_cast<std::uint64_t>(generation),
                    generation == failures ? 30 : ~std::uint64_t{0});
      if (!bad.empty()) {
        write("wrong", "world " + std::to_string(generation) + ": " + bad);
        return 4;
      }
      write("done", "done\n");
      return 0;
    } catch (const CollectiveError& e) {
      const int culprit = e.culprit_rank();
      const int job_culprit =
          culprit >= 0 && culprit < comm.size() ? members[static_cast<std::size_t>(culprit)] : -1;
      write("error" + std::to_string(generation), e.what());
      write("culprit" + std::to_string(generation), std::to_string(job_culprit));
      if (job_culprit < 0 || job_culprit == rank) return 5;
      std::erase(members, job_culprit);
    }
  }
}

// The engine's way: each step a batch of named tensors, enqueued one by one, fused by the
// engine into one buffer (or reduced alone when large), then every tensor checked.
std::string run_engine_steps(riseml::engine::Engine& engine, std::uint64_t seed) {
  const int rank = engine.rank(), size = engine.size();
  std::mt19937_64 rng(seed);
  for (std::uint64_t step = 0;; ++step) {
    const std::size_t tensors = 1 + rng() % 24;
    std::vector<std::vector<float>> data(tensors);
    std::vector<riseml::engine::Handle> handles;
    for (std::size_t t = 0; t < tensors; ++t) {
      const std::size_t n = rng() % 4 == 0 ? 1 + rng() % 2000 : 1 + rng() % (1 << 19);
      data[t].resize(n);
      for (std::size_t i = 0; i < n; ++i) data[t][i] = value(rank, i + t, step);
      handles.push_back(engine.allreduce("step" + std::to_string(step) + ".t" + std::to_string(t),
                                         data[t].data(), data[t].data(),
                                         {static_cast<std::int64_t>(n)}, DataType::float32,
                                         ReduceOp::sum));
    }
    for (auto& h : handles) h.wait();
    for (std::size_t t = 0; t < tensors; ++t) {
      std::size_t wrong = 0, first = 0;
      auto expected = [&](std::size_t i) {
        float sum = 0;
        for (int r = 0; r < size; ++r) sum += value(r, i + t, step);
        return sum;
      };
      for (std::size_t i = 0; i < data[t].size(); ++i)
        if (data[t][i] != expected(i) && wrong++ == 0) first = i;
      if (wrong > 0) {
        std::ostringstream o;
        o << "step " << step << " tensor " << t << " of " << tensors << ": element " << first
          << " is " << data[t][first] << ", want " << expected(first) << " (" << wrong
          << " wrong)";
        return o.str();
      }
    }
  }
}

[[noreturn]] void run_rank(const fs::path& dir, int rank, int n, Mode mode, int connections,
                           std::chrono::milliseconds timeout, std::uint64_t seed) {
  int status = 3;
  auto write = [&](const char* what, const std::string& text) {
    std::ofstream(dir / (std::string(what) + "." + std::to_string(rank))) << text;
  };
  try {
    riseml::test::FileRendezvous rendezvous(dir, rank, n);
    CommunicatorOptions o;
    o.timeout = timeout;
    o.tcp_connections = connections;
    o.transport = mode == Mode::shm ? TransportChoice::shm
                  : mode == Mode::tcp ? TransportChoice::tcp
                                      : TransportChoice::automatic;
    // Two pretend hosts: shared memory inside each, TCP between them.
    if (mode == Mode::hierarchical || mode == Mode::engine || mode == Mode::elastic)
      o.host_key = "host-" + std::to_string(rank * 2 / n);
    if (mode == Mode::elastic) {
      write("ready", "ready\n");
      _exit(run_elastic(rendezvous, o, rank, n, seed, 2,
                        [&](const std::string& what, const std::string& text) {
                          write(what.c_str(), text);
                        }));
    }
    std::unique_ptr<Communicator> comm;
    std::unique_ptr<riseml::engine::Engine> engine;
    if (mode == Mode::engine) {
      riseml::engine::EngineOptions e;
      e.fusion_threshold = 1 << 20;  // several fused buffers per step, some tensors alone
      engine = std::make_unique<riseml::engine::Engine>(rendezvous, o, e);
    } else {
      comm = std::make_unique<Communicator>(rendezvous, o);
    }
    write("ready", "ready\n");
    try {
      const std::string bad = comm ? run_steps(*comm, mode, seed) : run_engine_steps(*engine, seed);
      write("wrong", bad);
      status = 4;
    } catch (const CollectiveError& e) {
      write("error", e.what());
      write("culprit", std::to_string(e.culprit_rank()));
      status = 0;
    }
  } catch (const std::exception& e) {
    write("setup", e.what());
  }
  _exit(status);
}

struct Tally {
  int trials = 0, survivors = 0, wrong = 0, hangs = 0, unnamed = 0, bad_exit = 0, setup = 0;
  std::vector<double> detect_ms;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// One trial: returns false (and prints why) when it failed.
// A fresh folder for one trial's files (the ranks' errors, culprits, wrong results).
fs::path new_trial_dir() {
  char templ[] = "/tmp/riseml-fault-XXXXXX";
  if (!::mkdtemp(templ)) {
    std::perror("mkdtemp");
    std::exit(2);
  }
  return templ;
}

// Waits for child `pid` to end until `deadline`; false (it hung) when it did not.
bool wait_until(pid_t pid, Clock::time_point deadline, int& status) {
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

bool run_trial(Mode mode, bool stop, int ranks, std::chrono::milliseconds timeout,
               std::mt19937_64& rng, int trial, bool verbose, Tally& tally) {
  const fs::path dir = new_trial_dir();
  const std::uint64_t seed = rng();
  const int connections = mode == Mode::tcp ? 1 + static_cast<int>(rng() % 3) : 1;
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      std::exit(2);
    }
    if (pid == 0) run_rank(dir, r, ranks, mode, connections, timeout, seed);
    pids.push_back(pid);
  }
  auto kill_all = [&] {
    for (pid_t p : pids)
      if (p > 0) ::kill(p, SIGKILL);
    for (pid_t& p : pids)
      if (p > 0) ::waitpid(p, nullptr, 0), p = -1;
  };
  const std::string what = std::string(mode_name(mode)) + " trial " + std::to_string(trial) + " (" +
                           std::to_string(ranks) + " ranks, " + std::to_string(connections) +
                           " connection(s), seed " + std::to_string(seed) + ")";
  const auto ready_deadline = Clock::now() + 30s;
  for (int r = 0; r < ranks; ++r)
    while (!fs::exists(dir / ("ready." + std::to_string(r)))) {
      if (Clock::now() > ready_deadline || fs::exists(dir / ("setup." + std::to_string(r)))) {
        std::printf("%s: rank %d was not set up: %s\n", what.c_str(), r,
                    slurp(dir / ("setup." + std::to_string(r))).c_str());
        kill_all();
        fs::remove_all(dir);
        ++tally.setup;
        return false;
      }
      std::this_thread::sleep_for(1ms);
    }
  ++tally.trials;
  // A random moment: early in a call, deep inside a long one, between two.
  std::this_thread::sleep_for(std::chrono::microseconds(rng() % 400000));
  const int victim = static_cast<int>(rng() % static_cast<std::uint64_t>(ranks));
  const pid_t victim_pid = pids[static_cast<std::size_t>(victim)];
  pids[static_cast<std::size_t>(victim)] = -1;
  if (stop) {
    ::kill(victim_pid, SIGSTOP);  // alive, holding its links open, silent
  } else {
    ::kill(victim_pid, SIGKILL);
    ::waitpid(victim_pid, nullptr, 0);
  }
  const auto killed = Clock::now();
  auto end_victim = [&] {
    if (stop) {
      ::kill(victim_pid, SIGKILL);
      ::waitpid(victim_pid, nullptr, 0);
    }
  };

  bool ok = true;
  const std::string dead = "rank " + std::to_string(victim) + " (host ";
  for (int r = 0; r < ranks; ++r) {
    pid_t& p = pids[static_cast<std::size_t>(r)];
    if (p < 0) continue;
    ++tally.survivors;
    int status = 0;
    const bool hung = !wait_until(p, killed + timeout + 3s, status);
    const std::string tag = what + (stop ? ", stopped rank " : ", killed rank ") +
                            std::to_string(victim) + ": rank " + std::to_string(r);
    if (hung) {
      ++tally.hangs;
      ok = false;
      std::printf("%s HUNG\n", tag.c_str());
      kill_all();
      break;
    }
    p = -1;
    tally.detect_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - killed).count());
    const fs::path wrong = dir / ("wrong." + std::to_string(r));
    if (fs::exists(wrong)) {
      ++tally.wrong;
      ok = false;
      std::printf("%s returned WRONG DATA: %s\n", tag.c_str(), slurp(wrong).c_str());
      continue;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      ++tally.bad_exit;
      ok = false;
      std::printf("%s ended with status %d: %s\n", tag.c_str(), status,
                  slurp(dir / ("setup." + std::to_string(r))).c_str());
      continue;
    }
    const std::string error = slurp(dir / ("error." + std::to_string(r)));
    const std::string culprit = slurp(dir / ("culprit." + std::to_string(r)));
    // The first rank the message names (after any prefix of the engine's) is the victim.
    std::smatch first;
    const bool names_victim_first =
        std::regex_search(error, first, std::regex("rank [0-9]+ \\(host ")) && first.str(0) == dead;
    if (!names_victim_first || culprit != std::to_string(victim)) {
      ++tally.unnamed;
      ok = false;
      std::printf("%s did not blame the victim first (culprit %s): %s\n", tag.c_str(),
                  culprit.c_str(), error.c_str());
    } else if (verbose) {
      std::printf("%s: %s\n", tag.c_str(), error.c_str());
    }
  }
  end_victim();
  fs::remove_all(dir);
  return ok;
}

// Elastic: 4-5 ranks; a random one killed (or stopped) once world 0 runs, another once the
// survivors' world 1 runs. Every survivor must blame each victim in turn (so their worlds
// meet), never return wrong data, and finish its third world.
bool run_elastic_trial(bool stop, int ranks, std::chrono::milliseconds timeout,
                       std::mt19937_64& rng, int trial, bool verbose, Tally& tally) {
  const fs::path dir = new_trial_dir();
  const std::uint64_t seed = rng();
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      std::perror("fork");
      std::exit(2);
    }
    if (pid == 0) run_rank(dir, r, ranks, Mode::elastic, 1, timeout, seed);
    pids.push_back(pid);
  }
  std::vector<pid_t> victims_pids;
  auto end_all = [&] {
    for (pid_t p : pids)
      if (p > 0) ::kill(p, SIGKILL);
    for (pid_t p : victims_pids) ::kill(p, SIGKILL);
    for (pid_t p : pids)
      if (p > 0) ::waitpid(p, nullptr, 0);
    for (pid_t p : victims_pids) ::waitpid(p, nullptr, 0);
    fs::remove_all(dir);
  };
  const std::string what = "elastic trial " + std::to_string(trial) + " (" + std::to_string(ranks) +
                           " ranks, seed " + std::to_string(seed) + ")";
  std::vector<int> alive(static_cast<std::size_t>(ranks)), victims;
  for (int r = 0; r < ranks; ++r) alive[static_cast<std::size_t>(r)] = r;
  // Waits until every rank alive runs world `g` (or one of them ended: then it failed).
  auto wait_world = [&](int g) {
    const auto until = Clock::now() + timeout + 15s;
    for (int r : alive)
      while (!fs::exists(dir / ("gen" + std::to_string(g) + "." + std::to_string(r)))) {
        if (Clock::now() > until || ::waitpid(pids[static_cast<std::size_t>(r)], nullptr, WNOHANG) != 0) {
          std::printf("%s: rank %d did not reach world %d: %s%s\n", what.c_str(), r, g,
                      slurp(dir / ("setup." + std::to_string(r))).c_str(),
                      slurp(dir / ("error" + std::to_string(g - 1) + "." + std::to_string(r))).c_str());
          return false;
        }
        std::this_thread::sleep_for(1ms);
      }
    return true;
  };
  ++tally.trials;
  for (int g = 0; g < 2; ++g) {
    if (!wait_world(g)) {
      ++tally.setup;
      end_all();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300000));
    const int victim = alive[rng() % alive.size()];
    victims.push_back(victim);
    const pid_t pid = std::exchange(pids[static_cast<std::size_t>(victim)], -1);
    ::kill(pid, stop ? SIGSTOP : SIGKILL);
    victims_pids.push_back(pid);
    std::erase(alive, victim);
  }
  bool ok = true;
  const auto last_kill = Clock::now();
  for (int r : alive) {
    pid_t& p = pids[static_cast<std::size_t>(r)];
    ++tally.survivors;
    int status = 0;
    const bool hung = !wait_until(p, last_kill + timeout + 20s, status);
    const std::string tag = what + ", victims " + std::to_string(victims[0]) + " then " +
                            std::to_string(victims[1]) + ": rank " + std::to_string(r);
    if (hung) {
      ++tally.hangs;
      std::printf("%s HUNG\n", tag.c_str());
      ok = false;
      continue;
    }
    p = -1;
    tally.detect_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - last_kill).count());
    if (fs::exists(dir / ("wrong." + std::to_string(r)))) {
      ++tally.wrong;
      std::printf("%s returned WRONG DATA: %s\n", tag.c_str(), slurp(dir / ("wrong." + std::to_string(r))).c_str());
      ok = false;
      continue;
    }
    for (int g = 0; g < 2; ++g) {
      const std::string culprit = slurp(dir / ("culprit" + std::to_string(g) + "." + std::to_string(r)));
      if (culprit != std::to_string(victims[static_cast<std::size_t>(g)])) {
        ++tally.unnamed;
        std::printf("%s: world %d blamed %s: %s\n", tag.c_str(), g, culprit.c_str(),
                    slurp(dir / ("error" + std::to_string(g) + "." + std::to_string(r))).c_str());
        ok = false;
      } else if (verbose) {
        std::printf("%s: world %d: %s\n", tag.c_str(), g,
                    slurp(dir / ("error" + std::to_string(g) + "." + std::to_string(r))).c_str());
      }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !fs::exists(dir / ("done." + std::to_string(r)))) {
      ++tally.bad_exit;
      std::printf("%s ended with status %d without finishing world 2\n", tag.c_str(), status);
      ok = false;
    }
  }
  end_all();
  return ok;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1))];
}

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "riseml-fault-trials: %s\nusage: riseml-fault-trials [--trials N] [--modes "
               "shm,tcp,hierarchical,engine,elastic] [--fault kill|stop] [--min-ranks K] [--max-ranks K] [--timeout-s S] [--seed S] "
               "[--verbose]\n",
               why);
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  int trials = 20, min_ranks = 3, max_ranks = 4;
  double timeout_s = 5;
  std::uint64_t seed = std::random_device{}();
  bool verbose = false, stop = false;
  std::vector<Mode> modes = {Mode::shm, Mode::tcp, Mode::hierarchical, Mode::engine};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    try {
      if (a == "--trials") trials = std::stoi(next());
      else if (a == "--min-ranks") min_ranks = std::stoi(next());
      else if (a == "--max-ranks") max_ranks = std::stoi(next());
      else if (a == "--timeout-s") timeout_s = std::stod(next());
      else if (a == "--seed") seed = std::stoull(next());
      else if (a == "--verbose") verbose = true;
      else if (a == "--fault") {
        const std::string f = next();
        if (f != "kill" && f != "stop") usage(("unknown fault " + f).c_str());
        stop = f == "stop";
      }
      else if (a == "--modes") {
        modes.clear();
        std::stringstream list(next());
        for (std::string m; std::getline(list, m, ',');) {
          if (m == "shm") modes.push_back(Mode::shm);
          else if (m == "tcp") modes.push_back(Mode::tcp);
          else if (m == "hierarchical") modes.push_back(Mode::hierarchical);
          else if (m == "engine") modes.push_back(Mode::engine);
          else if (m == "elastic") modes.push_back(Mode::elastic);
          else usage(("unknown mode " + m).c_str());
        }
      } else usage(("unknown option " + a).c_str());
    } catch (const std::logic_error&) {
      usage(("bad value for " + a).c_str());
    }
  }
  if (trials < 1 || min_ranks < 2 || max_ranks < min_ranks) usage("need trials >= 1, 2 <= min-ranks <= max-ranks");
  const auto timeout = std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  std::printf("riseml-fault-trials: %s, %d trial(s) per mode, %d-%d ranks, timeout %.1f s, seed %llu\n",
              stop ? "SIGSTOP" : "kill -9", trials, min_ranks, max_ranks, timeout_s,
              static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  std::mt19937_64 rng(seed);
  std::map<Mode, Tally> tallies;
  bool all_ok = true;
  for (Mode m : modes) {
    Tally& t = tallies[m];
    for (int i = 0; i < trials; ++i) {
      const int ranks = min_ranks + static_cast<int>(rng() % static_cast<std::uint64_t>(max_ranks - min_ranks + 1));
      const bool passed =
          m == Mode::elastic
              ? run_elastic_trial(stop, std::max(ranks, 4), timeout, rng, i, verbose, t)
              : run_trial(m, stop, ranks, timeout, rng, i, verbose, t);
      if (!passed) all_ok = false;
      std::fflush(stdout);
    }
  }
  std::printf("\n| mode | trials | survivors | wrong results | hangs | victim not blamed first | bad exits | setup failures | detect p50 ms | detect max ms |\n");
  std::printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (Mode m : modes) {
    const Tally& t = tallies[m];
    std::printf("| %s | %d | %d | %d | %d | %d | %d | %d | %.0f | %.0f |\n", mode_name(m), t.trials,
                t.survivors, t.wrong, t.hangs, t.unnamed, t.bad_exit, t.setup,
                percentile(t.detect_ms, 0.5), percentile(t.detect_ms, 1.0));
  }
  std::printf("%s\n", all_ok ? "riseml-fault-trials: all trials passed" : "riseml-fault-trials: FAILED");
  return all_ok ? 0 : 1;
}
