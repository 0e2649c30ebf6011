// The elastic driver's decisions (WorldPlanner), scenario by scenario as Horovod's elastic
// integration tests run them: hosts added and removed, one rank failing (its host leaves), all
// failing, too few workers, the reset limit, blamed ranks, spares, cooldowns.
#include "world_planner.hpp"

#include <gtest/gtest.h>

namespace riseml::elastic {
namespace {

using namespace std::chrono_literals;
using Clock = WorldPlanner::Clock;

struct Planner {
  explicit Planner(WorldPlanner::Limits limits, std::optional<std::pair<double, double>> cooldown = std::nullopt)
      : health(cooldown, [] { return 0.0; }), planner(limits, health) {}
  HostHealth health;
  WorldPlanner planner;
  Clock::time_point now = Clock::now();

  WorldPlanner::Decision decide(Clock::duration later = 0s) {
    now += later;
    return planner.decide(now);
  }
  // Every worker of `d` says it is up.
  void ready(const WorldPlanner::Decision& d) {
    for (const auto& s : d.start)
      for (int r = s.rank_base; r < s.rank_base + s.count; ++r) planner.worker_ready(r);
  }
};

WorldPlanner::Limits limits(int min, int max) {
  WorldPlanner::Limits l;
  l.min_ranks = min;
  l.max_ranks = max;
  return l;
}

TEST(ElasticWorldPlanner, HostsAddedAndRemoved) {
  auto l = limits(2, 4);
  l.hosts_may_appear = true;
  Planner p(l);
  p.planner.hosts_found({{"localhost", 2}});
  auto d = p.decide();
  ASSERT_EQ(d.start.size(), 1u);
  EXPECT_EQ(d.start[0].rank_base, 0);
  EXPECT_FALSE(d.start[0].joining);
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, (std::vector<int>{0, 1}));
  EXPECT_EQ(d.announce->why, "start");

  p.planner.hosts_found({{"localhost", 2}, {"127.0.0.1", 2}});
  d = p.decide();
  ASSERT_EQ(d.start.size(), 1u);
  EXPECT_EQ(d.start[0].host, "127.0.0.1");
  EXPECT_EQ(d.start[0].rank_base, 2);
  EXPECT_TRUE(d.start[0].joining);
  EXPECT_EQ(d.pending, 1);    // the workers hear of it at once
  EXPECT_FALSE(d.announce);  // but it is announced when its workers are up
  p.planner.worker_ready(2);
  EXPECT_FALSE(p.decide().announce);  // all of the host's workers, not one
  p.planner.worker_ready(3);
  d = p.decide();
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(d.announce->why, "added");

  p.planner.hosts_found({{"127.0.0.1", 2}});
  d = p.decide();
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, (std::vector<int>{2, 3}));
  EXPECT_EQ(d.announce->why, "removed");
  EXPECT_TRUE(d.start.empty());  // localhost is not listed
  EXPECT_EQ(p.planner.resets(), 2);
  EXPECT_FALSE(p.decide().announce);  // nothing new
}

TEST(ElasticWorldPlanner, AFailedRankTakesItsHostOutAndEverySurvivorGetsTheNextWorld) {
  Planner p(limits(2, 4));
  p.planner.hosts_found({{"localhost", 2}, {"127.0.0.1", 2}});
  auto d = p.decide();
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, (std::vector<int>{0, 1, 2, 3}));
  const auto notes = p.planner.worker_exited(0, false, p.now);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("node localhost is blacklisted (rank 0 failed); its workers leave: rank(s) 0, 1"),
            std::string::npos)
      << notes[0];
  p.planner.failure_reported({2, 0, {0}}, p.now);
  p.planner.failure_reported({3, 0, {}}, p.now);
  d = p.decide();
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, (std::vector<int>{2, 3}));
  EXPECT_EQ(d.announce->why, "failure");
  EXPECT_TRUE(d.start.empty());  // localhost is out for good
  // Rank 1 leaves by itself (exit 0, out of the world): no failure of its own.
  EXPECT_TRUE(p.planner.worker_exited(1, true, p.now).empty());
  // A late report about the world that is gone asks for nothing.
  p.planner.failure_reported({3, 0, {}}, p.now);
  EXPECT_FALSE(p.decide().announce);
}

TEST(ElasticWorldPlanner, AReportWithoutACulpritRenewsTheSameWorld) {
  Planner p(limits(1, 2));
  p.planner.hosts_found({{"a", 2}});
  p.decide();
  p.planner.failure_reported({1, 0, {}}, p.now);
  auto d = p.decide();
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, (std::vector<int>{0, 1}));
  EXPECT_EQ(d.announce->why, "failure");
  EXPECT_EQ(p.planner.resets(), 1);
}

TEST(ElasticWorldPlanner, ABlamedRankIsStoppedAndItsHostLeaves) {
  Planner p(limits(1, 3));
  p.planner.hosts_found({{"n1", 1}, {"n2", 1}, {"n3", 1}});
  p.decide();
  p.planner.failure_reported({0, 0, {2}}, p.now);
  p.planner.failure_reported({1, 0, {2}}, p.now);
  auto d = p.decide();
  EXPECT_EQ(d.stop_now, std::vector<int>{2});
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, (std::vector<int>{0, 1}));
}

TEST(ElasticWorldPlanner, EveryHostFailedOrTooFew) {
  {  // all ranks fail
    Planner p(limits(2, 4));
    p.planner.hosts_found({{"localhost", 2}, {"127.0.0.1", 2}});
    p.decide();
    for (int r = 0; r < 4; ++r) p.planner.worker_exited(r, false, p.now);
    const auto d = p.decide();
    ASSERT_TRUE(d.end_job);
    EXPECT_NE(d.end_job->find("no worker is left"), std::string::npos) << *d.end_job;
  }
  {  // one rank of each host fails: both hosts blacklisted, the others leave, although a
     // discovery script might list new hosts: nobody has the state any more
    auto l = limits(2, 4);
    l.hosts_may_appear = true;
    Planner p(l);
    p.planner.hosts_found({{"localhost", 2}, {"127.0.0.1", 2}});
    p.decide();
    p.planner.worker_exited(0, false, p.now);
    p.planner.worker_exited(2, false, p.now);
    auto d = p.decide();
    ASSERT_TRUE(d.end_job);
    EXPECT_NE(d.end_job->find("no worker is left in the world"), std::string::npos) << *d.end_job;
  }
  {  // min 4: a host fails; a discovery script might add hosts: wait, then end at the timeout
    auto l = limits(4, 4);
    l.hosts_may_appear = true;
    l.elastic_timeout = 1s;
    Planner p(l);
    p.planner.hosts_found({{"localhost", 2}, {"127.0.0.1", 2}});
    p.decide();
    p.planner.worker_exited(0, false, p.now);
    auto d = p.decide();
    EXPECT_FALSE(d.end_job);
    EXPECT_FALSE(d.announce);
    EXPECT_TRUE(p.planner.wants_decision(p.now));
    d = p.decide(500ms);
    EXPECT_FALSE(d.end_job);
    d = p.decide(600ms);
    ASSERT_TRUE(d.end_job);
    EXPECT_NE(d.end_job->find("--elastic-timeout"), std::string::npos) << *d.end_job;
  }
  {  // min 3 of 3 nodes in Slurm, no spare, no discovery: end at once
    Planner p(limits(3, 3));
    p.planner.hosts_found({{"n1", 1}, {"n2", 1}, {"n3", 1}});
    p.decide();
    p.planner.worker_exited(2, false, p.now);
    const auto d = p.decide();
    ASSERT_TRUE(d.end_job);
    EXPECT_NE(d.end_job->find("no host can add more"), std::string::npos) << *d.end_job;
  }
}

TEST(ElasticWorldPlanner, TheResetLimit) {
  for (int limit : {1, 2}) {
    auto l = limits(2, 4);
    l.reset_limit = limit;
    l.hosts_may_appear = true;
    Planner p(l);
    p.planner.hosts_found({{"localhost", 2}});
    p.decide();
    p.planner.hosts_found({{"localhost", 2}, {"127.0.0.1", 2}});
    p.ready(p.decide());
    EXPECT_TRUE(p.decide().announce);  // reset 1
    p.planner.hosts_found({{"127.0.0.1", 2}});
    const auto d = p.decide();  // reset 2
    EXPECT_EQ(d.end_job.has_value(), limit == 1);
    EXPECT_EQ(d.announce.has_value(), limit == 2);
    if (d.end_job) {
      EXPECT_NE(d.end_job->find("more than the reset limit of 1"), std::string::npos) << *d.end_job;
    }
  }
}

TEST(ElasticWorldPlanner, ASpareReplacesAFailedNodeAndABrokenSpareIsDropped) {
  Planner p(limits(2, 3));
  p.planner.hosts_found({{"n1", 1}, {"n2", 1}, {"n3", 1}, {"n4", 1}, {"n5", 1}});
  auto d = p.decide();
  ASSERT_EQ(d.start.size(), 3u);  // n4 and n5 are spares
  p.planner.worker_exited(2, false, p.now);
  d = p.decide();
  ASSERT_EQ(d.start.size(), 1u);
  EXPECT_EQ(d.start[0].host, "n4");
  EXPECT_EQ(d.start[0].rank_base, 3);  // ranks are never reused
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, (std::vector<int>{0, 1}));  // the survivors go on meanwhile
  EXPECT_EQ(d.pending, 2);
  // n4's worker dies on its way in: n5 is next; the world stays as it is.
  p.planner.worker_exited(3, false, p.now);
  d = p.decide();
  ASSERT_EQ(d.start.size(), 1u);
  EXPECT_EQ(d.start[0].host, "n5");
  EXPECT_FALSE(d.announce);
  EXPECT_FALSE(d.pending);  // still the world 2
  p.planner.worker_ready(4);
  d = p.decide();
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, (std::vector<int>{0, 1, 4}));
  // The last spare dies on its way in too: the promised world comes, without it.
  p.planner.worker_exited(4, false, p.now);
  p.planner.hosts_found({{"n1", 1}, {"n2", 1}, {"n6", 1}});
  d = p.decide();
  ASSERT_EQ(d.start.size(), 1u);
  EXPECT_EQ(d.pending, 4);
  p.planner.worker_exited(5, false, p.now);
  d = p.decide();
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, (std::vector<int>{0, 1}));
}

TEST(ElasticWorldPlanner, JoinersThatAreNotUpInTimeAreStoppedAndThePromisedWorldComesWithout) {
  auto l = limits(1, 2);
  l.start_timeout = 10s;
  l.elastic_timeout = 1s;  // waiting for the minimum: not what a joiner's start is held to
  Planner p(l);
  p.planner.hosts_found({{"a", 1}});
  p.decide();
  p.planner.hosts_found({{"a", 1}, {"b", 1}});
  auto d = p.decide();
  ASSERT_EQ(d.start.size(), 1u);
  EXPECT_EQ(d.pending, 1);
  EXPECT_TRUE(p.planner.wants_decision(p.now));
  EXPECT_TRUE(p.decide(5s).stop_now.empty());
  d = p.decide(6s);
  EXPECT_EQ(d.stop_now, std::vector<int>{1});
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, std::vector<int>{0});
  ASSERT_FALSE(d.notes.empty());
  EXPECT_NE(d.notes[0].find("node b is blacklisted (its workers were not up within 10.0 s (--start-timeout))"), std::string::npos)
      << d.notes[0];
}

TEST(ElasticWorldPlanner, ABlacklistedHostComesBackAfterItsCooldown) {
  Planner p(limits(2, 4), std::make_pair(1.0, 2.0));  // first failure: 2 s
  p.planner.hosts_found({{"localhost", 2}, {"127.0.0.1", 2}});
  p.decide();
  p.planner.worker_exited(3, false, p.now);
  auto d = p.decide();
  ASSERT_TRUE(d.announce);
  EXPECT_EQ(d.announce->members, (std::vector<int>{0, 1}));
  EXPECT_TRUE(d.start.empty());
  p.planner.worker_exited(2, true, p.now);  // left by itself
  EXPECT_TRUE(p.decide(1s).start.empty());
  EXPECT_FALSE(p.planner.wants_decision(p.now));  // out for 2 s
  EXPECT_TRUE(p.planner.wants_decision(p.now + 1500ms));
  d = p.decide(1500ms);
  ASSERT_EQ(d.start.size(), 1u);
  EXPECT_EQ(d.start[0].host, "127.0.0.1");
  EXPECT_EQ(d.start[0].rank_base, 4);
  EXPECT_EQ(d.notes, std::vector<std::string>{"node 127.0.0.1 is back after its cooldown"});
}

}  // namespace
}  // namespace riseml::elastic
