// Where a client reads the job-level data its server registered (sizes, maps, the job secret).
// It comes with the connection and is read from that local copy: asking the server can block
// under some servers. But a libpmix 4.2 server hands the copy only to as many connections of
// the job as it has local processes; a forked child of a rank that connects after an earlier
// child (pytest --forked, one child per test) gets none, and then asks the server.
#pragma once

#include <pmix_common.h>

#include "pmix_value_reader.hpp"

namespace riseml::pmix {

class JobDataReader {
 public:
  // Finds out, from the job size, whether `self` has the local copy.
  explicit JobDataReader(const pmix_proc_t& self);

  // `key` of `proc` (a rank, or PMIX_RANK_WILDCARD for the job), or null when unknown.
  OwnedValue get(const pmix_proc_t& proc, const char* key) const;

  bool asks_server() const { return asks_server_; }

 private:
  bool asks_server_ = false;
};

}  // namespace riseml::pmix
