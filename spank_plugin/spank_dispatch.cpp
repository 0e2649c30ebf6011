// The SPANK entry points: each switches on spank_context() and calls the file for that context
// (spank_options.cpp for srun/sbatch, spank_stepd.cpp for slurmstepd). Nothing thrown may reach
// Slurm: every entry point catches everything and reports it with slurm_error("riseml: ...").
#include <exception>

#include "spank_options.hpp"
#include "spank_slurm.hpp"
#include "spank_state.hpp"
#include "spank_stepd.hpp"

// Everything else is hidden (CXX_VISIBILITY_PRESET) and the version script keeps it so.
#define RISEML_EXPORT __attribute__((visibility("default")))

extern "C" {
RISEML_EXPORT extern const char plugin_name[];
RISEML_EXPORT extern const char plugin_type[];
RISEML_EXPORT extern const unsigned int plugin_version;
const char plugin_name[] = "riseml";
const char plugin_type[] = "spank";
const unsigned int plugin_version = SLURM_VERSION_NUMBER;
}

namespace rs = riseml::spank;

namespace {

template <typename F>
int guarded(const char* where, F f) noexcept {
  try {
    return f();
  } catch (const std::exception& e) {
    slurm_error("riseml: %s failed: %s", where, e.what());
  } catch (...) {
    slurm_error("riseml: %s failed", where);
  }
  return -1;
}

}  // namespace

extern "C" RISEML_EXPORT int slurm_spank_init(spank_t sp, int argc, char** argv) {
  return guarded("init", [&] {
    switch (spank_context()) {
      case S_CTX_LOCAL:      // srun
      case S_CTX_ALLOCATOR:  // sbatch, salloc
      case S_CTX_REMOTE:     // slurmstepd
        if (!rs::load_config(argc, argv)) return -1;
        return rs::register_options(sp) ? 0 : -1;
      default:
        return 0;
    }
  });
}

extern "C" RISEML_EXPORT int slurm_spank_init_post_opt(spank_t sp, int /*argc*/, char** /*argv*/) {
  return guarded("init_post_opt", [&] { return spank_context() == S_CTX_REMOTE ? rs::stepd_init_post_opt(sp) : 0; });
}

extern "C" RISEML_EXPORT int slurm_spank_user_init(spank_t sp, int /*argc*/, char** /*argv*/) {
  return guarded("user_init", [&] { return spank_context() == S_CTX_REMOTE ? rs::stepd_user_init(sp) : 0; });
}

extern "C" RISEML_EXPORT int slurm_spank_task_init(spank_t sp, int /*argc*/, char** /*argv*/) {
  return guarded("task_init", [&] { return spank_context() == S_CTX_REMOTE ? rs::stepd_task_init(sp) : 0; });
}

extern "C" RISEML_EXPORT int slurm_spank_exit(spank_t /*sp*/, int /*argc*/, char** /*argv*/) {
  return guarded("exit", [] {
    rs::reset_state();
    return 0;
  });
}
