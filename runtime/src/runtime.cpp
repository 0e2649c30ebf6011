#include <riseml/runtime/runtime.hpp>

#include "horovod_cross_of_job.hpp"
#include "process_set_agreement.hpp"
#include "process_set_registry.hpp"
#include "rendezvous_prefix.hpp"

#include <riseml/subset_rendezvous.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <numeric>
#include <optional>
#include <thread>

namespace riseml::runtime {

namespace {
// True when `members` are exactly the ranks 0 .. n-1, in order.
bool are_ranks_from_zero(const std::vector<int>& members, int n) {
  if (static_cast<int>(members.size()) != n) return false;
  for (std::size_t i = 0; i < members.size(); ++i)
    if (members[i] != static_cast<int>(i)) return false;
  return true;
}
}  // namespace

struct Runtime::State {
  BootstrapFactory start_bootstrap;
  // From the first init() to finalize(); init() after shutdown() reuses it.
  std::optional<JobBootstrap> job;
  int generation = 0;  // of setups on the bootstrap session; see adopt_announced_world
  // The job ranks in this world, in order (all of them unless an elastic init left some out),
  // the rendezvous that serves it, and the job ranks failures blamed since the last init.
  std::vector<int> members;
  std::shared_ptr<Rendezvous> world;
  std::vector<int> lost;
  // The launcher's announced world these members came from (world_announced() reads it from
  // other threads).
  std::atomic<long long> adopted_world{-1};
  bool failed = false;     // a collective failed since the last init (the engine said so)
  std::atomic<bool> left_out{false};  // the launcher's announced world does not have this rank
  RuntimeOptions options;  // the last init()'s, for the process sets
  HandleTable handles;

  mutable std::mutex mutex;  // guards what follows
  std::shared_ptr<engine::Engine> engine;  // the job's; null when not initialized
  pmix::JobFacts facts;
  CrossOfJob cross;
  ProcessSetRegistry sets;

  // Under `mutex`.
  void require_initialized() const {
    if (!engine)
      throw CollectiveError(ErrorKind::invalid_argument,
                            "riseml has not been initialized; call riseml.init() first");
  }
  int fact(int pmix::JobFacts::*member) const {
    std::lock_guard lock(mutex);
    require_initialized();
    return facts.*member;
  }
  HorovodCross cross_numbers() const {
    std::lock_guard lock(mutex);
    require_initialized();
    if (!cross.cross) throw CollectiveError(ErrorKind::setup, cross.why_unknown);
    return *cross.cross;
  }
};

Runtime::Runtime(BootstrapFactory bootstrap) : state_(std::make_unique<State>()) {
  state_->start_bootstrap = std::move(bootstrap);
}

Runtime::~Runtime() {
  try {
    finalize();
  } catch (...) {  // nothing to tell at destruction; engines that fail to stop are joined anyway
  }
}

void Runtime::init(const RuntimeOptions& options) {
  State& s = *state_;
  {
    std::lock_guard lock(s.mutex);
    if (s.engine) return;
  }
  // The launcher's announced world, when it is newer than the one these members came from (and
  // at least the world `at_least`).
  const auto adopt_announced_world = [](State& st, long long at_least = 0) {
    if (!st.job->announced_world) return false;
    const std::optional<AnnouncedWorld> announced = st.job->announced_world();
    if (!announced || announced->number <= st.adopted_world || announced->number < at_least) return false;
    st.members = announced->members;
    st.adopted_world = announced->number;
    // Rendezvous keys every member of the announced world agrees on: a worker that joins it
    // has had no generations before (2^20 re-formations per announcement are plenty).
    st.generation = static_cast<int>(std::min<long long>(announced->number, 1000)) << 20;
    return true;
  };

  // Waits until the launcher announced the world `number` (or a later one) and adopts it.
  const auto await_world = [&](State& st, long long number, const std::string& why) {
    const auto deadline = std::chrono::steady_clock::now() + options.next_world_wait;
    for (;;) {
      if (adopt_announced_world(st, number)) return;
      if (std::chrono::steady_clock::now() > deadline)
        throw CollectiveError(ErrorKind::timeout,
                              "riseml: rank " + std::to_string(st.job->facts.rank) + " " + why +
                                  ", but riseml-elastic announced no next world within " +
                                  std::to_string(std::chrono::duration_cast<std::chrono::seconds>(
                                                     options.next_world_wait).count()) +
                                  " s: see the driver's log");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  };

  // The rendezvous of the members: the job's own when they are all of its ranks, else the
  // members fencing among themselves.
  const auto world_of = [](State& st) -> std::shared_ptr<Rendezvous> {
    const int rank = st.job->facts.rank;
    const bool member = std::find(st.members.begin(), st.members.end(), rank) != st.members.end();
    if (!member && st.job->report_failure && st.adopted_world >= 0) {
      st.left_out = true;
      throw CollectiveError(ErrorKind::aborted,
                            "riseml: riseml-elastic left rank " + std::to_string(rank) +
                                " out of the next world (its host was removed or blacklisted): "
                                "this worker leaves the job");
    }
    if (!member)
      throw CollectiveError(ErrorKind::aborted,
                            "riseml: this rank (" + std::to_string(rank) +
                                ") was left out of the job by its peers (they found it dead or "
                                "silent); it cannot rejoin");
    if (are_ranks_from_zero(st.members, st.job->rendezvous->size())) return st.job->rendezvous;
    return std::make_shared<SubsetRendezvous>(*st.job->rendezvous, st.members,
                                              SubsetRendezvous::Fences::members);
  };
  if (!s.job) {
    s.job = s.start_bootstrap();
    s.generation = 0;
    s.members.resize(static_cast<std::size_t>(s.job->facts.size));
    std::iota(s.members.begin(), s.members.end(), 0);
    s.adopted_world = -1;
    adopt_announced_world(s);
    s.world = world_of(s);
    s.lost.clear();
  } else {
    ++s.generation;
    if (options.elastic && (s.failed || options.after_failure) && s.job->report_failure) {
      // The launcher decides the next world: it hears whom this rank blamed, and every
      // survivor forms the world it announces next (its failure reports and the ranks' exits
      // tell it which ranks and hosts are gone).
      s.job->report_failure(s.adopted_world, s.lost);
      await_world(s, s.adopted_world + 1, "reported a failure");
      s.lost.clear();
      s.world = world_of(s);
    } else if (const auto pending = options.elastic && s.job->pending_world ? s.job->pending_world()
                                                                           : std::nullopt;
               pending && *pending > s.adopted_world) {
      // Hosts were added: the launcher announces the world with their workers once they are up.
      await_world(s, *pending, "was told of new hosts");
      s.world = world_of(s);
    } else if (options.elastic) {
      bool changed = adopt_announced_world(s);
      if (!s.lost.empty()) {
        std::erase_if(s.members, [&](int r) {
          return std::find(s.lost.begin(), s.lost.end(), r) != s.lost.end();
        });
        s.lost.clear();
        changed = true;
      }
      if (changed) s.world = world_of(s);
    }
  }
  s.failed = false;
  s.options = options;
  CommunicatorOptions communicator = options.communicator;
  communicator.rendezvous_prefix = job_rendezvous_prefix(s.generation);
  auto engine = std::make_shared<engine::Engine>(*s.world, communicator, options.engine);
  pmix::JobFacts facts = s.job->facts;
  const bool regrouped = !are_ranks_from_zero(s.members, facts.size);
  if (regrouped) {
    facts.rank = s.world->rank();
    facts.size = s.world->size();
  }
  CrossOfJob cross = horovod_cross_of_job(*engine, facts, regrouped);
  std::lock_guard lock(s.mutex);
  s.facts = facts;
  s.cross = std::move(cross);
  s.engine = std::move(engine);
}

void Runtime::shutdown() { stop_engines(false); }

void Runtime::stop_engines(bool leaving) {
  State& s = *state_;
  std::shared_ptr<engine::Engine> engine;
  std::map<int, std::shared_ptr<ProcessSet>> sets;
  {
    std::lock_guard lock(s.mutex);
    if (!s.engine) return;
    engine = std::exchange(s.engine, nullptr);
    sets = s.sets.take_all();
  }
  // A failure's culprit (a dead or silent peer, or one that left: its process exits), as a job
  // rank: an elastic init() leaves it out.
  if (engine->failed()) {
    s.failed = true;
    const int culprit = engine->failed_rank();
    if (culprit >= 0 && static_cast<std::size_t>(culprit) < s.members.size())
      s.lost.push_back(s.members[static_cast<std::size_t>(culprit)]);
  }
  for (auto& [id, set] : sets)
    if (set->engine) set->engine->shutdown(leaving);
  engine->shutdown(leaving);
  s.handles.clear();
}

void Runtime::finalize() {
  stop_engines(true);  // the process is on its way out: the others go on without it
  // The world's rendezvous holds the bootstrap session too: both go, so PMIx is finalized.
  state_->world.reset();
  state_->members.clear();
  state_->job.reset();
}

bool Runtime::initialized() const {
  std::lock_guard lock(state_->mutex);
  return state_->engine && !state_->engine->stopped();
}

std::optional<AnnouncedWorld> Runtime::world_announced() const {
  State& s = *state_;
  long long adopted = 0;
  {
    std::lock_guard lock(s.mutex);
    if (!s.engine || !s.job || !s.job->announced_world) return std::nullopt;
    adopted = s.adopted_world;
  }
  try {
    auto announced = s.job->announced_world();
    if (announced && announced->number > adopted) return announced;
    // A world with new hosts' workers is coming: re-form to wait for it.
    if (s.job->pending_world)
      if (const auto pending = s.job->pending_world(); pending && *pending > adopted)
        return AnnouncedWorld{*pending, {}, "added"};
    return std::nullopt;
  } catch (const std::exception&) {  // the launcher's store is gone: nothing to join
    return std::nullopt;
  }
}

bool Runtime::left_out() const { return state_->left_out; }

int Runtime::rank() const { return state_->fact(&pmix::JobFacts::rank); }
int Runtime::size() const { return state_->fact(&pmix::JobFacts::size); }
int Runtime::local_rank() const { return state_->fact(&pmix::JobFacts::local_rank); }
int Runtime::local_size() const { return state_->fact(&pmix::JobFacts::local_size); }
int Runtime::cross_rank() const { return static_cast<int>(state_->cross_numbers().rank); }
int Runtime::cross_size() const { return static_cast<int>(state_->cross_numbers().size); }

std::shared_ptr<engine::Engine> Runtime::engine(int id) const {
  std::lock_guard lock(state_->mutex);
  state_->require_initialized();
  if (id == 0) return state_->engine;
  return state_->sets.engine_of(id, state_->facts.rank);
}

int Runtime::add_process_set(std::vector<int> ranks) {
  State& s = *state_;
  std::shared_ptr<engine::Engine> job;
  int rank = 0, size = 0, id = 0;
  {
    std::lock_guard lock(s.mutex);
    s.require_initialized();
    job = s.engine;
    rank = s.facts.rank;
    size = s.facts.size;
    id = s.sets.next_id();
  }
  ranks = checked_process_set_ranks(std::move(ranks), size);
  check_every_rank_agrees(*job, rank, id, ranks);
  {
    std::lock_guard lock(s.mutex);
    if (auto other = s.sets.id_of(ranks))
      throw CollectiveError(ErrorKind::invalid_argument,
                            "riseml: a process set with ranks " + rank_list(ranks) +
                                " already exists (id " + std::to_string(*other) + ")");
    s.sets.take_next_id();
  }
  CommunicatorOptions communicator = s.options.communicator;
  communicator.rendezvous_prefix = process_set_rendezvous_prefix(s.generation, id);
  engine::EngineOptions engine_options = s.options.engine;
  engine_options.timeline_path.clear();  // the job's engine writes the timeline
  auto set = set_up_process_set(*s.world, rank, std::move(ranks), communicator, engine_options);
  std::lock_guard lock(s.mutex);
  s.sets.add(id, std::move(set));
  return id;
}

bool Runtime::remove_process_set(int id) {
  std::shared_ptr<ProcessSet> set;
  {
    std::lock_guard lock(state_->mutex);
    state_->require_initialized();
    set = state_->sets.remove(id);
  }
  if (!set) return false;
  if (set->engine) set->engine->shutdown();
  return true;
}

std::vector<int> Runtime::process_set_ranks(int id) const {
  std::lock_guard lock(state_->mutex);
  state_->require_initialized();
  if (id != 0) return state_->sets.find(id)->ranks;
  std::vector<int> all(static_cast<std::size_t>(state_->facts.size));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

std::vector<int> Runtime::process_set_ids() const {
  std::lock_guard lock(state_->mutex);
  state_->require_initialized();
  std::vector<int> ids{0};
  for (int id : state_->sets.ids()) ids.push_back(id);
  return ids;
}

void Runtime::start_timeline(const std::string& path) { engine(0)->start_timeline(path); }

void Runtime::stop_timeline() { engine(0)->stop_timeline(); }

int Runtime::join() { return engine(0)->join().join_result(); }

void Runtime::barrier(int process_set) { engine(process_set)->barrier().wait(); }

HandleId Runtime::submit(int process_set, engine::Request request, Attachment attachment) {
  // A device allgather's or alltoall's bytes stay on the device until the caller has a tensor
  // for them.
  const bool device_allgather =
      (request.kind == engine::OpKind::allgather || request.kind == engine::OpKind::alltoall) &&
      !request.tensors.empty() && request.tensors.front().device >= 0;
  std::string name = request.name;  // empty for barrier and join (the engine names them)
  state_->handles.take_name(process_set, name);
  engine::Handle handle;
  try {
    handle = engine(process_set)->enqueue(std::move(request));
  } catch (...) {
    state_->handles.release_name(process_set, name);
    throw;
  }
  return state_->handles.add(std::move(handle), std::move(attachment), device_allgather,
                             process_set, std::move(name));
}

bool Runtime::poll(HandleId id) const { return state_->handles.poll(id); }

CompletedOperation Runtime::wait(HandleId id) { return state_->handles.wait(id); }

void Runtime::copy_device_result(HandleId id, std::span<void* const> destinations, void* stream) {
  state_->handles.copy_device_result(id, destinations, stream);
}

}  // namespace riseml::runtime
