// Collectives on host buffers through the runtime's submit/wait, as a binding runs them: what
// the runtime tests check results with.
#pragma once

#include <riseml/runtime/runtime.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace riseml::runtime::test {

inline engine::Request host_request(engine::OpKind kind, std::string name, DataType dtype,
                                    const void* input, void* output,
                                    std::vector<std::int64_t> shape) {
  engine::Request r;
  r.kind = kind;
  r.name = std::move(name);
  r.dtype = dtype;
  r.tensors.push_back({input, output, std::move(shape)});
  return r;
}

// Submits the sum of `value` over the set (not yet waited for).
inline HandleId submit_sum(Runtime& rt, int process_set, const std::string& name, double& value) {
  return rt.submit(process_set, host_request(engine::OpKind::allreduce, name, DataType::float64,
                                             &value, &value, {1}));
}

inline double sum(Runtime& rt, int process_set, const std::string& name, double value) {
  rt.wait(submit_sum(rt, process_set, name, value));
  return value;
}

// Every member's `value`, in the set's rank order.
inline std::vector<std::int32_t> gather(Runtime& rt, int process_set, const std::string& name,
                                        std::int32_t value) {
  auto done = rt.wait(rt.submit(process_set, host_request(engine::OpKind::allgather, name,
                                                          DataType::int32, &value, nullptr, {1})));
  const auto& bytes = done.handle.allgather_output();
  std::vector<std::int32_t> all(bytes.size() / sizeof(std::int32_t));
  std::memcpy(all.data(), bytes.data(), bytes.size());
  return all;
}

// `value` of the member with index `root` in the set.
inline double broadcast(Runtime& rt, int process_set, const std::string& name, int root,
                        double value) {
  auto r = host_request(engine::OpKind::broadcast, name, DataType::float64, &value, &value, {1});
  r.root = root;
  rt.wait(rt.submit(process_set, std::move(r)));
  return value;
}

}  // namespace riseml::runtime::test
