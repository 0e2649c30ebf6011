#include "job_data_reader.hpp"

#include <pmix.h>

#include "pmix_info_list.hpp"

namespace riseml::pmix {

namespace {

// For a key the server holds back (it does not for the job-level keys read here): how long it
// may wait for it.
constexpr int kServerQuerySeconds = 10;

OwnedValue get_with(const pmix_proc_t& proc, const char* key, const InfoArray& directives) {
  pmix_value_t* value = nullptr;
  if (PMIx_Get(&proc, key, directives.data(), directives.size(), &value) != PMIX_SUCCESS) {
    return nullptr;
  }
  return OwnedValue(value);
}

OwnedValue get_local(const pmix_proc_t& proc, const char* key) {
  // PMIX_OPTIONAL: the local copy only, no request to the server.
  return get_with(proc, key, InfoList().add_bool(PMIX_OPTIONAL, true).finish());
}

}  // namespace

JobDataReader::JobDataReader(const pmix_proc_t& self) {
  pmix_proc_t job{};
  PMIX_LOAD_PROCID(&job, self.nspace, PMIX_RANK_WILDCARD);
  asks_server_ = get_local(job, PMIX_JOB_SIZE) == nullptr;
}

OwnedValue JobDataReader::get(const pmix_proc_t& proc, const char* key) const {
  if (!asks_server_) return get_local(proc, key);
  return get_with(proc, key, InfoList().add_int(PMIX_TIMEOUT, kServerQuerySeconds).finish());
}

}  // namespace riseml::pmix
