// TF_CONFIG for distributed TensorFlow under Slurm, built at run time by every task:
// each task publishes host:port in a shared folder, waits for all the others, and prints
// the cluster spec with its own role and index. Needs no knowledge of Slurm's task layout.
#pragma once

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace riseml {

struct TfTask {
  std::string role;  // master, ps or worker
  long long index = 0;
};

using TfRoles = std::vector<std::pair<std::string, long long>>;

// "master:1,ps:2,worker:3" -> roles; throws std::invalid_argument with the reason.
TfRoles parse_tf_roles(const std::string& text);

// The JSON TensorFlow reads from TF_CONFIG.
std::string tf_config_json(const TfRoles& roles,
                           const std::vector<std::vector<std::string>>& addresses,
                           const TfTask& self);

// Publishes `address` for `self` under `dir`, waits until every task of `roles` has published
// (or throws std::runtime_error naming the missing ones after `timeout`), returns the JSON.
std::string rendezvous_tf_config(const std::string& dir, const TfRoles& roles,
                                 const TfTask& self, const std::string& address,
                                 std::chrono::milliseconds timeout);

// A TCP port free on this host right now (bound and released), for the task's server.
int pick_free_port();

}  // namespace riseml
