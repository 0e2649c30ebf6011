// The runtime with its ranks as threads of this process (an in-memory rendezvous, the in-process
// transport, job facts of the test's choosing): Horovod's cross numbers on layouts riseml-launch
// cannot make (nodes with different numbers of ranks), the handle table's attachments, the
// bootstrap's lifetime across generations, process sets without PMIx.
#include "host_collectives.hpp"

#include <riseml/in_memory_rendezvous.hpp>
#include <riseml/runtime/runtime.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace riseml::runtime {
namespace {

using test::sum;

// Where a job's ranks run: the node of each rank; local ranks follow in rank order on each node,
// as Slurm and PMIx number them.
struct Layout {
  std::vector<int> node_of_rank;
  int num_nodes = 1;
};

std::vector<pmix::JobFacts> facts_of(const Layout& layout) {
  const int n = static_cast<int>(layout.node_of_rank.size());
  std::vector<int> on_node(static_cast<std::size_t>(layout.num_nodes), 0);
  std::vector<pmix::JobFacts> facts(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    auto& f = facts[static_cast<std::size_t>(r)];
    f.rank = r;
    f.size = n;
    f.node_id = layout.node_of_rank[static_cast<std::size_t>(r)];
    f.num_nodes = layout.num_nodes;
    f.local_rank = on_node[static_cast<std::size_t>(f.node_id)]++;
    f.hostname = "node" + std::to_string(f.node_id);
  }
  for (auto& f : facts) f.local_size = on_node[static_cast<std::size_t>(f.node_id)];
  return facts;
}

RuntimeOptions inproc() {
  RuntimeOptions o;
  o.communicator.transport = TransportChoice::inproc;
  o.communicator.timeout = std::chrono::seconds(20);
  return o;
}

using Body = std::function<void(Runtime&, int rank)>;

// Runs `body` on a runtime per rank, initialized; each rank's bootstrap is counted in
// `bootstraps`. What a rank throws fails the test.
void run_ranks(const std::vector<pmix::JobFacts>& facts, const Body& body,
               std::atomic<int>* bootstraps = nullptr) {
  const int n = static_cast<int>(facts.size());
  auto hub = std::make_shared<InMemoryRendezvousHub>(n);
  std::vector<std::string> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        Runtime rt([&, r] {
          if (bootstraps) ++*bootstraps;
          JobBootstrap job;
          job.facts = facts[static_cast<std::size_t>(r)];
          job.rendezvous = std::make_shared<InMemoryRendezvous>(hub, r);
          return job;
        });
        rt.init(inproc());
        body(rt, r);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r) EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
}

struct Cross {
  int rank, size;
  bool operator==(const Cross&) const = default;
};

std::vector<Cross> cross_numbers(const Layout& layout) {
  std::vector<Cross> got(layout.node_of_rank.size());
  run_ranks(facts_of(layout), [&](Runtime& rt, int r) {
    got[static_cast<std::size_t>(r)] = {rt.cross_rank(), rt.cross_size()};
  });
  return got;
}

TEST(RuntimeCross, ThreeRanksOnOneNodeAndOneOnAnother) {
  // Local ranks 0,1,2 on node 0, 0 on node 1: local rank 0 is on both nodes, 1 and 2 on node 0
  // only. (The node id and number of nodes would say 0/2, 0/2, 0/2, 1/2.)
  EXPECT_EQ(cross_numbers({{0, 0, 0, 1}, 2}),
            (std::vector<Cross>{{0, 2}, {0, 1}, {0, 1}, {1, 2}}));
}

TEST(RuntimeCross, OneRankOnTheFirstNodeThreeOnTheSecond) {
  EXPECT_EQ(cross_numbers({{0, 1, 1, 1}, 2}),
            (std::vector<Cross>{{0, 2}, {1, 2}, {0, 1}, {0, 1}}));
}

TEST(RuntimeCross, EvenNodesAssignedCyclically) {
  EXPECT_EQ(cross_numbers({{0, 1, 0, 1}, 2}),
            (std::vector<Cross>{{0, 2}, {1, 2}, {0, 2}, {1, 2}}));
}

TEST(RuntimeCross, OneNode) {
  EXPECT_EQ(cross_numbers({{0, 0, 0}, 1}), (std::vector<Cross>{{0, 1}, {0, 1}, {0, 1}}));
}

TEST(RuntimeCross, ContradictoryFactsLeaveOnlyTheCrossNumbersUnknown) {
  auto facts = facts_of({{0, 0, 1}, 2});
  facts[2].local_rank = 1;  // node 1 runs one rank only
  run_ranks(facts, [](Runtime& rt, int r) {
    if (r == 2) {
      try {
        rt.cross_rank();
        ADD_FAILURE() << "cross_rank() on rank 2 did not throw";
      } catch (const CollectiveError& e) {
        EXPECT_EQ(e.kind(), ErrorKind::setup);
        EXPECT_NE(std::string(e.what()).find("rank 2 (host node1, node 1 of 2, local rank 1)"),
                  std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("its node runs 1 of the job's ranks"),
                  std::string::npos) << e.what();
      }
      EXPECT_THROW(rt.cross_size(), CollectiveError);
    } else {
      EXPECT_EQ(rt.cross_size(), r == 0 ? 2 : 1);
    }
    EXPECT_EQ(sum(rt, 0, "still.works", 1.0), 3.0);
  });
}

TEST(RuntimeCross, ANodeIdOutOfRangeIsNamedOnEveryRank) {
  auto facts = facts_of({{0, 1}, 2});
  facts[1].node_id = 5;
  run_ranks(facts, [](Runtime& rt, int) {
    try {
      rt.cross_rank();
      ADD_FAILURE() << "cross_rank() did not throw";
    } catch (const CollectiveError& e) {
      EXPECT_NE(std::string(e.what()).find("rank 1 is on node 5, not one of the 2 nodes"),
                std::string::npos) << e.what();
    }
  });
}

TEST(RuntimeLifetime, NothingBeforeInitAndTheBootstrapStartsOnce) {
  int started = 0;
  Runtime rt([&]() -> JobBootstrap {
    ++started;
    throw std::runtime_error("not expected");
  });
  EXPECT_FALSE(rt.initialized());
  EXPECT_EQ(started, 0);
  try {
    rt.size();
    ADD_FAILURE() << "size() before init() did not throw";
  } catch (const CollectiveError& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_STREQ(e.what(), "riseml has not been initialized; call riseml.init() first");
  }
  EXPECT_THROW(rt.engine(0), CollectiveError);
  rt.shutdown();  // nothing to do
  rt.finalize();
}

TEST(RuntimeLifetime, GenerationsShareOneBootstrapUntilFinalize) {
  std::atomic<int> bootstraps = 0;
  run_ranks(facts_of({{0, 0, 0}, 1}), [](Runtime& rt, int r) {
    for (int generation = 0; generation < 3; ++generation) {
      if (generation > 0) {
        rt.shutdown();
        EXPECT_FALSE(rt.initialized());
        rt.init(inproc());
      }
      EXPECT_TRUE(rt.initialized());
      rt.init(inproc());  // initialized: nothing happens
      EXPECT_EQ(rt.add_process_set({0, 2}), 1);
      if (r != 1) {
        EXPECT_EQ(sum(rt, 1, "g", r), 2.0);
      }
      EXPECT_EQ(sum(rt, 0, "job", r), 3.0);
    }
    rt.finalize();
    rt.init(inproc());  // a new bootstrap
    EXPECT_EQ(sum(rt, 0, "after.finalize", r), 3.0);
  }, &bootstraps);
  EXPECT_EQ(bootstraps.load(), 3 * 2);
}

TEST(RuntimeHandles, TheAttachmentLivesUntilTheOperationIsWaitedFor) {
  run_ranks(facts_of({{0, 0}, 1}), [](Runtime& rt, int r) {
    auto value = std::make_shared<double>(r + 1.0);
    std::weak_ptr<double> watch = value;
    double* data = value.get();
    const HandleId id = rt.submit(0, test::host_request(engine::OpKind::allreduce, "kept",
                                                        DataType::float64, data, data, {1}),
                                  std::move(value));
    EXPECT_FALSE(watch.expired());
    {
      CompletedOperation done = rt.wait(id);
      EXPECT_EQ(*static_cast<double*>(done.attachment.get()), 3.0);
      EXPECT_FALSE(watch.expired());
    }
    EXPECT_TRUE(watch.expired());
    try {
      rt.wait(id);
      ADD_FAILURE() << "a second wait did not throw";
    } catch (const CollectiveError& e) {
      EXPECT_EQ(std::string(e.what()),
                "riseml: unknown or already synchronized handle " + std::to_string(id));
    }
    EXPECT_THROW(rt.poll(id + 100), CollectiveError);
    try {
      rt.copy_device_result(id, {}, nullptr);
      ADD_FAILURE() << "copy_device_result of a host operation did not throw";
    } catch (const CollectiveError& e) {
      EXPECT_EQ(std::string(e.what()), "riseml: no device result for handle " + std::to_string(id));
    }
  });
}

TEST(RuntimeHandles, AFailedOperationLetsGoOfItsAttachmentAndHandle) {
  run_ranks(facts_of({{0, 0}, 1}), [](Runtime& rt, int r) {
    std::vector<double> values(static_cast<std::size_t>(r + 1), 1.0);  // shapes differ
    auto kept = std::make_shared<int>(0);
    std::weak_ptr<int> watch = kept;
    const HandleId id = rt.submit(
        0,
        test::host_request(engine::OpKind::allreduce, "mismatch", DataType::float64,
                           values.data(), values.data(), {r + 1}),
        std::move(kept));
    EXPECT_THROW(rt.wait(id), CollectiveError);
    EXPECT_TRUE(watch.expired());
    EXPECT_THROW(rt.poll(id), CollectiveError);
    // A request the engine refuses at once is not in the table at all.
    auto refused = std::make_shared<int>(0);
    std::weak_ptr<int> refused_watch = refused;
    auto r2 = test::host_request(engine::OpKind::broadcast, "bad.root", DataType::float64,
                                 values.data(), values.data(), {1});
    r2.root = 7;
    EXPECT_THROW(rt.submit(0, std::move(r2), std::move(refused)), CollectiveError);
    EXPECT_TRUE(refused_watch.expired());
  });
}

// A name is taken from submission until it is waited for, even when the engine completed it
// meanwhile (both ranks submitted; the second submission of that name before the wait is
// refused every time, not by how fast the peer was); a refused submission gives its name back.
TEST(RuntimeHandles, ANameIsTakenUntilItIsWaitedFor) {
  run_ranks(facts_of({{0, 0}, 1}), [](Runtime& rt, int r) {
    double x = r + 1.0, y = 0.0;
    const HandleId id = rt.submit(0, test::host_request(engine::OpKind::allreduce, "dup",
                                                        DataType::float64, &x, &x, {1}));
    while (!rt.poll(id)) std::this_thread::yield();  // completed by the engine, not waited for
    try {
      rt.submit(0, test::host_request(engine::OpKind::allreduce, "dup", DataType::float64, &y,
                                      &y, {1}));
      ADD_FAILURE() << "a name in use was taken again";
    } catch (const CollectiveError& e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_EQ(std::string(e.what()),
                "riseml: a collective named 'dup' is already in flight on this rank (submitted "
                "and not yet synchronized); synchronize it first or use another name");
    }
    rt.wait(id);
    EXPECT_EQ(x, 3.0);
    // Free again after the wait; a refused submission (bad root) does not keep it.
    auto bad = test::host_request(engine::OpKind::broadcast, "dup", DataType::float64, &y, &y, {1});
    bad.root = 7;
    EXPECT_THROW(rt.submit(0, std::move(bad)), CollectiveError);
    y = r + 1.0;
    rt.wait(rt.submit(0, test::host_request(engine::OpKind::allreduce, "dup", DataType::float64,
                                            &y, &y, {1})));
    EXPECT_EQ(y, 3.0);
  });
}

TEST(RuntimeProcessSets, DisjointSetsOverTheInMemoryRendezvous) {
  run_ranks(facts_of({{0, 0, 0, 0}, 1}), [](Runtime& rt, int r) {
    const int evens = rt.add_process_set({2, 0});
    const int odds = rt.add_process_set({3, 1});
    EXPECT_EQ(rt.process_set_ranks(evens), (std::vector<int>{0, 2}));
    EXPECT_EQ(rt.process_set_ids(), (std::vector<int>{0, evens, odds}));
    const int mine = r % 2 == 0 ? evens : odds;
    const auto gathered = test::gather(rt, mine, "members", r);
    EXPECT_EQ(gathered, r % 2 == 0 ? (std::vector<std::int32_t>{0, 2})
                                   : (std::vector<std::int32_t>{1, 3}));
    EXPECT_EQ(test::broadcast(rt, mine, "from.second", 1, r), r % 2 == 0 ? 2.0 : 3.0);
    EXPECT_THROW(rt.engine(r % 2 == 0 ? odds : evens), CollectiveError);
    EXPECT_TRUE(rt.remove_process_set(evens));
    EXPECT_EQ(rt.process_set_ids(), (std::vector<int>{0, odds}));
  });
}

}  // namespace
}  // namespace riseml::runtime
