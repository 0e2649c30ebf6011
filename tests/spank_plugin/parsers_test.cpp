// The small parsers: CPU lists, --riseml-bind values, plugstack.conf arguments, NIC name order.
#include <gtest/gtest.h>

#include "cpu_list.hpp"
#include "hwloc_loader.hpp"
#include "plugin_config.hpp"

namespace riseml {
namespace {

using placement::format_number_list;
using placement::parse_number_list;

TEST(NumberList, ParsesRangesAndFormatsThemBack) {
  EXPECT_EQ(parse_number_list("0-3,8,10-11"), (std::vector<unsigned>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse_number_list("3,1,1"), (std::vector<unsigned>{1, 3}));
  EXPECT_EQ(format_number_list({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10,11");
  EXPECT_EQ(format_number_list({}), "");
  for (const char* bad : {"", ",", "1,", ",1", "1,,2", "a", "3-1", "1-", "-1", "GPU-abc", "99999999", "0-9999999"}) {
    EXPECT_FALSE(parse_number_list(bad)) << bad;
  }
}

TEST(NicNames, NaturalOrder) {
  EXPECT_TRUE(placement::natural_less("mlx5_2", "mlx5_10"));
  EXPECT_FALSE(placement::natural_less("mlx5_10", "mlx5_2"));
  EXPECT_TRUE(placement::natural_less("ib0", "mlx5_0"));
  EXPECT_FALSE(placement::natural_less("mlx5_0", "mlx5_0"));
}

TEST(BindOption, Choices) {
  spank::BindRequest r;
  std::string error;
  ASSERT_TRUE(spank::parse_bind("auto", r, error));
  EXPECT_EQ(r.mode, spank::BindRequest::Mode::full);
  EXPECT_FALSE(r.verbose);
  ASSERT_TRUE(spank::parse_bind("verbose", r, error));
  EXPECT_EQ(r.mode, spank::BindRequest::Mode::full);
  EXPECT_TRUE(r.verbose);
  ASSERT_TRUE(spank::parse_bind("env,verbose", r, error));
  EXPECT_EQ(r.mode, spank::BindRequest::Mode::env_only);
  ASSERT_TRUE(spank::parse_bind("none", r, error));
  EXPECT_EQ(r.mode, spank::BindRequest::Mode::none);
  for (const char* bad : {"", "bogus", "auto,none", "none,verbose", "auto,bogus"}) {
    EXPECT_FALSE(spank::parse_bind(bad, r, error)) << bad;
    EXPECT_NE(error.find("--riseml-bind"), std::string::npos) << error;
  }
}

TEST(PluginConfig, KnownKeys) {
  spank::PluginConfig c;
  std::string error;
  ASSERT_TRUE(spank::parse_plugin_config({"default=auto", "topology=/etc/riseml/node.xml", "nic_exclude=mlx5_2,mlx5_3",
                                          "nic_include=mlx5_0", "env=gpu,riseml", "gpu_ids=index", "on_error=warn",
                                          "membind=prefer"},
                                         c, error))
      << error;
  EXPECT_EQ(c.default_bind.mode, spank::BindRequest::Mode::full);
  EXPECT_EQ(c.topology, "/etc/riseml/node.xml");
  EXPECT_EQ(c.plan.nic_exclude, (std::vector<std::string>{"mlx5_2", "mlx5_3"}));
  EXPECT_TRUE(c.plan.env.gpu);
  EXPECT_FALSE(c.plan.env.nccl);
  EXPECT_FALSE(c.plan.env.horovod);
  EXPECT_EQ(c.plan.gpu_ids, placement::GpuIds::index);
  EXPECT_EQ(c.on_error, spank::OnError::warn);
  EXPECT_EQ(c.membind, spank::MemBind::prefer);
  spank::PluginConfig groups;
  ASSERT_TRUE(spank::parse_plugin_config({"env=riseml,horovod"}, groups, error)) << error;
  EXPECT_TRUE(groups.plan.env.horovod);
  EXPECT_TRUE(groups.plan.env.riseml);
  EXPECT_FALSE(groups.plan.env.gpu);
  spank::PluginConfig d;
  ASSERT_TRUE(spank::parse_plugin_config({}, d, error));
  EXPECT_TRUE(d.plan.env.horovod);
  EXPECT_EQ(d.default_bind.mode, spank::BindRequest::Mode::none);
  EXPECT_EQ(d.on_error, spank::OnError::fail);
  EXPECT_EQ(d.topology_helper, "");
  EXPECT_EQ(d.topology_timeout_s, 30u);
  EXPECT_EQ(d.topology_cache, "/tmp");
  spank::PluginConfig h;
  ASSERT_TRUE(spank::parse_plugin_config({"topology_helper=/opt/riseml/libexec/riseml-topology", "topology_timeout=600",
                                          "topology_cache=/var/cache/riseml"},
                                         h, error))
      << error;
  EXPECT_EQ(h.topology_helper, "/opt/riseml/libexec/riseml-topology");
  EXPECT_EQ(h.topology_timeout_s, 600u);
  EXPECT_EQ(h.topology_cache, "/var/cache/riseml");
  ASSERT_TRUE(spank::parse_plugin_config({"topology_timeout=1", "topology_cache=none"}, h, error)) << error;
  EXPECT_EQ(h.topology_timeout_s, 1u);
  EXPECT_EQ(h.topology_cache, "");
}

TEST(PluginConfig, UnknownOrBadArgumentsAreErrors) {
  struct Case {
    const char* arg;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{{"colour=blue", "unknown plugstack.conf argument 'colour=blue'"},
                                         {"topology", "not key=value"},
                                         {"topology=node.xml", "absolute path"},
                                         {"default=sometimes", "default=sometimes"},
                                         {"env=gpu,cuda", "'cuda' is not a group"},
                                         {"nic_exclude=", "comma-separated list"},
                                         {"on_error=ignore", "use fail or warn"},
                                         {"membind=interleave", "use bind, prefer or none"},
                                         {"gpu_ids=serial", "use auto, uuid or index"},
                                         {"topology_helper=", "absolute path of riseml-topology"},
                                         {"topology_timeout=-1", "whole seconds, 1 to 600"},
                                         {"topology_timeout=99999999999", "whole seconds, 1 to 600"},
                                         {"topology_cache=", "an absolute folder"}}) {
    spank::PluginConfig cfg;
    std::string error;
    EXPECT_FALSE(spank::parse_plugin_config({c.arg}, cfg, error)) << c.arg;
    EXPECT_NE(error.find(c.says), std::string::npos) << c.arg << " -> " << error;
  }
}

}  // namespace
}  // namespace riseml

namespace riseml {
namespace {

// Hostile input: random bytes and long strings never crash the parsers (they run in srun,
// sbatch and slurmstepd).
TEST(Parsers, SurviveRandomInput) {
  unsigned seed = 12345;
  auto next = [&] { return seed = seed * 1103515245u + 12345u; };
  const std::string alphabet = "0123456789,-=abcdefghijklmnopqrstuvwxyz_/ \t\n\xff";
  for (int i = 0; i < 20000; ++i) {
    std::string s;
    const std::size_t len = next() % 40;
    for (std::size_t k = 0; k < len; ++k) s += alphabet[(next() >> 8) % alphabet.size()];
    (void)placement::parse_number_list(s);
    spank::BindRequest r;
    std::string error;
    (void)spank::parse_bind(s, r, error);
    spank::PluginConfig c;
    (void)spank::parse_plugin_config({s, "env=" + s, "default=" + s, "nic_exclude=" + s, "topology_timeout=" + s}, c,
                                     error);
  }
  const std::string huge(1 << 20, '9');
  EXPECT_FALSE(placement::parse_number_list(huge));
  EXPECT_FALSE(placement::parse_number_list("0-4294967295"));
}

}  // namespace
}  // namespace riseml
