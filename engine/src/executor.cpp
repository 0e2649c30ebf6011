#include "executor.hpp"

#include <algorithm>

namespace riseml::engine {

namespace {

// The timeline's name for a collective.
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

}  // namespace

void Executor::run_allreduces(const std::vector<TableEntry*>& entries, Clock::time_point ready_at) {
  // Small tensors first, fused among themselves, then the large ones: a loss or metric average
  // submitted beside a step's gradients waits for no large buffer (every rank orders the same
  // table alike).
  std::vector<TableEntry*> small, large;
  for (TableEntry* g : entries)
    (meta_bytes(reference(*g)) <= kSmallFirstBytes ? small : large).push_back(g);
  run_fused(small, ready_at);
  run_fused(large, ready_at);
}

void Executor::run_fused(const std::vector<TableEntry*>& entries, Clock::time_point ready_at) {
  std::vector<std::vector<TableEntry*>> kinds;
  for (TableEntry* g : entries) {
    const TensorMeta& m = reference(*g);
    auto it = std::find_if(kinds.begin(), kinds.end(), [&](const std::vector<TableEntry*>& k) {
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
    std::vector<TableEntry*> bucket;
    std::size_t bytes = 0;
    for (TableEntry* g : kind) {
      const std::size_t b = meta_bytes(reference(*g));
      if (!bucket.empty() && bytes + b > fusion_threshold_) {
        run_bucket(bucket, ready_at);
        bucket.clear();
        bytes = 0;
      }
      bucket.push_back(g);
      bytes += b;
    }
    if (!bucket.empty()) run_bucket(bucket, ready_at);
  }
}

void Executor::run_bucket(const std::vector<TableEntry*>& bucket, Clock::time_point ready_at) {
  Strategy& strategy = strategy_for(reference(*bucket.front()));
  const auto start = Clock::now();
  for (TableEntry* g : bucket) trace_negotiation(g->name, ready_at, start);
  strategy.allreduce(bucket, start);
}

void Executor::run_other(TableEntry& g, Clock::time_point ready_at) {
  const TensorMeta& m = reference(g);
  Strategy& strategy = strategy_for(m);
  LocalRequest* mine = context_.queue.find(g.name);
  const auto start = Clock::now();
  trace_negotiation(g.name, ready_at, start);
  const std::size_t bytes = strategy.run(g, mine);
  if (&strategy == &device_) return;  // finished when the device is done
  context_.timeline.event(g.name, collective_phase(m.kind), start, Clock::now(), bytes);
  context_.finisher.finish(g);
}

Strategy& Executor::strategy_for(const TensorMeta& meta) {
  if (meta.on_device) return device_;
  return host_;
}

void Executor::trace_negotiation(const std::string& name, Clock::time_point ready_at,
                                 Clock::time_point start) {
  if (!context_.timeline.enabled()) return;
  if (const LocalRequest* l = context_.queue.find(name))
    context_.timeline.event(name, "NEGOTIATE", l->enqueued, ready_at);
  context_.timeline.event(name, "QUEUE", ready_at, start);
}

}  // namespace riseml::engine
