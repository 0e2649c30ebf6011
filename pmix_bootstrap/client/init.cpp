// Chooses the Session for how this process was started.
#include <cstdlib>

#include <riseml/pmix/session.hpp>

#include "launch_environment.hpp"
#include "pmix_client_session.hpp"
#include "single_process_session.hpp"

namespace riseml::pmix {

std::unique_ptr<Session> init(const InitOptions& options) {
  LaunchEnvironment launch =
      inspect_launch_environment([](const char* name) { return std::getenv(name); });
  if (launch.has_pmix_server) return PmixClientSession::connect(options);
  if (launch.sibling_tasks_without_pmix) {
    throw BootstrapError(
        "riseml: this process cannot find its peers: " + *launch.sibling_tasks_without_pmix +
        " but gave it no PMIx server; " + how_to_start_hint());
  }
  return std::make_unique<SingleProcessSession>();
}

}  // namespace riseml::pmix
