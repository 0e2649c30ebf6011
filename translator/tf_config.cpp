#include "tf_config.hpp"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <riseml/common/atomic_file.hpp>

namespace riseml {

TfRoles parse_tf_roles(const std::string& text) {
  TfRoles roles;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string item = text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    size_t colon = item.find(':');
    if (colon == std::string::npos || colon == 0)
      throw std::invalid_argument("'" + item + "' is not ROLE:COUNT");
    std::string role = item.substr(0, colon);
    if (role != "master" && role != "ps" && role != "worker" && role != "chief")
      throw std::invalid_argument("unknown role '" + role + "' (master, chief, ps, worker)");
    long long count = 0;
    try {
      size_t used = 0;
      count = std::stoll(item.substr(colon + 1), &used);
      if (used != item.size() - colon - 1) throw std::invalid_argument("");
    } catch (const std::exception&) {
      throw std::invalid_argument("'" + item + "': the count is not a number");
    }
    if (count < 0 || count > 100000) throw std::invalid_argument("'" + item + "': bad count");
    roles.emplace_back(role, count);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return roles;
}

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) continue;
    out += c;
  }
  return out + "\"";
}

std::string task_file(const std::string& dir, const std::string& role, long long index) {
  return (std::filesystem::path(dir) / (role + "-" + std::to_string(index))).string();
}

}  // namespace

std::string tf_config_json(const TfRoles& roles,
                           const std::vector<std::vector<std::string>>& addresses,
                           const TfTask& self) {
  std::string cluster;
  for (size_t r = 0; r < roles.size(); ++r) {
    if (roles[r].second == 0) continue;
    std::string list;
    for (const auto& a : addresses[r]) list += (list.empty() ? "" : ", ") + json_string(a);
    cluster += (cluster.empty() ? "" : ", ") + json_string(roles[r].first) + ": [" + list + "]";
  }
  return "{\"cluster\": {" + cluster + "}, \"task\": {\"type\": " + json_string(self.role) +
         ", \"index\": " + std::to_string(self.index) + "}, \"environment\": \"cloud\"}";
}

std::string rendezvous_tf_config(const std::string& dir, const TfRoles& roles,
                                 const TfTask& self, const std::string& address,
                                 std::chrono::milliseconds timeout) {
  bool known = false;
  for (const auto& [role, count] : roles)
    if (role == self.role && self.index >= 0 && self.index < count) known = true;
  if (!known)
    throw std::runtime_error("task " + self.role + " " + std::to_string(self.index) +
                             " is not part of the cluster");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir + ": " + ec.message());
  std::string err = write_file_atomically(task_file(dir, self.role, self.index), address + "\n");
  if (!err.empty()) throw std::runtime_error(err);

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    std::vector<std::vector<std::string>> addresses;
    std::string missing;
    for (const auto& [role, count] : roles) {
      addresses.emplace_back();
      for (long long i = 0; i < count; ++i) {
        std::ifstream in(task_file(dir, role, i));
        std::string line;
        if (in && std::getline(in, line) && !line.empty()) {
          addresses.back().push_back(line);
        } else {
          missing += (missing.empty() ? "" : ", ") + role + " " + std::to_string(i);
        }
      }
    }
    if (missing.empty()) return tf_config_json(roles, addresses, self);
    if (std::chrono::steady_clock::now() >= deadline) {
      throw std::runtime_error("these tasks did not start within the timeout: " + missing +
                               " (is " + dir + " on a file system every node shares?)");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

int pick_free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) throw std::runtime_error("socket() failed");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    close(fd);
    throw std::runtime_error("cannot find a free TCP port");
  }
  int port = ntohs(addr.sin_port);
  close(fd);
  return port;
}

}  // namespace riseml
