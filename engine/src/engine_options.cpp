// EngineOptions::from_environment: RISEML_* first, then the Horovod names.
#include <riseml/collective_error.hpp>
#include <riseml/engine/engine_options.hpp>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>

namespace riseml::engine {

namespace {

// The value of the first of the two variables that is set, and its name.
// Ours first, then Horovod's name for it (null: Horovod has none).
std::optional<std::pair<std::string, std::string>> lookup(const char* ours, const char* horovods = nullptr) {
  for (const char* name : {ours, horovods}) {
    if (name == nullptr) continue;
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return {{name, v}};
  }
  return std::nullopt;
}

double parse_number(const std::pair<std::string, std::string>& var) {
  const std::string& text = var.second;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || errno != 0 || !std::isfinite(v) || v < 0)
    throw CollectiveError(ErrorKind::invalid_argument,
                          "riseml: " + var.first + "='" + text +
                              "' is not a non-negative number");
  return v;
}

}  // namespace

EngineOptions EngineOptions::from_environment() {
  EngineOptions o;
  if (auto v = lookup("RISEML_FUSION_THRESHOLD", "HOROVOD_FUSION_THRESHOLD"))
    o.fusion_threshold = static_cast<std::size_t>(parse_number(*v));
  if (auto v = lookup("RISEML_CYCLE_TIME_MS", "HOROVOD_CYCLE_TIME"))
    o.cycle_time = std::chrono::microseconds(static_cast<std::int64_t>(parse_number(*v) * 1000.0));
  auto seconds = [](const std::pair<std::string, std::string>& var) {
    return std::chrono::milliseconds(static_cast<std::int64_t>(parse_number(var) * 1000.0));
  };
  if (auto v = lookup("RISEML_STALL_CHECK_S", "HOROVOD_STALL_CHECK_TIME_SECONDS")) o.stall_check = seconds(*v);
  if (auto v = lookup("RISEML_STALL_SHUTDOWN_S", "HOROVOD_STALL_SHUTDOWN_TIME_SECONDS")) o.stall_shutdown = seconds(*v);
  if (auto v = lookup("RISEML_DEADLOCK_S")) o.deadlock_shutdown = seconds(*v);
  if (auto v = lookup("RISEML_WAITERS_RUN_CYCLES")) {
    if (v->second != "0" && v->second != "1")
      throw CollectiveError(ErrorKind::invalid_argument,
                            "riseml: RISEML_WAITERS_RUN_CYCLES='" + v->second + "' is not 0 or 1");
    o.waiters_run_cycles = v->second == "1";
  }
  o.gpu = cuda::GpuOptions::from_environment();
  // DYNAMIC (Horovod's word): no file until Engine::start_timeline(path).
  if (auto v = lookup("RISEML_TIMELINE", "HOROVOD_TIMELINE"); v && v->second != "DYNAMIC")
    o.timeline_path = v->second;
  return o;
}

}  // namespace riseml::engine
