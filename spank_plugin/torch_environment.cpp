#include "torch_environment.hpp"

#include <cctype>

namespace riseml::spank {

std::optional<std::string> first_host(std::string_view nodelist) {
  // The first entry: up to the first comma outside brackets.
  std::size_t end = 0;
  int depth = 0;
  for (; end < nodelist.size(); ++end) {
    const char c = nodelist[end];
    if (c == '[') ++depth;
    else if (c == ']') --depth;
    else if (c == ',' && depth == 0) break;
    if (depth < 0 || depth > 1) return std::nullopt;
  }
  if (depth != 0) return std::nullopt;
  const std::string_view entry = nodelist.substr(0, end);
  const std::size_t open = entry.find('[');
  std::string host;
  if (open == std::string_view::npos) {
    host = std::string(entry);
  } else {
    const std::size_t close = entry.find(']', open);
    if (open == 0 || close == std::string_view::npos ||
        entry.find('[', close) != std::string_view::npos)
      return std::nullopt;
    // The first number of the range list, as written (zero padding kept).
    std::size_t digits = open + 1;
    while (digits < close && std::isdigit(static_cast<unsigned char>(entry[digits]))) ++digits;
    if (digits == open + 1 || (entry[digits] != '-' && entry[digits] != ',' && entry[digits] != ']'))
      return std::nullopt;
    host = std::string(entry.substr(0, open)) + std::string(entry.substr(open + 1, digits - open - 1)) +
           std::string(entry.substr(close + 1));
  }
  if (host.empty()) return std::nullopt;
  for (char c : host)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_'))
      return std::nullopt;
  return host;
}

std::uint32_t derived_master_port(std::uint32_t job_id, std::uint32_t step_id) {
  return 20000 + static_cast<std::uint32_t>(
                     (static_cast<std::uint64_t>(job_id) * 131 + step_id) % 20000);
}

TorchEnvironment torch_environment(const TorchTaskFacts& f) {
  TorchEnvironment out;
  out.env = {{"RANK", std::to_string(f.global_id)},
             {"WORLD_SIZE", std::to_string(f.total_tasks)},
             {"LOCAL_RANK", std::to_string(f.local_id)},
             {"LOCAL_WORLD_SIZE", std::to_string(f.local_tasks)}};
  std::optional<std::string> addr = f.master_addr;
  if (!addr || addr->empty()) {
    if (f.step_nodelist) addr = first_host(*f.step_nodelist);
    if (!addr) {
      out.not_set = "MASTER_ADDR and MASTER_PORT not set: SLURM_STEP_NODELIST is " +
                    (f.step_nodelist ? "'" + *f.step_nodelist + "', not a host list we read"
                                     : std::string("not set"));
      return out;
    }
  }
  out.env.emplace_back("MASTER_ADDR", *addr);
  out.env.emplace_back("MASTER_PORT", f.master_port && !f.master_port->empty()
                                          ? *f.master_port
                                          : std::to_string(derived_master_port(f.job_id, f.step_id)));
  return out;
}

}  // namespace riseml::spank
