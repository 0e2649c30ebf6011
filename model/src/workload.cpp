#include <riseml/model/workload.hpp>

#include <filesystem>

#include <cmath>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

namespace riseml::model {

namespace {

// Generous bounds that still keep every product and sum finite.
constexpr std::size_t kMaxGradients = 100000;
constexpr std::size_t kMaxElements = std::size_t{1} << 34;  // per tensor: 64 GiB of float32
constexpr double kMaxMs = 3.6e6;                            // an hour

[[noreturn]] void fail(const std::string& origin, int line, const std::string& what) {
  throw WorkloadError(origin + ":" + std::to_string(line) + ": " + what);
}

double number(const std::string& origin, int line, const std::string& key, const std::string& text,
              double max) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v) || v < 0 || v > max)
    fail(origin, line, key + " '" + text + "': want a number from 0 to " + std::to_string(static_cast<long long>(max)));
  return v;
}

std::vector<std::int64_t> shape_of(const std::string& origin, int line, const std::string& text,
                                   std::size_t& elements) {
  std::vector<std::int64_t> shape;
  elements = 1;
  std::stringstream in(text);
  std::string dim;
  while (std::getline(in, dim, 'x')) {
    if (dim.empty() || dim.size() > 12 || dim.find_first_not_of("0123456789") != std::string::npos)
      fail(origin, line, "shape '" + text + "': want dimensions like 64x3x7x7 (positive whole numbers joined by x)");
    const auto d = static_cast<std::size_t>(std::stoull(dim));
    if (d == 0) fail(origin, line, "shape '" + text + "': a dimension is 0");
    if (elements > kMaxElements / d)
      fail(origin, line, "shape '" + text + "': more than 2^34 elements in one tensor");
    elements *= d;
    shape.push_back(static_cast<std::int64_t>(d));
  }
  if (shape.empty() || shape.size() > 8 || text.back() == 'x')
    fail(origin, line, "shape '" + text + "': want 1 to 8 dimensions like 1000x2048");
  return shape;
}

}  // namespace

std::size_t Workload::elements() const {
  std::size_t n = 0;
  for (const auto& g : gradients) n += g.elements;
  return n;
}

double Workload::compute_ms() const {
  double us = tail_us;
  for (const auto& g : gradients) us += g.compute_before_us;
  return forward_ms + us / 1e3;
}

Workload parse_workload(const std::string& text, const std::string& origin) {
  Workload w;
  std::set<std::string> names;
  std::stringstream in(text);
  std::string raw;
  int line = 0;
  bool header = false;
  while (std::getline(in, raw)) {
    ++line;
    const auto hash = raw.find('#');
    std::stringstream fields(raw.substr(0, hash));
    std::vector<std::string> f;
    for (std::string s; fields >> s;) f.push_back(s);
    if (f.empty()) continue;
    const std::string& key = f[0];
    if (!header) {
      if (key != "riseml-workload" || f.size() != 2 || f[1] != "1")
        fail(origin, line, "want 'riseml-workload 1' as the first line that is not a comment "
                           "(is this a workload file? see model/workloads/)");
      header = true;
      continue;
    }
    auto want = [&](std::size_t n, const char* form) {
      if (f.size() != n) fail(origin, line, key + ": want '" + form + "'");
    };
    if (key == "model") {
      want(2, "model NAME");
      w.model = f[1];
    } else if (key == "source") {
      const auto at = raw.find("source");
      w.source = raw.substr(at + 7, hash == std::string::npos ? std::string::npos : hash - at - 7);
    } else if (key == "batch") {
      want(2, "batch N");
      const double b = number(origin, line, key, f[1], 1e6);
      if (b < 1 || b != std::floor(b)) fail(origin, line, "batch '" + f[1] + "': want a whole number from 1");
      w.batch = static_cast<int>(b);
    } else if (key == "step_ms") {
      want(2, "step_ms MILLISECONDS");
      w.step_ms = number(origin, line, key, f[1], kMaxMs);
    } else if (key == "forward_ms") {
      want(2, "forward_ms MILLISECONDS");
      w.forward_ms = number(origin, line, key, f[1], kMaxMs);
    } else if (key == "tail_us") {
      want(2, "tail_us MICROSECONDS");
      w.tail_us = number(origin, line, key, f[1], kMaxMs * 1e3);
    } else if (key == "grad") {
      want(4, "grad COMPUTE_US NAME SHAPE");
      if (w.gradients.size() == kMaxGradients)
        fail(origin, line, "more than " + std::to_string(kMaxGradients) + " gradients");
      Gradient g;
      g.compute_before_us = number(origin, line, "grad compute", f[1], kMaxMs * 1e3);
      g.name = f[2];
      if (!names.insert(g.name).second)
        fail(origin, line, "gradient '" + g.name + "' listed twice (names must be unique)");
      g.shape = shape_of(origin, line, f[3], g.elements);
      w.gradients.push_back(std::move(g));
    } else {
      fail(origin, line, "unknown key '" + key + "' (model, source, batch, step_ms, forward_ms, grad, tail_us)");
    }
  }
  if (!header) fail(origin, line, "empty: no 'riseml-workload 1' line");
  if (w.model.empty()) fail(origin, line, "no 'model NAME' line");
  if (w.gradients.empty()) fail(origin, line, "no 'grad' lines: nothing to reduce");
  if (w.batch == 0) w.batch = 1;
  if (w.compute_ms() > kMaxMs) fail(origin, line, "the step's compute adds up to more than an hour");
  return w;
}

Workload read_workload(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw WorkloadError(path + ": cannot open (is the path right? the files are in model/workloads/)");
  std::stringstream text;
  text << f.rdbuf();
  if (text.str().size() > (64u << 20)) throw WorkloadError(path + ": larger than 64 MiB; not a workload file");
  return parse_workload(text.str(), path);
}

std::vector<std::string> shipped_workload_folders() {
  return {RISEML_WORKLOADS_SOURCE_DIR, RISEML_WORKLOADS_INSTALL_DIR};
}

std::string find_workload(const std::string& name, const std::vector<std::string>& folders) {
  std::error_code ec;
  if (name.find('/') != std::string::npos || std::filesystem::exists(name, ec)) return name;
  std::string tried;
  for (const auto& dir : folders) {
    const std::string candidate = dir + "/" + name + ".workload";
    if (std::filesystem::exists(candidate, ec)) return candidate;
    tried += (tried.empty() ? "" : ", ") + dir;
  }
  throw WorkloadError(name + ": no such file, and no workload of that name in " + tried +
                      " (the models shipped: resnet50, resnet101, inception_v3, vgg16; or give a "
                      "workload file's path)");
}

}  // namespace riseml::model
