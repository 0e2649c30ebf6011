// One rank of a multi-process allreduce check, started by riseml-launch (or mpirun): every
// type x op x algorithm on odd and large sizes against the reference, bit-identical across
// ranks (checked by allgathering a checksum) and across repeats. Exit 0 when all is right.
//   riseml-launch -n 4 riseml-allreduce-worker [--quick]
#include <riseml/communicator.hpp>
#include <riseml/pmix/session.hpp>
#include <riseml/pmix/session_rendezvous.hpp>

#include <cstdio>
#include <cstring>
#include <string>

#include "../allreduce/reference_data.hpp"

using namespace riseml;

namespace {

std::uint64_t checksum(const std::vector<std::byte>& v, std::size_t bytes) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ static_cast<std::uint64_t>(v[i])) * 1099511628211ull;
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  try {
    auto rendezvous = pmix::SessionRendezvous(std::shared_ptr<pmix::Session>(pmix::init()));
    Communicator comm(rendezvous, CommunicatorOptions::from_environment());
    const int n = comm.size();
    int wrong = 0;
    const std::size_t counts_full[] = {0, 1, 7, 97, 4099, 65537, (1 << 20) + 3};
    const std::size_t counts_quick[] = {0, 1, 97, 65537};
    const auto counts = quick ? std::span<const std::size_t>(counts_quick) : std::span<const std::size_t>(counts_full);
    for (Algorithm algo : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::hierarchical,
                           Algorithm::direct})
      for (DataType t : kAllDataTypes)
        for (ReduceOp op : kAllReduceOps)
          for (std::size_t count : counts) {
            if (quick && op != ReduceOp::sum && op != ReduceOp::max) continue;
            // The large size (many trips round the slot rings) for sum only: enough to cover
            // the pipelining, and the suite stays fast on two cores.
            if (count > 100000 && op != ReduceOp::sum) continue;
            if (t == DataType::boolean && op == ReduceOp::average) continue;  // refused
            auto in = test::make_input(op, t, comm.rank(), count);
            const auto want = test::expected_result(op, t, n, count);
            std::vector<std::byte> out(in.size()), again(in.size());
            comm.allreduce(in.data(), out.data(), count, t, op, algo);
            comm.allreduce(in.data(), again.data(), count, t, op, algo);
            const std::size_t bytes = count * element_size(t);
            // Same bits on every rank: compare checksums.
            std::uint64_t mine = checksum(out, bytes);
            std::vector<std::uint64_t> all(static_cast<std::size_t>(n));
            comm.allgather(&mine, all.data(), 1, DataType::int64);
            bool ok = std::memcmp(out.data(), want.data(), bytes) == 0 &&
                      std::memcmp(out.data(), again.data(), bytes) == 0;
            for (auto c : all) ok = ok && c == mine;
            if (!ok && wrong++ < 10)
              std::fprintf(stderr, "rank %d: WRONG %s %s %s count %zu\n", comm.rank(),
                           std::string(to_string(algo)).c_str(), std::string(to_string(t)).c_str(),
                           std::string(to_string(op)).c_str(), count);
          }
    std::vector<double> b(12345, comm.rank());
    comm.broadcast(b.data(), b.size(), DataType::float64, n - 1);
    if (b[12344] != n - 1) ++wrong;
    comm.barrier();
    if (comm.rank() == 0)
      std::printf("allreduce worker: %d ranks, transports [%s]: %s\n", n,
                  comm.describe_transports().c_str(), wrong ? "WRONG" : "all results right");
    return wrong ? 1 : 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "allreduce worker: %s\n", e.what());
    return 2;
  }
}
