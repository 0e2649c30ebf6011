// riseml-bench: times our allreduce and, with --peers, Open MPI's and Gloo's on the same
// buffers in the same run, in alternating rounds (this machine's numbers move 2-3x between
// runs, so only numbers from one run compare). Prints the nccl-tests table per implementation
// (busbw = algbw * 2(n-1)/n) and the busbw ratios; --csv/--plot write them out.
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
#include "contender.hpp"
#include "kernels/half_float.hpp"
#include "kernels/reduce_kernels.hpp"

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

using Clock = std::chrono::steady_clock;

class OurContender : public Contender {
 public:
  OurContender(Communicator& comm, DataType type, ReduceOp op, Algorithm algo)
      : comm_(comm), type_(type), op_(op), algo_(algo) {}
  std::string name() const override { return "riseml"; }
  std::string description() const override {
    return "riseml: transports [" + comm_.describe_transports() + "], algorithm " +
           std::string(to_string(algo_)) + ", kernels " + kernels::to_string(kernels::active_isa());
  }
  bool supports(DataType, ReduceOp) const override { return true; }
  void run(const void* in, void* out, std::size_t count) override {
    comm_.allreduce(in, out, count, type_, op_, algo_);
  }

 private:
  Communicator& comm_;
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
    case DataType::uint8: return static_cast<const std::uint8_t*>(p)[i];
  }
  return 0;
}

struct Row {
  std::size_t bytes = 0, count = 0;
  double time_us = 0, algbw = 0, busbw = 0;
  long long wrong = -1;  // -1: not supported
};

double max_over_ranks(Communicator& comm, double x) {
  comm.allreduce(&x, &x, 1, DataType::float64, ReduceOp::max);
  return x;
}

long long sum_over_ranks(Communicator& comm, long long x) {
  std::int64_t v = x;
  comm.allreduce(&v, &v, 1, DataType::int64, ReduceOp::sum);
  return v;
}

long long count_wrong(Communicator& comm, Contender& c, const BenchOptions& o, void* in,
                      void* out, std::size_t count) {
  const int n = comm.size();
  for (std::size_t i = 0; i < count; ++i) store(o.type, in, i, pattern(o.op, comm.rank(), i));
  std::memset(out, 0, count * element_size(o.type));
  if (c.in_place()) std::memcpy(out, in, count * element_size(o.type));
  comm.barrier();
  c.run(in, out, count);
  long long wrong = 0;
  for (std::size_t i = 0; i < count; ++i) {
    double want = expected(o.op, n, i);
    if (o.op == ReduceOp::average) {
      // Stored after the same rounding the type does.
      std::vector<std::byte> tmp(8);
      store(o.type, tmp.data(), 0, want);
      kernels::divide(o.type, tmp.data(), 1, n);
      want = load(o.type, tmp.data(), 0);
    }
    if (load(o.type, out, i) != want) ++wrong;
  }
  return sum_over_ranks(comm, wrong);
}

void print_table(const std::string& title, DataType type, ReduceOp op, const std::vector<Row>& rows) {
  std::printf("#\n# %s\n", title.c_str());
  std::printf("# %12s %12s %9s %8s %12s %11s %11s %8s\n", "size", "count", "type", "redop",
              "time_us", "algbw_GBps", "busbw_GBps", "#wrong");
  for (const Row& r : rows) {
    if (r.wrong < 0) {
      std::printf("  %12zu %12zu %9s %8s %12s %11s %11s %8s\n", r.bytes, r.count,
                  std::string(to_string(type)).c_str(), std::string(to_string(op)).c_str(), "n/a", "n/a", "n/a", "n/a");
      continue;
    }
    std::printf("  %12zu %12zu %9s %8s %12.2f %11.3f %11.3f %8lld\n", r.bytes, r.count,
                std::string(to_string(type)).c_str(), std::string(to_string(op)).c_str(), r.time_us,
                r.algbw, r.busbw, r.wrong);
  }
}

int run_bench(Communicator& comm, const BenchOptions& o, bool under_mpirun) {
  (void)under_mpirun;
  const int n = comm.size();
  const std::size_t esize = element_size(o.type);
  std::vector<std::unique_ptr<Contender>> contenders;
  contenders.push_back(std::make_unique<OurContender>(comm, o.type, o.op, o.algorithm));
  if (o.mpi) {
#ifdef RISEML_BENCH_HAVE_MPI
    if (!under_mpirun) {
      if (comm.rank() == 0)
        std::fprintf(stderr, "riseml-bench: --peers mpi needs a start under mpirun\n");
      return 2;
    }
    contenders.push_back(make_mpi_contender(o.type, o.op));
#else
    if (comm.rank() == 0) std::fprintf(stderr, "riseml-bench: built without MPI\n");
    return 2;
#endif
  }
  if (o.gloo) {
#ifdef RISEML_BENCH_HAVE_GLOO
    contenders.push_back(make_gloo_contender(comm, o.type, o.op));
#else
    if (comm.rank() == 0) std::fprintf(stderr, "riseml-bench: built without Gloo\n");
    return 2;
#endif
  }

  std::size_t max_bytes = 0;
  for (auto s : o.sizes) max_bytes = std::max(max_bytes, s);
  // Both buffers touched up front: no first-touch page faults inside the timed loops.
  std::vector<std::byte> in_buffer(max_bytes + 64), out_buffer(max_bytes + 64);
  std::memset(in_buffer.data(), 0, in_buffer.size());
  std::memset(out_buffer.data(), 0, out_buffer.size());
  void* in = in_buffer.data();
  void* out = out_buffer.data();

  std::vector<std::vector<Row>> table(contenders.size());
  for (std::size_t bytes : o.sizes) {
    const std::size_t count = bytes / esize;
    for (std::size_t i = 0; i < count; ++i) store(o.type, in, i, pattern(o.op, comm.rank(), i));
    for (auto& c : contenders)
      if (c->supports(o.type, o.op)) c->prepare(in, out, count);
    // Iterations per round from a timed warm-up of ours, agreed on by all ranks.
    comm.barrier();
    auto t0 = Clock::now();
    contenders[0]->run(in, out, count);
    contenders[0]->run(in, out, count);
    const double warm = max_over_ranks(comm, std::chrono::duration<double>(Clock::now() - t0).count() / 2);
    const int iters = static_cast<int>(std::clamp(o.round_seconds / std::max(warm, 1e-7), 3.0, 2000.0));
    for (auto& c : contenders)
      if (c->supports(o.type, o.op)) c->run(in, out, count), c->run(in, out, count);

    std::vector<double> best(contenders.size(), std::numeric_limits<double>::infinity());
    for (int round = 0; round < o.rounds; ++round)
      for (std::size_t k = 0; k < contenders.size(); ++k) {
        // Rotate the order every round so no contender always runs first.
        const std::size_t ci = (k + static_cast<std::size_t>(round)) % contenders.size();
        Contender& c = *contenders[ci];
        if (!c.supports(o.type, o.op)) continue;
        comm.barrier();
        const auto start = Clock::now();
        for (int it = 0; it < iters; ++it) c.run(in, out, count);
        const double t = std::chrono::duration<double>(Clock::now() - start).count() / iters;
        best[ci] = std::min(best[ci], max_over_ranks(comm, t));
      }
    for (std::size_t ci = 0; ci < contenders.size(); ++ci) {
      Row r;
      r.bytes = count * esize;
      r.count = count;
      if (contenders[ci]->supports(o.type, o.op)) {
        r.time_us = best[ci] * 1e6;
        r.algbw = static_cast<double>(r.bytes) / best[ci] / 1e9;
        r.busbw = r.algbw * 2.0 * (n - 1) / n;
        r.wrong = count_wrong(comm, *contenders[ci], o, in, out, count);
      }
      table[ci].push_back(r);
    }
  }

  if (comm.rank() == 0) {
    std::printf("# riseml-bench: %d ranks, %s %s, %d alternating rounds per size, best round "
                "reported (time = slowest rank)\n",
                n, std::string(to_string(o.type)).c_str(), std::string(to_string(o.op)).c_str(), o.rounds);
    for (std::size_t ci = 0; ci < contenders.size(); ++ci)
      print_table(contenders[ci]->description(), o.type, o.op, table[ci]);
    if (contenders.size() > 1) {
      std::printf("#\n# busbw ratio, riseml / peer\n# %12s", "size");
      for (std::size_t ci = 1; ci < contenders.size(); ++ci)
        std::printf(" %10s", ("vs " + contenders[ci]->name()).c_str());
      std::printf("\n");
      for (std::size_t s = 0; s < o.sizes.size(); ++s) {
        std::printf("  %12zu", table[0][s].bytes);
        for (std::size_t ci = 1; ci < contenders.size(); ++ci) {
          if (table[ci][s].wrong < 0 || table[ci][s].busbw <= 0)
            std::printf(" %10s", "n/a");
          else
            std::printf(" %10.2f", table[0][s].busbw / table[ci][s].busbw);
        }
        std::printf("\n");
      }
    }
    std::fflush(stdout);
    std::string csv = o.csv;
    if (csv.empty() && !o.plot.empty()) csv = o.plot + ".csv";
    if (!csv.empty()) {
      std::ofstream f(csv);
      f << "impl,size,count,type,redop,time_us,algbw_GBps,busbw_GBps,wrong,ranks\n";
      for (std::size_t ci = 0; ci < contenders.size(); ++ci)
        for (const Row& r : table[ci])
          if (r.wrong >= 0)
            f << contenders[ci]->name() << ',' << r.bytes << ',' << r.count << ','
              << to_string(o.type) << ',' << to_string(o.op) << ',' << r.time_us << ','
              << r.algbw << ',' << r.busbw << ',' << r.wrong << ',' << n << '\n';
    }
    if (!o.plot.empty()) {
      const std::string cmd = std::string("/usr/bin/python3 '") + RISEML_BENCH_PLOT_SCRIPT + "' '" +
                              csv + "' '" + o.plot + "'";
      if (std::system(cmd.c_str()) != 0)
        std::fprintf(stderr, "riseml-bench: plotting failed (python3-matplotlib?); data in %s\n", csv.c_str());
    }
  }
  long long wrong = 0;
  for (auto& rows : table)
    for (auto& r : rows) wrong += std::max(0LL, r.wrong);
  return wrong ? 1 : 0;
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
      status = bench::run_bench(comm, options, under_mpirun);
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
