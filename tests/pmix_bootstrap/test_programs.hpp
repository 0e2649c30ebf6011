// Where the programs under test were built (set by tests/pmix_bootstrap/CMakeLists.txt).
#pragma once

namespace riseml::testing {

inline constexpr const char* kLaunchProgram = RISEML_LAUNCH_PATH;
inline constexpr const char* kLaunchWithTestHooksProgram = RISEML_LAUNCH_WITH_TEST_HOOKS_PATH;
inline constexpr const char* kProbeProgram = RISEML_PROBE_PATH;
inline constexpr const char* kAbortHelperProgram = RISEML_ABORT_HELPER_PATH;
inline constexpr const char* kRendezvousHelperProgram = RISEML_RENDEZVOUS_HELPER_PATH;
inline constexpr const char* kIntruderHelperProgram = RISEML_INTRUDER_HELPER_PATH;
inline constexpr const char* kFenceStormHelperProgram = RISEML_FENCE_STORM_HELPER_PATH;
inline constexpr const char* kForkedChildrenHelperProgram = RISEML_FORKED_CHILDREN_HELPER_PATH;

}  // namespace riseml::testing
