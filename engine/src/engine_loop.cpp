#include "engine_loop.hpp"

#include "agreement.hpp"
#include "request_check.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

namespace riseml::engine {

namespace {

// A parked engine still cycles this often (a peer that died while all were idle is found).
constexpr std::chrono::milliseconds kIdleWait{1000};

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
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() { shutdown(); }

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
  if (device >= 0) ready = mark_ready(device, request.stream);
  auto handle = std::make_shared<HandleState>();
  handle->census = stalls_.census();
  queue_.submit(std::move(request), handle, std::move(ready));
  return Handle(handle);
}

bool EngineLoop::globally_idle() const {
  return negotiator_.table().empty() && !stalls_.has_verdicts() && !negotiator_.any_joined();
}

void EngineLoop::run() {
  auto next = Clock::now();
  try {
    bool idle = false;
    while (true) {
      if (idle) {
        // Nothing pending on any rank: no cycling. Sleep until this rank gets work or a peer
        // starts the next cycle (its message wakes this rank), at most kIdleWait.
        queue_.set_parked(true);
        comm_->wait_for_peers(kIdleWait, [&] { return queue_.has_local_work(); });
        queue_.set_parked(false);
        next = Clock::now();
      } else {
        next += options_.cycle_time;
        wait_between_cycles(next);
      }
      const auto now = Clock::now();
      if (next < now) next = now;
      if (!cycle()) break;
      idle = globally_idle();
    }
  } catch (const CollectiveError& e) {
    stop_all(e);
  } catch (const std::exception& e) {
    stop_all(CollectiveError(ErrorKind::system, std::string("riseml: engine: ") + e.what()));
  }
  executor_.release_device();  // NCCL teardown here, while the peers' engines end too
  timeline_.close();
}

void EngineLoop::wait_between_cycles(Clock::time_point next) {
  // Until the next cycle is due, so that what is submitted meanwhile is fused (Horovod's cycle
  // time), unless waiting gains nothing: a peer that starts its next cycle is blocked in the
  // negotiation until this rank joins (its message ends the wait), and while the peers wait
  // for a tensor this rank has not submitted, its next submission ends it too. A small
  // collective then costs no cycle time (docs/performance.md, "Small messages").
  const bool awaited = negotiator_.awaits(rank_);
  queue_.set_parked(awaited);  // a submission then interrupts the wait
  const auto now = Clock::now();
  if (next > now)
    comm_->wait_for_peers(std::chrono::duration_cast<std::chrono::microseconds>(next - now),
                          [&] { return awaited ? queue_.has_local_work() : queue_.shutdown_requested(); });
  queue_.set_parked(false);
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
  for (const std::string& name : in.fresh) {
    const LocalRequest* l = queue_.find(name);
    if (l == nullptr)  // a bug, but one that fails the handles instead of the process
      throw CollectiveError(ErrorKind::system,
                            "riseml: engine: request '" + name + "' was gone before it was sent");
    negotiator_.offer(mine, name, meta_of(l->request));
  }

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

  // 4. Ready everywhere: check agreement, then run (allreduces fused first, then the others).
  std::vector<TableEntry*> allreduces, others;
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
    (reference(g).kind == OpKind::allreduce ? allreduces : others).push_back(&g);
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
