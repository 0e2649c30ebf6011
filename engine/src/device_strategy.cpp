#include "device_strategy.hpp"

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
    int device = l ? l->request.tensors.front().device : -1;
    if (device < 0) device = context_.queue.gpu_device();  // joined before its first GPU tensor
    path_ = DevicePath::create(context_.comm, device, context_.gpu);
  }
  return *path_;
}

void DeviceStrategy::allreduce(const std::vector<TableEntry*>& bucket, Clock::time_point start) {
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
  const auto end = Clock::now();
  for (TableEntry* g : bucket) {
    context_.timeline.event(g->name, "NCCL_ALLREDUCE", start, end, bytes);
    context_.finisher.finish(*g);
  }
}

std::size_t DeviceStrategy::run(TableEntry& g, LocalRequest* l) {
  const TensorMeta& m = reference(g);
  DevicePath& p = path(l);
  const DeviceTensor t = device_tensor(l, 0, element_count(m.shapes[0]));
  if (m.kind == OpKind::broadcast) {
    p.broadcast(t, m.dtype, m.root);
    return meta_bytes(m);
  }
  // Allgather: rows from the ranks that submitted, none from joined ones.
  std::vector<std::size_t> counts(static_cast<std::size_t>(context_.size), 0);
  std::int64_t rows = 0;
  std::size_t total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    const auto& mr = g.metas[r];
    if (!mr) continue;
    counts[r] = element_count(mr->shapes[0]);
    rows += mr->shapes[0][0];
    total += counts[r];
  }
  auto out = p.allgatherv(t, counts, m.dtype);
  if (l) {
    std::vector<std::int64_t> shape = m.shapes[0];
    shape[0] = rows;
    l->handle->device_output = std::move(out);
    l->handle->device_output_bytes = total * element_size(m.dtype);
    l->handle->output_shapes = {std::move(shape)};
  }
  return meta_bytes(m);
}

}  // namespace riseml::engine
