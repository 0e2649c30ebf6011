#include "spank_options.hpp"

#include <exception>
#include <string>

#include "spank_state.hpp"

namespace riseml::spank {
namespace {

int on_riseml_bind(int /*val*/, const char* optarg, int /*remote*/) noexcept {
  try {
    BindRequest request;
    std::string error;
    if (!parse_bind(optarg != nullptr ? optarg : "", request, error)) {
      slurm_error("riseml: %s", error.c_str());
      return -1;
    }
    state().user_bind = request;
    return 0;
  } catch (...) {
    slurm_error("riseml: --riseml-bind: out of memory");
    return -1;
  }
}

char bind_name[] = "riseml-bind";
char bind_arginfo[] = "auto|env|none|verbose";
char bind_usage[] =
    "Place each task from the node's topology: its own GPU(s), CPU cores and memory near them, "
    "the nearest NICs, and the matching environment (CUDA_VISIBLE_DEVICES, NCCL_IB_HCA, "
    "OMP_NUM_THREADS, RISEML_LOCAL_RANK, HOROVOD_RANK, ...). auto: bind everything; env: only set the "
    "environment; none: leave the task alone; verbose (or auto,verbose): print each task's plan.";

struct spank_option options[] = {
    {bind_name, bind_arginfo, bind_usage, 1, 0, on_riseml_bind},
};

}  // namespace

bool register_options(spank_t sp) {
  for (auto& opt : options) {
    if (spank_option_register(sp, &opt) != ESPANK_SUCCESS) {
      slurm_error("riseml: cannot register --%s", opt.name);
      return false;
    }
  }
  return true;
}

}  // namespace riseml::spank
