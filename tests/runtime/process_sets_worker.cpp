// One rank of the runtime's process-set check, started by riseml-launch -n 3 or 4: the runtime
// driven as a binding drives it, without Python. Sets disjoint and overlapping, collectives in
// them with checked results, a rank outside a set refused, a disagreement in add_process_set
// failing on every rank, removal, the handle table, shutdown + init (a new generation), and
// Horovod's rank numbers against the HOROVOD_* variables riseml-launch sets. Exit 0 when right.
#include "host_collectives.hpp"

#include <riseml/runtime/runtime.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <source_location>
#include <stdexcept>
#include <string>

using namespace riseml;
using namespace riseml::runtime;
using namespace riseml::runtime::test;

namespace {

int g_rank = -1;

void expect(bool ok, const std::string& what,
            std::source_location where = std::source_location::current()) {
  if (!ok)
    throw std::runtime_error("rank " + std::to_string(g_rank) + ", line " +
                             std::to_string(where.line()) + ": expected " + what);
}

// The CollectiveError `f` throws, checked for its kind and a part of its message.
std::string expect_error(const std::function<void()>& f, ErrorKind kind, const std::string& part,
                         std::source_location where = std::source_location::current()) {
  try {
    f();
  } catch (const CollectiveError& e) {
    const std::string message = e.what();
    expect(e.kind() == kind && message.find(part) != std::string::npos,
           "an error containing \"" + part + "\", got: " + message, where);
    return message;
  }
  expect(false, "an error containing \"" + part + "\", got none", where);
  return "";
}

int environment_number(const char* name) {
  const char* value = std::getenv(name);
  expect(value != nullptr, std::string(name) + " set by riseml-launch");
  return std::atoi(value);
}

RuntimeOptions options_from_environment() {
  return {CommunicatorOptions::from_environment(), engine::EngineOptions::from_environment()};
}

std::vector<int> ranks_where(int n, const std::function<bool(int)>& keep) {
  std::vector<int> ranks;
  for (int r = 0; r < n; ++r)
    if (keep(r)) ranks.push_back(r);
  return ranks;
}

bool has(const std::vector<int>& ranks, int rank) {
  return std::find(ranks.begin(), ranks.end(), rank) != ranks.end();
}

int index_in(const std::vector<int>& ranks, int rank) {
  return static_cast<int>(std::find(ranks.begin(), ranks.end(), rank) - ranks.begin());
}

double sum_of(const std::vector<int>& ranks) {
  double s = 0;
  for (int r : ranks) s += r;
  return s;
}

void check_rank_numbers(Runtime& rt) {
  expect(rt.rank() == environment_number("HOROVOD_RANK"), "rank() == HOROVOD_RANK");
  expect(rt.size() == environment_number("HOROVOD_SIZE"), "size() == HOROVOD_SIZE");
  expect(rt.local_rank() == environment_number("HOROVOD_LOCAL_RANK"), "local_rank()");
  expect(rt.local_size() == environment_number("HOROVOD_LOCAL_SIZE"), "local_size()");
  expect(rt.cross_rank() == environment_number("HOROVOD_CROSS_RANK"),
         "cross_rank() == HOROVOD_CROSS_RANK");
  expect(rt.cross_size() == environment_number("HOROVOD_CROSS_SIZE"),
         "cross_size() == HOROVOD_CROSS_SIZE");
  // riseml-launch runs every rank on one node.
  expect(rt.cross_rank() == 0 && rt.cross_size() == 1, "one node: cross rank 0 of 1");
}

// The set's collectives on its members, checked; a non-member is refused.
void use_set(Runtime& rt, int id, const std::vector<int>& ranks, const std::string& tag) {
  const int me = rt.rank();
  expect(rt.process_set_ranks(id) == ranks, tag + ": process_set_ranks");
  if (!has(ranks, me)) {
    std::string list;
    for (int r : ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
    expect_error([&] { rt.engine(id); }, ErrorKind::invalid_argument,
                 "riseml: rank " + std::to_string(me) + " is not in process set " +
                     std::to_string(id) + " (ranks [" + list + "]); only its members may use it");
    double v = 1;
    expect_error([&] { submit_sum(rt, id, tag + ".refused", v); }, ErrorKind::invalid_argument,
                 "is not in process set");
    return;
  }
  expect(rt.engine(id)->size() == static_cast<int>(ranks.size()), tag + ": engine size");
  expect(rt.engine(id)->rank() == index_in(ranks, me), tag + ": engine rank");
  expect(sum(rt, id, tag + ".sum", me) == sum_of(ranks), tag + ": allreduce");
  std::vector<std::int32_t> gathered = gather(rt, id, tag + ".gather", me);
  expect(std::vector<int>(gathered.begin(), gathered.end()) == ranks, tag + ": allgather");
  const int root = static_cast<int>(ranks.size()) - 1;
  expect(broadcast(rt, id, tag + ".bcast", root, 100.0 + me) == 100.0 + ranks.back(),
         tag + ": broadcast from the last member");
  rt.barrier(id);
}

void check_validation(Runtime& rt) {
  const int n = rt.size();
  expect_error([&] { rt.add_process_set({0, n}); }, ErrorKind::invalid_argument,
               "riseml: process set rank " + std::to_string(n) + " is not in the job (ranks 0.." +
                   std::to_string(n - 1) + ")");
  expect_error([&] { rt.add_process_set({1, 1}); }, ErrorKind::invalid_argument,
               "riseml: process set rank 1 given twice");
  expect_error([&] { rt.add_process_set({}); }, ErrorKind::invalid_argument,
               "riseml: a process set needs at least one rank");
}

// Ranks but the last ask for {0, 1}, the last for {0, last}: every rank fails, naming a rank
// that asked for something else; no set is added and no id used up.
void check_disagreement(Runtime& rt) {
  const int me = rt.rank(), last = rt.size() - 1;
  const std::vector<int> asked = me == last ? std::vector<int>{0, last} : std::vector<int>{0, 1};
  const int other = me == last ? 0 : last;
  std::string list = "[" + std::to_string(asked[0]) + ", " + std::to_string(asked[1]) + "]";
  expect_error([&] { rt.add_process_set(asked); }, ErrorKind::invalid_argument,
               "riseml: add_process_set(" + list + ") on rank " + std::to_string(me) +
                   ", but rank " + std::to_string(other) +
                   " asked for other ranks; every rank must add the same process sets in the "
                   "same order");
}

// An operation that never completes (no other rank submits its name) fails at shutdown; its
// attachment is let go and its handle forgotten.
void check_shutdown_forgets_handles(Runtime& rt) {
  auto kept = std::make_shared<double>(1.0);
  std::weak_ptr<void> watch = kept;
  const HandleId id = rt.submit(0, host_request(engine::OpKind::allreduce,
                                                "only.rank." + std::to_string(rt.rank()),
                                                DataType::float64, kept.get(), kept.get(), {1}),
                                kept);
  kept.reset();
  rt.barrier(0);  // every rank submitted before any shuts the job's engine down
  rt.poll(id);     // known (pending, or failed since another rank shut down)
  expect(!watch.expired(), "the attachment alive until waited for or shut down");
  rt.shutdown();
  expect(watch.expired(), "the attachment let go at shutdown");
  expect_error([&] { rt.poll(id); }, ErrorKind::invalid_argument,
               "riseml: unknown or already synchronized handle " + std::to_string(id));
}

void run() {
  Runtime rt;  // PMIx: riseml-launch
  expect(!rt.initialized(), "not initialized before init()");
  expect_error([&] { rt.rank(); }, ErrorKind::invalid_argument,
               "riseml has not been initialized; call riseml.init() first");
  rt.init(options_from_environment());
  expect(rt.initialized(), "initialized after init()");
  g_rank = rt.rank();
  const int n = rt.size(), me = rt.rank();
  expect(n >= 3, "3 or more ranks (riseml-launch -n 3)");
  check_rank_numbers(rt);
  expect(rt.process_set_ids() == std::vector<int>{0}, "only the job's set at first");
  check_validation(rt);

  // Disjoint: evens and odds, used at the same time. Overlapping: all but the last, all but 0.
  const auto evens = ranks_where(n, [](int r) { return r % 2 == 0; });
  const auto odds = ranks_where(n, [](int r) { return r % 2 == 1; });
  const auto head = ranks_where(n, [&](int r) { return r < n - 1; });
  const auto tail = ranks_where(n, [](int r) { return r > 0; });
  const int even_id = rt.add_process_set(evens);
  // The ranks in any order.
  const int odd_id = rt.add_process_set(std::vector<int>(odds.rbegin(), odds.rend()));
  check_disagreement(rt);
  const int head_id = rt.add_process_set(head);
  const int tail_id = rt.add_process_set(tail);
  expect(even_id == 1 && odd_id == 2 && head_id == 3 && tail_id == 4, "ids 1..4 in order");
  expect(rt.process_set_ids() == std::vector<int>{0, 1, 2, 3, 4}, "process_set_ids");
  expect_error([&] { rt.add_process_set(head); }, ErrorKind::invalid_argument,
               "already exists (id " + std::to_string(head_id) + ")");

  use_set(rt, even_id, evens, "evens");
  use_set(rt, odd_id, odds, "odds");
  use_set(rt, head_id, head, "head");
  use_set(rt, tail_id, tail, "tail");
  expect(sum(rt, 0, "job.sum", me) == n * (n - 1) / 2.0, "the job's allreduce meanwhile");

  // The overlapping sets progress independently: a rank in both submits to both before it
  // waits for either, odd ranks in the other order.
  if (has(head, me) && has(tail, me)) {
    double a = me, b = 10.0 * me;
    const bool head_first = me % 2 == 0;
    HandleId first = head_first ? submit_sum(rt, head_id, "both.head", a)
                                : submit_sum(rt, tail_id, "both.tail", b);
    HandleId second = head_first ? submit_sum(rt, tail_id, "both.tail", b)
                                 : submit_sum(rt, head_id, "both.head", a);
    rt.wait(second);
    rt.wait(first);
    expect(a == sum_of(head) && b == 10.0 * sum_of(tail), "both overlapping sets");
  } else if (has(head, me)) {
    double a = me;
    rt.wait(submit_sum(rt, head_id, "both.head", a));
  } else {
    double b = 10.0 * me;
    rt.wait(submit_sum(rt, tail_id, "both.tail", b));
  }

  expect(rt.remove_process_set(even_id), "evens removed");
  expect(!rt.remove_process_set(even_id), "evens removed only once");
  expect(!rt.remove_process_set(0), "the job's set is never removed");
  expect(rt.process_set_ids() == std::vector<int>{0, 2, 3, 4}, "ids after removal");
  expect_error([&] { rt.engine(even_id); }, ErrorKind::invalid_argument,
               "riseml: process set 1 is not registered (removed, or never added)");
  expect_error([&] { rt.process_set_ranks(even_id); }, ErrorKind::invalid_argument,
               "riseml: process set 1 is not registered");
  use_set(rt, odd_id, odds, "odds.after");

  check_shutdown_forgets_handles(rt);
  expect(!rt.initialized(), "not initialized after shutdown()");
  expect_error([&] { rt.process_set_ids(); }, ErrorKind::invalid_argument, "not been initialized");

  // A new generation on the same PMIx session: sets start again at 1, keyed apart from the
  // first generation's set 1.
  rt.init(options_from_environment());
  expect(rt.initialized() && rt.rank() == me && rt.size() == n, "the same ranks after init()");
  check_rank_numbers(rt);
  expect(rt.process_set_ids() == std::vector<int>{0}, "no sets after init()");
  expect(rt.add_process_set(tail) == 1, "numbering starts again");
  use_set(rt, 1, tail, "tail.again");
  expect(sum(rt, 0, "job.again", 1.0) == n, "the job's allreduce after init()");
  const int last_joined = rt.join();
  expect(last_joined >= 0 && last_joined < n, "join() names a rank");
  rt.finalize();
  expect(!rt.initialized(), "not initialized after finalize()");
}

}  // namespace

int main() {
  try {
    run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAILED: %s\n", e.what());
    return 1;
  }
  std::printf("rank %d: process sets ok\n", g_rank);
  return 0;
}
