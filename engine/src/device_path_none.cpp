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

std::unique_ptr<DevicePath> DevicePath::create(Communicator&, int, const cuda::GpuOptions&) { refuse(); }

void copy_device_to_device(void*, const void*, std::size_t, void*) { refuse(); }

}  // namespace riseml::engine
