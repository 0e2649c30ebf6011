#include <riseml/pmix/session.hpp>
#include <riseml/pmix/session_rendezvous.hpp>
#include <riseml/runtime/job_bootstrap.hpp>

namespace riseml::runtime {

JobBootstrap pmix_job_bootstrap() {
  std::shared_ptr<pmix::Session> session = pmix::init();
  JobBootstrap job;
  job.facts = session->facts();
  job.rendezvous = std::make_shared<pmix::SessionRendezvous>(session);
  return job;
}

}  // namespace riseml::runtime
