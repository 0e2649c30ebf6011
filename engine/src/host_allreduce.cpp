#include "host_allreduce.hpp"

#include "scaling.hpp"

#include <algorithm>
#include <cstring>
#include <span>

namespace riseml::engine {

namespace {

using Clock = std::chrono::steady_clock;

// One tensor: in place on the caller's tensor.
void reduce_in_place(const ExecutionContext& cx, TableEntry& g, std::size_t total, Clock::time_point start) {
  const TensorMeta& m = reference(g);
  const std::size_t esize = element_size(m.dtype);
  LocalRequest* l = cx.queue.find(g.name);
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
      cx.comm.adasum_allreduce(in, out, std::span<const std::size_t>(&total, 1), m.dtype);
    else
      cx.comm.allreduce(in, out, total, m.dtype, m.op);
    if (m.postscale != 1.0) scale_copy(out, out, total, m.dtype, m.postscale);
    cx.timeline.event(g.name, "ALLREDUCE", start, Clock::now(), total * esize);
  }
  cx.finisher.finish(g);
}

}  // namespace


void host_allreduce(const ExecutionContext& cx, const std::vector<TableEntry*>& bucket,
                    Clock::time_point start, std::vector<std::byte>& fusion_buffer) {
  const TensorMeta& m = reference(*bucket.front());
  const std::size_t esize = element_size(m.dtype);
  std::size_t tensors = 0, total = 0;
  for (TableEntry* g : bucket) {
    for (const auto& s : reference(*g).shapes) {
      ++tensors;
      total += element_count(s);
    }
  }
  if (tensors == 1) {
    reduce_in_place(cx, *bucket.front(), total, start);
    return;
  }

  fusion_buffer.resize(std::max(fusion_buffer.size(), total * esize));
  std::byte* buffer = fusion_buffer.data();
  std::size_t offset = 0;
  for (TableEntry* g : bucket) {
    const auto t0 = Clock::now();
    LocalRequest* l = cx.queue.find(g->name);
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
    cx.timeline.event(g->name, "MEMCPY_IN_FUSION_BUFFER", t0, Clock::now(), bytes);
  }
  const auto t1 = Clock::now();
  if (m.adasum) {
    // Adasum combines per tensor: it needs where each one starts.
    std::vector<std::size_t> counts;
    for (TableEntry* g : bucket)
      for (const auto& s : reference(*g).shapes) counts.push_back(element_count(s));
    cx.comm.adasum_allreduce(buffer, buffer, counts, m.dtype);
  } else {
    cx.comm.allreduce(buffer, buffer, total, m.dtype, m.op);
  }
  const auto t2 = Clock::now();
  offset = 0;
  for (TableEntry* g : bucket) {
    const auto t3 = Clock::now();
    LocalRequest* l = cx.queue.find(g->name);
    const auto& shapes = reference(*g).shapes;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const std::size_t n = element_count(shapes[i]);
      if (l) scale_copy(buffer + offset, l->request.tensors[i].output, n, m.dtype, m.postscale);
      offset += n * esize;
      bytes += n * esize;
    }
    cx.timeline.event(g->name, "ALLREDUCE", t1, t2, bytes);
    cx.timeline.event(g->name, "MEMCPY_OUT_FUSION_BUFFER", t3, Clock::now(), bytes);
  }
  cx.finisher.finish_all(bucket);
}

}  // namespace riseml::engine
