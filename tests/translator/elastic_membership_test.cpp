// riseml status reads an elastic job's membership from riseml-elastic's lines in its log.
#include "elastic_membership.hpp"

#include <gtest/gtest.h>

namespace riseml {
namespace {

TEST(ElasticMembership, TheLastWorldAndTheNodesThatLeft) {
  const std::string log =
      "riseml-elastic: 06:50:59.543 rendezvous store at 10.77.0.1:34137\n"
      "riseml-elastic: 06:50:59.544 started 3 workers on 3 nodes (rml1, rml2, rml3), 1 per node; "
      "the job ends when fewer than 2 nodes train\n"
      "0: epoch 1: size 3, test loss 1.3874, test accuracy 0.694\n"
      "rml3: srun: error: rml3: task 0: Killed\n"
      "riseml-elastic: 06:51:03.267 node rml3 left: its step ended with exit status 137; 2 of 3 "
      "nodes still train\n"
      "riseml-elastic: 06:51:03.267 the world re-formed: 2 workers on 2 node(s) (rml1, rml2); left: "
      "rank(s) 2\n";
  EXPECT_EQ(elastic_membership(log).value_or("-"), "elastic: 2 workers on rml1, rml2; left: rml3");
  const std::string joined = log +
      "riseml-elastic: 07:10:44.149 the world re-formed: 3 workers on 3 node(s) (rml1, rml2, rml4); "
      "joined: rank(s) 3\n";
  EXPECT_EQ(elastic_membership(joined).value_or("-"),
            "elastic: 3 workers on rml1, rml2, rml4; left: rml3");
  EXPECT_EQ(elastic_membership(log.substr(0, log.find("0: epoch"))).value_or("-"),
            "elastic: 3 workers on rml1, rml2, rml3");
}

TEST(ElasticMembership, NoneInAnOrdinaryLogOrForgedByAWorker) {
  EXPECT_FALSE(elastic_membership("0: epoch 1: loss 0.5\n").has_value());
  EXPECT_FALSE(elastic_membership("").has_value());
  // A worker's line carries its rank label first: not the driver's.
  EXPECT_FALSE(elastic_membership("0: riseml-elastic: 1 started 9 workers on 9 nodes (x)\n").has_value());
  // Truncated lines do not crash.
  EXPECT_FALSE(elastic_membership("riseml-elastic: 06:50 started").has_value());
  EXPECT_EQ(elastic_membership("riseml-elastic: 06:50 the world re-formed: 2 workers on 2 node(s) (a").value_or("-"),
            "elastic: 2 workers");
}

}  // namespace
}  // namespace riseml
