// The workload file format has one reader, riseml-replay's (model/src/workload.cpp,
// compiled into this library too); this turns its Workload into a StepProfile.
#include "riseml/model/step_profile.hpp"

#include <riseml/model/workload.hpp>

namespace riseml::model {

double StepProfile::compute_s() const {
  double s = forward_s + tail_s;
  for (const auto& t : tensors) s += t.compute_before_s;
  return s;
}

double StepProfile::elements() const {
  double n = 0;
  for (const auto& t : tensors) n += t.elements;
  return n;
}

namespace {

StepProfile from_workload(const Workload& w) {
  StepProfile p;
  p.model = w.model;
  p.source = w.source;
  p.batch = w.batch;
  p.forward_s = w.forward_ms / 1e3;
  p.tail_s = w.tail_us / 1e6;
  p.tensors.reserve(w.gradients.size());
  for (const auto& g : w.gradients)
    p.tensors.push_back({g.name, static_cast<double>(g.elements), g.compute_before_us / 1e6});
  return p;
}

}  // namespace

StepProfile parse_profile(const std::string& text, const std::string& origin) {
  try {
    return from_workload(parse_workload(text, origin));
  } catch (const WorkloadError& e) {
    throw ProfileError(e.what());
  }
}

StepProfile load_profile(const std::string& name, const std::vector<std::string>& search_dirs) {
  try {
    return from_workload(read_workload(find_workload(name, search_dirs)));
  } catch (const WorkloadError& e) {
    throw ProfileError(e.what());
  }
}

}  // namespace riseml::model
