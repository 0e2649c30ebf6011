// The shared-memory (and TCP) transports with ranks as threads of this process: the same
// reference checks as over the in-process transport, with messages large enough to wrap the
// slot rings many times.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <mutex>

#include "rank_threads.hpp"
#include "reference_data.hpp"

namespace riseml {
namespace {

CommunicatorOptions options_for(TransportChoice t) {
  CommunicatorOptions o;
  o.transport = t;
  o.timeout = std::chrono::seconds(30);
  return o;
}

void check_transport(TransportChoice transport, int n, std::string_view expect_kind,
                     std::function<CommunicatorOptions(int)> options = {}) {
  std::mutex mutex;
  std::vector<std::string> fails;
  if (!options) options = [&](int) { return options_for(transport); };
  // Shared memory: enough to wrap the slot rings many times; TCP: enough for several staging
  // buffers (loopback TCP is slow on this machine).
  const std::size_t big_count = transport == TransportChoice::shm ? (1 << 20) + 3 : (1 << 17) + 3;
  auto outcomes = test::run_ranks(n, options, [&](Communicator& comm) {
    const std::string kinds = comm.describe_transports();
    if (n > 1 && kinds.find(expect_kind) == std::string::npos)
      throw std::runtime_error("transports are " + kinds);
    for (Algorithm algo : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::hierarchical,
                           Algorithm::direct})
      for (DataType t : {DataType::float32, DataType::bfloat16, DataType::int64, DataType::uint8})
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::min, ReduceOp::average})
          for (std::size_t count : {std::size_t{0}, std::size_t{1}, std::size_t{4099},
                                    big_count}) {
            if (count == big_count && op != ReduceOp::sum) continue;  // keeps the suite fast
            auto in = test::make_input(op, t, comm.rank(), count);
            const auto want = test::expected_result(op, t, n, count);
            std::vector<std::byte> out(in.size());
            comm.allreduce(in.data(), out.data(), count, t, op, algo);
            if (std::memcmp(out.data(), want.data(), count * element_size(t)) != 0) {
              std::lock_guard lock(mutex);
              fails.push_back(std::string(to_string(algo)) + " " + std::string(to_string(t)) +
                              " " + std::string(to_string(op)) + " " + std::to_string(count));
            }
          }
    std::vector<std::int32_t> b(100003, comm.rank());
    comm.broadcast(b.data(), b.size(), DataType::int32, n - 1);
    if (b[77777] != n - 1) throw std::runtime_error("broadcast wrong");
    comm.barrier();
  });
  for (std::size_t r = 0; r < outcomes.size(); ++r)
    EXPECT_TRUE(outcomes[r].ok) << "rank " << r << ": " << outcomes[r].error;
  for (std::size_t i = 0; i < std::min<std::size_t>(fails.size(), 10); ++i) ADD_FAILURE() << fails[i];
}

TEST(SharedMemory, TwoThreeAndFourRanks) {
  for (int n : {2, 3, 4}) check_transport(TransportChoice::shm, n, "shm");
}

// Two ranks in place over shared memory: the direct step copies the whole input into the peer's
// slots before it writes the sum over it, when the slots hold it; beyond, through scratch. Small
// slots (2 of 16 KiB) make both happen, and a ring call before each leaves slots unread.
TEST(SharedMemory, TwoRanksInPlaceDirectWithAndWithoutRoomInTheSlots) {
  CommunicatorOptions o = options_for(TransportChoice::shm);
  o.shm_slots = 2;
  o.shm_slot_kib = 16;
  std::mutex mutex;
  std::vector<std::string> fails;
  auto outcomes = test::run_ranks(2, o, [&](Communicator& comm) {
    for (int round = 0; round < 20; ++round)
      for (std::size_t count : {std::size_t{1}, std::size_t{13}, std::size_t{4099}, std::size_t{8192},
                                std::size_t{8193}, std::size_t{30011}})
        for (DataType t : {DataType::float32, DataType::float64}) {
          auto warm = test::make_input(ReduceOp::sum, t, comm.rank(), 5000 + count);
          comm.allreduce(warm.data(), warm.data(), 5000 + count, t, ReduceOp::sum, Algorithm::ring);
          auto in = test::make_input(ReduceOp::sum, t, comm.rank(), count);
          const auto want = test::expected_result(ReduceOp::sum, t, 2, count);
          comm.allreduce(in.data(), in.data(), count, t, ReduceOp::sum, Algorithm::direct);
          if (std::memcmp(in.data(), want.data(), count * element_size(t)) != 0) {
            std::lock_guard lock(mutex);
            fails.push_back(std::string(to_string(t)) + " " + std::to_string(count));
          }
        }
  });
  for (std::size_t r = 0; r < outcomes.size(); ++r)
    EXPECT_TRUE(outcomes[r].ok) << "rank " << r << ": " << outcomes[r].error;
  for (std::size_t i = 0; i < std::min<std::size_t>(fails.size(), 10); ++i) ADD_FAILURE() << fails[i];
}

TEST(SharedMemory, LargeMessagesTakeTheStreamingPath) {
  // The last ring step of blocks of 4 MiB and more is copied with non-temporal stores.
  for (int n : {2, 3}) {
    const std::size_t count = (3u << 20) * static_cast<std::size_t>(n) + 7;
    auto outcomes = test::run_ranks(n, options_for(TransportChoice::shm), [&](Communicator& comm) {
      auto in = test::make_input(ReduceOp::sum, DataType::float32, comm.rank(), count);
      const auto want = test::expected_result(ReduceOp::sum, DataType::float32, n, count);
      std::vector<std::byte> out(in.size());
      comm.allreduce(in.data(), out.data(), count, DataType::float32, ReduceOp::sum, Algorithm::ring);
      if (std::memcmp(out.data(), want.data(), count * 4) != 0) throw std::runtime_error("wrong");
    });
    for (auto& o : outcomes) EXPECT_TRUE(o.ok) << o.error;
  }
}

TEST(Tcp, TwoThreeAndFourRanks) {
  for (int n : {2, 3, 4}) check_transport(TransportChoice::tcp, n, "tcp");
}

TEST(Tcp, SeveralConnectionsPerPeer) {
  check_transport(TransportChoice::tcp, 3, "tcp", [](int) {
    auto o = options_for(TransportChoice::tcp);
    o.tcp_connections = 3;
    return o;
  });
}

TEST(Hierarchical, SharedMemoryInsideFakeHostsTcpAcross) {
  // 2 fake hosts x 2 ranks: shm inside a host, TCP across, and the hierarchical layout.
  check_transport(TransportChoice::automatic, 4, "tcp", [](int r) {
    auto o = options_for(TransportChoice::automatic);
    o.host_key = r % 2 ? "odd" : "even";
    return o;
  });
}

}  // namespace
}  // namespace riseml
