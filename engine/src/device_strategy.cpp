#include "device_strategy.hpp"

#include "request_check.hpp"

#include <riseml/engine/engine.hpp>

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
  DevicePath& p = path(l);
  const char* phase = "NCCL_ALLGATHER";
  switch (m.kind) {
    case OpKind::reducescatter: reducescatter(p, g, l); phase = "NCCL_REDUCESCATTER"; break;
    case OpKind::broadcast: broadcast(p, g, l); phase = "NCCL_BROADCAST"; break;
    case OpKind::alltoall: alltoall(p, g, l); phase = "NCCL_ALLTOALL"; break;
    default: allgather(p, g, l); break;
  }
  const std::size_t moved = meta_bytes(m);
  finish_when_done({&g}, phase, start, moved);
  return moved;
}

void DeviceStrategy::reducescatter(DevicePath& p, const TableEntry& g, const LocalRequest* l) {
  const TensorMeta& m = reference(g);
  // Rows in rank order, the first rows % size ranks one more (host_scatter's rule).
  std::vector<DeviceTensor> tensors;
  std::vector<std::vector<std::size_t>> blocks;
  for (std::size_t i = 0; i < m.shapes.size(); ++i) {
    const auto& shape = m.shapes[i];
    const std::size_t count = element_count(shape);
    const std::size_t row = shape[0] > 0 ? count / static_cast<std::size_t>(shape[0]) : 0;
    tensors.push_back(device_tensor(l, i, count));
    blocks.emplace_back(static_cast<std::size_t>(context_.size));
    for (int r = 0; r < context_.size; ++r)
      blocks.back()[static_cast<std::size_t>(r)] =
          static_cast<std::size_t>(reducescatter_rows(shape[0], context_.size, r)) * row;
  }
  p.reducescatter(tensors, blocks, context_.rank, m.dtype, m.op, m.prescale, m.postscale);
}

// Broadcast, allgather and alltoall move bytes: any type, even those NCCL cannot reduce.
void DeviceStrategy::broadcast(DevicePath& p, const TableEntry& g, const LocalRequest* l) {
  const TensorMeta& m = reference(g);
  p.broadcast(device_tensor(l, 0, element_count(m.shapes[0]) * element_size(m.dtype)),
              DataType::uint8, m.root);
}

void DeviceStrategy::allgather(DevicePath& p, const TableEntry& g, LocalRequest* l) {
  const TensorMeta& m = reference(g);
  const std::size_t esize = element_size(m.dtype);
  // Each tensor's rows from the ranks that submitted, none from joined ones.
  std::vector<DeviceTensor> tensors;
  std::vector<std::vector<std::size_t>> counts(m.shapes.size(),
                                               std::vector<std::size_t>(static_cast<std::size_t>(context_.size), 0));
  std::vector<std::size_t> bytes(m.shapes.size(), 0);
  std::vector<std::vector<std::int64_t>> shapes = m.shapes;
  for (std::size_t i = 0; i < m.shapes.size(); ++i) {
    shapes[i][0] = 0;
    for (std::size_t r = 0; r < counts[i].size(); ++r) {
      const auto& mr = g.metas[r];
      if (!mr) continue;
      counts[i][r] = element_count(mr->shapes[i]) * esize;
      shapes[i][0] += mr->shapes[i][0];
      bytes[i] += counts[i][r];
    }
    tensors.push_back(device_tensor(l, i, counts[i][static_cast<std::size_t>(context_.rank)]));
  }
  auto out = p.allgatherv(tensors, counts, context_.rank, DataType::uint8);
  if (l) keep_result(p, *l, std::move(out), std::move(bytes), std::move(shapes));
}

void DeviceStrategy::alltoall(DevicePath& p, const TableEntry& g, LocalRequest* l) {
  const TensorMeta& m = reference(g);
  // This rank's splits say what it sends; every rank's split for this rank what it receives
  // (a joined rank fails the agreement before it gets here).
  std::size_t row = element_size(m.dtype);  // bytes of a row: the dimensions after the first
  for (std::size_t d = 1; d < m.shapes[0].size(); ++d) row *= static_cast<std::size_t>(m.shapes[0][d]);
  const auto me = static_cast<std::size_t>(context_.rank);
  std::vector<std::size_t> send(static_cast<std::size_t>(context_.size)), recv(send.size());
  std::vector<std::int64_t> received(send.size());
  std::int64_t rows = 0;
  for (std::size_t r = 0; r < send.size(); ++r) {
    send[r] = l ? static_cast<std::size_t>(l->request.splits[r]) * row : 0;
    received[r] = g.metas[r] ? g.metas[r]->splits[me] : 0;
    recv[r] = static_cast<std::size_t>(received[r]) * row;
    rows += received[r];
  }
  auto out = p.alltoallv(device_tensor(l, 0, 0), send, recv, DataType::uint8);
  if (!l) return;
  std::vector<std::int64_t> shape = m.shapes[0];
  shape[0] = rows;
  keep_result(p, *l, std::move(out), {static_cast<std::size_t>(rows) * row}, {std::move(shape)});
  l->handle->received_splits = std::move(received);
}

void DeviceStrategy::keep_result(DevicePath& p, LocalRequest& l, std::shared_ptr<void> out,
                                 std::vector<std::size_t> bytes,
                                 std::vector<std::vector<std::int64_t>> shapes) {
  l.handle->device_output = std::move(out);
  l.handle->device_output_parts = std::move(bytes);
  l.handle->copy_result = p.result_copier();
  l.handle->output_shapes = std::move(shapes);
}

}  // namespace riseml::engine
