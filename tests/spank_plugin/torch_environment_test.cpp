// torch.distributed's env:// variables from Slurm's task facts: the rank numbers, the first host
// of every host-list form Slurm writes, the derived port, a user's own MASTER_ADDR/PORT kept, and
// host lists we cannot read leaving MASTER_ADDR unset rather than guessed.
#include "torch_environment.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace riseml::spank {
namespace {

using Env = std::map<std::string, std::string>;

TorchTaskFacts task(std::uint32_t global, std::uint32_t total, std::uint32_t local,
                    std::uint32_t local_tasks, const char* nodelist) {
  TorchTaskFacts f;
  f.global_id = global;
  f.total_tasks = total;
  f.local_id = local;
  f.local_tasks = local_tasks;
  f.job_id = 77;
  f.step_id = 3;
  if (nodelist) f.step_nodelist = nodelist;
  return f;
}

TEST(TorchEnvironment, RankNumbersAndRendezvousFromTheStep) {
  const TorchEnvironment t = torch_environment(task(5, 6, 1, 2, "rml[2-3],gpu7"));
  const Env env(t.env.begin(), t.env.end());
  EXPECT_EQ(env.at("RANK"), "5");
  EXPECT_EQ(env.at("WORLD_SIZE"), "6");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "2");
  EXPECT_EQ(env.at("MASTER_ADDR"), "rml2");
  EXPECT_EQ(env.at("MASTER_PORT"), std::to_string(20000 + (77 * 131 + 3) % 20000));
  EXPECT_TRUE(t.not_set.empty());
}

TEST(TorchEnvironment, EveryTaskOfAStepAgrees) {
  for (std::uint32_t r = 0; r < 4; ++r) {
    const TorchEnvironment t = torch_environment(task(r, 4, r % 2, 2, "n[007-008]"));
    const Env env(t.env.begin(), t.env.end());
    EXPECT_EQ(env.at("MASTER_ADDR"), "n007");
    EXPECT_EQ(env.at("MASTER_PORT"), std::to_string(derived_master_port(77, 3)));
  }
  EXPECT_NE(derived_master_port(77, 3), derived_master_port(77, 4));  // steps side by side
  EXPECT_GE(derived_master_port(0xffffffffu, 0xfffffffdu), 20000u);
  EXPECT_LT(derived_master_port(0xffffffffu, 0xfffffffdu), 40000u);
}

TEST(TorchEnvironment, AUsersOwnAddressAndPortAreKept) {
  TorchTaskFacts f = task(0, 2, 0, 2, "a,b");
  f.master_addr = "10.0.0.9";
  f.master_port = "29500";
  const TorchEnvironment t = torch_environment(f);
  const Env env(t.env.begin(), t.env.end());
  EXPECT_EQ(env.at("MASTER_ADDR"), "10.0.0.9");
  EXPECT_EQ(env.at("MASTER_PORT"), "29500");
}

TEST(TorchEnvironment, FirstHostOfEveryForm) {
  EXPECT_EQ(first_host("node1"), "node1");
  EXPECT_EQ(first_host("a,b"), "a");
  EXPECT_EQ(first_host("rml[1-3]"), "rml1");
  EXPECT_EQ(first_host("rml[5,1-3]"), "rml5");
  EXPECT_EQ(first_host("n[007-009]-ib"), "n007-ib");
  EXPECT_EQ(first_host("gpu[10-11],cpu[1-2]"), "gpu10");
  EXPECT_EQ(first_host("host.example.org"), "host.example.org");
}

TEST(TorchEnvironment, HostListsWeCannotReadLeaveTheAddressUnset) {
  for (const char* bad : {"", "[1-2]x", "a[", "a]", "a[[1]]", "a[x-2]", "a[1]b[2]", "a b",
                          "a;rm -rf", "$(x)"}) {
    EXPECT_EQ(first_host(bad), std::nullopt) << bad;
    const TorchEnvironment t = torch_environment(task(0, 2, 0, 2, bad));
    const Env env(t.env.begin(), t.env.end());
    EXPECT_EQ(env.count("MASTER_ADDR"), 0u) << bad;
    EXPECT_EQ(env.at("RANK"), "0");  // the rank numbers are still right
    EXPECT_NE(t.not_set.find("MASTER_ADDR"), std::string::npos);
  }
  const TorchEnvironment none = torch_environment(task(0, 1, 0, 1, nullptr));
  EXPECT_NE(none.not_set.find("not set"), std::string::npos);
}

}  // namespace
}  // namespace riseml::spank
