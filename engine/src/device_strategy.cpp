#include "device_strategy.hpp"

#include "request_check.hpp"

#include <utility>

namespace riseml::engine {

namespace {

// Tensor i of this rank's request `l`; a joined rank (l null) has no buffers.
DeviceTensor device_tensor(const LocalRequest* l, std::size_t i, std::size_t count) {
  DeviceTensor t;
  t.count = count;
  if (l) {
    t.input = l->request.tensors[i].input;
    t.output = l->request.tensors[i].output;
    t.ready = &l->ready;
  }
  return t;
}

}  // namespace

DevicePath& DeviceStrategy::path(const LocalRequest* l) {
  if (!path_) {
    if (context_.gpu.host_standin) {
      path_ = make_host_standin_path(context_.comm);
    } else {
      int device = l ? l->request.tensors.front().device : -1;
      if (device < 0) device = context_.queue.gpu_device();  // joined before its first GPU tensor
      path_ = DevicePath::create(context_.comm, device, context_.gpu);
    }
  }
  path_->throw_if_failed();
  return *path_;
}

bool DeviceStrategy::refused(const std::vector<TableEntry*>& entries) {
  const TensorMeta& m = reference(*entries.front());
  const std::string why = device_refusal(m.kind, m.dtype, m.adasum);
  if (why.empty()) return false;
  // enqueue() refuses these already; a request that got past it fails alone, on every rank.
  for (TableEntry* g : entries)
    context_.finisher.finish(
        *g, CollectiveError(ErrorKind::invalid_argument, "riseml: '" + g->name + "': " + why));
  return true;
}

void DeviceStrategy::finish_when_done(const std::vector<TableEntry*>& entries, const char* phase,
                                      Clock::time_point start, std::size_t bytes) {
  std::shared_ptr<DeviceEvent> done_at = path_->done_marker();
  std::vector<std::shared_ptr<HandleState>> handles;
  handles.reserve(entries.size());
  const bool traced = context_.timeline.enabled();
  std::vector<std::string> names;  // for the timeline only
  for (TableEntry* g : entries) {
    if (traced) names.push_back(g->name);
    if (std::shared_ptr<HandleState> h = context_.finisher.finish_deferred(*g)) {
      h->mark_enqueued(done_at);
      handles.push_back(std::move(h));
    }
  }
  path_->when_done(std::move(done_at), [this, handles = std::move(handles),
                                        names = std::move(names), phase, start, bytes,
                                        traced](const std::optional<CollectiveError>& error) {
    // All settled before any is woken: a caller waiting on them in turn wakes once.
    for (const auto& h : handles) h->settle(error);
    for (const auto& h : handles) h->wake();
    if (!traced) return;
    std::lock_guard lock(completed_mutex_);
    completed_.push_back(Completed{names, phase, start, Clock::now(), bytes});
  });
}

void DeviceStrategy::collect_completions() {
  std::vector<Completed> completed;
  {
    std::lock_guard lock(completed_mutex_);
    completed.swap(completed_);
  }
  for (const Completed& c : completed)
    for (const std::string& name : c.names) context_.timeline.event(name, c.phase, c.start, c.end, c.bytes);
  if (path_) path_->throw_if_failed();
}

void DeviceStrategy::release(const std::optional<CollectiveError>& failed) {
  if (path_ && failed) path_->abandon(*failed);
  path_.reset();  // its watcher completes or fails what is in flight
  try {
    collect_completions();
  } catch (const CollectiveError&) {
  }
}

void DeviceStrategy::allreduce(const std::vector<TableEntry*>& bucket, Clock::time_point start) {
  if (refused(bucket)) return;
  const TensorMeta& m = reference(*bucket.front());
  // Entries this rank has not submitted (it joined) contribute zeros: input stays null.
  std::vector<DeviceTensor> tensors;
  const LocalRequest* first = nullptr;
  std::size_t bytes = 0;
  for (TableEntry* g : bucket) {
    const LocalRequest* l = context_.queue.find(g->name);
    if (l && !first) first = l;
    const auto& shapes = reference(*g).shapes;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      tensors.push_back(device_tensor(l, i, element_count(shapes[i])));
      bytes += tensors.back().count * element_size(m.dtype);
    }
  }
  // One collective for the whole bucket on every rank, whatever this rank has of it.
  path(first).allreduce(tensors, m.dtype, m.op, m.prescale, m.postscale);
  finish_when_done(bucket, "NCCL_ALLREDUCE", start, bytes);
}

std::size_t DeviceStrategy::run(TableEntry& g, LocalRequest* l) {
  const auto start = Clock::now();
  if (refused({&g})) return 0;
  const TensorMeta& m = reference(g);  // valid until the entry finishes
  const std::size_t moved = meta_bytes(m);
  DevicePath& p = path(l);
  // Broadcast and allgather move bytes: any type, even those NCCL cannot reduce.
  const std::size_t esize = element_size(m.dtype);
  const DeviceTensor t = device_tensor(l, 0, element_count(m.shapes[0]) * esize);
  if (m.kind == OpKind::broadcast) {
    p.broadcast(t, DataType::uint8, m.root);
    finish_when_done({&g}, "NCCL_BROADCAST", start, moved);
    return moved;
  }
  // Allgather: rows from the ranks that submitted, none from joined ones.
  std::vector<std::size_t> counts(static_cast<std::size_t>(context_.size), 0);
  std::int64_t rows = 0;
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    const auto& mr = g.metas[r];
    if (!mr) continue;
    counts[r] = element_count(mr->shapes[0]) * esize;
    rows += mr->shapes[0][0];
    total += counts[r];
  }
  auto out = p.allgatherv(t, counts, DataType::uint8);
  if (l) {
    std::vector<std::int64_t> shape = m.shapes[0];
    shape[0] = rows;
    l->handle->device_output = std::move(out);
    l->handle->device_output_bytes = total;
    l->handle->copy_result = p.result_copier();
    l->handle->output_shapes = {std::move(shape)};
  }
  finish_when_done({&g}, "NCCL_ALLGATHER", start, moved);
  return moved;
}

}  // namespace riseml::engine
