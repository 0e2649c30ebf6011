// A build without GPU support: every device request is refused with the reason.
#include "device_path.hpp"

#include <riseml/cuda/status.hpp>

namespace riseml::engine {

namespace {
[[noreturn]] void refuse() {
  throw CollectiveError(ErrorKind::invalid_argument,
                        "riseml: a GPU tensor was given, but " + cuda::status() +
                            "; rebuild with CUDA and NCCL (cmake -DRISEML_CUDA=ON) or pass "
                            "host tensors");
}
}  // namespace

ReadyMarker mark_ready(int, void*) { refuse(); }

std::unique_ptr<DevicePath> DevicePath::create(Communicator& cpu, int, const cuda::GpuOptions& options) {
  if (options.host_standin) return make_host_standin_path(cpu);
  refuse();
}


}  // namespace riseml::engine
