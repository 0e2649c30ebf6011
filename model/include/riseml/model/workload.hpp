// A training step's gradient traffic, read from a workload file (see workloads/): the gradient
// tensors of a model in the order its backward pass makes them ready, each with the compute
// before it, and the step's forward time. riseml-replay replays it on every rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace riseml::model {

struct Gradient {
  std::string name;
  std::vector<std::int64_t> shape;
  std::size_t elements = 0;
  double compute_before_us = 0;  // backward compute between the previous gradient and this one
};

struct Workload {
  std::string model, source;
  int batch = 0;
  double step_ms = 0;     // one GPU's whole step (forward + backward) at `batch`
  double forward_ms = 0;  // before the first gradient
  double tail_us = 0;     // backward compute after the last gradient
  std::vector<Gradient> gradients;

  std::size_t elements() const;
  // Forward + every gradient's compute + tail: the step's compute, in milliseconds.
  double compute_ms() const;
};

// "FILE:LINE: what is wrong; how to fix it".
class WorkloadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Where this build's shipped workloads (model/workloads) are: the source tree's folder, then
// the installed one (share/riseml/workloads).
std::vector<std::string> shipped_workload_folders();
// A model's name ("resnet50") is looked up as NAME.workload in `folders`; a name with a '/' or
// an existing file is taken as a path. Throws WorkloadError naming the folders it tried.
std::string find_workload(const std::string& name_or_path,
                          const std::vector<std::string>& folders = shipped_workload_folders());

// Reads and checks a workload file. Throws WorkloadError.
Workload read_workload(const std::string& path);
// The same from text (`origin` names it in errors).
Workload parse_workload(const std::string& text, const std::string& origin);

}  // namespace riseml::model
