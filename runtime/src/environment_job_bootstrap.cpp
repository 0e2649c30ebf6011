#include <riseml/collective_error.hpp>
#include <riseml/elastic/store_client.hpp>
#include <riseml/elastic/store_rendezvous.hpp>
#include <riseml/elastic/worker_settings.hpp>
#include <riseml/runtime/job_bootstrap.hpp>

#include <unistd.h>

#include <cstdlib>

namespace riseml::runtime {

JobBootstrap environment_job_bootstrap() {
  const auto lookup = [](const std::string& name) -> std::optional<std::string> {
    const char* v = std::getenv(name.c_str());
    if (v == nullptr) return std::nullopt;
    return std::string(v);
  };
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  std::optional<elastic::WorkerSettings> settings;
  try {
    settings = elastic::worker_settings(lookup, host);
  } catch (const elastic::SettingsError& e) {
    throw CollectiveError(ErrorKind::setup, e.what());
  }
  if (!settings) return pmix_job_bootstrap();
  // The driver's store is up before any worker starts; a minute covers a slow node's start.
  auto client = std::make_shared<elastic::StoreClient>(settings->store_address, settings->secret,
                                                       std::chrono::seconds(60));
  // A spare started into a running job waits in its first fence until the others reach their
  // next commit (they see the announced world then).
  const auto join_wait = settings->joining ? std::chrono::hours(1) : std::chrono::hours(0);
  // It says it is up and waits for a world that has it: the first world is there before the
  // first workers start (unless the driver waits for the minimum of workers); a joiner's comes
  // when all of its node's workers are up (one that dies on its way in is in no world, so no one
  // waits for it).
  client->join(settings->facts.rank, std::chrono::hours(1));
  JobBootstrap job;
  job.facts = settings->facts;
  job.rendezvous = std::make_shared<elastic::StoreRendezvous>(
      client, settings->facts.rank, settings->rank_limit, settings->secret, join_wait);
  job.announced_world = [client]() -> std::optional<AnnouncedWorld> {
    auto a = client->announced_world();
    if (!a) return std::nullopt;
    return AnnouncedWorld{a->number, std::move(a->members), std::move(a->why)};
  };
  job.pending_world = [client] { return client->pending_world(); };
  job.report_failure = [client, rank = settings->facts.rank](long long world,
                                                             const std::vector<int>& culprits) {
    client->report_failure(rank, world, culprits);
  };
  return job;
}

}  // namespace riseml::runtime
