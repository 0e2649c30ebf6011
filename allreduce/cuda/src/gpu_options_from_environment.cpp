// GpuOptions::from_environment: the one place the GPU half reads its variables (the CPU
// communicator's are read by CommunicatorOptions::from_environment). Built with and without CUDA.
#include <riseml/collective_error.hpp>
#include <riseml/cuda/gpu_options.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

namespace riseml::cuda {

GpuOptions GpuOptions::from_environment() {
  GpuOptions o;
  if (const char* h = std::getenv("HOROVOD_HIERARCHICAL_ALLREDUCE"); h && std::strcmp(h, "1") == 0)
    o.algorithm = GpuAlgorithm::hierarchical;
  if (const char* a = std::getenv("RISEML_GPU_ALGORITHM"); a && *a) {
    const std::string s = a;
    if (s == "nccl" || s == "flat")
      o.algorithm = GpuAlgorithm::flat;
    else if (s == "hierarchical")
      o.algorithm = GpuAlgorithm::hierarchical;
    else
      throw CollectiveError(ErrorKind::invalid_argument,
                            "riseml: RISEML_GPU_ALGORITHM=" + s +
                                ": expected nccl (one NCCL communicator over all ranks) or "
                                "hierarchical (NCCL inside a host, the CPU ring across hosts)");
  }
  if (const char* d = std::getenv("RISEML_GPU_DEVICE"); d && *d) {
    char* end = nullptr;
    const long v = std::strtol(d, &end, 10);
    if (*end != '\0' || v < 0 || v > 1024)
      throw CollectiveError(ErrorKind::invalid_argument,
                            std::string("riseml: RISEML_GPU_DEVICE=") + d +
                                ": expected a CUDA device number (0, 1, ...)");
    o.device = static_cast<int>(v);
  }
  return o;
}

}  // namespace riseml::cuda
