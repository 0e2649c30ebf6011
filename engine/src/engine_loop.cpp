#include "engine_loop.hpp"

#include "scaling.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <cerrno>
#include <cstring>
#include <functional>
#include <string_view>
#include <utility>

namespace riseml::engine {

namespace {

std::string_view kind_name(OpKind k) {
  switch (k) {
    case OpKind::allreduce: return "allreduce";
    case OpKind::broadcast: return "broadcast";
    case OpKind::allgather: return "allgather";
    case OpKind::barrier: return "barrier";
    case OpKind::join: return "join";
    case OpKind::reducescatter: return "reducescatter";
    case OpKind::alltoall: return "alltoall";
  }
  return "?";
}

const char* collective_phase(OpKind k) {
  switch (k) {
    case OpKind::allreduce: return "ALLREDUCE";
    case OpKind::broadcast: return "BROADCAST";
    case OpKind::allgather: return "ALLGATHER";
    case OpKind::barrier: return "BARRIER";
    case OpKind::join: return "JOIN";
    case OpKind::reducescatter: return "REDUCESCATTER";
    case OpKind::alltoall: return "ALLTOALL";
  }
  return "?";
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(ranks[i]);
  }
  return s;
}

std::string format_scale(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::size_t meta_bytes(const TensorMeta& m) {
  std::size_t n = 0;
  for (const auto& s : m.shapes) n += element_count(s);
  return n * element_size(m.dtype);
}

constexpr std::size_t kCacheCapacity = 4096;
// Bytes per rank in the first exchange of a cycle: an 8-byte size, then the message if it fits
// (flags, and up to about 45 cached tensors).
constexpr std::size_t kSlotBytes = 256;

}  // namespace

EngineLoop::EngineLoop(Rendezvous& rendezvous, const CommunicatorOptions& communicator_options,
                       const EngineOptions& options)
    : rank_(rendezvous.rank()), size_(rendezvous.size()), options_(options) {
  if (!options_.warn)
    options_.warn = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  comm_ = std::make_unique<Communicator>(rendezvous, communicator_options);
  rank_ = comm_->rank();
  size_ = comm_->size();
  joined_.assign(static_cast<std::size_t>(size_), false);
  stuck_.assign(static_cast<std::size_t>(size_), false);
  if (rank_ == 0 && !options_.timeline_path.empty()) timeline_.open(options_.timeline_path);
  thread_ = std::thread([this] { run(); });
}

EngineLoop::~EngineLoop() { shutdown(); }

void EngineLoop::shutdown() {
  {
    std::lock_guard lock(mutex_);
    shutdown_requested_ = true;
  }
  wake_.notify_all();
  wake_if_parked();
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
  {
    std::lock_guard lock(mutex_);
    timeline_switch_ = path;
  }
  wake_if_parked();
}

bool EngineLoop::stopped() {
  std::lock_guard lock(mutex_);
  return stopped_;
}

void EngineLoop::validate(const Request& r) const {
  auto bad = [&](const std::string& what) {
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml: " + std::string(kind_name(r.kind)) + " '" + r.name +
                              "' on rank " + std::to_string(rank_) + ": " + what);
  };
  switch (r.kind) {
    case OpKind::allreduce:
      if (r.tensors.empty()) bad("no tensors given");
      if (r.adasum && !is_floating_point(r.dtype))
        bad("Adasum needs floating point tensors, not " + std::string(to_string(r.dtype)));
      if (r.adasum && r.tensors.front().device >= 0)
        bad("Adasum of GPU tensors is not supported; reduce host tensors");
      if ((r.prescale != 1.0 || r.postscale != 1.0) && !is_floating_point(r.dtype) &&
          r.tensors.front().device >= 0)
        bad("prescale/postscale of integer GPU tensors are not supported; scale host tensors");
      break;
    case OpKind::reducescatter:
      if (r.tensors.empty()) bad("no tensors given");
      for (const TensorArg& t : r.tensors)
        if (t.shape.empty()) bad("a scalar cannot be scattered (needs a first dimension)");
      break;
    case OpKind::alltoall: {
      if (r.tensors.size() != 1) bad("exactly one tensor expected");
      const auto& shape = r.tensors[0].shape;
      if (shape.empty()) bad("a scalar cannot be sent in parts (needs a first dimension)");
      if (r.splits.size() != static_cast<std::size_t>(size_))
        bad("splits has " + std::to_string(r.splits.size()) + " entries for " +
            std::to_string(size_) + " ranks");
      std::int64_t rows = 0;
      for (std::int64_t v : r.splits) {
        if (v < 0) bad("negative split " + std::to_string(v));
        rows += v;
      }
      if (rows != shape[0])
        bad("splits sum to " + std::to_string(rows) + " rows, but the tensor's first dimension is " +
            std::to_string(shape[0]));
      break;
    }
    case OpKind::broadcast:
      if (r.tensors.size() != 1) bad("exactly one tensor expected");
      if (r.root < 0 || r.root >= size_)
        bad("root rank " + std::to_string(r.root) + " is not in [0, " + std::to_string(size_) +
            ")");
      break;
    case OpKind::allgather:
      if (r.tensors.empty()) bad("no tensors given");
      if (r.tensors.size() > 1 && r.tensors.front().device >= 0)
        bad("a grouped allgather of GPU tensors is not supported; gather them one by one");
      for (const TensorArg& t : r.tensors)
        if (t.shape.empty()) bad("a scalar cannot be gathered (needs a first dimension)");
      break;
    case OpKind::barrier:
    case OpKind::join: return;
  }
  if (r.name.empty()) bad("a name is required");
  for (const TensorArg& t : r.tensors) {
    if (t.device != r.tensors.front().device)
      bad("tensors on different devices (" + std::to_string(r.tensors.front().device) + " and " +
          std::to_string(t.device) + "; -1 is host memory); move them to one device");
    for (std::int64_t d : t.shape)
      if (d < 0) bad("negative dimension in shape " + describe_shape(t.shape));
    if (element_count(t.shape) == 0) continue;
    if (t.input == nullptr) bad("null input buffer");
    if (r.kind != OpKind::allgather && r.kind != OpKind::alltoall && r.kind != OpKind::reducescatter &&
        t.output == nullptr)
      bad("null output buffer");
  }
  if (r.kind == OpKind::reducescatter) {
    for (const TensorArg& t : r.tensors) {
      const std::int64_t mine = reducescatter_rows(t.shape[0], size_, rank_);
      if (mine > 0 && element_count(t.shape) > 0 && t.output == nullptr) bad("null output buffer");
    }
  }
}

Handle EngineLoop::enqueue(Request request) {
  if (request.kind == OpKind::alltoall && request.splits.empty() && request.tensors.size() == 1 &&
      !request.tensors[0].shape.empty()) {
    // The equal split, when the first dimension divides.
    const std::int64_t rows = request.tensors[0].shape[0];
    if (rows % size_ != 0)
      throw CollectiveError(ErrorKind::invalid_argument,
                            "riseml: alltoall '" + request.name + "' on rank " + std::to_string(rank_) +
                                ": the first dimension " + std::to_string(rows) +
                                " does not split evenly over " + std::to_string(size_) +
                                " ranks; pass splits");
    request.splits.assign(static_cast<std::size_t>(size_), rows / size_);
  }
  validate(request);
  // Device tensors: remember where the caller's stream is now (on the caller's thread).
  ReadyMarker ready;
  const int device = request.tensors.empty() ? -1 : request.tensors.front().device;
  if (device >= 0) ready = mark_ready(device, request.stream);
  auto handle = std::make_shared<HandleState>();
  handle->census = census_;
  {
    std::lock_guard lock(mutex_);
    if (device >= 0) {
      // NCCL binds a communicator to one device: every GPU tensor of a process on that one.
      if (gpu_device_ >= 0 && gpu_device_ != device)
        throw CollectiveError(ErrorKind::invalid_argument,
                              "riseml: " + std::string(kind_name(request.kind)) + " '" +
                                  request.name + "' on rank " + std::to_string(rank_) +
                                  ": a tensor on CUDA device " + std::to_string(device) +
                                  ", but this process's earlier GPU tensors were on device " +
                                  std::to_string(gpu_device_) +
                                  "; use one GPU per process (torch.cuda.set_device(local_rank))");
      gpu_device_ = device;
    }
    if (stopped_) throw *stop_error_;
    if (shutdown_requested_)
      throw CollectiveError(ErrorKind::aborted, "riseml: the engine is shutting down");
    if (request.kind == OpKind::join) {
      if (join_handle_)
        throw CollectiveError(ErrorKind::invalid_argument,
                              "riseml: join called again on rank " + std::to_string(rank_) +
                                  " before the previous join completed");
      join_handle_ = handle;
    } else {
      if (join_handle_)
        throw CollectiveError(ErrorKind::invalid_argument,
                              "riseml: " + std::string(kind_name(request.kind)) + " '" +
                                  request.name + "' submitted on rank " + std::to_string(rank_) +
                                  " after join(); wait for the join to complete first");
      if (request.kind == OpKind::barrier) request.name = "barrier." + std::to_string(barriers_++);
      std::string name = request.name;
      auto [it, inserted] =
          in_flight_.try_emplace(name, Local{std::move(request), handle, Clock::now(), std::move(ready)});
      if (!inserted)
        throw CollectiveError(ErrorKind::invalid_argument,
                              "riseml: a tensor named '" + name + "' is already in flight on rank " +
                                  std::to_string(rank_) + "; names must be unique until completed");
      incoming_.push_back(name);
    }
  }
  wake_if_parked();
  return Handle(handle);
}

void EngineLoop::wake_if_parked() {
  // Seen parked (after the request was queued under the mutex): it may not have seen the
  // request, so wake it. Seen not parked: it looks at the queue before it parks.
  if (parked_.load(std::memory_order_seq_cst)) comm_->interrupt_wait();
}

bool EngineLoop::has_local_work() {
  std::lock_guard lock(mutex_);
  return !incoming_.empty() || timeline_switch_ || shutdown_requested_ || (join_handle_ && !join_sent_);
}

bool EngineLoop::globally_idle() const {
  // The same on every rank (the table is): nothing submitted anywhere that is not finished,
  // nobody joined, no stall verdict to send.
  return table_.empty() && stall_outbox_.empty() &&
         std::none_of(joined_.begin(), joined_.end(), [](bool j) { return j; });
}

void EngineLoop::run() {
  auto next = Clock::now();
  try {
    bool idle = false;
    while (true) {
      if (idle) {
        // Nothing pending on any rank: no cycling. Sleep until this rank gets work or a peer
        // starts the next cycle (its message wakes this rank), at most kIdleWait.
        parked_.store(true, std::memory_order_seq_cst);
        comm_->wait_for_peers(kIdleWait, [&] { return has_local_work(); });
        parked_.store(false, std::memory_order_seq_cst);
        next = Clock::now();
      } else {
        std::unique_lock lock(mutex_);
        next += options_.cycle_time;
        wake_.wait_until(lock, next, [&] { return shutdown_requested_; });
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
  device_.reset();  // NCCL teardown here, while the peers' engines end too
  timeline_.close();
}

void EngineLoop::stop_all(const CollectiveError& error) {
  std::vector<std::shared_ptr<HandleState>> handles;
  {
    std::lock_guard lock(mutex_);
    stopped_ = true;
    stop_error_ = error.kind() == ErrorKind::aborted
                      ? error
                      : CollectiveError(ErrorKind::aborted,
                                        std::string("riseml: the engine stopped after an error: ") +
                                            error.what(),
                                        error.culprit_rank());
    for (auto& [name, l] : in_flight_) handles.push_back(l.handle);
    in_flight_.clear();
    incoming_.clear();
    if (join_handle_) handles.push_back(std::exchange(join_handle_, nullptr));
  }
  for (auto& h : handles) h->fail(error);
}

EngineLoop::Local* EngineLoop::local(const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = in_flight_.find(name);
  return it == in_flight_.end() ? nullptr : &it->second;
}

bool EngineLoop::is_ready(const Global& g) const {
  for (int r = 0; r < size_; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    if (!g.metas[ur] && !joined_[ur]) return false;
  }
  return true;
}

const TensorMeta& EngineLoop::reference(const Global& g) const {
  for (const auto& m : g.metas)
    if (m) return *m;
  throw CollectiveError(ErrorKind::system, "riseml: engine: entry '" + g.name + "' has no metadata");
}

std::optional<CollectiveError> EngineLoop::check_join_rule(const Global& g) const {
  // Horovod's rule: only allreduces go on while a rank has joined. Checked before the entry is
  // ready, so that it fails at once on every rank that submitted it: the others may never
  // submit the same name (unnamed tensors are numbered per rank, and the joined rank's count
  // is behind), and waiting for them would hang.
  const TensorMeta& ref = reference(g);
  if (ref.kind == OpKind::allreduce || ref.kind == OpKind::barrier) return std::nullopt;
  std::vector<int> joined;
  for (int r = 0; r < size_; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    if (joined_[ur] && !g.metas[ur]) joined.push_back(r);
  }
  if (joined.empty()) return std::nullopt;
  return CollectiveError(ErrorKind::mismatch,
                         "riseml: " + std::string(kind_name(ref.kind)) + " '" + g.name +
                             "' cannot run while " + rank_list(joined) +
                             (joined.size() == 1 ? " has" : " have") +
                             " joined (only allreduce goes on with joined ranks, as in "
                             "Horovod); finish it before join()",
                         joined.front());
}

std::optional<CollectiveError> EngineLoop::check_agreement(const Global& g) const {
  const TensorMeta& ref = reference(g);
  // Compares one aspect over the ranks that submitted; on disagreement, names every value with
  // the ranks that gave it.
  auto aspect = [&](const char* what,
                    const std::function<std::string(const TensorMeta&)>& describe)
      -> std::optional<CollectiveError> {
    std::vector<std::pair<std::string, std::vector<int>>> groups;
    for (int r = 0; r < size_; ++r) {
      const auto& m = g.metas[static_cast<std::size_t>(r)];
      if (!m) continue;
      std::string d = describe(*m);
      auto it = std::find_if(groups.begin(), groups.end(), [&](auto& p) { return p.first == d; });
      if (it == groups.end())
        groups.push_back({d, {r}});
      else
        it->second.push_back(r);
    }
    if (groups.size() <= 1) return std::nullopt;
    std::string msg = "riseml: mismatched " + std::string(what) + " for " +
                      std::string(kind_name(ref.kind)) + " '" + g.name + "': ";
    for (std::size_t i = 0; i < groups.size(); ++i) {
      if (i) msg += "; ";
      msg += rank_list(groups[i].second) + ": " + groups[i].first;
    }
    return CollectiveError(ErrorKind::mismatch, msg, groups[1].second.front());
  };
  if (auto e = aspect("operations", [](const TensorMeta& m) { return std::string(kind_name(m.kind)); }))
    return e;
  if (auto e = aspect("data types", [](const TensorMeta& m) { return std::string(to_string(m.dtype)); }))
    return e;
  if (auto e = aspect("memory (every rank must pass GPU tensors, or every rank host tensors)",
                      [](const TensorMeta& m) { return std::string(m.on_device ? "GPU" : "host"); }))
    return e;
  if (ref.kind == OpKind::allreduce || ref.kind == OpKind::reducescatter) {
    if (auto e = aspect("reduce operations", [](const TensorMeta& m) {
          return m.adasum ? std::string("adasum") : std::string(to_string(m.op));
        }))
      return e;
    if (auto e = aspect("scale factors", [](const TensorMeta& m) {
          return "prescale " + format_scale(m.prescale) + ", postscale " + format_scale(m.postscale);
        }))
      return e;
  }
  if (ref.kind == OpKind::broadcast) {
    if (auto e = aspect("root ranks", [](const TensorMeta& m) { return std::to_string(m.root); }))
      return e;
  }
  if (auto e = aspect("tensor counts",
                      [](const TensorMeta& m) { return std::to_string(m.shapes.size()); }))
    return e;
  if (ref.kind == OpKind::allgather || ref.kind == OpKind::alltoall)
    return aspect("shapes (all but the first dimension must agree)", [](const TensorMeta& m) {
      std::string all;
      for (const auto& shape : m.shapes) {
        std::string s = "[*";
        for (std::size_t i = 1; i < shape.size(); ++i) s += ", " + std::to_string(shape[i]);
        all += (all.empty() ? "" : " ") + s + "]";
      }
      return all;
    });
  return aspect("shapes", [](const TensorMeta& m) {
    std::string s;
    for (std::size_t i = 0; i < m.shapes.size(); ++i) s += (i ? " " : "") + describe_shape(m.shapes[i]);
    return s;
  });
}

bool EngineLoop::cycle() {
  // 1. What this rank has to say.
  Message mine;
  std::vector<std::string> fresh;
  {
    std::lock_guard lock(mutex_);
    if (timeline_switch_) {
      timeline_.close();
      if (!timeline_switch_->empty()) timeline_.open(*timeline_switch_);
      timeline_switch_.reset();
    }
    fresh.assign(incoming_.begin(), incoming_.end());
    incoming_.clear();
    mine.shutdown = shutdown_requested_;
    if (join_handle_ && !join_sent_) {
      mine.join = true;
      join_sent_ = true;
    }
  }
  if (rank_ == 0) mine.stalled = std::exchange(stall_outbox_, {});
  mine.stuck = locally_stuck(Clock::now());
  for (const std::string& name : fresh) {
    Local* l = local(name);
    if (l == nullptr)  // a bug, but one that fails the handles instead of the process
      throw CollectiveError(ErrorKind::system,
                            "riseml: engine: request '" + name + "' was gone before it was sent");
    WireEntry e;
    e.meta = meta_of(l->request);
    auto c = cache_index_.find(name);
    if (c != cache_index_.end() && cache_[c->second].metas[static_cast<std::size_t>(rank_)] == e.meta) {
      e.cached = true;
      e.cache_id = c->second;
    } else {
      e.name = name;
    }
    mine.entries.push_back(std::move(e));
  }

  // 2. Everyone's messages: one allgather of fixed slots (the size, then the message when it
  // fits: the steady state of a training loop), and an allgatherv only when one does not fit.
  const std::vector<std::byte> bytes = encode(mine);
  std::vector<std::byte> slots(kSlotBytes * static_cast<std::size_t>(size_));
  {
    std::array<std::byte, kSlotBytes> slot{};
    const std::uint64_t n = bytes.size();
    std::memcpy(slot.data(), &n, sizeof n);
    if (bytes.size() <= kSlotBytes - sizeof n)
      std::memcpy(slot.data() + sizeof n, bytes.data(), bytes.size());
    comm_->allgather(slot.data(), slots.data(), kSlotBytes, DataType::uint8);
  }
  std::vector<std::size_t> counts(static_cast<std::size_t>(size_));
  bool all_inline = true;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    std::uint64_t n;
    std::memcpy(&n, slots.data() + r * kSlotBytes, sizeof n);
    counts[r] = static_cast<std::size_t>(n);
    all_inline = all_inline && n <= kSlotBytes - sizeof n;
  }
  std::size_t total = 0;
  for (std::size_t c : counts) total += c;
  std::vector<std::byte> all(total);
  if (all_inline) {
    std::size_t at = 0;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      std::memcpy(all.data() + at, slots.data() + r * kSlotBytes + sizeof(std::uint64_t), counts[r]);
      at += counts[r];
    }
  } else {
    comm_->allgatherv(bytes.data(), all.data(), counts, DataType::uint8);
  }
  const auto now = Clock::now();

  // 3. The same table on every rank.
  int shutdown_by = -1;
  std::vector<StallVerdict> verdicts;
  std::size_t offset = 0;
  for (int r = 0; r < size_; ++r) {
    const auto ur = static_cast<std::size_t>(r);
    Message m = decode(all.data() + offset, counts[ur], r);
    offset += counts[ur];
    if (m.shutdown && shutdown_by < 0) shutdown_by = r;
    stuck_[ur] = m.stuck;
    if (m.join) {
      joined_[ur] = true;
      last_joined_ = r;
    }
    if (r == 0) verdicts = std::move(m.stalled);
    for (WireEntry& e : m.entries) {
      if (e.cached) {
        if (e.cache_id >= cache_.size() || !cache_[e.cache_id].metas[ur])
          throw CollectiveError(ErrorKind::mismatch,
                                "riseml: engine: rank " + std::to_string(r) +
                                    " referred to an unknown cache entry",
                                r);
        e.name = cache_[e.cache_id].name;
        e.meta = *cache_[e.cache_id].metas[ur];
      }
      auto [it, inserted] = table_index_.try_emplace(e.name, next_seq_);
      if (inserted) {
        Global g;
        g.name = e.name;
        g.metas.resize(static_cast<std::size_t>(size_));
        g.first_seen = now;
        table_.emplace(next_seq_++, std::move(g));
      }
      table_.at(it->second).metas[ur] = std::move(e.meta);
    }
  }

  // 4. Rank 0's verdicts on stalled tensors (unless they became ready meanwhile).
  for (const StallVerdict& v : verdicts) {
    auto it = table_index_.find(v.name);
    if (it == table_index_.end() || it->second != v.seq) continue;  // gone, or a new one
    Global& g = table_.at(it->second);
    if (is_ready(g)) continue;
    finish(g, CollectiveError(ErrorKind::timeout, v.message));
  }

  // 5. Ready everywhere: check agreement, then run (allreduces fused first, then the others).
  std::vector<Global*> allreduces, others;
  for (auto& [seq, g] : table_) {
    if (g.metas.empty()) continue;  // finished above (a stall verdict)
    if (auto error = check_join_rule(g)) {
      finish(g, error);
      continue;
    }
    if (!is_ready(g)) continue;
    if (auto error = check_agreement(g)) {
      finish(g, error);
      continue;
    }
    (reference(g).kind == OpKind::allreduce ? allreduces : others).push_back(&g);
  }
  execute_allreduces(allreduces, now);
  for (Global* g : others) execute_other(*g, now);
  bool progressed = false;  // something finished this cycle: the stuck flags sent are stale
  for (auto it = table_.begin(); it != table_.end();) {
    if (it->second.metas.empty()) {  // finished
      progressed = true;
      it = table_.erase(it);
    } else {
      ++it;
    }
  }

  // 6. Join: complete once every rank has joined.
  if (std::all_of(joined_.begin(), joined_.end(), [](bool j) { return j; })) {
    std::shared_ptr<HandleState> h;
    {
      std::lock_guard lock(mutex_);
      h = std::exchange(join_handle_, nullptr);
    }
    if (h) {
      h->join_result = last_joined_;
      h->complete();
    }
    progressed = true;
    joined_.assign(joined_.size(), false);
    join_sent_ = false;
  }

  if (rank_ == 0) check_stalls(now, progressed);

  if (shutdown_by >= 0) {
    stop_all(CollectiveError(ErrorKind::aborted, "riseml: the engine was shut down (rank " +
                                                     std::to_string(shutdown_by) +
                                                     " called shutdown)"));
    return false;
  }
  return true;
}

void EngineLoop::finish(Global& g, const std::optional<CollectiveError>& error) {
  std::shared_ptr<HandleState> h;
  // Only this rank's part of the entry: a request of the same name that this rank has not sent
  // yet (still incoming) is another submission, which the next cycle negotiates on its own.
  if (g.metas[static_cast<std::size_t>(rank_)]) {
    std::lock_guard lock(mutex_);
    auto it = in_flight_.find(g.name);
    if (it != in_flight_.end()) {
      h = it->second.handle;
      in_flight_.erase(it);
    }
  }
  const TensorMeta* ref = nullptr;
  for (const auto& m : g.metas)
    if (m) ref = &*m;
  if (!error && ref && ref->kind != OpKind::barrier) {  // remember it: next time 4 bytes
    auto c = cache_index_.find(g.name);
    if (c != cache_index_.end()) {
      cache_[c->second].metas = g.metas;
    } else if (cache_.size() < kCacheCapacity) {
      cache_index_.emplace(g.name, static_cast<std::uint32_t>(cache_.size()));
      cache_.push_back({g.name, g.metas});
    }
  }
  table_index_.erase(g.name);
  g.metas.clear();  // marks it finished; erased from the table after this cycle
  if (h) {
    if (error)
      h->fail(*error);
    else
      h->complete();
  }
}

void EngineLoop::trace_negotiation(const std::string& name, Clock::time_point ready_at,
                                   Clock::time_point start) {
  if (!timeline_.enabled()) return;
  std::lock_guard lock(mutex_);
  auto it = in_flight_.find(name);
  if (it != in_flight_.end()) timeline_.event(name, "NEGOTIATE", it->second.enqueued, ready_at);
  timeline_.event(name, "QUEUE", ready_at, start);
}

void EngineLoop::execute_allreduces(const std::vector<Global*>& entries, Clock::time_point ready_at) {
  // Buckets of one data type, operation and scaling, in order of first appearance, each cut
  // into pieces of at most fusion_threshold bytes (an entry is never split).
  std::vector<std::vector<Global*>> kinds;
  for (Global* g : entries) {
    const TensorMeta& m = reference(*g);
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const std::vector<Global*>& k) {
      const TensorMeta& o = reference(*k.front());
      return o.dtype == m.dtype && o.op == m.op && o.adasum == m.adasum &&
             o.prescale == m.prescale && o.postscale == m.postscale &&
             o.on_device == m.on_device;
    });
    if (it == kinds.end())
      kinds.push_back({g});
    else
      it->push_back(g);
  }
  for (const auto& kind : kinds) {
    std::vector<Global*> bucket;
    std::size_t bytes = 0;
    for (Global* g : kind) {
      const std::size_t b = meta_bytes(reference(*g));
      if (!bucket.empty() && bytes + b > options_.fusion_threshold) {
        execute_fused(bucket, ready_at);
        bucket.clear();
        bytes = 0;
      }
      bucket.push_back(g);
      bytes += b;
    }
    if (!bucket.empty()) execute_fused(bucket, ready_at);
  }
}

void EngineLoop::execute_fused(const std::vector<Global*>& bucket, Clock::time_point ready_at) {
  const TensorMeta& m = reference(*bucket.front());
  const std::size_t esize = element_size(m.dtype);
  std::size_t tensors = 0, total = 0;
  for (Global* g : bucket) {
    for (const auto& s : reference(*g).shapes) {
      ++tensors;
      total += element_count(s);
    }
  }
  if (m.on_device) {
    execute_fused_device(bucket, ready_at);
    return;
  }
  const auto start = Clock::now();
  for (Global* g : bucket) trace_negotiation(g->name, ready_at, start);

  if (tensors == 1) {  // in place on the caller's tensor, no copy
    Global& g = *bucket.front();
    Local* l = local(g.name);
    if (total != 0) {
      std::vector<std::byte> zeros;
      void* out;
      const void* in;
      if (l) {
        const TensorArg& t = l->request.tensors[0];
        out = t.output;
        in = t.input;
        if (m.prescale != 1.0) {
          scale_copy(in, out, total, m.dtype, m.prescale);
          in = out;
        }
      } else {  // joined: contribute zeros
        zeros.assign(total * esize, std::byte{0});
        out = zeros.data();
        in = out;
      }
      if (m.adasum)
        comm_->adasum_allreduce(in, out, std::span<const std::size_t>(&total, 1), m.dtype);
      else
        comm_->allreduce(in, out, total, m.dtype, m.op);
      if (m.postscale != 1.0) scale_copy(out, out, total, m.dtype, m.postscale);
      timeline_.event(g.name, "ALLREDUCE", start, Clock::now(), total * esize);
    }
    finish(g, std::nullopt);
    return;
  }

  fusion_buffer_.resize(std::max(fusion_buffer_.size(), total * esize));
  std::byte* buffer = fusion_buffer_.data();
  std::size_t offset = 0;
  for (Global* g : bucket) {
    const auto t0 = Clock::now();
    Local* l = local(g->name);
    const auto& shapes = reference(*g).shapes;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const std::size_t n = element_count(shapes[i]);
      if (l)
        scale_copy(l->request.tensors[i].input, buffer + offset, n, m.dtype, m.prescale);
      else
        std::memset(buffer + offset, 0, n * esize);
      offset += n * esize;
      bytes += n * esize;
    }
    timeline_.event(g->name, "MEMCPY_IN_FUSION_BUFFER", t0, Clock::now(), bytes);
  }
  const auto t1 = Clock::now();
  if (m.adasum) {
    // Adasum combines per tensor: it needs where each one starts.
    std::vector<std::size_t> counts;
    for (Global* g : bucket)
      for (const auto& s : reference(*g).shapes) counts.push_back(element_count(s));
    comm_->adasum_allreduce(buffer, buffer, counts, m.dtype);
  } else {
    comm_->allreduce(buffer, buffer, total, m.dtype, m.op);
  }
  const auto t2 = Clock::now();
  offset = 0;
  for (Global* g : bucket) {
    const auto t3 = Clock::now();
    Local* l = local(g->name);
    const auto& shapes = reference(*g).shapes;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const std::size_t n = element_count(shapes[i]);
      if (l) scale_copy(buffer + offset, l->request.tensors[i].output, n, m.dtype, m.postscale);
      offset += n * esize;
      bytes += n * esize;
    }
    timeline_.event(g->name, "ALLREDUCE", t1, t2, bytes);
    timeline_.event(g->name, "MEMCPY_OUT_FUSION_BUFFER", t3, Clock::now(), bytes);
    finish(*g, std::nullopt);
  }
}

EngineLoop::GatherLayout EngineLoop::gather_layout(const Global& g) const {
  // Rows from the ranks that submitted, none from joined ones.
  GatherLayout layout;
  layout.counts.assign(static_cast<std::size_t>(size_), 0);
  for (int r = 0; r < size_; ++r) {
    const auto& mr = g.metas[static_cast<std::size_t>(r)];
    if (!mr) continue;
    layout.counts[static_cast<std::size_t>(r)] = element_count(mr->shapes[0]);
    layout.rows += mr->shapes[0][0];
    layout.total += layout.counts[static_cast<std::size_t>(r)];
  }
  return layout;
}

void EngineLoop::execute_other(Global& g, Clock::time_point ready_at) {
  const TensorMeta& m = reference(g);
  const std::size_t esize = element_size(m.dtype);
  Local* l = local(g.name);
  const auto start = Clock::now();
  trace_negotiation(g.name, ready_at, start);
  if (m.on_device) {
    execute_other_device(g);
    timeline_.event(g.name, collective_phase(m.kind), start, Clock::now(),
                    meta_bytes(m));
    finish(g, std::nullopt);
    return;
  }
  std::size_t bytes = 0;
  switch (m.kind) {
    case OpKind::broadcast: {
      const std::size_t n = element_count(m.shapes[0]);
      bytes = n * esize;
      if (n == 0) break;
      std::vector<std::byte> scratch;
      void* buffer;
      if (l) {
        const TensorArg& t = l->request.tensors[0];
        if (t.input != t.output) std::memcpy(t.output, t.input, bytes);
        buffer = t.output;
      } else {
        scratch.resize(bytes);
        buffer = scratch.data();
      }
      comm_->broadcast(buffer, n, m.dtype, m.root);
      break;
    }
    case OpKind::allgather: bytes = execute_allgather(g, l); break;
    case OpKind::reducescatter: bytes = execute_reducescatter(g, l); break;
    case OpKind::alltoall: bytes = execute_alltoall(g, l); break;
    case OpKind::barrier: comm_->barrier(); break;
    case OpKind::allreduce:
    case OpKind::join: break;
  }
  timeline_.event(g.name, collective_phase(m.kind), start, Clock::now(), bytes);
  finish(g, std::nullopt);
}

DevicePath& EngineLoop::device_path(const Local* l) {
  if (!device_) {
    int device = l ? l->request.tensors.front().device : -1;
    if (device < 0) {  // joined before its first GPU tensor: the device it used, if any
      std::lock_guard lock(mutex_);
      device = gpu_device_;
    }
    device_ = DevicePath::create(*comm_, device);
  }
  return *device_;
}

DeviceTensor EngineLoop::device_tensor(const Local* l, std::size_t i, std::size_t count) {
  DeviceTensor t;
  t.count = count;
  if (l) {
    t.input = l->request.tensors[i].input;
    t.output = l->request.tensors[i].output;
    t.ready = &l->ready;
  }
  return t;
}

void EngineLoop::execute_fused_device(const std::vector<Global*>& bucket,
                                      Clock::time_point ready_at) {
  const TensorMeta& m = reference(*bucket.front());
  const auto start = Clock::now();
  for (Global* g : bucket) trace_negotiation(g->name, ready_at, start);
  // Entries this rank has not submitted (it joined) contribute zeros: input stays null.
  std::vector<DeviceTensor> tensors;
  const Local* first = nullptr;
  std::size_t bytes = 0;
  for (Global* g : bucket) {
    const Local* l = local(g->name);
    if (l && !first) first = l;
    const auto& shapes = reference(*g).shapes;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      tensors.push_back(device_tensor(l, i, element_count(shapes[i])));
      bytes += tensors.back().count * element_size(m.dtype);
    }
  }
  // One collective for the whole bucket on every rank, whatever this rank has of it.
  device_path(first).allreduce(tensors, m.dtype, m.op, m.prescale, m.postscale);
  const auto end = Clock::now();
  for (Global* g : bucket) {
    timeline_.event(g->name, "NCCL_ALLREDUCE", start, end, bytes);
    finish(*g, std::nullopt);
  }
}

void EngineLoop::execute_other_device(Global& g) {
  const TensorMeta& m = reference(g);
  Local* l = local(g.name);
  DevicePath& path = device_path(l);
  const DeviceTensor t = device_tensor(l, 0, element_count(m.shapes[0]));
  if (m.kind == OpKind::broadcast) {
    path.broadcast(t, m.dtype, m.root);
    return;
  }
  const GatherLayout layout = gather_layout(g);
  auto out = path.allgatherv(t, layout.counts, m.dtype);
  if (l) {
    std::vector<std::int64_t> shape = m.shapes[0];
    shape[0] = layout.rows;
    l->handle->device_output = std::move(out);
    l->handle->device_output_bytes = layout.total * element_size(m.dtype);
    l->handle->output_shapes = {std::move(shape)};
  }
}

bool EngineLoop::busy_elsewhere(const std::vector<int>& ranks, const Global& barrier) const {
  for (const auto& [seq, g] : table_) {
    if (&g == &barrier || g.metas.empty() || reference(g).kind == OpKind::barrier) continue;
    for (int r : ranks)
      if (g.metas[static_cast<std::size_t>(r)]) return true;
  }
  return false;
}

bool EngineLoop::locally_stuck(Clock::time_point now) {
  if (options_.deadlock_shutdown.count() == 0) return false;
  const std::uint64_t finished = census_->finished.load();
  if (census_->waiting.load() == 0 || finished != census_finished_seen_) {
    census_finished_seen_ = finished;
    stuck_since_.reset();
    return false;
  }
  if (!stuck_since_) stuck_since_ = now;
  return now - *stuck_since_ >= options_.deadlock_shutdown;
}

void EngineLoop::check_stalls(Clock::time_point now, bool progressed) {
  // Every rank has a thread waiting on this engine and none of its handles has finished for
  // deadlock_shutdown: what is pending cannot become ready (the waiting threads cannot submit
  // the rest), so it fails now, on every rank, whatever stall_shutdown says. Not in a cycle
  // where something finished: the flags were sent before, and a rank whose collective just
  // failed (a verdict) is about to go on, perhaps to the barrier the others wait in.
  const bool deadlocked = options_.deadlock_shutdown.count() > 0 && !progressed && !table_.empty() &&
                          std::all_of(stuck_.begin(), stuck_.end(), [](bool s) { return s; });
  if (options_.stall_check.count() == 0 && !deadlocked) return;
  for (auto& [seq, g] : table_) {
    std::vector<int> have, missing;
    for (int r = 0; r < size_; ++r) {
      const auto ur = static_cast<std::size_t>(r);
      if (g.metas[ur])
        have.push_back(r);
      else if (!joined_[ur])
        missing.push_back(r);
    }
    // A barrier's clock stops while a rank it waits for is busy with a collective of its own:
    // that one stalls and gives up first, and the rank may then still come (a test that failed
    // on some ranks only goes on to the same tearDown barrier as the others).
    const bool barrier_waits_for_busy = reference(g).kind == OpKind::barrier && busy_elsewhere(missing, g);
    if (barrier_waits_for_busy) g.first_seen = now;
    const auto age = now - g.first_seen;
    auto message = [&] {  // built only when it is said (rank 0 checks every cycle)
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.1f", std::chrono::duration<double>(age).count());
      return "riseml: stall: " + std::string(kind_name(reference(g).kind)) + " '" + g.name +
             "' was submitted by " + rank_list(have) + " but not by " + rank_list(missing) + " for " +
             secs + " s (a rank skipped a collective, or named it differently)";
    };
    // In a deadlock a barrier whose missing ranks wait on another collective is left alone: that
    // one fails, and its ranks can still come to the barrier (as with the stall limit below).
    if (deadlocked && !g.verdict_sent && !barrier_waits_for_busy) {
      g.verdict_sent = true;
      stall_outbox_.push_back({seq, g.name, message() + "; deadlock: every rank is waiting for a collective that "
                                                        "no rank can start, so it gave up (RISEML_DEADLOCK_S)"});
      continue;
    }
    if (options_.stall_check.count() == 0 || age < options_.stall_check) continue;
    const std::string msg = message();
    if (!g.warned) {
      g.warned = true;
      options_.warn(msg);
    }
    if (options_.stall_shutdown.count() > 0 && age >= options_.stall_shutdown && !g.verdict_sent) {
      g.verdict_sent = true;
      stall_outbox_.push_back({seq, g.name, msg + "; gave up after RISEML_STALL_SHUTDOWN_S"});
    }
  }
}

}  // namespace riseml::engine
