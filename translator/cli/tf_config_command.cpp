// riseml tf-config: run inside each task of a distributed TensorFlow job; prints TF_CONFIG.
#include <unistd.h>

#include <cstdlib>
#include <iostream>

#include "../printable_text.hpp"
#include "../tf_config.hpp"
#include "commands.hpp"

namespace riseml::cli {

namespace {
std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}
}  // namespace

int tf_config(const std::string& role_arg, long long index_arg, const std::string& roles_arg,
              const std::string& dir_arg, double timeout_s) {
  try {
    std::string role = role_arg.empty() ? env_or("RISEML_TF_ROLE", "") : role_arg;
    std::string roles_text = roles_arg.empty() ? env_or("RISEML_TF_ROLES", "") : roles_arg;
    std::string dir = dir_arg.empty() ? env_or("RISEML_TF_DIR", "") : dir_arg;
    long long index = index_arg >= 0 ? index_arg : std::atoll(env_or("SLURM_PROCID", "0").c_str());
    if (role.empty() || roles_text.empty() || dir.empty()) {
      std::cerr << "riseml tf-config: needs the role, the roles and a shared folder: give "
                   "--role, --roles and --dir, or run it inside a job made by riseml translate "
                   "(RISEML_TF_ROLE, RISEML_TF_ROLES, RISEML_TF_DIR)\n";
      return kExitBadInput;
    }
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    std::string address = std::string(host) + ":" + std::to_string(pick_free_port());
    auto json = rendezvous_tf_config(dir, parse_tf_roles(roles_text), {role, index}, address,
                                     std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000)));
    std::cout << json << '\n';
    return kExitOk;
  } catch (const std::invalid_argument& e) {
    std::cerr << "riseml tf-config: " << printable(e.what()) << '\n';
    return kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "riseml tf-config: " << printable(e.what()) << '\n';
    return kExitFailure;
  }
}

}  // namespace riseml::cli
