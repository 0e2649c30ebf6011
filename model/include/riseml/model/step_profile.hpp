// A training step as the model sees it: the forward time, then the gradients in the order the
// backward pass makes them ready, each with the compute before it, then the backward's tail.
// Read from riseml-replay's workload files (model/workloads/, or one written from a
// real 1-node run by synthetic_benchmark.py --write-workload).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace riseml::model {

struct Tensor {
  std::string name;
  double elements = 0;
  double compute_before_s = 0;
};

struct StepProfile {
  std::string model, source;
  int batch = 1;
  double forward_s = 0;
  double tail_s = 0;
  std::vector<Tensor> tensors;
  double compute_s() const;
  double elements() const;
};

class ProfileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A path, or a model name ("resnet101") looked up as NAME.workload in `search_dirs` in order.
// Throws ProfileError ("FILE:LINE: what is wrong; how to fix it").
StepProfile load_profile(const std::string& name_or_path, const std::vector<std::string>& search_dirs);
StepProfile parse_profile(const std::string& text, const std::string& origin);

}  // namespace riseml::model
