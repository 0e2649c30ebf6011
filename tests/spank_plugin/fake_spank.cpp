#include "fake_spank.hpp"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace riseml::spank::test {

FakeSlurm& fake() {
  static FakeSlurm f;
  return f;
}

void reset_fake() { fake() = FakeSlurm{}; }

namespace {

std::string format(const char* fmt, va_list ap) {
  char buf[4096];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  return buf;
}

}  // namespace
}  // namespace riseml::spank::test

using riseml::spank::test::fake;

extern "C" {

spank_context_t spank_context(void) { return fake().context; }

spank_err_t spank_option_register(spank_t, struct spank_option* opt) {
  fake().options.push_back(*opt);
  return static_cast<spank_err_t>(ESPANK_SUCCESS);
}

spank_err_t spank_get_item(spank_t, spank_item_t item, ...) {
  va_list ap;
  va_start(ap, item);
  spank_err_t rc = static_cast<spank_err_t>(ESPANK_SUCCESS);
  switch (item) {
    case S_JOB_STEPID: *va_arg(ap, std::uint32_t*) = fake().step_id; break;
    case S_JOB_ID: *va_arg(ap, std::uint32_t*) = fake().job_id; break;
    case S_JOB_LOCAL_TASK_COUNT: *va_arg(ap, std::uint32_t*) = fake().local_tasks; break;
    case S_JOB_NODEID: *va_arg(ap, std::uint32_t*) = fake().node_id; break;
    case S_TASK_ID: *va_arg(ap, int*) = fake().task_id; break;
    case S_JOB_NNODES: *va_arg(ap, std::uint32_t*) = fake().nnodes; break;
    case S_JOB_TOTAL_TASK_COUNT:
      *va_arg(ap, std::uint32_t*) = fake().total_tasks != 0 ? fake().total_tasks : fake().local_tasks;
      break;
    case S_TASK_GLOBAL_ID: {
      auto it = fake().global_id_of.find(fake().task_id);
      *va_arg(ap, std::uint32_t*) = it != fake().global_id_of.end()
                                        ? it->second
                                        : fake().first_global_id + static_cast<std::uint32_t>(fake().task_id);
      break;
    }
    default: rc = static_cast<spank_err_t>(ESPANK_BAD_ARG);
  }
  va_end(ap);
  return rc;
}

spank_err_t spank_getenv(spank_t, const char* var, char* buf, int len) {
  auto it = fake().env.find(var);
  if (it == fake().env.end()) return static_cast<spank_err_t>(ESPANK_ENV_NOEXIST);
  if (static_cast<int>(it->second.size()) >= len) return static_cast<spank_err_t>(ESPANK_NOSPACE);
  std::strcpy(buf, it->second.c_str());
  return static_cast<spank_err_t>(ESPANK_SUCCESS);
}

spank_err_t spank_setenv(spank_t, const char* var, const char* val, int overwrite) {
  if (!overwrite && fake().env.count(var)) return static_cast<spank_err_t>(ESPANK_ENV_EXISTS);
  fake().env[var] = val;
  return static_cast<spank_err_t>(ESPANK_SUCCESS);
}

spank_err_t spank_unsetenv(spank_t, const char* var) {
  fake().env.erase(var);
  return static_cast<spank_err_t>(ESPANK_SUCCESS);
}

void slurm_error(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fake().errors.push_back(riseml::spank::test::format(fmt, ap));
  va_end(ap);
}

void slurm_spank_log(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fake().user_log.push_back(riseml::spank::test::format(fmt, ap));
  va_end(ap);
}

void slurm_info(const char*, ...) {}
void slurm_verbose(const char*, ...) {}
void slurm_debug(const char*, ...) {}

}  // extern "C"
