// riseml-elastic's command line and each node's srun line.
#include "driver_options.hpp"
#include "srun_step.hpp"

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

// Horovod's options for one machine: --launcher local, hosts with slots or a discovery script,
// bounds in workers, the reset limit, the cooldown range, the elastic timeout.
TEST(ElasticDriverOptions, ParsesHorovodsElasticOptions) {
  const auto o = parsed({"--launcher", "local", "--host-discovery-script", "/tmp/d.sh",
                         "--min-np", "2", "--max-np", "4", "--reset-limit", "1",
                         "--blacklist-cooldown-range", "1", "2", "--elastic-timeout", "1.5",
                         "--discovery-interval", "0.05", "--start-timeout", "30", "--", "python3", "w.py"});
  EXPECT_EQ(o.launcher, Launcher::local);
  EXPECT_EQ(o.discovery_script, "/tmp/d.sh");
  EXPECT_EQ(o.min_ranks(), 2);
  EXPECT_EQ(o.max_ranks(), 4);
  EXPECT_EQ(o.reset_limit, 1);
  ASSERT_TRUE(o.cooldown);
  EXPECT_EQ(o.cooldown->second, 2.0);
  EXPECT_EQ(o.elastic_timeout, std::chrono::milliseconds(1500));
  EXPECT_EQ(o.discovery_interval, std::chrono::milliseconds(50));
  EXPECT_EQ(o.start_timeout, std::chrono::seconds(30));
  EXPECT_EQ(o.command, (std::vector<std::string>{"python3", "w.py"}));
  // The node counts of the Slurm line, in workers.
  const auto n = parsed({"--workers", "3", "--min-workers", "2", "--tasks-per-node", "2", "p"});
  EXPECT_EQ(n.min_ranks(), 4);
  EXPECT_EQ(n.max_ranks(), 6);
  EXPECT_EQ(parsed({"--hosts", "a:2,b", "p"}).nodes, (std::vector<std::string>{"a:2", "b"}));
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--launcher", "ssh", "p"}, {"--min-np", "3", "--max-np", "2", "p"},
           {"--blacklist-cooldown-range", "2", "1", "p"}, {"--blacklist-cooldown-range", "1", "p"},
           {"--hosts", "a", "--host-discovery-script", "d", "p"}, {"--reset-limit", "-1", "p"},
           {"--discovery-interval", "0", "p"}}) {
    auto r = parse_driver_options(bad);
    ASSERT_TRUE(std::holds_alternative<int>(r)) << bad[0];
    EXPECT_EQ(std::get<int>(r), 2) << bad[0];
  }
}

TEST(ElasticDriverPlan, OneStepPerNodeWithoutPmixOrKillOnBadExit) {
  DriverOptions o;
  o.srun_args = {"--cpus-per-task=2"};
  o.command = {"python3", "train.py"};
  const auto argv = srun_command(StartWorkers{"rml2", 1, 2, 2, false}, o, "77");
  const std::vector<std::string> want = {"srun", "--jobid=77", "--overlap", "--nodes=1", "--mpi=none",
                                         "--kill-on-bad-exit=0", "--label", "--ntasks=2",
                                         "--nodelist=rml2", "--cpus-per-task=2", "python3", "train.py"};
  EXPECT_EQ(argv, want);
  EXPECT_EQ(srun_command(StartWorkers{"rml2", 1, 2, 2, false}, o, "")[1], "--overlap");
}

}  // namespace
}  // namespace riseml::elastic
