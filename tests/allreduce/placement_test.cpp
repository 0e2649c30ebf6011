// The waiting rule (core/placement.hpp): spin only while the ranks that share CPUs with this one
// have a CPU each, whoever bound them (mpirun, srun with our plugin, taskset) or nobody.
#include <gtest/gtest.h>

#include <sched.h>

#include <riseml/communicator.hpp>

#include "core/placement.hpp"
#include "rank_threads.hpp"

namespace riseml {
namespace {

using Masks = std::vector<std::vector<int>>;

TEST(Placement, BoundOneCoreEachSpins) {
  // mpirun's default, srun --cpu-bind=cores, our plugin: every rank on a core of its own.
  const Masks masks{{0}, {1}, {2}, {3}};
  for (int me = 0; me < 4; ++me) {
    const SpinDecision d = decide_spin(masks, me);
    EXPECT_TRUE(d.spin) << me;
    EXPECT_EQ(d.sharing_ranks, 1);
    EXPECT_EQ(d.cpus, 1);
  }
  // Hyperthread pairs, one rank per pair.
  EXPECT_TRUE(decide_spin({{0, 8}, {1, 9}}, 1).spin);
}

TEST(Placement, UnboundSpinsWhileTheRanksAreNoMoreThanTheCpus) {
  const std::vector<int> two{0, 1};
  EXPECT_TRUE(decide_spin({two, two}, 0).spin);
  const SpinDecision d = decide_spin({two, two, two, two}, 2);
  EXPECT_FALSE(d.spin) << "4 ranks on 2 CPUs";
  EXPECT_EQ(d.sharing_ranks, 4);
  EXPECT_EQ(d.cpus, 2);
}

TEST(Placement, RanksBoundToOneCoreTogetherDoNotSpin) {
  // 4 ranks, 2 per core (mpirun --oversubscribe --bind-to core with 2 cores, or a bad cpuset).
  const Masks masks{{0}, {0}, {1}, {1}};
  EXPECT_FALSE(decide_spin(masks, 0).spin);
  EXPECT_FALSE(decide_spin(masks, 3).spin);
  EXPECT_EQ(decide_spin(masks, 3).sharing_ranks, 2);
  // Only the crowded core's ranks yield; the rank alone on its core spins.
  const Masks mixed{{0}, {0}, {1}};
  EXPECT_FALSE(decide_spin(mixed, 0).spin);
  EXPECT_TRUE(decide_spin(mixed, 2).spin);
}

TEST(Placement, OverlappingMasksCountAsOneGroup) {
  // {0,1} and {1,2} overlap, {2} overlaps the second: three ranks on CPUs 0-2 spin.
  const Masks chain{{0, 1}, {1, 2}, {2}};
  for (int me = 0; me < 3; ++me) {
    EXPECT_TRUE(decide_spin(chain, me).spin) << me;
    EXPECT_EQ(decide_spin(chain, me).sharing_ranks, 3);
    EXPECT_EQ(decide_spin(chain, me).cpus, 3);
  }
  // Four ranks on CPUs 0-2 that all overlap: more ranks than CPUs.
  EXPECT_FALSE(decide_spin({{0, 1}, {1, 2}, {2}, {0}}, 3).spin);
  // A separate pair does not count against the others.
  const Masks apart{{0, 1}, {0, 1}, {2}, {2}, {3}};
  EXPECT_TRUE(decide_spin(apart, 0).spin);
  EXPECT_FALSE(decide_spin(apart, 2).spin);
  EXPECT_TRUE(decide_spin(apart, 4).spin);
}

TEST(Placement, AnUnknownMaskSharesEveryCpu) {
  // A peer whose CPUs are unknown may run anywhere: it counts as sharing, adds no CPU.
  EXPECT_FALSE(decide_spin({{0}, {}}, 0).spin);
  EXPECT_TRUE(decide_spin({{0, 1}, {}}, 0).spin);
  EXPECT_FALSE(decide_spin({{}}, 0).spin) << "nothing known: do not spin";
  EXPECT_FALSE(decide_spin({{0}}, 3).spin) << "out of range";
}

TEST(Placement, CpuListsRoundTripAndBadBytesAreRefused) {
  EXPECT_EQ(format_cpu_list({}), "");
  EXPECT_EQ(format_cpu_list({0}), "0");
  EXPECT_EQ(format_cpu_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(parse_cpu_list("0-3,8,10-11"), (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_cpu_list(""), std::vector<int>{});
  EXPECT_EQ(parse_cpu_list("3,1,1"), (std::vector<int>{1, 3}));
  for (const char* bad : {"x", "1-", "-1", "3-1", "1,,2", "1,", "0-99999999", "1 2", "1-2-3",
                          "99999999999999999999", "0-1048576"})
    EXPECT_FALSE(parse_cpu_list(bad).has_value()) << bad;
}

TEST(Placement, ThisProcessCpusMatchSchedGetaffinity) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(::sched_getaffinity(0, sizeof set, &set), 0);
  const std::vector<int> cpus = this_process_cpus();
  EXPECT_EQ(static_cast<int>(cpus.size()), CPU_COUNT(&set));
  for (int c : cpus) EXPECT_TRUE(CPU_ISSET(c, &set)) << c;
}

// Through a communicator: the ranks publish their masks at setup and each describes the
// decision (threads of one process share its mask: n ranks on the process's CPUs).
TEST(Placement, ACommunicatorDecidesFromThePublishedMasks) {
  const int cpus = static_cast<int>(this_process_cpus().size());
  for (int n : {1, cpus, cpus + 1}) {
    auto outcomes = test::run_ranks(n, test::inproc_options(), [&](Communicator& comm) {
      const std::string p = comm.describe_placement();
      const bool spins = p.find("spin 50 us") != std::string::npos;
      if (spins != (n <= cpus)) throw std::runtime_error(std::to_string(n) + " ranks: " + p);
      if (p.find("(" + std::to_string(n) + " rank(s) share " + std::to_string(cpus) + " CPU(s))") ==
          std::string::npos)
        throw std::runtime_error(p);
    });
    for (const auto& o : outcomes) EXPECT_TRUE(o.ok) << o.error;
  }
  auto o = test::inproc_options();
  o.spin_time = std::chrono::microseconds(7);
  auto outcomes = test::run_ranks(2, o, [](Communicator& comm) {
    if (comm.describe_placement().find("spin 7 us (RISEML_SPIN_US)") == std::string::npos)
      throw std::runtime_error(comm.describe_placement());
  });
  for (const auto& r : outcomes) EXPECT_TRUE(r.ok) << r.error;
}

}  // namespace
}  // namespace riseml
