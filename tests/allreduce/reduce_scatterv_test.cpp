// reduce_scatterv: every type and op against the scalar reference, 1 to 4 ranks over the
// in-process, shared-memory and TCP transports, uneven and empty blocks, out apart from in
// (the bytes around each rank's block untouched); 16-bit floats both ways; bool's average
// refused; counts that disagree fail on every rank.
#include <gtest/gtest.h>

#include <cstring>
#include <mutex>
#include <numeric>

#include "rank_threads.hpp"
#include "reference_data.hpp"

namespace riseml {
namespace {

using namespace std::chrono_literals;

struct Failures {
  std::mutex mutex;
  std::vector<std::string> list;
  void add(std::string s) {
    std::lock_guard lock(mutex);
    if (list.size() < 10) list.push_back(std::move(s));
  }
};

CommunicatorOptions options_for(TransportChoice t, std::chrono::milliseconds timeout = 30s) {
  CommunicatorOptions o;
  o.transport = t;
  o.timeout = timeout;
  return o;
}

// Uneven with empty blocks, all empty, all on the last rank, even.
std::vector<std::vector<std::size_t>> count_sets(int n, std::size_t scale) {
  std::vector<std::vector<std::size_t>> sets(4, std::vector<std::size_t>(static_cast<std::size_t>(n)));
  for (int r = 0; r < n; ++r) {
    const auto i = static_cast<std::size_t>(r);
    sets[0][i] = static_cast<std::size_t>((r * 37 + 5) % 11) * scale / 8 + (r % 3 == 1 ? 0 : 1);
    if (r % 3 == 1) sets[0][i] = 0;
    sets[1][i] = 0;
    sets[2][i] = r == n - 1 ? scale + 3 : 0;
    sets[3][i] = scale / 2 + 1;
  }
  return sets;
}

// One reduce_scatterv on this rank, checked bit for bit against the reference.
void run_and_check(Communicator& comm, std::span<const std::size_t> counts, DataType t,
                   ReduceOp op, Failures& fails, const std::string& what) {
  const int n = comm.size(), me = comm.rank();
  const std::size_t es = element_size(t);
  const std::size_t total = std::accumulate(counts.begin(), counts.end(), std::size_t{0});
  const std::size_t start =
      std::accumulate(counts.begin(), counts.begin() + me, std::size_t{0});
  const std::size_t mine = counts[static_cast<std::size_t>(me)];
  auto in = test::make_input(op, t, me, total);
  // Guard bytes on both sides; the block itself stays aligned for its type (8 bytes in).
  constexpr std::size_t kGuard = 8;
  std::vector<std::byte> out(mine * es + 2 * kGuard, std::byte{0xee});
  const std::string label = what + " " + std::string(to_string(t)) + " " +
                            std::string(to_string(op)) + " ranks " + std::to_string(n) +
                            " rank " + std::to_string(me) + " total " + std::to_string(total);
  if (t == DataType::boolean && op == ReduceOp::average) {
    try {
      comm.reduce_scatterv(in.data(), out.data() + kGuard, counts, t, op);
      fails.add("not refused: " + label);
    } catch (const CollectiveError& e) {
      if (e.kind() != ErrorKind::invalid_argument || std::string(e.what()).find("bool") == std::string::npos)
        fails.add("wrong refusal: " + label + ": " + e.what());
    }
    return;
  }
  const auto want = test::expected_result(op, t, n, total);
  comm.reduce_scatterv(in.data(), out.data() + kGuard, counts, t, op);
  if (std::memcmp(out.data() + kGuard, want.data() + start * es, mine * es) != 0)
    fails.add("wrong: " + label);
  for (std::size_t k = 0; k < kGuard; ++k)
    if (out[k] != std::byte{0xee} || out[kGuard + mine * es + k] != std::byte{0xee})
      fails.add("wrote outside its block: " + label);
}

void expect_all_ok(const std::vector<test::RankOutcome>& outcomes, const std::string& what) {
  for (std::size_t r = 0; r < outcomes.size(); ++r)
    EXPECT_TRUE(outcomes[r].ok) << what << ": rank " << r << ": " << outcomes[r].error;
}

TEST(ReduceScatterv, EveryTypeOpAndUnevenCountsInProcess) {
  for (int n : {1, 2, 3, 4}) {
    Failures fails;
    auto outcomes = test::run_ranks(n, test::inproc_options(), [&](Communicator& comm) {
      for (const auto& counts : count_sets(n, 203))
        for (DataType t : kAllDataTypes)
          for (ReduceOp op : kAllReduceOps) run_and_check(comm, counts, t, op, fails, "inproc");
    });
    expect_all_ok(outcomes, std::to_string(n) + " ranks");
    for (auto& f : fails.list) ADD_FAILURE() << f;
  }
}

TEST(ReduceScatterv, SharedMemoryAndTcp) {
  for (TransportChoice tr : {TransportChoice::shm, TransportChoice::tcp})
    for (int n : {2, 3, 4}) {
      Failures fails;
      const std::string name(to_string(tr));
      auto outcomes = test::run_ranks(n, options_for(tr), [&](Communicator& comm) {
        for (const auto& counts : count_sets(n, 1001))
          for (DataType t : kAllDataTypes)
            for (ReduceOp op : {ReduceOp::sum, ReduceOp::average, ReduceOp::min})
              run_and_check(comm, counts, t, op, fails, name);
        // Blocks of megabytes: many trips round the shared-memory slot rings.
        if (tr == TransportChoice::shm)
          for (const auto& counts : count_sets(n, 1 << 20))
            run_and_check(comm, counts, DataType::float32, ReduceOp::sum, fails, name + " big");
      });
      expect_all_ok(outcomes, name + " " + std::to_string(n) + " ranks");
      for (auto& f : fails.list) ADD_FAILURE() << f;
    }
}

TEST(ReduceScatterv, HalfPrecisionThroughFloat32) {
  for (int n : {2, 3}) {
    Failures fails;
    auto options = test::inproc_options();
    options.half_reduce = HalfReduce::float32;
    auto outcomes = test::run_ranks(n, options, [&](Communicator& comm) {
      for (const auto& counts : count_sets(n, 301))
        for (DataType t : {DataType::float16, DataType::bfloat16})
          for (ReduceOp op : kAllReduceOps) run_and_check(comm, counts, t, op, fails, "wide");
    });
    expect_all_ok(outcomes, std::to_string(n) + " ranks");
    for (auto& f : fails.list) ADD_FAILURE() << f;
  }
}

TEST(ReduceScatterv, EvenCountsGiveWhatReduceScatterGives) {
  auto outcomes = test::run_ranks(3, test::inproc_options(), [](Communicator& comm) {
    const std::size_t count = 1001;
    auto in = test::make_input(ReduceOp::sum, DataType::bfloat16, comm.rank(), 3 * count);
    std::vector<std::byte> a(count * 2), b(count * 2);
    const std::size_t counts[] = {count, count, count};
    comm.reduce_scatter(in.data(), a.data(), count, DataType::bfloat16, ReduceOp::sum);
    comm.reduce_scatterv(in.data(), b.data(), counts, DataType::bfloat16, ReduceOp::sum);
    if (a != b) throw std::runtime_error("reduce_scatterv differs from reduce_scatter");
  });
  expect_all_ok(outcomes, "even");
}

TEST(ReduceScatterv, DisagreeingCountsFailOnEveryRank) {
  // The same total, split differently on rank 1.
  auto outcomes = test::run_ranks(3, test::inproc_options(5s), [](Communicator& comm) {
    std::vector<std::size_t> counts{4, 4, 4};
    if (comm.rank() == 1) counts = {3, 5, 4};
    std::vector<float> in(12, 1.0f), out(6);
    comm.reduce_scatterv(in.data(), out.data(), counts, DataType::float32, ReduceOp::sum);
  });
  for (const auto& o : outcomes) {
    ASSERT_FALSE(o.ok);
    EXPECT_TRUE(o.kind == ErrorKind::mismatch || o.kind == ErrorKind::peer_failed) << o.error;
    EXPECT_NE(o.error.find("mismatched"), std::string::npos) << o.error;
  }
  // A wrong number of counts is this rank's own mistake.
  outcomes = test::run_ranks(2, test::inproc_options(5s), [](Communicator& comm) {
    const std::size_t three[] = {1, 1, 1};
    float x[3] = {};
    try {
      comm.reduce_scatterv(x, x, three, DataType::float32, ReduceOp::sum);
    } catch (const CollectiveError& e) {
      if (e.kind() == ErrorKind::invalid_argument) return;
    }
    throw std::runtime_error("three counts for two ranks were not refused");
  });
  expect_all_ok(outcomes, "counts size");
}

}  // namespace
}  // namespace riseml
