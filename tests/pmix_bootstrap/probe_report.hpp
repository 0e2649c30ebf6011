// Parses what riseml-pmix-probe prints under a launcher and checks that the job is consistent:
// every rank exactly once, local ranks dense per node, node ids consistent with hosts, and
// every rank saw every peer's key.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace riseml::testing {

struct ProbeFacts {
  int rank = -1;
  int size = -1;
  int local_rank = -1;
  int local_size = -1;
  int node_rank = -1;
  int node_id = -1;
  int nnodes = -1;
  std::string host;
  std::string nspace;
  std::string jobid;
  std::string tag;  // "[R] " when the launcher tagged the line, else empty
};

struct ProbeExchange {
  int rank = -1;
  int peers = -1;
  int hosts = -1;
  long fence_us = -1;
  long sync_fence_us = -1;
};

struct ProbeReport {
  std::vector<ProbeFacts> facts;
  std::vector<ProbeExchange> exchanges;
  std::vector<std::string> unparsed;  // lines that are not probe lines
};

ProbeReport parse_probe_output(const std::string& out);

// Empty when consistent, else one message per problem.
std::vector<std::string> check_consistent_job(const ProbeReport& report, int expected_size,
                                              bool expect_tags);

}  // namespace riseml::testing
