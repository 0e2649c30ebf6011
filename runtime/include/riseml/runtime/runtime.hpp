// The runtime any binding calls (riseml's Python module today, a torch.distributed backend
// next): the job's bootstrap session, the job's engine, process sets (Horovod's: a subset of
// the ranks with an engine of its own), re-initialisation, Horovod's rank numbers and the table
// of submitted operations. It knows no language: a binding converts its values to engine
// requests and back, and attaches to each operation what must stay alive until it completes.
//
// Errors are riseml::CollectiveError; those in what the caller passed are
// ErrorKind::invalid_argument. The bootstrap's own errors (pmix::BootstrapError) pass through.
//
// Threads: init, shutdown, finalize, add_process_set and remove_process_set are collective (every
// rank calls them, in the same order) and must not run concurrently with each other; every
// other member is safe to call from any thread at any time. None of them holds a lock while it
// blocks.
#pragma once

#include <riseml/engine/engine.hpp>
#include <riseml/runtime/handle_table.hpp>
#include <riseml/runtime/job_bootstrap.hpp>
#include <riseml/runtime/runtime_options.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace riseml::runtime {

class Runtime {
 public:
  explicit Runtime(BootstrapFactory bootstrap = environment_job_bootstrap);
  // finalize()
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  // Collective. Joins the job the first time (the bootstrap), then starts the job's engine and
  // learns every rank's node (for cross_rank and cross_size). Does nothing while initialized.
  // After shutdown() it starts anew on the same bootstrap session, which PMIx cannot start
  // twice: a new generation, whose communicators are keyed apart from the old ones.
  void init(const RuntimeOptions& options);
  // Stops every engine on every rank (any rank may call it; operations still pending fail);
  // removes every process set and forgets every handle. The bootstrap session stays for a
  // later init(). Does nothing when not initialized.
  void shutdown();
  // shutdown(), and ends the bootstrap session (at exit). Peers whose engines it stops count it
  // as a rank that left (Engine::shutdown's `leaving`): elastic training goes on without it.
  void finalize();
  // init() ran, shutdown() did not, and the job's engine has not failed.
  bool initialized() const;

  // Horovod's six numbers. Throw CollectiveError(invalid_argument) before init(). cross_rank
  // and cross_size follow Horovod's definition (common/horovod_ranks.hpp) and throw
  // CollectiveError(setup), naming the rank and host, when the launcher's facts contradict it.
  // The world the launcher announced when this process has not formed it yet (hosts were
  // added or removed): hvd.elastic's check_host_updates raises HostsUpdatedInterrupt then, and
  // the next elastic init() forms it. nullopt when there is none, the launcher announces none or
  // cannot be asked.
  std::optional<AnnouncedWorld> world_announced() const;
  // The launcher left this rank out of the world it announced (its host was removed or
  // blacklisted): the last init() threw, and this worker should leave the job quietly.
  bool left_out() const;
  int rank() const;
  int size() const;
  int local_rank() const;
  int local_size() const;
  int cross_rank() const;
  int cross_size() const;

  // The engine of process set `id` on this rank (0: the whole job). Throws
  // CollectiveError(invalid_argument) for a set that is not registered, or one this rank is not
  // a member of. The engine stays valid while the caller holds it, removal notwithstanding.
  std::shared_ptr<engine::Engine> engine(int id) const;

  // Collective on every rank of the job (Horovod's add_process_set): every rank must add the
  // same sets in the same order, which an allgather on the job's engine checks before anything
  // is set up (a disagreement fails on every rank, naming a rank that disagrees). `ranks` in
  // any order; returns the new set's id (1, 2, ... counted per generation).
  int add_process_set(std::vector<int> ranks);
  // Every rank calls it (Horovod's rule); the members stop the set's engine. False: no such set
  // (0 is never removed).
  bool remove_process_set(int id);
  // The set's ranks in the job, sorted; 0: every rank. Throws for an unknown set.
  std::vector<int> process_set_ranks(int id) const;
  // 0 and every registered set, ascending.
  std::vector<int> process_set_ids() const;

  // The job's timeline (rank 0 writes it): see engine::Engine::start_timeline.
  void start_timeline(const std::string& path);
  void stop_timeline();
  // Blocking. join(): see engine::Engine::join; returns the last rank that joined.
  int join();
  void barrier(int process_set);

  // Enqueues `request` on process set `process_set`'s engine and remembers it with `attachment`
  // (kept until wait() returns or fails, or shutdown()). A device allgather keeps its result on
  // the device for copy_device_result().
  HandleId submit(int process_set, engine::Request request, Attachment attachment = {});
  bool poll(HandleId id) const;
  CompletedOperation wait(HandleId id);
  void copy_device_result(HandleId id, std::span<void* const> destinations, void* stream);

 private:
  void stop_engines(bool leaving);
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace riseml::runtime
