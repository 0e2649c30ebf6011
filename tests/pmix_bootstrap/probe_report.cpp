#include "probe_report.hpp"

#include <set>
#include <sstream>

namespace riseml::testing {

namespace {

std::map<std::string, std::string> fields_of(const std::string& text) {
  std::map<std::string, std::string> fields;
  std::istringstream words(text);
  std::string word;
  while (words >> word) {
    std::size_t equals = word.find('=');
    if (equals != std::string::npos) fields[word.substr(0, equals)] = word.substr(equals + 1);
  }
  return fields;
}

int as_int(const std::map<std::string, std::string>& fields, const std::string& key) {
  auto found = fields.find(key);
  if (found == fields.end()) return -1;
  try {
    return std::stoi(found->second);
  } catch (...) {
    return -1;
  }
}

std::string as_string(const std::map<std::string, std::string>& fields, const std::string& key) {
  auto found = fields.find(key);
  return found == fields.end() ? "" : found->second;
}

}  // namespace

ProbeReport parse_probe_output(const std::string& out) {
  ProbeReport report;
  std::istringstream lines(out);
  std::string line;
  while (std::getline(lines, line)) {
    std::size_t probe = line.find("probe rank=");
    if (probe == std::string::npos) {
      if (!line.empty()) report.unparsed.push_back(line);
      continue;
    }
    std::string tag = line.substr(0, probe);
    auto fields = fields_of(line.substr(probe));
    if (line.find(" exchange ok ") != std::string::npos) {
      ProbeExchange exchange;
      exchange.rank = as_int(fields, "rank");
      exchange.peers = as_int(fields, "peers");
      exchange.hosts = as_int(fields, "hosts");
      exchange.fence_us = as_int(fields, "fence_us");
      exchange.sync_fence_us = as_int(fields, "sync_fence_us");
      report.exchanges.push_back(exchange);
      continue;
    }
    ProbeFacts facts;
    facts.rank = as_int(fields, "rank");
    facts.size = as_int(fields, "size");
    facts.local_rank = as_int(fields, "local_rank");
    facts.local_size = as_int(fields, "local_size");
    facts.node_rank = as_int(fields, "node_rank");
    facts.node_id = as_int(fields, "node_id");
    facts.nnodes = as_int(fields, "nnodes");
    facts.host = as_string(fields, "host");
    facts.nspace = as_string(fields, "nspace");
    facts.jobid = as_string(fields, "jobid");
    facts.tag = tag;
    report.facts.push_back(facts);
  }
  return report;
}

std::vector<std::string> check_consistent_job(const ProbeReport& report, int expected_size,
                                              bool expect_tags) {
  std::vector<std::string> problems;
  auto problem = [&](const std::string& text) { problems.push_back(text); };

  if (static_cast<int>(report.facts.size()) != expected_size) {
    problem("expected " + std::to_string(expected_size) + " fact lines, got " +
            std::to_string(report.facts.size()));
  }
  std::set<int> ranks;
  std::map<std::string, std::vector<const ProbeFacts*>> by_host;
  std::map<std::string, std::set<int>> node_ids_of_host;
  for (const ProbeFacts& facts : report.facts) {
    std::string who = "rank " + std::to_string(facts.rank) + ": ";
    if (facts.rank < 0 || facts.rank >= expected_size) problem(who + "rank out of range");
    if (!ranks.insert(facts.rank).second) problem(who + "reported twice");
    if (facts.size != expected_size) problem(who + "size=" + std::to_string(facts.size));
    if (facts.nspace != report.facts.front().nspace) problem(who + "another nspace");
    if (facts.jobid != report.facts.front().jobid) problem(who + "another job id");
    if (facts.nnodes != report.facts.front().nnodes) problem(who + "another node count");
    if (facts.host.empty()) problem(who + "no host");
    std::string want_tag = expect_tags ? "[" + std::to_string(facts.rank) + "] " : "";
    if (facts.tag != want_tag) problem(who + "line tagged '" + facts.tag + "'");
    by_host[facts.host].push_back(&facts);
    node_ids_of_host[facts.host].insert(facts.node_id);
  }

  std::set<int> node_ids;
  for (const auto& [host, members] : by_host) {
    std::set<int> local_ranks;
    for (const ProbeFacts* facts : members) {
      if (facts->local_size != static_cast<int>(members.size())) {
        problem("rank " + std::to_string(facts->rank) +
                ": local_size=" + std::to_string(facts->local_size) + " but " +
                std::to_string(members.size()) + " ranks on " + host);
      }
      local_ranks.insert(facts->local_rank);
    }
    if (local_ranks.size() != members.size() || *local_ranks.begin() != 0 ||
        *local_ranks.rbegin() != static_cast<int>(members.size()) - 1) {
      problem("local ranks on " + host + " are not 0.." + std::to_string(members.size() - 1));
    }
    if (node_ids_of_host[host].size() != 1) problem("host " + host + " has several node ids");
    node_ids.insert(*node_ids_of_host[host].begin());
  }
  if (!report.facts.empty()) {
    int nnodes = report.facts.front().nnodes;
    if (nnodes != static_cast<int>(by_host.size())) {
      problem("nnodes=" + std::to_string(nnodes) + " but " + std::to_string(by_host.size()) +
              " hosts");
    }
    if (node_ids.size() != by_host.size() || *node_ids.begin() != 0 ||
        *node_ids.rbegin() != nnodes - 1) {
      problem("node ids are not 0.." + std::to_string(nnodes - 1) + ", one per host");
    }
  }

  std::set<int> exchanged;
  for (const ProbeExchange& exchange : report.exchanges) {
    if (!exchanged.insert(exchange.rank).second) {
      problem("rank " + std::to_string(exchange.rank) + ": exchanged twice");
    }
    if (exchange.fence_us < 0 || exchange.sync_fence_us < 0) {
      problem("rank " + std::to_string(exchange.rank) + ": no fence times");
    }
    if (exchange.peers != expected_size) {
      problem("rank " + std::to_string(exchange.rank) + ": saw " + std::to_string(exchange.peers) +
              " peers");
    }
  }
  if (static_cast<int>(exchanged.size()) != expected_size) {
    problem(std::to_string(exchanged.size()) + " of " + std::to_string(expected_size) +
            " ranks completed the exchange");
  }
  return problems;
}

}  // namespace riseml::testing
