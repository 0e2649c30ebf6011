// Every type x op x algorithm against the scalar reference over the in-process transport, for
// odd sizes (0, 1, primes, not divisible by the ranks) and 1 to 64 ranks; all ranks must hold
// the same bits, and a repeated call must give them again.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <numeric>

#include "rank_threads.hpp"
#include "reference_data.hpp"

namespace riseml {
namespace {

using test::expected_result;
using test::make_input;
using test::run_ranks;

constexpr std::size_t kCounts[] = {0, 1, 2, 3, 7, 13, 64, 97, 1000, 4099};
constexpr Algorithm kAlgorithms[] = {Algorithm::ring, Algorithm::halving_doubling,
                                     Algorithm::hierarchical, Algorithm::direct};

// Broadcast, allgather and barrier run directly (one step) or by tree, ring and dissemination:
// every test of them runs both ways (RISEML_DIRECT_BYTES at its largest, and 0).
CommunicatorOptions with_direct_bytes(std::size_t direct_bytes) {
  auto o = test::inproc_options();
  o.direct_bytes = direct_bytes;
  return o;
}
constexpr std::size_t kDirectBytes[] = {std::size_t{1} << 40, 0};

void expect_all_ok(const std::vector<test::RankOutcome>& outcomes) {
  for (std::size_t r = 0; r < outcomes.size(); ++r)
    ASSERT_TRUE(outcomes[r].ok) << "rank " << r << ": " << outcomes[r].error;
}

// Each rank checks its own result; `fails` collects the first few failures.
struct Failures {
  std::mutex mutex;
  std::vector<std::string> list;
  void add(std::string s) {
    std::lock_guard lock(mutex);
    if (list.size() < 10) list.push_back(std::move(s));
  }
};

// An average of bools is refused on the spot, naming the type, and leaves the communicator
// usable (the caller goes on with the next call).
template <class Call>
void expect_refused(Communicator& comm, Call&& call, Failures& fails) {
  try {
    call();
    fails.add("rank " + std::to_string(comm.rank()) + ": average of bool was not refused");
  } catch (const CollectiveError& e) {
    if (e.kind() != ErrorKind::invalid_argument ||
        std::string(e.what()).find("bool") == std::string::npos)
      fails.add("rank " + std::to_string(comm.rank()) + ": wrong refusal: " + e.what());
  }
}

void check_allreduce_everything(int n, const std::function<CommunicatorOptions(int)>& options,
                                std::span<const std::size_t> counts) {
  Failures fails;
  auto outcomes = run_ranks(n, options, [&](Communicator& comm) {
    for (Algorithm algo : kAlgorithms)
      for (DataType t : kAllDataTypes)
        for (ReduceOp op : kAllReduceOps)
          for (std::size_t count : counts) {
            auto in = make_input(op, t, comm.rank(), count);
            if (t == DataType::boolean && op == ReduceOp::average) {
              expect_refused(comm, [&] { comm.allreduce(in.data(), in.data(), count, t, op, algo); },
                             fails);
              continue;
            }
            const auto want = expected_result(op, t, n, count);
            std::vector<std::byte> out(in.size()), again(in.size());
            comm.allreduce(in.data(), out.data(), count, t, op, algo);
            comm.allreduce(in.data(), again.data(), count, t, op, algo);
            const std::size_t bytes = count * element_size(t);
            const std::string what = std::string(to_string(algo)) + " " +
                                     std::string(to_string(t)) + " " +
                                     std::string(to_string(op)) + " count " +
                                     std::to_string(count) + " ranks " + std::to_string(n) +
                                     " rank " + std::to_string(comm.rank());
            if (std::memcmp(out.data(), want.data(), bytes) != 0) fails.add("wrong: " + what);
            if (std::memcmp(out.data(), again.data(), bytes) != 0) fails.add("unrepeatable: " + what);
            // In place gives the same bits.
            comm.allreduce(in.data(), in.data(), count, t, op, algo);
            if (std::memcmp(in.data(), want.data(), bytes) != 0) fails.add("in place: " + what);
          }
  });
  expect_all_ok(outcomes);
  for (auto& f : fails.list) ADD_FAILURE() << f;
}

class AllreduceRanks : public ::testing::TestWithParam<int> {};

TEST_P(AllreduceRanks, EveryTypeOpAlgorithmAndOddSizeMatchesTheReference) {
  check_allreduce_everything(GetParam(), [](int) { return test::inproc_options(); }, kCounts);
}

INSTANTIATE_TEST_SUITE_P(Inproc, AllreduceRanks, ::testing::Values(1, 2, 3, 4, 5, 6, 7, 8));

TEST(Allreduce, HierarchicalOverFakeHostsMatchesTheReference) {
  // 3 hosts x 2 ranks, and 2 hosts x 3 ranks: ranks are spread, not contiguous, on purpose.
  for (int per_host : {2, 3}) {
    const int hosts = 6 / per_host;
    check_allreduce_everything(6, [&](int r) {
      auto o = test::inproc_options();
      o.host_key = "host" + std::to_string(r % hosts);
      return o;
    }, std::span(kCounts));
  }
  // Uneven hosts fall back to the ring.
  check_allreduce_everything(5, [](int r) {
    auto o = test::inproc_options();
    o.host_key = r < 3 ? "a" : "b";
    return o;
  }, std::span(kCounts).first(6));
}

TEST(Allreduce, SixtyFourRanks) {
  const std::size_t counts[] = {0, 1, 63, 64, 65, 1031};
  Failures fails;
  auto outcomes = run_ranks(64, test::inproc_options(), [&](Communicator& comm) {
    for (Algorithm algo : {Algorithm::ring, Algorithm::halving_doubling})
      for (DataType t : {DataType::float32, DataType::bfloat16, DataType::int64})
        for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::product})
          for (std::size_t count : counts) {
            auto in = make_input(op, t, comm.rank(), count);
            const auto want = expected_result(op, t, 64, count);
            std::vector<std::byte> out(in.size());
            comm.allreduce(in.data(), out.data(), count, t, op, algo);
            if (std::memcmp(out.data(), want.data(), count * element_size(t)) != 0)
              fails.add(std::string(to_string(algo)) + " " + std::string(to_string(t)) + " " +
                        std::string(to_string(op)) + " count " + std::to_string(count));
          }
  });
  expect_all_ok(outcomes);
  for (auto& f : fails.list) ADD_FAILURE() << f;
}

// float16 on the wire rounds at every step (Horovod's and NCCL's way), float32 accumulation
// rounds once: 2048 + 1 + 1 is 2050 exactly, but 2048 + 1 rounds to 2048 in float16 (ties to
// even), so a step order that adds a 1 to 2048 first loses it. Either way every rank gets the
// same bits, for every algorithm; ranks that disagree on the mode fail, all of them.
TEST(Allreduce, HalfPrecisionOnTheWireOrThroughFloat32) {
  for (HalfReduce mode : {HalfReduce::wire, HalfReduce::float32})
    for (Algorithm algo : {Algorithm::ring, Algorithm::halving_doubling, Algorithm::direct}) {
      std::mutex mutex;
      std::vector<std::uint16_t> results;
      auto options = test::inproc_options();
      options.half_reduce = mode;
      auto outcomes = run_ranks(3, options, [&](Communicator& comm) {
        std::vector<std::uint16_t> h(1000, kernels::float_to_float16(comm.rank() == 0 ? 2048.0f : 1.0f));
        comm.allreduce(h.data(), h.data(), h.size(), DataType::float16, ReduceOp::sum, algo);
        std::lock_guard lock(mutex);
        results.insert(results.end(), h.begin(), h.end());
      });
      expect_all_ok(outcomes);
      ASSERT_EQ(results.size(), 3000u);
      for (std::size_t i = 0; i < 1000; ++i) {
        const float v = kernels::float16_to_float(results[i]);
        EXPECT_EQ(results[i], results[1000 + i]) << "ranks differ at " << i;
        EXPECT_EQ(results[i], results[2000 + i]) << "ranks differ at " << i;
        if (mode == HalfReduce::float32)
          EXPECT_EQ(v, 2050.0f) << i;
        else
          EXPECT_TRUE(v == 2048.0f || v == 2050.0f) << i << ": " << v;
      }
    }
  auto outcomes = run_ranks(2, [](int r) {
    auto o = test::inproc_options(std::chrono::seconds(5));
    o.half_reduce = r == 0 ? HalfReduce::wire : HalfReduce::float32;
    return o;
  }, [](Communicator& comm) {
    std::vector<std::uint16_t> h(64, 0x3c00);
    comm.allreduce(h.data(), h.data(), h.size(), DataType::float16, ReduceOp::sum, Algorithm::ring);
  });
  for (const auto& o : outcomes) EXPECT_FALSE(o.ok) << "a disagreement on RISEML_HALF_REDUCE went unnoticed";
}

TEST(Broadcast, EveryRootAndSize) {
  for (std::size_t direct : kDirectBytes)
  for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 13}) {
    auto outcomes = run_ranks(n, with_direct_bytes(direct), [&](Communicator& comm) {
      for (int root = 0; root < n; ++root)
        for (std::size_t count : {0, 1, 97, 5003}) {
          std::vector<std::int32_t> buf(count + 1, comm.rank() == root ? 0 : -1);
          if (comm.rank() == root) std::iota(buf.begin(), buf.end(), root * 1000);
          comm.broadcast(buf.data(), count, DataType::int32, root);
          for (std::size_t i = 0; i < count; ++i)
            if (buf[i] != static_cast<std::int32_t>(root * 1000 + i))
              throw std::runtime_error("broadcast wrong at " + std::to_string(i));
        }
    });
    expect_all_ok(outcomes);
  }
}

TEST(Allgather, EqualAndUnequalCounts) {
  for (std::size_t direct : kDirectBytes)
  for (int n : {1, 2, 3, 4, 5, 6, 7, 8}) {
    auto outcomes = run_ranks(n, with_direct_bytes(direct), [&](Communicator& comm) {
      const int me = comm.rank();
      for (std::size_t count : {0, 1, 13, 1000}) {
        std::vector<double> in(count + 1, me + 0.5), out(count * n + 1, -1);
        comm.allgather(in.data(), out.data(), count, DataType::float64);
        for (int r = 0; r < n; ++r)
          for (std::size_t i = 0; i < count; ++i)
            if (out[r * count + i] != r + 0.5) throw std::runtime_error("allgather wrong");
      }
      std::vector<std::size_t> counts(static_cast<std::size_t>(n));
      for (int r = 0; r < n; ++r) counts[static_cast<std::size_t>(r)] = static_cast<std::size_t>((r * 37) % 11);
      const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
      std::vector<std::uint8_t> in(counts[static_cast<std::size_t>(me)] + 1, static_cast<std::uint8_t>(me + 1));
      std::vector<std::uint8_t> out(total + 1, 0);
      comm.allgatherv(in.data(), out.data(), counts, DataType::uint8);
      std::size_t at = 0;
      for (int r = 0; r < n; ++r)
        for (std::size_t i = 0; i < counts[static_cast<std::size_t>(r)]; ++i)
          if (out[at++] != r + 1) throw std::runtime_error("allgatherv wrong");
    });
    expect_all_ok(outcomes);
  }
}

TEST(ReduceScatter, EveryTypeAndOp) {
  for (int n : {1, 2, 3, 4, 6}) {
    Failures fails;
    auto outcomes = run_ranks(n, test::inproc_options(), [&](Communicator& comm) {
      for (DataType t : kAllDataTypes)
        for (ReduceOp op : kAllReduceOps)
          for (std::size_t count : {0, 1, 7, 1001}) {
            const std::size_t total = count * static_cast<std::size_t>(n);
            auto in = make_input(op, t, comm.rank(), total);
            const std::size_t es = element_size(t);
            std::vector<std::byte> out(count * es + 1);
            if (t == DataType::boolean && op == ReduceOp::average) {
              expect_refused(comm, [&] { comm.reduce_scatter(in.data(), out.data(), count, t, op); },
                             fails);
              continue;
            }
            const auto want = expected_result(op, t, n, total);
            comm.reduce_scatter(in.data(), out.data(), count, t, op);
            if (std::memcmp(out.data(), want.data() + comm.rank() * count * es, count * es) != 0)
              fails.add(std::string(to_string(t)) + " " + std::string(to_string(op)) +
                        " count " + std::to_string(count) + " ranks " + std::to_string(n));
          }
    });
    expect_all_ok(outcomes);
    for (auto& f : fails.list) ADD_FAILURE() << f;
  }
}

TEST(Barrier, NoRankLeavesBeforeAllArrive) {
  for (std::size_t direct : kDirectBytes)
  for (int n : {1, 2, 3, 4, 5, 6, 7, 8}) {
    std::atomic<int> arrived{0};
    auto outcomes = run_ranks(n, with_direct_bytes(direct), [&](Communicator& comm) {
      for (int round = 1; round <= 3; ++round) {
        if (comm.rank() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
        arrived.fetch_add(1);
        comm.barrier();
        if (arrived.load() < round * n) throw std::runtime_error("left the barrier early");
        comm.barrier();
      }
    });
    expect_all_ok(outcomes);
  }
}

}  // namespace
}  // namespace riseml
