#include "spank_state.hpp"

#include "spank_slurm.hpp"

namespace riseml::spank {

PluginState& state() {
  static PluginState s;
  return s;
}

void reset_state() { state() = PluginState{}; }

bool load_config(int argc, char** argv) {
  std::vector<std::string> args;
  for (int i = 0; i < argc; ++i) args.emplace_back(argv[i] != nullptr ? argv[i] : "");
  std::string error;
  if (!parse_plugin_config(args, state().config, error)) {
    slurm_error("riseml: %s (fix the spank_riseml.so line in plugstack.conf)", error.c_str());
    return false;
  }
  return true;
}

}  // namespace riseml::spank
