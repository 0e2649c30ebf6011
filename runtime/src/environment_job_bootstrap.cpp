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
  client->hello(settings->facts.rank, settings->facts.hostname);
  JobBootstrap job{settings->facts, std::make_shared<elastic::StoreRendezvous>(
                                        client, settings->facts.rank, settings->facts.size,
                                        settings->secret)};
  return job;
}

}  // namespace riseml::runtime
