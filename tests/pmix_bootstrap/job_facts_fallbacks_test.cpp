#include "job_facts_fallbacks.hpp"

#include <gtest/gtest.h>

namespace riseml::pmix {
namespace {

TEST(JobFactsFallbacks, SplitsCommaLists) {
  EXPECT_EQ(split_comma_list("n1,n2,n3"), (std::vector<std::string>{"n1", "n2", "n3"}));
  EXPECT_EQ(split_comma_list("solo"), (std::vector<std::string>{"solo"}));
  EXPECT_TRUE(split_comma_list("").empty());
  EXPECT_EQ(split_comma_list("a,,b,"), (std::vector<std::string>{"a", "b"}));
}

TEST(JobFactsFallbacks, LocalRankIsThePositionAmongLocalPeers) {
  EXPECT_EQ(local_rank_from_peers("4,5,6,7", 6), 2);
  EXPECT_EQ(local_rank_from_peers("0", 0), 0);
  EXPECT_EQ(local_rank_from_peers("4,5", 3), std::nullopt);
  EXPECT_EQ(local_rank_from_peers("4,x,6", 6), std::nullopt);
}

TEST(JobFactsFallbacks, NodeIdIsThePositionInTheNodeList) {
  EXPECT_EQ(node_id_from_node_list("rml1,rml2", "rml2"), 1);
  EXPECT_EQ(node_id_from_node_list("rml1,rml2", "rml1"), 0);
  EXPECT_EQ(node_id_from_node_list("rml1,rml2", "rml"), std::nullopt);
}

}  // namespace
}  // namespace riseml::pmix
