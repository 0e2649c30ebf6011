// The `riseml` subcommands; each returns the process exit status.
#pragma once

#include <string>

namespace riseml::cli {

// Exit statuses: 0 ok, 2 the user's input is wrong (nothing written), 1 anything else.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

int translate(const std::string& file, const std::string& output, const std::string& site);
int validate(const std::string& file, const std::string& site);
int submit(const std::string& file, const std::string& site, const std::string& sbatch,
           bool dry_run);
int run_local(const std::string& file, const std::string& site, long long processes,
              long long index);
int tf_config(const std::string& role, long long index, const std::string& roles,
              const std::string& dir, double timeout_s);

}  // namespace riseml::cli
