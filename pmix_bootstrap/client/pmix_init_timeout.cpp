#include "pmix_init_timeout.hpp"

#include <charconv>
#include <string_view>

#include <riseml/pmix/bootstrap_error.hpp>

namespace riseml::pmix {

namespace {

constexpr const char* kVariable = "RISEML_PMIX_INIT_TIMEOUT_S";
constexpr long kMaxSeconds = 7L * 24 * 3600;

}  // namespace

std::chrono::milliseconds pmix_init_timeout(std::optional<std::chrono::milliseconds> option,
                                            const EnvironmentLookup& getenv,
                                            const std::string& who) {
  if (option) return *option;
  const char* text = getenv(kVariable);
  if (text == nullptr) return kDefaultPmixInitTimeout;
  std::string_view view(text);
  long seconds = 0;
  auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), seconds);
  if (error != std::errc() || end != view.data() + view.size() || seconds < 1 ||
      seconds > kMaxSeconds) {
    throw BootstrapError("riseml: " + who + ": " + kVariable + "='" + std::string(view) +
                         "' is not a whole number of seconds from 1 to " +
                         std::to_string(kMaxSeconds) +
                         "; set it to how long PMIx_Init may take (say 120), or unset it for " +
                         std::to_string(kDefaultPmixInitTimeout.count() / 1000) + " s");
  }
  return std::chrono::seconds(seconds);
}

}  // namespace riseml::pmix
