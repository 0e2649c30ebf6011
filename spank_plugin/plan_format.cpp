#include "plan_format.hpp"

#include <cstdio>

#include "cpu_list.hpp"

namespace riseml::placement {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string strings(const std::vector<std::string>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + quote(v[i]);
  return out + "]";
}

std::string numbers(const std::vector<unsigned>& v) {
  std::string out = "[";
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "-" : out;
}

}  // namespace

std::string plans_to_json(const std::vector<TaskPlan>& plans) {
  std::string out = "[\n";
  for (std::size_t i = 0; i < plans.size(); ++i) {
    const TaskPlan& p = plans[i];
    out += "  {\n    \"task\": " + std::to_string(p.task) + ",\n";
    out += "    \"gpus\": " + strings(p.gpus) + ",\n";
    out += "    \"cpus\": " + numbers(p.cpus) + ",\n";
    out += "    \"mems\": " + numbers(p.mems) + ",\n";
    out += "    \"nics\": " + strings(p.nics) + ",\n";
    out += "    \"env\": {";
    for (std::size_t k = 0; k < p.env.size(); ++k) {
      out += (k ? ",\n      " : "\n      ") + quote(p.env[k].first) + ": " + quote(p.env[k].second);
    }
    out += p.env.empty() ? "},\n" : "\n    },\n";
    if (!p.unset_env.empty()) out += "    \"unset\": " + strings(p.unset_env) + ",\n";
    out += "    \"warnings\": " + strings(p.warnings) + "\n  }";
    out += i + 1 < plans.size() ? ",\n" : "\n";
  }
  return out + "]\n";
}

std::string plans_to_table(const std::vector<TaskPlan>& plans) {
  auto pad = [](std::string s, std::size_t width) {
    if (s.size() < width) s.append(width - s.size(), ' ');
    return s + " ";
  };
  auto or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  std::string out = pad("task", 5) + pad("gpus", 28) + pad("cpus", 16) + pad("mems", 6) + "nics\n";
  for (const TaskPlan& p : plans) {
    out += pad(std::to_string(p.task), 5) + pad(joined(p.gpus), 28) + pad(or_dash(format_number_list(p.cpus)), 16) +
           pad(or_dash(format_number_list(p.mems)), 6) + joined(p.nics) + "\n";
  }
  for (const TaskPlan& p : plans) {
    out += "\ntask " + std::to_string(p.task) + ":\n";
    for (const auto& [name, value] : p.env) out += "  " + name + "=" + value + "\n";
    for (const auto& name : p.unset_env) out += "  unset " + name + "\n";
    for (const auto& w : p.warnings) out += "  warning: " + w + "\n";
  }
  return out;
}

}  // namespace riseml::placement
