#include "riseml/model/links.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

namespace riseml::model {

namespace {

// Splits "25gbit/s" into 25 and "gbit/s" (the unit lower-cased, spaces dropped).
bool split(const std::string& text, double& value, std::string& unit) {
  std::size_t used = 0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    return false;
  }
  if (!std::isfinite(value)) return false;
  unit.clear();
  for (char c : text.substr(used))
    if (!std::isspace(static_cast<unsigned char>(c))) unit += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return true;
}

}  // namespace

std::optional<double> parse_rate(const std::string& text) {
  double v = 0;
  std::string u;
  if (!split(text, v, u)) return std::nullopt;
  if (u.size() > 2 && u.substr(u.size() - 2) == "/s") u.resize(u.size() - 2);
  if (u.size() > 3 && u.substr(u.size() - 3) == "bps") u = u.substr(0, u.size() - 3) + "bit";  // gbps: bits
  double f = 0;
  if (u.empty() || u == "b" || u == "byte" || u == "bytes") f = 1;
  else if (u == "kbit") f = 1e3 / 8;
  else if (u == "kb" || u == "kbyte") f = 1e3;
  else if (u == "mbit") f = 1e6 / 8;
  else if (u == "gbit" || u == "g") f = 1e9 / 8;
  else if (u == "tbit") f = 1e12 / 8;
  else if (u == "mb" || u == "mbyte") f = 1e6;
  else if (u == "gb" || u == "gbyte") f = 1e9;
  else if (u == "tb" || u == "tbyte") f = 1e12;
  else if (u == "gib") f = 1024.0 * 1024 * 1024;
  else if (u == "mib") f = 1024.0 * 1024;
  else return std::nullopt;
  if (!(v > 0)) return std::nullopt;
  return v * f;
}

std::optional<double> parse_duration(const std::string& text) {
  double v = 0;
  std::string u;
  if (!split(text, v, u)) return std::nullopt;
  double f = 0;
  if (u.empty() || u == "s") f = 1;
  else if (u == "ms") f = 1e-3;
  else if (u == "us") f = 1e-6;
  else if (u == "ns") f = 1e-9;
  else return std::nullopt;
  if (v < 0) return std::nullopt;
  return v * f;
}

std::optional<double> parse_bytes(const std::string& text) {
  double v = 0;
  std::string u;
  if (!split(text, v, u)) return std::nullopt;
  double f = 0;
  if (u.empty() || u == "b") f = 1;
  else if (u == "k" || u == "kib") f = 1024;
  else if (u == "m" || u == "mib") f = 1024.0 * 1024;
  else if (u == "g" || u == "gib") f = 1024.0 * 1024 * 1024;
  else if (u == "kb") f = 1e3;
  else if (u == "mb") f = 1e6;
  else if (u == "gb") f = 1e9;
  else return std::nullopt;
  if (v < 0) return std::nullopt;
  return v * f;
}

Cluster with_engine_scaled(Cluster c, double f) {
  c.inter.latency_s *= f;
  c.inter.bandwidth_Bps /= f;
  c.intra.latency_s *= f;
  c.intra.bandwidth_Bps /= f;
  c.reduce_s_per_byte *= f;
  if (c.copy_Bps > 0) c.copy_Bps /= f;
  c.cycle_overhead_s *= f;
  if (c.host_path.on) {
    c.host_path.staging_Bps /= f;
    c.host_path.reduce_s_per_byte *= f;
    c.host_path.latency_s *= f;
  }
  return c;
}

std::string format_rate(double bps) {
  char buf[48];
  if (bps >= 1e9) std::snprintf(buf, sizeof buf, "%.2f GB/s", bps / 1e9);
  else std::snprintf(buf, sizeof buf, "%.1f MB/s", bps / 1e6);
  return buf;
}

std::string format_duration(double s) {
  char buf[48];
  if (s >= 1) std::snprintf(buf, sizeof buf, "%.2f s", s);
  else if (s >= 1e-3) std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

}  // namespace riseml::model
