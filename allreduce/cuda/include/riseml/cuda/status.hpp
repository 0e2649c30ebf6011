// Whether this build and this machine can run GPU collectives. Always available, also in a
// build without CUDA (there it says so), so callers can report instead of failing to link.
#pragma once

#include <string>

namespace riseml::cuda {

// True when riseml_cuda was built with CUDA and NCCL (RISEML_CUDA on).
bool built_with_cuda();

// The NCCL library's version code (e.g. 22809 for 2.28.9); 0 in a build without NCCL.
int nccl_version();

// True when built with CUDA and at least one CUDA device is usable now.
bool available();

// One line for users and logs, e.g.
//   "this build has no GPU support (built without CUDA/NCCL: RISEML_CUDA=AUTO: ...)"
//   "no CUDA device: cudaGetDeviceCount: no CUDA-capable device is detected"
//   "2 CUDA device(s); CUDA runtime 13000, driver 13000; NCCL 22809"
std::string status();

}  // namespace riseml::cuda
