// Reads this process's JobFacts from the PMIx server, with fallbacks for keys a server omits:
//   local rank  <- position in PMIX_LOCAL_PEERS       local size <- count of PMIX_LOCAL_PEERS
//   node rank   <- local rank                          hostname   <- gethostname()
//   node count  <- PMIx_Resolve_nodes, else 1          node id    <- position of the hostname there
//   job id      <- the nspace
#pragma once

#include <pmix_common.h>

#include <riseml/pmix/job_facts.hpp>

#include "job_data_reader.hpp"

namespace riseml::pmix {

// Throws BootstrapError when even the job size is unknown.
JobFacts query_job_facts(const pmix_proc_t& self, const JobDataReader& data);

}  // namespace riseml::pmix
