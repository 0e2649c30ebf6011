#include "single_process_session.hpp"

#include <string.h>  // explicit_bzero
#include <unistd.h>

#include <climits>

#include "job_secret_key.hpp"
#include "random_bytes.hpp"

namespace riseml::pmix {

SingleProcessSession::SingleProcessSession() : secret_(kJobSecretBytes) {
  char name[HOST_NAME_MAX + 1] = {};
  facts_.hostname = gethostname(name, sizeof name - 1) == 0 ? name : "unknown-host";
  facts_.nspace = "riseml-single." + std::to_string(getpid());
  facts_.job_id = facts_.nspace;
  fill_random(secret_);
}

SingleProcessSession::~SingleProcessSession() {
  explicit_bzero(secret_.data(), secret_.size());
}

void SingleProcessSession::put(std::string_view key, std::span<const std::byte> value) {
  if (key.empty()) fail("put: the key is empty");
  staged_.insert_or_assign(std::string(key), std::vector<std::byte>(value.begin(), value.end()));
}

// Mirrors PMIx: staged values become visible at the fence after a commit.
void SingleProcessSession::commit() {}

void SingleProcessSession::fence(std::chrono::milliseconds) {
  for (auto& [key, value] : staged_) visible_.insert_or_assign(key, std::move(value));
  staged_.clear();
}

void SingleProcessSession::fence_among(const std::vector<int>& ranks,
                                       std::chrono::milliseconds timeout) {
  if (ranks != std::vector<int>{0}) fail("fence_among: this job has rank 0 only");
  fence(timeout);
}

std::vector<std::byte> SingleProcessSession::get(int rank, std::string_view key,
                                                 std::chrono::milliseconds) {
  if (rank != 0) fail("get: rank " + std::to_string(rank) + " is not in this job of 1 rank");
  auto found = visible_.find(key);
  if (found == visible_.end()) {
    fail("get: no key '" + std::string(key) + "' from rank 0 (put, commit and fence first)");
  }
  return found->second;
}

void SingleProcessSession::fail(const std::string& what) const {
  throw BootstrapError("riseml: rank 0 of 1 on host " + facts_.hostname +
                       " (single process, no launcher): " + what);
}

}  // namespace riseml::pmix
