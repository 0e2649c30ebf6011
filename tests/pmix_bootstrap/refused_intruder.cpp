#include "refused_intruder.hpp"

#include <filesystem>
#include <fstream>
#include <thread>

#include "test_programs.hpp"

namespace riseml::testing {

bool wait_for_file(const std::string& path, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!std::filesystem::exists(path)) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

std::string write_environment_then_wait(const std::string& env_file, const std::string& go_file) {
  return "if [ \"$PMIX_RANK\" = 0 ]; then env > " + env_file + ".tmp && mv " + env_file + ".tmp " +
         env_file + "; fi; until [ -e " + go_file + " ]; do sleep 0.05; done";
}

ProcessResult run_intruder(const std::string& env_file) {
  EnvironmentChanges changes = without_launcher_variables();
  std::ifstream in(env_file);
  for (std::string line; std::getline(in, line);) {
    std::size_t equals = line.find('=');
    if (line.starts_with("PMIX_") && equals != std::string::npos) {
      changes[line.substr(0, equals)] = line.substr(equals + 1);
    }
  }
  return run_process({kIntruderHelperProgram}, changes, std::chrono::seconds(30), kNobody);
}

}  // namespace riseml::testing
