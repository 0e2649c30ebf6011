#include "engine_loop.hpp"

#include "agreement.hpp"
#include "request_check.hpp"

#include <riseml/fine_timer_slack.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

namespace riseml::engine {

namespace {

// A parked engine still cycles this often (a peer that died while all were idle is found).
constexpr std::chrono::milliseconds kIdleWait{1000};

// What fails every handle when the engine itself throws something that is no CollectiveError.
CollectiveError engine_error(const std::exception& e) {
  return CollectiveError(ErrorKind::system, std::string("riseml: engine: ") + e.what());
}

EngineOptions with_default_warn(EngineOptions options) {
  if (!options.warn)
    options.warn = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  return options;
}

// The GPU collectives wait for a peer as long as the CPU communicator does.
cuda::GpuOptions gpu_options(cuda::GpuOptions gpu, const CommunicatorOptions& communicator_options) {
  gpu.timeout = communicator_options.timeout;
  return gpu;
}

}  // namespace

EngineLoop::EngineLoop(Rendezvous& rendezvous, const CommunicatorOptions& communicator_options,
                       const EngineOptions& options)
    : options_(with_default_warn(options)),
      comm_(std::make_unique<Communicator>(rendezvous, communicator_options)),
      rank_(comm_->rank()),
      size_(comm_->size()),
      queue_(*comm_, rank_),
      negotiator_(*comm_, rank_, size_),
      stalls_(options_),
      finisher_(rank_, queue_, negotiator_),
      executor_(ExecutionContext{*comm_, timeline_, queue_, finisher_, rank_, size_,
                                     gpu_options(options_.gpu, communicator_options)},
                options_.fusion_threshold) {
  if (rank_ == 0 && !options_.timeline_path.empty()) timeline_.open(options_.timeline_path);
  if (options_.waiters_run_cycles) {
    runner_->loop = this;
    std::lock_guard wake_lock(runner_->wake_mutex);
    runner_->wake = [this] {
      resume_ = true;
      comm_->interrupt_wait();
    };
  }
  planned_ = Clock::now();
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() {
  {
    std::lock_guard wake_lock(runner_->wake_mutex);
    runner_->wake = nullptr;
  }
  shutdown();
  std::lock_guard lock(runner_->mutex);  // after any helper that is still in a cycle
  runner_->loop = nullptr;
}

void EngineLoop::shutdown(bool leaving) {
  queue_.request_shutdown(leaving);
  if (thread_.joinable()) thread_.join();
}

void EngineLoop::set_timeline(const std::string& path) {
  if (rank_ != 0) return;
  if (!path.empty()) {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f)
      throw CollectiveError(ErrorKind::system, "riseml: cannot write the timeline to '" + path +
                                                   "': " + std::strerror(errno));
    std::fclose(f);
  }
  queue_.switch_timeline(path);
}

Handle EngineLoop::enqueue(Request request) {
  apply_equal_split(request, rank_, size_);
  check_request(request, rank_, size_);
  // Device tensors: remember where the caller's stream is now (on the caller's thread).
  ReadyMarker ready;
  const int device = request.tensors.empty() ? -1 : request.tensors.front().device;
  if (device >= 0 && !options_.gpu.host_standin) ready = mark_ready(device, request.stream);
  auto handle = std::make_shared<HandleState>();
  handle->on_device = device >= 0;
  handle->stream = request.stream;
  handle->census = stalls_.census();
  handle->runner = runner_;
  queue_.submit(std::move(request), handle, std::move(ready));
  return Handle(handle);
}

bool EngineLoop::globally_idle() const {
  return negotiator_.table().empty() && !stalls_.has_verdicts() && !negotiator_.any_joined();
}

void EngineLoop::run() {
  lower_timer_slack_for_good();  // its waits end when the next cycle is due, not 50 us later
  std::unique_lock lock(runner_->mutex);
  while (!ended_) {
    // The plan, read under the mutex; the wait, without it (a helper may run cycles meanwhile).
    const auto next = next_cycle_due();
    // After a cycle that enqueued GPU work, wait out the cycle time before parking, as
    // Horovod's loop does: what the backward pass hands over meanwhile is fused into the next
    // cycle (submissions do not wake a thread that is not parked). Host work and an idle
    // stretch start a cycle at once; a thread waiting on a handle runs the cycle itself.
    const bool idle = idle_ && !(ran_device_work_ && next > Clock::now());
    const bool awaited = !idle && negotiator_.awaits(rank_);
    const std::uint64_t seen = cycles_;
    lock.unlock();
    std::optional<CollectiveError> failed;
    try {
      if (idle) {
        // Nothing pending on any rank: no cycling. Sleep until this rank gets work or a peer
        // starts the next cycle (its message wakes this rank), at most kIdleWait.
        queue_.park();
        comm_->wait_for_peers(kIdleWait, [&] { return resume_.load() || queue_.has_local_work(); },
                              &runner_->mutex);
        queue_.unpark();
      } else {
        wait_between_cycles(next, awaited, &runner_->mutex);
      }
    } catch (const std::exception& e) {
      failed = engine_error(e);
    }
    lock.lock();
    resume_ = false;
    if (failed && !ended_) end_with(*failed);
    if (ended_) break;
    if (cycles_ != seen) continue;  // a helper ran cycles meanwhile: plan again from its state
    run_one_cycle();
  }
  lock.unlock();
  // NCCL teardown here, while the peers' engines end too; after a failure without waiting.
  std::optional<CollectiveError> failure;
  if (queue_.stopped_by_failure())
    failure = CollectiveError(ErrorKind::aborted,
                              "riseml: the engine stopped after an error with GPU work in flight "
                              "(its results are not valid)");
  executor_.release_device(failure);
  timeline_.close();
}

bool EngineLoop::run_one_cycle() {
  const auto now = Clock::now();
  // After an idle stretch the cycle starts now; else at its planned time, or now if late.
  planned_ = idle_ ? now : std::max(next_cycle_due(), now);
  ++cycles_;
  try {
    if (!cycle()) ended_ = true;
    idle_ = globally_idle();
  } catch (const CollectiveError& e) {
    end_with(e);
  } catch (const std::exception& e) {
    end_with(engine_error(e));
  }
  if (ended_) {  // the engine thread, if a helper ran this cycle, is to end too
    resume_ = true;
    comm_->interrupt_wait();
  }
  return !ended_;
}

void EngineLoop::run_cycles_until_done(HandleState& handle) {
  // Device work too: the path sets its device around every call and its NCCL communicator is
  // used by one thread at a time (the runner's mutex); the cycle only enqueues, so the waiter
  // stops once the work is queued (settled), and the path's watcher completes it.
  while (!ended_ && !handle.is_settled()) {
    if (!idle_) {
      const auto next = next_cycle_due();
      // This thread holds the runner: the wait may look at the links.
      wait_between_cycles(next, negotiator_.awaits(rank_), nullptr);
      if (handle.is_settled()) break;  // failed by a shutdown meanwhile
    }
    if (!run_one_cycle()) break;
  }
  // Work left that nobody waits on here (other threads' handles, peers' tensors): the engine
  // thread takes over.
  if (!ended_ && (!idle_ || queue_.has_local_work())) {
    resume_ = true;
    comm_->interrupt_wait();
  }
}

void help_run_cycles(CycleRunner& runner, HandleState& handle) {
  std::unique_lock lock(runner.mutex, std::try_to_lock);
  if (!lock.owns_lock()) {
    // The engine thread is in a cycle or looking at the links: it runs the next cycle at once
    // (after a GPU cycle it would otherwise wait out the cycle time, and so would the peers).
    if (handle.is_settled()) return;
    std::lock_guard wake_lock(runner.wake_mutex);
    if (runner.wake) runner.wake();
    return;
  }
  if (runner.loop == nullptr) return;
  if (handle.census) handle.census->waiting.fetch_add(1);
  runner.loop->run_cycles_until_done(handle);
  if (handle.census) handle.census->waiting.fetch_sub(1);
}

void EngineLoop::wait_between_cycles(Clock::time_point next, bool awaited, std::mutex* links_guard) {
  // The engine thread (the one that waits without the runner) also ends its wait when a helper
  // hands the cycles back.
  const bool engine_thread = links_guard != nullptr;
  // Until the next cycle is due, so that what is submitted meanwhile is fused (Horovod's cycle
  // time), unless waiting gains nothing: a peer that starts its next cycle is blocked in the
  // negotiation until this rank joins (its message ends the wait), and while the peers wait
  // for a tensor this rank has not submitted, its next submission ends it too. A small
  // collective then costs no cycle time (docs/performance.md, "Small messages").
  if (awaited) queue_.park();  // a submission then interrupts the wait
  const auto now = Clock::now();
  if (next > now)
    comm_->wait_for_peers(std::chrono::duration_cast<std::chrono::microseconds>(next - now),
                          [&] {
                            return (engine_thread && resume_.load()) ||
                                   (awaited ? queue_.has_local_work() : queue_.shutdown_requested());
                          },
                          links_guard);
  if (awaited) queue_.unpark();
}

void EngineLoop::end_with(const CollectiveError& error) {
  ended_ = true;
  stop_all(error);
}

void EngineLoop::stop_all(const CollectiveError& error, bool by_failure) {
  const CollectiveError stop_error =
      error.kind() == ErrorKind::aborted
          ? error
          : CollectiveError(ErrorKind::aborted,
                            std::string("riseml: the engine stopped after an error: ") + error.what(),
                            error.culprit_rank());
  for (auto& h : queue_.stop(stop_error, by_failure)) h->fail(error);
}

bool EngineLoop::cycle() {
  // 1. What this rank has to say.
  CycleInput in = queue_.take_cycle_input();
  if (in.timeline) {
    timeline_.close();
    if (!in.timeline->empty()) timeline_.open(*in.timeline);
  }
  Message mine;
  mine.shutdown = in.shutdown;
  mine.leaving = in.leaving;
  mine.join = in.join;
  if (rank_ == 0) mine.stalled = stalls_.take_verdicts();
  mine.stuck = stalls_.locally_stuck(Clock::now());
  for (const LocalRequest* l : in.fresh) negotiator_.offer(mine, l->request);

  // 2. Everyone's messages, into the same table on every rank.
  CycleNews news = negotiator_.exchange(mine);
  TensorTable& table = negotiator_.table();
  const std::vector<bool>& joined = negotiator_.joined();

  // 3. Rank 0's verdicts on stalled tensors (unless they became ready meanwhile).
  for (const StallVerdict& v : news.verdicts) {
    TableEntry* g = table.find(v.name, v.seq);  // null: gone, or a new one of that name
    if (g == nullptr || is_ready(*g, joined)) continue;
    finisher_.finish(*g, CollectiveError(ErrorKind::timeout, v.message));
  }

  // Device work that completed meanwhile (its timeline events), or failed (this throws).
  executor_.collect_device_completions();

  // 4. Ready everywhere: check agreement, then run (allreduces fused first, then the others).
  std::vector<TableEntry*> allreduces, others;
  ran_device_work_ = false;  // set below when some ready entry is GPU work
  for (auto& [seq, g] : table) {
    if (g.finished()) continue;  // a stall verdict above
    if (auto error = check_join_rule(g, joined)) {
      finisher_.finish(g, error);
      continue;
    }
    if (!is_ready(g, joined)) continue;
    if (auto error = check_agreement(g)) {
      finisher_.finish(g, error);
      continue;
    }
    const TensorMeta& m = reference(g);
    (m.kind == OpKind::allreduce ? allreduces : others).push_back(&g);
    ran_device_work_ = ran_device_work_ || m.on_device;
  }
  executor_.run_allreduces(allreduces, news.now);
  for (TableEntry* g : others) executor_.run_other(*g, news.now);
  bool progressed = table.erase_finished();  // something finished: the stuck flags sent are stale

  // 5. Join: complete once every rank has joined.
  if (negotiator_.all_joined()) {
    if (std::shared_ptr<HandleState> h = queue_.take_join_handle()) {
      h->join_result = negotiator_.last_joined();
      h->complete();
    }
    progressed = true;
    negotiator_.clear_joins();
  }

  if (rank_ == 0) stalls_.check(table, joined, negotiator_.stuck(), news.now, progressed);

  if (news.shutdown_by >= 0) {
    // A rank on its way out (its process exits) makes this a failure it caused: elastic
    // training re-forms the world without it. A plain shutdown is no failure.
    if (news.shutdown_leaving)
      stop_all(CollectiveError(ErrorKind::aborted,
                               "riseml: rank " + std::to_string(news.shutdown_by) +
                                   " left the job (its process is exiting)",
                               news.shutdown_by),
               true);
    else
      stop_all(CollectiveError(ErrorKind::aborted, "riseml: the engine was shut down (rank " +
                                                       std::to_string(news.shutdown_by) +
                                                       " called shutdown)"),
               false);
    return false;
  }
  return true;
}

}  // namespace riseml::engine
