#include <riseml/torch_distributed/pmix_world.hpp>

#include <riseml/pmix/bootstrap_error.hpp>
#include <riseml/tcp_socket.hpp>

#include <cstring>
#include <span>

namespace riseml::torch_distributed {

namespace {
constexpr const char* kRootKey = "riseml-torch-store";
}

PmixWorld::PmixWorld(std::chrono::milliseconds timeout) : timeout_(timeout) {
  pmix::InitOptions options;
  options.timeout = timeout;
  session_ = pmix::init(options);
  facts_ = session_->facts();
  secret_ = session_->job_secret();
}

void PmixWorld::close() { session_.reset(); }

std::string PmixWorld::root_address(const std::string& iface) { return listen_address(iface); }

std::string PmixWorld::share_root(const std::string& root_endpoint) {
  if (!session_)
    throw pmix::BootstrapError("riseml: the PMIx world was closed (at exit); no process group can be formed now");
  if (facts().rank == 0) {
    session_->put(kRootKey, std::as_bytes(std::span(root_endpoint.data(), root_endpoint.size())));
  }
  session_->commit();
  session_->fence(timeout_);
  const std::vector<std::byte> value = session_->get(0, kRootKey, timeout_);
  std::string endpoint(value.size(), '\0');
  if (!value.empty()) std::memcpy(endpoint.data(), value.data(), value.size());
  return endpoint;
}

}  // namespace riseml::torch_distributed
