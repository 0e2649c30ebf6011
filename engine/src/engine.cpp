// Engine: the public face of EngineLoop, plus the convenience wrappers.
#include "engine_loop.hpp"

#include <riseml/engine/engine.hpp>

namespace riseml::engine {

Engine::Engine(Rendezvous& rendezvous, const CommunicatorOptions& communicator_options,
               const EngineOptions& options)
    : loop_(std::make_unique<EngineLoop>(rendezvous, communicator_options, options)) {}

Engine::~Engine() = default;

int Engine::rank() const { return loop_->rank(); }
int Engine::size() const { return loop_->size(); }
Handle Engine::enqueue(Request request) { return loop_->enqueue(std::move(request)); }
void Engine::shutdown(bool leaving) { loop_->shutdown(leaving); }
bool Engine::stopped() const { return loop_->stopped(); }
int Engine::failed_rank() const { return loop_->failed_rank(); }
bool Engine::failed() const { return loop_->failed(); }
void Engine::start_timeline(const std::string& path) { loop_->set_timeline(path); }
void Engine::stop_timeline() { loop_->set_timeline(""); }

Handle Engine::allreduce(std::string name, const void* input, void* output,
                         std::vector<std::int64_t> shape, DataType dtype, ReduceOp op,
                         double prescale, double postscale) {
  Request r;
  r.kind = OpKind::allreduce;
  r.name = std::move(name);
  r.dtype = dtype;
  r.op = op;
  r.prescale = prescale;
  r.postscale = postscale;
  r.tensors.push_back({input, output, std::move(shape)});
  return enqueue(std::move(r));
}

Handle Engine::broadcast(std::string name, void* buffer, std::vector<std::int64_t> shape,
                         DataType dtype, int root) {
  Request r;
  r.kind = OpKind::broadcast;
  r.name = std::move(name);
  r.dtype = dtype;
  r.root = root;
  r.tensors.push_back({buffer, buffer, std::move(shape)});
  return enqueue(std::move(r));
}

Handle Engine::allgather(std::string name, const void* input, std::vector<std::int64_t> shape,
                         DataType dtype) {
  Request r;
  r.kind = OpKind::allgather;
  r.name = std::move(name);
  r.dtype = dtype;
  r.tensors.push_back({input, nullptr, std::move(shape)});
  return enqueue(std::move(r));
}

Handle Engine::barrier() {
  Request r;
  r.kind = OpKind::barrier;
  return enqueue(std::move(r));
}

Handle Engine::join() {
  Request r;
  r.kind = OpKind::join;
  return enqueue(std::move(r));
}

}  // namespace riseml::engine
