// riseml_cuda in a build without CUDA/NCCL: only the status functions, which say so.
#include <riseml/cuda/status.hpp>

namespace riseml::cuda {

bool built_with_cuda() { return false; }
int nccl_version() { return 0; }
bool available() { return false; }
std::string status() {
  return "this build has no GPU support (built without CUDA/NCCL: " RISEML_CUDA_WHY_OFF ")";
}

}  // namespace riseml::cuda
