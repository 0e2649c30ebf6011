// riseml-bench: times our allreduce (or, with --collective, reduce-scatter and all-to-all) and,
// with --peers, Open MPI's and Gloo's on the same
// buffers in the same processes, by the same loops, one after the other (this machine's
// numbers move 2-3x between runs, so only numbers from one run compare): back to back as
// nccl-tests does (out of place and in place) and per call (barrier, one call, slowest rank).
// Every round is a whole sweep, so a state that changes during the run shows as spread.
// Prints a table per implementation and mode (busbw = algbw * 2(n-1)/n for allreduce,
// (n-1)/n for reduce-scatter and all-to-all, as nccl-tests), the ratios, and with
// --limit the memory-bound busbw of this machine (and, where links are TCP, a plain TCP
// stream's); --csv/--plot write them out.
//   riseml-launch -n 2 riseml-bench [--sizes ...] [--peers gloo]
//   mpirun -np 2 riseml-bench --peers mpi,gloo
#include <malloc.h>

#include <riseml/communicator.hpp>
#include <riseml/in_memory_rendezvous.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "bench_report.hpp"
#include "contender.hpp"
#include "link_fit.hpp"
#include <riseml/half_float.hpp>
#include <riseml/reduce_kernels.hpp>
#include "measure.hpp"
#include "memory_limit.hpp"
#include "stream_limit.hpp"

#ifdef RISEML_BENCH_HAVE_MPI
#include <mpi.h>

#include "mpi_contender.hpp"
#include "mpi_rendezvous.hpp"
#endif
#ifdef RISEML_BENCH_HAVE_GLOO
#include "gloo_contender.hpp"
#endif
#ifdef RISEML_BENCH_HAVE_PMIX
#include <riseml/pmix/session.hpp>
#include <riseml/pmix/session_rendezvous.hpp>
#endif

namespace riseml::bench {
namespace {

class OurContender : public Contender {
 public:
  OurContender(Communicator& comm, BenchCollective collective, DataType type, ReduceOp op,
               Algorithm algo)
      : comm_(comm), collective_(collective), type_(type), op_(op), algo_(algo) {}
  std::string name() const override { return "riseml"; }
  std::string description() const override {
    const std::string where = "transports [" + comm_.describe_transports() + "]";
    const std::string kernels = std::string("kernels ") + kernels::to_string(kernels::active_isa());
    switch (collective_) {
      case BenchCollective::allreduce:
        return "riseml: " + where + ", algorithm " + std::string(to_string(algo_)) + ", " + kernels;
      case BenchCollective::reduce_scatter:
        return "riseml: reduce_scatter (ring), " + where + ", " + kernels;
      case BenchCollective::alltoall: return "riseml: alltoall (pairwise exchange), " + where;
    }
    return "riseml";
  }
  bool supports(DataType t, ReduceOp op) const override {
    return collective_ == BenchCollective::alltoall || t != DataType::boolean ||
           op != ReduceOp::average;
  }
  bool in_place() const override { return collective_ == BenchCollective::allreduce; }
  void run(const void* in, void* out, std::size_t count) override {
    const std::size_t per_rank = count / static_cast<std::size_t>(comm_.size());
    switch (collective_) {
      case BenchCollective::allreduce: comm_.allreduce(in, out, count, type_, op_, algo_); return;
      case BenchCollective::reduce_scatter: comm_.reduce_scatter(in, out, per_rank, type_, op_); return;
      case BenchCollective::alltoall: comm_.alltoall(in, out, per_rank, type_); return;
    }
  }
  void run_in_place(void* buffer, std::size_t count) override {
    comm_.allreduce(buffer, buffer, count, type_, op_, algo_);
  }

 private:
  Communicator& comm_;
  BenchCollective collective_;
  DataType type_;
  ReduceOp op_;
  Algorithm algo_;
};

// The check pattern: small integers (powers of two for product) so every result is exact.
double pattern(ReduceOp op, int rank, std::size_t i) {
  if (op == ReduceOp::product) return (rank + i) % 7 == 0 ? 2.0 : 1.0;
  return static_cast<double>((static_cast<std::size_t>(rank) * 3 + i) % 5);
}

double expected(ReduceOp op, int n, std::size_t i) {
  double acc = pattern(op, 0, i);
  for (int r = 1; r < n; ++r) {
    const double x = pattern(op, r, i);
    if (op == ReduceOp::sum || op == ReduceOp::average) acc += x;
    if (op == ReduceOp::product) acc *= x;
    if (op == ReduceOp::min) acc = std::min(acc, x);
    if (op == ReduceOp::max) acc = std::max(acc, x);
  }
  return acc;
}

void store(DataType t, void* p, std::size_t i, double v) {
  switch (t) {
    case DataType::float32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DataType::float64: static_cast<double*>(p)[i] = v; break;
    case DataType::float16: static_cast<std::uint16_t*>(p)[i] = kernels::float_to_float16(static_cast<float>(v)); break;
    case DataType::bfloat16: static_cast<std::uint16_t*>(p)[i] = kernels::float_to_bfloat16(static_cast<float>(v)); break;
    case DataType::int32: static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(v); break;
    case DataType::int64: static_cast<std::int64_t*>(p)[i] = static_cast<std::int64_t>(v); break;
    case DataType::uint8: static_cast<std::uint8_t*>(p)[i] = static_cast<std::uint8_t>(v); break;
    case DataType::int8: static_cast<std::int8_t*>(p)[i] = static_cast<std::int8_t>(v); break;
    case DataType::int16: static_cast<std::int16_t*>(p)[i] = static_cast<std::int16_t>(v); break;
    case DataType::boolean: static_cast<std::uint8_t*>(p)[i] = v != 0 ? 1 : 0; break;
  }
}

double load(DataType t, const void* p, std::size_t i) {
  switch (t) {
    case DataType::float32: return static_cast<const float*>(p)[i];
    case DataType::float64: return static_cast<const double*>(p)[i];
    case DataType::float16: return kernels::float16_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case DataType::bfloat16: return kernels::bfloat16_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case DataType::int32: return static_cast<const std::int32_t*>(p)[i];
    case DataType::int64: return static_cast<double>(static_cast<const std::int64_t*>(p)[i]);
    case DataType::uint8:
    case DataType::boolean: return static_cast<const std::uint8_t*>(p)[i];
    case DataType::int8: return static_cast<const std::int8_t*>(p)[i];
    case DataType::int16: return static_cast<const std::int16_t*>(p)[i];
  }
  return 0;
}

long long sum_over_ranks(Communicator& comm, long long x) {
  std::int64_t v = x;
  comm.allreduce(&v, &v, 1, DataType::int64, ReduceOp::sum);
  return v;
}

// What the type makes of v (bool: v != 0; integers truncate).
double as_stored(DataType t, double v) {
  std::byte tmp[8];
  store(t, tmp, 0, v);
  return load(t, tmp, 0);
}

// The element rank `from` sends rank `to` at index j of its block, in an all-to-all check.
double alltoall_pattern(int from, int to, std::size_t j) {
  return static_cast<double>((static_cast<std::size_t>(from) * 3 + static_cast<std::size_t>(to) * 5 + j) % 11);
}

// Runs the contender once on the check pattern and counts wrong elements on all ranks.
long long count_wrong(Communicator& comm, Contender& c, const BenchOptions& o,
                      BenchCollective collective, void* in, void* out, std::size_t count,
                      bool in_place) {
  const int n = comm.size(), me = comm.rank();
  const std::size_t per_rank = count / static_cast<std::size_t>(n);
  auto reduced = [&](std::size_t i) {  // element i of the reduction over all ranks
    double want = expected(o.op, n, i);
    if (o.op == ReduceOp::average) {
      // Stored after the same rounding the type does.
      std::vector<std::byte> tmp(8);
      store(o.type, tmp.data(), 0, want);
      kernels::divide(o.type, tmp.data(), 1, n);
      return load(o.type, tmp.data(), 0);
    }
    return as_stored(o.type, want);
  };
  if (collective == BenchCollective::alltoall) {
    for (int to = 0; to < n; ++to)
      for (std::size_t j = 0; j < per_rank; ++j)
        store(o.type, in, static_cast<std::size_t>(to) * per_rank + j, alltoall_pattern(me, to, j));
  } else {
    for (std::size_t i = 0; i < count; ++i) store(o.type, in, i, pattern(o.op, me, i));
  }
  std::memset(out, 0, count * element_size(o.type));
  if (in_place) std::memcpy(out, in, count * element_size(o.type));
  comm.barrier();
  if (in_place)
    c.run_in_place(out, count);
  else
    c.run(in, out, count);
  long long wrong = 0;
  switch (collective) {
    case BenchCollective::allreduce:
      for (std::size_t i = 0; i < count; ++i)
        if (load(o.type, out, i) != reduced(i)) ++wrong;
      break;
    case BenchCollective::reduce_scatter:
      for (std::size_t j = 0; j < per_rank; ++j)
        if (load(o.type, out, j) != reduced(static_cast<std::size_t>(me) * per_rank + j)) ++wrong;
      break;
    case BenchCollective::alltoall:
      for (int from = 0; from < n; ++from)
        for (std::size_t j = 0; j < per_rank; ++j)
          if (load(o.type, out, static_cast<std::size_t>(from) * per_rank + j) !=
              as_stored(o.type, alltoall_pattern(from, me, j)))
            ++wrong;
      break;
  }
  return sum_over_ranks(comm, wrong);
}

std::vector<std::unique_ptr<Contender>> make_contenders(Communicator& comm, const BenchOptions& o,
                                                        BenchCollective collective,
                                                        bool under_mpirun) {
  std::vector<std::unique_ptr<Contender>> contenders;
  contenders.push_back(std::make_unique<OurContender>(comm, collective, o.type, o.op, o.algorithm));
  if (o.mpi) {
#ifdef RISEML_BENCH_HAVE_MPI
    if (!under_mpirun) throw std::runtime_error("--peers mpi needs a start under mpirun");
    contenders.push_back(make_mpi_contender(collective, o.type, o.op, comm.size()));
#else
    (void)under_mpirun;
    throw std::runtime_error("--peers mpi: built without MPI");
#endif
  }
  if (o.gloo && collective != BenchCollective::reduce_scatter) {
#ifdef RISEML_BENCH_HAVE_GLOO
    contenders.push_back(make_gloo_contender(comm, collective, o.type, o.op));
#else
    throw std::runtime_error("--peers gloo: built without Gloo");
#endif
  }
  return contenders;
}

// "busbw.png" + "alltoall" -> "busbw.alltoall.png"; empty stays empty.
std::string with_suffix(const std::string& path, const std::string& suffix) {
  if (path.empty()) return path;
  const auto slash = path.find_last_of('/');
  const auto dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash))
    return path + "." + suffix;
  return path.substr(0, dot) + "." + suffix + path.substr(dot);
}

int run_bench(Communicator& comm, const BenchOptions& o, BenchCollective collective,
              bool under_mpirun) {
  const int n = comm.size();
  const std::size_t esize = element_size(o.type);
  const bool allreduce = collective == BenchCollective::allreduce;
  std::vector<std::unique_ptr<Contender>> contenders;
  try {
    contenders = make_contenders(comm, o, collective, under_mpirun);
  } catch (const std::runtime_error& e) {
    if (comm.rank() == 0) std::fprintf(stderr, "riseml-bench: %s\n", e.what());
    return 2;
  }

  std::size_t max_bytes = allreduce ? o.precondition_bytes : 0;
  for (auto s : o.sizes) max_bytes = std::max(max_bytes, s);
  // Both buffers touched up front: no first-touch page faults inside the timed loops.
  std::vector<std::byte> in_buffer(max_bytes + 64), out_buffer(max_bytes + 64);
  std::memset(in_buffer.data(), 0, in_buffer.size());
  std::memset(out_buffer.data(), 0, out_buffer.size());
  void* in = in_buffer.data();
  void* out = out_buffer.data();
  std::unique_ptr<MemoryLimit> limit;
  std::unique_ptr<StreamLimit> stream_limit;
  if (o.limit && allreduce) {
    limit = std::make_unique<MemoryLimit>(o.type, max_bytes, n);
    if (links_use_tcp(comm)) stream_limit = std::make_unique<StreamLimit>(comm);
  }

  // The state a long job is in: many large calls before the measured ones.
  for (int i = 0; allreduce && i < o.precondition_calls; ++i)
    contenders[0]->run_in_place(out, o.precondition_bytes / esize);

  // In place where the collective has it (allreduce), else out of place.
  auto run_once = [&](Contender& c, std::size_t count) {
    if (c.in_place())
      c.run_in_place(out, count);
    else
      c.run(in, out, count);
  };
  Results results(contenders.size(), o.sizes.size(), static_cast<std::size_t>(o.rounds));
  std::vector<int> iterations(o.sizes.size(), 0);
  const int calls_per_round = std::max(5, (o.calls + o.rounds - 1) / o.rounds);
  for (int round = 0; round < o.rounds; ++round) {
    for (std::size_t s = 0; s < o.sizes.size(); ++s) {
      const std::size_t count = bench_count(collective, o.sizes[s], o.type, n);
      for (std::size_t i = 0; i < count; ++i) store(o.type, in, i, pattern(o.op, comm.rank(), i));
      std::memcpy(out, in, count * esize);
      for (auto& c : contenders)
        if (c->supports(o.type, o.op)) c->prepare(in, out, count);
      if (iterations[s] == 0) {
        // Iterations of a back-to-back loop, from a timed warm-up of ours, the same for all.
        contenders[0]->run(in, out, count);
        const double warm = time_back_to_back(comm, [&] { contenders[0]->run(in, out, count); }, 2);
        iterations[s] = static_cast<int>(std::clamp(o.round_seconds / std::max(warm, 1e-7), 3.0, 5000.0));
      }
      const int iters = iterations[s];
      for (std::size_t k = 0; k < contenders.size(); ++k) {
        // Rotate the order every round so no contender always runs first.
        const std::size_t ci = (k + static_cast<std::size_t>(round)) % contenders.size();
        Contender& c = *contenders[ci];
        if (!c.supports(o.type, o.op)) continue;
        run_once(c, count);  // warm: its own buffers, its own connections
        // Ours (contender 0) also counts how its ranks waited, summed over the ranks.
        auto count_waits = [&](Cell& cell, int calls, const auto& timed) {
          const WaitStats before = wait_stats();
          timed();
          if (ci != 0 || !o.wait_stats) return;
          const WaitStats after = wait_stats();
          std::int64_t d[] = {std::int64_t(after.yields - before.yields),
                              std::int64_t(after.timed_sleeps - before.timed_sleeps),
                              std::int64_t(after.doorbell_sleeps - before.doorbell_sleeps),
                              std::int64_t(after.polls - before.polls),
                              std::int64_t(after.slept_ns - before.slept_ns)};
          comm.allreduce(d, d, 5, DataType::int64, ReduceOp::sum);
          cell.waits.yields += static_cast<std::uint64_t>(d[0]);
          cell.waits.timed_sleeps += static_cast<std::uint64_t>(d[1]);
          cell.waits.doorbell_sleeps += static_cast<std::uint64_t>(d[2]);
          cell.waits.polls += static_cast<std::uint64_t>(d[3]);
          cell.waits.slept_ns += static_cast<std::uint64_t>(d[4]);
          cell.waited_calls += static_cast<std::uint64_t>(calls);
        };
        if (o.back_to_back) {
          if (c.out_of_place()) {
            Cell& cell = results.at(ci, Mode::out_of_place, s);
            count_waits(cell, iters, [&] {
              cell.rounds.push_back(time_back_to_back(comm, [&] { c.run(in, out, count); }, iters));
            });
          }
          if (c.in_place()) {
            Cell& cell = results.at(ci, Mode::in_place, s);
            count_waits(cell, iters, [&] {
              cell.rounds.push_back(time_back_to_back(comm, [&] { c.run_in_place(out, count); }, iters));
            });
          }
        }
        if (o.per_call) {
          Cell& cell = results.at(ci, Mode::per_call, s);
          count_waits(cell, calls_per_round, [&] {
            const auto times = time_per_call(comm, [&] { run_once(c, count); }, calls_per_round);
            cell.rounds.push_back(quantile(times, 0.5));
            cell.calls.insert(cell.calls.end(), times.begin(), times.end());
          });
        }
      }
      if (limit) results.limit(s).rounds.push_back(limit->seconds(comm, o.sizes[s], iters));
      if (stream_limit)
        results.stream_limit(s).rounds.push_back(stream_limit->seconds(comm, o.sizes[s], iters));
    }
  }
  // Every result checked after the timed rounds, both ways each contender runs.
  for (std::size_t s = 0; s < o.sizes.size(); ++s) {
    const std::size_t count = bench_count(collective, o.sizes[s], o.type, n);
    for (std::size_t ci = 0; ci < contenders.size(); ++ci) {
      Contender& c = *contenders[ci];
      if (!c.supports(o.type, o.op)) continue;
      c.prepare(in, out, count);
      const long long wrong_in =
          c.in_place() ? count_wrong(comm, c, o, collective, in, out, count, true) : 0;
      const long long wrong_out =
          c.out_of_place() ? count_wrong(comm, c, o, collective, in, out, count, false) : 0;
      for (Mode m : {Mode::out_of_place, Mode::in_place, Mode::per_call}) {
        Cell& cell = results.at(ci, m, s);
        const bool out_of_place = m == Mode::out_of_place || (m == Mode::per_call && !c.in_place());
        if (!cell.rounds.empty()) cell.wrong = out_of_place ? wrong_out : wrong_in;
      }
    }
  }

  if (comm.rank() == 0) {
    Report report(o, n, results, collective);
    for (auto& c : contenders) report.add_contender(c->name(), c->description());
    // Which placement this run had (bound or not), as rank 0's host sees it.
    report.add_note("placement: " + comm.describe_placement());
    if (o.gloo && collective == BenchCollective::reduce_scatter)
      report.add_note("gloo: not timed (its reduce-scatter is in place, by halving-doubling over "
                      "another block layout; riseml-bench does not wire it in)");
    if (o.limit && !allreduce) report.add_note("limit: measured for allreduce only");
    if (o.precondition_calls > 0 && !allreduce)
      report.add_note("precondition: applies to the allreduce sweep only");
    if (stream_limit)
      report.set_stream_note(stream_limit->describe() + ", one connection each way");
    report.print(stdout);
    std::fflush(stdout);
    std::string csv = o.csv;
    if (csv.empty() && !o.plot.empty()) csv = o.plot + ".csv";
    std::string plot = o.plot;
    if (!allreduce) {  // one file per collective beside the allreduce one
      csv = with_suffix(csv, to_string(collective));
      plot = with_suffix(plot, to_string(collective));
    }
    if (!csv.empty()) report.write_csv(csv);
    if (!plot.empty()) {
      const std::string cmd = std::string("/usr/bin/python3 '") + RISEML_BENCH_PLOT_SCRIPT + "' '" +
                              csv + "' '" + plot + "'";
      if (std::system(cmd.c_str()) != 0)
        std::fprintf(stderr, "riseml-bench: plotting failed (python3-matplotlib?); data in %s\n", csv.c_str());
    }
  }
  return results.total_wrong() ? 1 : 0;
}

}  // namespace
}  // namespace riseml::bench

int main(int argc, char** argv) {
  using namespace riseml;
  const bench::BenchOptions options = bench::parse_bench_options(argc, argv);
  // Open MPI at its best: freed memory stays in the heap, so its per-call message-sized buffer
  // is not a fresh (first-touch) mapping every time. Same as MALLOC_MMAP_MAX_=0
  // MALLOC_TRIM_THRESHOLD_=<huge>; it changes nothing for our implementation.
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, std::numeric_limits<int>::max());
  // Open MPI's mpirun marks its ranks so; riseml-launch and srun do not. Under
  // `srun --mpi=pmix`, Open MPI starts directly from Slurm's PMIx server, so --peers mpi works
  // there too (across nodes, the comparison with Open MPI over TCP).
  const bool under_srun_pmix = std::getenv("SLURM_STEP_ID") && std::getenv("PMIX_RANK");
  const bool under_mpirun =
      std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || (options.mpi && under_srun_pmix);
  int status = 0;
  try {
    std::unique_ptr<Rendezvous> rendezvous;
#ifdef RISEML_BENCH_HAVE_MPI
    if (under_mpirun) {
      MPI_Init(&argc, &argv);
      rendezvous = std::make_unique<bench::MpiRendezvous>();
    }
#endif
#ifdef RISEML_BENCH_HAVE_PMIX
    if (!rendezvous)
      rendezvous = std::make_unique<pmix::SessionRendezvous>(std::shared_ptr<pmix::Session>(pmix::init()));
#endif
    std::shared_ptr<InMemoryRendezvousHub> hub;
    if (!rendezvous) {
      hub = std::make_shared<InMemoryRendezvousHub>(1);
      rendezvous = std::make_unique<InMemoryRendezvous>(hub, 0);
    }
    {
      Communicator comm(*rendezvous, CommunicatorOptions::from_environment());
      if (!options.fit.empty())
        status = bench::run_link_fit(*rendezvous, comm, options.fit, options.rounds);
      else
        for (bench::BenchCollective collective : options.collectives)
        status = std::max(status, bench::run_bench(comm, options, collective, under_mpirun));
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "riseml-bench: %s\n", e.what());
    status = 1;
  }
#ifdef RISEML_BENCH_HAVE_MPI
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) MPI_Finalize();
#endif
  return status;
}
