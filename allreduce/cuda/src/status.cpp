#include <riseml/cuda/status.hpp>

#include <cuda_runtime.h>
#include <nccl.h>

namespace riseml::cuda {

bool built_with_cuda() { return true; }

int nccl_version() {
  int v = 0;
  return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}

bool available() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

std::string status() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error
    return std::string("no CUDA device: cudaGetDeviceCount: ") + cudaGetErrorString(e);
  }
  if (n == 0) return "no CUDA device: cudaGetDeviceCount returned 0";
  int runtime = 0, driver = 0, nccl = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  ncclGetVersion(&nccl);
  return std::to_string(n) + " CUDA device(s); CUDA runtime " + std::to_string(runtime) +
         ", driver " + std::to_string(driver) + "; NCCL " + std::to_string(nccl);
}

}  // namespace riseml::cuda
