// How a PMIx client obtains the job secret: from the launcher's job-level data when it put one
// there (riseml-launch does), otherwise rank 0 draws it and shares it through PMIx alone.
#include <pmix.h>
#include <string.h>  // explicit_bzero

#include "job_secret_key.hpp"
#include "pmix_client_session.hpp"
#include "pmix_value_reader.hpp"
#include "random_bytes.hpp"

namespace riseml::pmix {

namespace {

// Scrubs a PMIx value holding secret bytes before PMIx frees it.
void scrub_and_release(OwnedValue value) {
  if (value && value->type == PMIX_BYTE_OBJECT && value->data.bo.bytes != nullptr) {
    explicit_bzero(value->data.bo.bytes, value->data.bo.size);
  }
}

}  // namespace

std::vector<std::byte> PmixClientSession::obtain_job_secret(const JobDataReader& job_data,
                                                            std::chrono::milliseconds timeout) {
  pmix_proc_t job{};
  PMIX_LOAD_PROCID(&job, self_.nspace, PMIX_RANK_WILDCARD);
  if (OwnedValue value = job_data.get(job, kJobSecretKey)) {
    std::optional<std::vector<std::byte>> secret = value_as_bytes(*value);
    scrub_and_release(std::move(value));
    if (!secret || secret->size() != kJobSecretBytes) {
      fail("the launcher's job secret (" + std::string(kJobSecretKey) + ") is not " +
           std::to_string(kJobSecretBytes) + " bytes");
    }
    return std::move(*secret);
  }

  // Every rank takes this branch alike (the job-level data is the same for all, and a rank
  // without the local copy asked the server), so the fence below is collective.
  if (facts_.rank == 0) {
    std::vector<std::byte> drawn(kJobSecretBytes);
    fill_random(drawn);
    put_raw(kJobSecretKey, drawn);
    explicit_bzero(drawn.data(), drawn.size());
  }
  commit();
  fence(timeout);
  std::vector<std::byte> secret = get_raw(0, kJobSecretKey, "job secret", timeout);
  if (secret.size() != kJobSecretBytes) {
    fail("rank 0's job secret is " + std::to_string(secret.size()) + " bytes, not " +
         std::to_string(kJobSecretBytes));
  }
  return secret;
}

}  // namespace riseml::pmix
