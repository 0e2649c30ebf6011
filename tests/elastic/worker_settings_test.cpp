// The settings riseml-elastic hands its workers: read back into job facts, and every missing
// or malformed variable named with how to fix it.
#include <riseml/elastic/worker_settings.hpp>

#include <gtest/gtest.h>

#include <map>

namespace riseml::elastic {
namespace {

Lookup lookup_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const std::string& name) -> std::optional<std::string> {
    const auto it = vars.find(name);
    if (it == vars.end()) return std::nullopt;
    return it->second;
  };
}

std::map<std::string, std::string> node_vars(int node_id, int procid) {
  std::map<std::string, std::string> vars;
  for (const auto& [k, v] : worker_environment(NodeAssignment{"rml1:4711", std::string(64, 'a'), 2 * node_id, 6, node_id, 3, 8, false}))
    vars[k] = v;
  vars["SLURM_PROCID"] = std::to_string(procid);
  vars["SLURM_NTASKS"] = "2";
  vars["SLURM_JOB_ID"] = "42";
  return vars;
}

TEST(ElasticWorkerSettings, NoStoreMeansNotAnElasticWorker) {
  EXPECT_FALSE(worker_settings(lookup_of({}), "h").has_value());
}

TEST(ElasticWorkerSettings, RanksFollowTheNodeAndTheTask) {
  const auto s = worker_settings(lookup_of(node_vars(2, 1)), "rml3");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->store_address, "rml1:4711");
  EXPECT_EQ(s->secret.size(), 32u);
  EXPECT_EQ(s->facts.rank, 5);
  EXPECT_EQ(s->facts.size, 6);
  EXPECT_EQ(s->facts.local_rank, 1);
  EXPECT_EQ(s->facts.local_size, 2);
  EXPECT_EQ(s->facts.node_id, 2);
  EXPECT_EQ(s->facts.num_nodes, 3);
  EXPECT_EQ(s->facts.hostname, "rml3");
  EXPECT_EQ(s->facts.job_id, "42");
  EXPECT_EQ(s->rank_limit, 8);
  EXPECT_FALSE(s->joining);
  auto vars = node_vars(2, 1);
  vars["RISEML_ELASTIC_JOINING"] = "1";
  EXPECT_TRUE(worker_settings(lookup_of(vars), "h")->joining);
}

TEST(ElasticWorkerSettings, EveryBadVariableIsNamed) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"RISEML_ELASTIC_SECRET", ""},           {"RISEML_ELASTIC_SECRET", "abc"},
      {"RISEML_ELASTIC_SECRET", std::string(64, 'g')}, {"RISEML_ELASTIC_SIZE", "six"},
      {"RISEML_ELASTIC_RANK_BASE", "-2"},      {"SLURM_PROCID", ""},
      {"RISEML_ELASTIC_NUM_NODES", "99999999999999"}};
  for (const auto& [name, value] : cases) {
    auto vars = node_vars(0, 0);
    vars[name] = value;
    try {
      worker_settings(lookup_of(vars), "h");
      FAIL() << name << "=" << value << " was accepted";
    } catch (const SettingsError& e) {
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("riseml-elastic"), std::string::npos) << e.what();
    }
  }
  auto vars = node_vars(2, 1);
  vars["RISEML_ELASTIC_SIZE"] = "5";  // rank 5 of 5
  EXPECT_THROW(worker_settings(lookup_of(vars), "h"), SettingsError);
  vars = node_vars(2, 1);
  vars["RISEML_ELASTIC_RANK_LIMIT"] = "4";  // fewer job ranks than the first world has
  EXPECT_THROW(worker_settings(lookup_of(vars), "h"), SettingsError);
}

TEST(ElasticWorkerSettings, SecretsAreFreshAndPrintAsHex) {
  const auto a = new_job_secret(), b = new_job_secret();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_NE(a, b);
  EXPECT_EQ(to_hex({std::byte{0}, std::byte{0xab}, std::byte{0x7f}}), "00ab7f");
}

}  // namespace
}  // namespace riseml::elastic
