// The workload file format has one reader, riseml-replay's (allreduce/bench/workload.cpp,
// compiled into this library too); this turns its Workload into a StepProfile.
#include "riseml/model/step_profile.hpp"

#include <filesystem>

#include "workload.hpp"

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

StepProfile from_workload(const bench::Workload& w) {
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
    return from_workload(bench::parse_workload(text, origin));
  } catch (const bench::WorkloadError& e) {
    throw ProfileError(e.what());
  }
}

StepProfile load_profile(const std::string& name, const std::vector<std::string>& search_dirs) {
  std::string path = name;
  std::error_code ec;
  if (name.find('/') == std::string::npos && !std::filesystem::exists(name, ec)) {
    path.clear();
    std::string tried;
    for (const auto& dir : search_dirs) {
      const std::string candidate = dir + "/" + name + ".workload";
      if (std::filesystem::exists(candidate, ec)) {
        path = candidate;
        break;
      }
      tried += (tried.empty() ? "" : ", ") + dir;
    }
    if (path.empty())
      throw ProfileError(name + ": no such file, and no workload of that name in " + tried +
                         " (the models shipped: resnet50, resnet101, inception_v3, vgg16; or give a "
                         "workload file's path)");
  }
  try {
    return from_workload(bench::read_workload(path));
  } catch (const bench::WorkloadError& e) {
    throw ProfileError(e.what());
  }
}

}  // namespace riseml::model
