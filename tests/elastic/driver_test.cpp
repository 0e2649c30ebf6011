// riseml-elastic's command line, which nodes start workers, and each node's srun line.
#include "driver_options.hpp"
#include "node_plan.hpp"

#include <gtest/gtest.h>

namespace riseml::elastic {
namespace {

DriverOptions parsed(std::vector<std::string> args) {
  auto r = parse_driver_options(args);
  EXPECT_TRUE(std::holds_alternative<DriverOptions>(r));
  return std::get<DriverOptions>(r);
}

TEST(ElasticDriverOptions, ParsesTheTranslatorsLine) {
  const auto o = parsed({"--workers", "3", "--min-workers", "2", "--tasks-per-node", "2",
                         "--srun-arg=--cpus-per-task=4", "--srun-arg=--riseml-bind=auto", "--",
                         "bash", "-c", "python3 train.py --epochs 3"});
  EXPECT_EQ(o.workers, 3);
  EXPECT_EQ(o.min_workers, 2);
  EXPECT_EQ(o.tasks_per_node, 2);
  EXPECT_EQ(o.srun_args, (std::vector<std::string>{"--cpus-per-task=4", "--riseml-bind=auto"}));
  EXPECT_EQ(o.command, (std::vector<std::string>{"bash", "-c", "python3 train.py --epochs 3"}));
  EXPECT_EQ(parsed({"--nodes", "a,b,,c", "prog"}).nodes, (std::vector<std::string>{"a", "b", "c"}));
}

TEST(ElasticDriverOptions, RefusesWhatCannotWork) {
  for (const auto& args : std::vector<std::vector<std::string>>{
           {}, {"--workers", "2", "--min-workers", "3", "prog"}, {"--workers", "0", "prog"},
           {"--tasks-per-node", "-1", "prog"}, {"--no-such-option", "prog"}, {"--grace", "x", "prog"}}) {
    const auto r = parse_driver_options(args);
    ASSERT_TRUE(std::holds_alternative<int>(r));
    EXPECT_EQ(std::get<int>(r), 2);
  }
}

TEST(ElasticDriverPlan, WorkersFirstThenSpares) {
  DriverOptions o;
  o.workers = 2;
  o.tasks_per_node = 3;
  o.min_workers = 1;
  const JobPlan plan = plan_job({"n1", "n2", "n3"}, o);
  ASSERT_EQ(plan.workers.size(), 2u);
  EXPECT_EQ(plan.workers[1].node, "n2");
  EXPECT_EQ(plan.workers[1].rank_base, 3);
  EXPECT_EQ(plan.size, 6);
  EXPECT_EQ(plan.spares, (std::vector<std::string>{"n3"}));
  o.workers = 4;
  EXPECT_THROW(plan_job({"n1", "n2", "n3"}, o), std::invalid_argument);
  o.workers.reset();
  o.min_workers = 4;
  EXPECT_THROW(plan_job({"n1", "n2", "n3"}, o), std::invalid_argument);
  o.min_workers = 1;
  EXPECT_THROW(plan_job({"n1", "n1"}, o), std::invalid_argument);
}

TEST(ElasticDriverPlan, OneStepPerNodeWithoutPmixOrKillOnBadExit) {
  DriverOptions o;
  o.srun_args = {"--cpus-per-task=2"};
  o.command = {"python3", "train.py"};
  const auto argv = srun_command(NodePlan{"rml2", 1, 2, 2}, o, "77");
  const std::vector<std::string> want = {"srun", "--jobid=77", "--overlap", "--nodes=1", "--mpi=none",
                                         "--kill-on-bad-exit=0", "--label", "--ntasks=2",
                                         "--nodelist=rml2", "--cpus-per-task=2", "python3", "train.py"};
  EXPECT_EQ(argv, want);
  EXPECT_EQ(srun_command(NodePlan{"rml2", 1, 2, 2}, o, "")[1], "--overlap");
}

}  // namespace
}  // namespace riseml::elastic
