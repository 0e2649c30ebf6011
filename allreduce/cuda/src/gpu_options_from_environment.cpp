// GpuOptions::from_environment: the one place the GPU half reads its variables (the CPU
// communicator's are read by CommunicatorOptions::from_environment).
#include <riseml/cuda/gpu_collectives.hpp>

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
  const CommunicatorOptions cpu = CommunicatorOptions::from_environment();
  o.timeout = cpu.timeout;
  return o;
}

}  // namespace riseml::cuda
