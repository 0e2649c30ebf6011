#include <riseml/elastic/worker_settings.hpp>

#include "store_protocol.hpp"

namespace riseml::elastic {

namespace {

constexpr const char* by_driver = " (riseml-elastic sets it for each worker; start workers through riseml-elastic, not by hand)";

std::string required(const Lookup& lookup, const std::string& name) {
  auto v = lookup(name);
  if (!v || v->empty()) throw SettingsError(name + " is not set" + by_driver);
  return *v;
}

int number(const Lookup& lookup, const std::string& name, int at_most) {
  const std::string text = required(lookup, name);
  const auto v = protocol::parse_count(text);
  if (!v || *v > at_most)
    throw SettingsError(name + "='" + text.substr(0, 40) + "' is not a number from 0 to " +
                        std::to_string(at_most) + by_driver);
  return static_cast<int>(*v);
}

std::vector<std::byte> from_hex(const std::string& name, const std::string& text) {
  const auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (text.size() < 32 || text.size() % 2 != 0 || text.size() > 256)
    throw SettingsError(name + " is not a secret of 16-128 bytes in hex" + by_driver);
  std::vector<std::byte> out;
  for (std::size_t i = 0; i < text.size(); i += 2) {
    const int hi = digit(text[i]), lo = digit(text[i + 1]);
    if (hi < 0 || lo < 0) throw SettingsError(name + " is not hexadecimal" + by_driver);
    out.push_back(static_cast<std::byte>(hi * 16 + lo));
  }
  return out;
}

}  // namespace

std::string to_hex(const std::vector<std::byte>& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (std::byte b : bytes) {
    out.push_back(digits[static_cast<unsigned>(b) >> 4]);
    out.push_back(digits[static_cast<unsigned>(b) & 15]);
  }
  return out;
}

std::optional<WorkerSettings> worker_settings(const Lookup& lookup, const std::string& hostname) {
  const auto store = lookup("RISEML_ELASTIC_STORE");
  if (!store) return std::nullopt;
  constexpr int most = 1 << 20;
  WorkerSettings s;
  s.store_address = required(lookup, "RISEML_ELASTIC_STORE");
  s.secret = from_hex("RISEML_ELASTIC_SECRET", required(lookup, "RISEML_ELASTIC_SECRET"));
  pmix::JobFacts& f = s.facts;
  const int base = number(lookup, "RISEML_ELASTIC_RANK_BASE", most);
  f.size = number(lookup, "RISEML_ELASTIC_SIZE", most);
  f.node_id = number(lookup, "RISEML_ELASTIC_NODE_ID", most);
  f.num_nodes = number(lookup, "RISEML_ELASTIC_NUM_NODES", most);
  // srun's, for the step of this node's tasks.
  s.rank_limit = number(lookup, "RISEML_ELASTIC_RANK_LIMIT", most);
  s.joining = lookup("RISEML_ELASTIC_JOINING").value_or("") == "1";
  // A local launch (riseml-elastic --launcher local) numbers the workers of a host itself.
  const bool local = lookup("RISEML_ELASTIC_LOCAL_RANK").has_value();
  f.local_rank = number(lookup, local ? "RISEML_ELASTIC_LOCAL_RANK" : "SLURM_PROCID", most);
  f.local_size = number(lookup, local ? "RISEML_ELASTIC_LOCAL_SIZE" : "SLURM_NTASKS", most);
  f.node_rank = f.local_rank;
  f.rank = base + f.local_rank;
  if (f.size < 1 || f.rank >= f.size || f.size > s.rank_limit || f.local_rank >= f.local_size || f.num_nodes < 1 ||
      f.node_id >= f.num_nodes)
    throw SettingsError("the elastic worker's numbers disagree: rank " + std::to_string(f.rank) +
                        " of " + std::to_string(f.size) + ", task " + std::to_string(f.local_rank) +
                        " of " + std::to_string(f.local_size) + " on node " +
                        std::to_string(f.node_id) + " of " + std::to_string(f.num_nodes) + by_driver);
  f.hostname = hostname;
  f.job_id = lookup("SLURM_JOB_ID").value_or("elastic");
  f.nspace = "riseml-elastic." + f.job_id;
  return s;
}

std::vector<std::pair<std::string, std::string>> worker_environment(const NodeAssignment& a) {
  return {{"RISEML_ELASTIC_STORE", a.store_address},
          {"RISEML_ELASTIC_SECRET", a.secret_hex},
          {"RISEML_ELASTIC_RANK_BASE", std::to_string(a.rank_base)},
          {"RISEML_ELASTIC_SIZE", std::to_string(a.size)},
          {"RISEML_ELASTIC_NODE_ID", std::to_string(a.node_id)},
          {"RISEML_ELASTIC_NUM_NODES", std::to_string(a.num_nodes)},
          {"RISEML_ELASTIC_RANK_LIMIT", std::to_string(a.rank_limit)},
          {"RISEML_ELASTIC_JOINING", a.joining ? "1" : "0"}};
}

}  // namespace riseml::elastic

namespace riseml::elastic {
std::vector<std::byte> new_job_secret() {
  const protocol::Nonce n = protocol::random_nonce();
  std::vector<std::byte> out(n.size());
  for (std::size_t i = 0; i < n.size(); ++i) out[i] = static_cast<std::byte>(n[i]);
  return out;
}
}  // namespace riseml::elastic
