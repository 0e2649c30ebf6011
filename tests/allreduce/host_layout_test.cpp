// The host layout and the cross-host allreduce (the CPU step of the GPU hierarchical
// allreduce): every column of ranks with the same local index reduces on its own.
#include <gtest/gtest.h>

#include <cstdint>
#include <mutex>
#include <vector>

#include "rank_threads.hpp"

namespace riseml {
namespace {

using test::run_ranks;

// 6 ranks on 3 fake hosts, spread (rank r on host r % 3): host h holds ranks h and h + 3.
CommunicatorOptions spread_over_three_hosts(int r) {
  auto o = test::inproc_options();
  o.host_key = "host" + std::to_string(r % 3);
  return o;
}

TEST(HostLayout, NamesTheHostsRanksAndTheColumn) {
  std::mutex mutex;
  std::vector<HostLayout> layouts(6);
  auto outcomes = run_ranks(6, spread_over_three_hosts, [&](Communicator& comm) {
    HostLayout l = comm.host_layout();
    std::lock_guard lock(mutex);
    layouts[static_cast<std::size_t>(comm.rank())] = l;
  });
  for (const auto& o : outcomes) ASSERT_TRUE(o.ok) << o.error;
  for (int r = 0; r < 6; ++r) {
    const HostLayout& l = layouts[static_cast<std::size_t>(r)];
    EXPECT_EQ(l.hosts, 3);
    EXPECT_TRUE(l.uniform);
    EXPECT_EQ(l.local_ranks, (std::vector<int>{r % 3, r % 3 + 3})) << "rank " << r;
    EXPECT_EQ(l.local_index, r / 3);
    EXPECT_EQ(l.cross_ranks, r < 3 ? (std::vector<int>{0, 1, 2}) : (std::vector<int>{3, 4, 5}));
    EXPECT_EQ(l.cross_index, r % 3);
  }
}

TEST(CrossHostAllreduce, EachColumnReducesOnItsOwn) {
  std::mutex mutex;
  std::vector<std::string> failures;
  auto outcomes = run_ranks(6, spread_over_three_hosts, [&](Communicator& comm) {
    const int r = comm.rank();
    // Sizes either side of the small-message switch (halving-doubling vs ring).
    for (std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{300000}}) {
      std::vector<double> in(count), out(count);
      for (std::size_t i = 0; i < count; ++i) in[i] = (r + 1) * 1000.0 + static_cast<double>(i % 7);
      comm.cross_host_allreduce(in.data(), out.data(), count, DataType::float64, ReduceOp::sum);
      // Column {0,1,2} sums ranks 1..3 scaled, column {3,4,5} ranks 4..6.
      const double base = r < 3 ? (1 + 2 + 3) * 1000.0 : (4 + 5 + 6) * 1000.0;
      for (std::size_t i = 0; i < count; ++i) {
        if (out[i] != base + 3.0 * static_cast<double>(i % 7)) {
          std::lock_guard lock(mutex);
          failures.push_back("rank " + std::to_string(r) + " count " + std::to_string(count) +
                             " element " + std::to_string(i) + ": " + std::to_string(out[i]));
          break;
        }
      }
    }
    // float16 sums of small integers are exact either way; average divides by the column size.
    std::vector<std::uint16_t> h(5, 0x3c00);  // 1.0
    comm.cross_host_allreduce(h.data(), h.data(), h.size(), DataType::float16, ReduceOp::sum);
    if (h[4] != 0x4200) {  // 3.0
      std::lock_guard lock(mutex);
      failures.push_back("float16 sum on rank " + std::to_string(r));
    }
    std::int64_t v = r;
    comm.cross_host_allreduce(&v, &v, 1, DataType::int64, ReduceOp::average);
    if (v != (r < 3 ? 1 : 4)) {
      std::lock_guard lock(mutex);
      failures.push_back("average on rank " + std::to_string(r) + ": " + std::to_string(v));
    }
    // The world communicator still works in step afterwards.
    std::int64_t w = 1;
    comm.allreduce(&w, &w, 1, DataType::int64, ReduceOp::sum);
    if (w != 6) {
      std::lock_guard lock(mutex);
      failures.push_back("world allreduce after on rank " + std::to_string(r));
    }
  });
  for (const auto& o : outcomes) ASSERT_TRUE(o.ok) << o.error;
  for (const auto& f : failures) ADD_FAILURE() << f;
}

TEST(CrossHostAllreduce, UnevenHostsAreAnErrorThatSaysWhy) {
  auto outcomes = run_ranks(3, [](int r) {
    auto o = test::inproc_options();
    o.host_key = r < 2 ? "a" : "b";
    return o;
  }, [&](Communicator& comm) {
    EXPECT_FALSE(comm.host_layout().uniform);
    double x = 1;
    comm.cross_host_allreduce(&x, &x, 1, DataType::float64, ReduceOp::sum);
  });
  for (const auto& o : outcomes) {
    EXPECT_FALSE(o.ok);
    EXPECT_EQ(o.kind, ErrorKind::invalid_argument);
    EXPECT_NE(o.error.find("same number of tasks on every node"), std::string::npos) << o.error;
  }
}

}  // namespace
}  // namespace riseml
