#include "bench_options.hpp"

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>

namespace riseml::bench {

namespace {

const char* kUsage =
    "usage: riseml-bench [--sizes 4K,64K,1M,16M,64M,256M] [--dtype float32] [--op sum]\n"
    "                    [--algo auto|ring|hd|hierarchical|direct] [--peers mpi,gloo]\n"
    "                    [--collective allreduce|reduce_scatter|alltoall|all]\n"
    "                    [--modes back-to-back,per-call] [--rounds 3] [--round-seconds 0.1]\n"
    "                    [--calls 100] [--limit] [--wait-stats] [--precondition 100x256M]\n"
    "                    [--plot FILE.png] [--csv FILE.csv]\n"
    "       riseml-bench --fit network.yml [--rounds 3]\n"
    "Start it with riseml-launch -n N (PMIx) or mpirun -np N (needed for --peers mpi).\n"
    "back-to-back: iterations in a row as nccl-tests times them, out of place and in place;\n"
    "per-call: a barrier, one in-place call, the slowest rank's time, median and p10/p90.\n"
    "Every round is a whole sweep; busbw is the median round, with the lowest and highest.\n"
    "--collective: what is timed (default allreduce; a list or `all` runs one sweep each).\n"
    "Sizes are each rank's whole input; busbw as nccl-tests: allreduce algbw*2(n-1)/n,\n"
    "reduce_scatter and alltoall algbw*(n-1)/n. Open MPI runs MPI_Reduce_scatter_block and\n"
    "MPI_Alltoall there, Gloo gloo::alltoall (no reduce-scatter); --limit and --precondition\n"
    "are allreduce only.\n"
    "--fit: measure the links between hosts and inside one (ring allgather steps, alpha + m beta\n"
    "fitted), reduction and copy rates, and write them as a site file's network: section for\n"
    "`riseml estimate --network FILE` (docs/model.md). Start one or more ranks on each of\n"
    "several hosts: srun -N4 --ntasks-per-node 2 --mpi=pmix riseml-bench --fit net.yml\n";

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "riseml-bench: %s\n%s", what.c_str(), kUsage);
  std::exit(2);
}

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> parts;
  std::stringstream in(s);
  std::string p;
  while (std::getline(in, p, ','))
    if (!p.empty()) parts.push_back(p);
  return parts;
}

}  // namespace

const char* to_string(BenchCollective c) {
  switch (c) {
    case BenchCollective::allreduce: return "allreduce";
    case BenchCollective::reduce_scatter: return "reduce_scatter";
    case BenchCollective::alltoall: return "alltoall";
  }
  return "?";
}

std::size_t parse_size(const std::string& text) {
  std::size_t pos = 0;
  const unsigned long long n = std::stoull(text, &pos);
  std::string unit = text.substr(pos);
  if (unit.empty() || unit == "B") return n;
  if (unit == "K" || unit == "KB" || unit == "KiB") return n << 10;
  if (unit == "M" || unit == "MB" || unit == "MiB") return n << 20;
  if (unit == "G" || unit == "GB" || unit == "GiB") return n << 30;
  throw std::invalid_argument("bad size unit in " + text);
}

BenchOptions parse_bench_options(int argc, char** argv) {
  BenchOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(arg + " needs a value");
      return argv[++i];
    };
    try {
      if (arg == "-h" || arg == "--help") {
        std::fputs(kUsage, stdout);
        std::exit(0);
      } else if (arg == "--sizes") {
        o.sizes.clear();
        for (auto& s : split(value())) o.sizes.push_back(parse_size(s));
      } else if (arg == "--dtype") {
        auto t = parse_data_type(value());
        if (!t) usage_error("unknown --dtype");
        o.type = *t;
      } else if (arg == "--op") {
        auto op = parse_reduce_op(value());
        if (!op) usage_error("unknown --op");
        o.op = *op;
      } else if (arg == "--algo") {
        const std::string a = value();
        if (a == "auto") o.algorithm = Algorithm::automatic;
        else if (a == "ring") o.algorithm = Algorithm::ring;
        else if (a == "hd" || a == "halving_doubling") o.algorithm = Algorithm::halving_doubling;
        else if (a == "hierarchical") o.algorithm = Algorithm::hierarchical;
        else if (a == "direct") o.algorithm = Algorithm::direct;
        else usage_error("unknown --algo " + a);
      } else if (arg == "--collective") {
        o.collectives.clear();
        for (auto& c : split(value())) {
          if (c == "all") {
            o.collectives = {BenchCollective::allreduce, BenchCollective::reduce_scatter,
                             BenchCollective::alltoall};
          } else if (c == "allreduce") {
            o.collectives.push_back(BenchCollective::allreduce);
          } else if (c == "reduce_scatter" || c == "reducescatter") {
            o.collectives.push_back(BenchCollective::reduce_scatter);
          } else if (c == "alltoall") {
            o.collectives.push_back(BenchCollective::alltoall);
          } else {
            usage_error("unknown collective " + c + " (allreduce, reduce_scatter, alltoall, all)");
          }
        }
        if (o.collectives.empty()) usage_error("--collective names no collective");
      } else if (arg == "--peers") {
        for (auto& p : split(value())) {
          if (p == "mpi") o.mpi = true;
          else if (p == "gloo") o.gloo = true;
          else usage_error("unknown peer " + p + " (mpi, gloo)");
        }
      } else if (arg == "--modes") {
        o.back_to_back = o.per_call = false;
        for (auto& m : split(value())) {
          if (m == "back-to-back" || m == "nccl") o.back_to_back = true;
          else if (m == "per-call") o.per_call = true;
          else usage_error("unknown mode " + m + " (back-to-back, per-call)");
        }
        if (!o.back_to_back && !o.per_call) usage_error("--modes names no mode");
      } else if (arg == "--rounds") {
        o.rounds = std::stoi(value());
        if (o.rounds < 1) usage_error("--rounds must be at least 1");
      } else if (arg == "--round-seconds") {
        o.round_seconds = std::stod(value());
        if (!(o.round_seconds > 0)) usage_error("--round-seconds must be positive");
      } else if (arg == "--calls") {
        o.calls = std::stoi(value());
        if (o.calls < 1) usage_error("--calls must be at least 1");
      } else if (arg == "--limit") {
        o.limit = true;
      } else if (arg == "--wait-stats") {
        o.wait_stats = true;
      } else if (arg == "--precondition") {
        const std::string v = value();
        const auto x = v.find('x');
        if (x == std::string::npos) usage_error("--precondition wants NxSIZE, e.g. 100x256M");
        o.precondition_calls = std::stoi(v.substr(0, x));
        o.precondition_bytes = parse_size(v.substr(x + 1));
        if (o.precondition_calls < 0) usage_error("--precondition: N must not be negative");
      } else if (arg == "--plot") {
        o.plot = value();
      } else if (arg == "--csv") {
        o.csv = value();
      } else if (arg == "--fit") {
        o.fit = value();
        if (o.fit.empty()) usage_error("--fit needs a file name");
      } else {
        usage_error("unknown argument " + arg);
      }
    } catch (const std::logic_error& e) {
      usage_error("bad value for " + arg + ": " + e.what());
    }
  }
  return o;
}

}  // namespace riseml::bench
