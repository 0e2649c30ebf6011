#include "single_process_session.hpp"

#include <gtest/gtest.h>

#include <riseml/pmix/session_rendezvous.hpp>

namespace riseml::pmix {
namespace {

using std::chrono::seconds;

std::vector<std::byte> bytes_of(std::string_view text) {
  const auto* begin = reinterpret_cast<const std::byte*>(text.data());
  return {begin, begin + text.size()};
}

TEST(SingleProcessSession, IsRankZeroOfOne) {
  SingleProcessSession session;
  const JobFacts& facts = session.facts();
  EXPECT_EQ(facts.rank, 0);
  EXPECT_EQ(facts.size, 1);
  EXPECT_EQ(facts.local_rank, 0);
  EXPECT_EQ(facts.local_size, 1);
  EXPECT_EQ(facts.node_id, 0);
  EXPECT_EQ(facts.num_nodes, 1);
  EXPECT_FALSE(facts.hostname.empty());
  EXPECT_FALSE(facts.nspace.empty());
}

TEST(SingleProcessSession, PutIsVisibleOnlyAfterTheFence) {
  SingleProcessSession session;
  session.put("address", bytes_of("10.0.0.1:4000"));
  session.commit();
  EXPECT_THROW(session.get(0, "address", seconds(1)), BootstrapError);
  session.fence(seconds(1));
  EXPECT_EQ(session.get(0, "address", seconds(1)), bytes_of("10.0.0.1:4000"));
}

TEST(SingleProcessSession, MissingKeysAndRanksAreClearErrors) {
  SingleProcessSession session;
  session.fence(seconds(1));
  try {
    session.get(0, "nothing", seconds(1));
    FAIL() << "expected a BootstrapError";
  } catch (const BootstrapError& error) {
    EXPECT_NE(std::string(error.what()).find("rank 0 of 1"), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("'nothing'"), std::string::npos) << error.what();
  }
  EXPECT_THROW(session.get(1, "nothing", seconds(1)), BootstrapError);
  EXPECT_THROW(session.put("", bytes_of("x")), BootstrapError);
}

TEST(SingleProcessSession, HasAFreshThirtyTwoByteSecret) {
  SingleProcessSession first;
  SingleProcessSession second;
  EXPECT_EQ(first.job_secret().size(), 32u);
  EXPECT_NE(first.job_secret(), second.job_secret());
}

TEST(SessionRendezvous, CommitsOnFenceAsTheInterfacePromises) {
  auto session = std::make_shared<SingleProcessSession>();
  SessionRendezvous rendezvous(session);
  EXPECT_EQ(rendezvous.rank(), 0);
  EXPECT_EQ(rendezvous.size(), 1);
  rendezvous.put("ring", bytes_of("port=5"));
  rendezvous.fence(std::chrono::milliseconds(100));
  EXPECT_EQ(rendezvous.get(0, "ring", std::chrono::milliseconds(100)), bytes_of("port=5"));
  EXPECT_EQ(rendezvous.job_secret(), session->job_secret());
  // The core catches RendezvousError; the bootstrap's errors must be that.
  EXPECT_THROW(rendezvous.get(0, "absent", std::chrono::milliseconds(100)), RendezvousError);
}

}  // namespace
}  // namespace riseml::pmix
