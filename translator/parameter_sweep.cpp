#include "parameter_sweep.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>

namespace riseml {

namespace {

// Digits after the decimal point as written ('0.25' -> 2, '1e-6' -> 6, '3' -> 0).
int written_decimals(const std::string& text) {
  int decimals = 0;
  auto dot = text.find('.');
  auto exp = text.find_first_of("eE");
  if (dot != std::string::npos) {
    size_t end = exp == std::string::npos ? text.size() : exp;
    decimals = static_cast<int>(end - dot - 1);
  }
  if (exp != std::string::npos) {
    decimals -= std::atoi(text.c_str() + exp + 1);
  }
  return decimals < 0 ? 0 : decimals;
}

std::string format_value(double value, int decimals) {
  if (decimals == 0 && std::fabs(value) < 1e15) {
    return std::to_string(static_cast<long long>(std::llround(value)));
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals > 15 ? 15 : decimals, value);
  std::string s = buf;
  // 0.50 -> 0.5, but keep one digit after the point
  while (s.size() > 1 && s.back() == '0' && s[s.size() - 2] != '.') s.pop_back();
  if (s == "-0") s = "0";
  return s;
}

}  // namespace

std::optional<std::vector<std::string>> expand_range(const std::string& min_text,
                                                     const std::string& max_text,
                                                     const std::string& step_text,
                                                     size_t max_count) {
  const double min = std::strtod(min_text.c_str(), nullptr);
  const double max = std::strtod(max_text.c_str(), nullptr);
  const double step = std::strtod(step_text.c_str(), nullptr);
  if (!(step > 0) || !(max >= min)) return std::vector<std::string>{};
  const double span = (max - min) / step;
  if (!std::isfinite(span) || span + 1 > static_cast<double>(max_count)) return std::nullopt;
  // Counting steps (not adding them up) keeps 0.1-steps from drifting past max.
  const size_t count = static_cast<size_t>(std::floor(span + 1e-9)) + 1;
  const int decimals = std::max(written_decimals(min_text), written_decimals(step_text));
  std::vector<std::string> values;
  values.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    values.push_back(format_value(min + static_cast<double>(i) * step, decimals));
  }
  return values;
}

std::vector<Placeholder> find_placeholders(const std::string& text) {
  std::vector<Placeholder> out;
  size_t pos = 0;
  while ((pos = text.find("{{", pos)) != std::string::npos) {
    size_t close = text.find("}}", pos + 2);
    if (close == std::string::npos) break;
    std::string inner = text.substr(pos + 2, close - pos - 2);
    size_t b = inner.find_first_not_of(" \t");
    size_t e = inner.find_last_not_of(" \t");
    std::string name = b == std::string::npos ? "" : inner.substr(b, e - b + 1);
    bool word = !name.empty();
    for (char c : name) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.')
        word = false;
    }
    if (word) {
      out.push_back({name, pos, close + 2 - pos});
      pos = close + 2;
    } else {
      pos += 2;  // '{{' that is not a placeholder, e.g. JSON or a Go template
    }
  }
  return out;
}

size_t combination_count(const std::vector<Parameter>& parameters) {
  size_t total = 1;
  for (const auto& p : parameters) {
    if (p.values.empty()) return 0;
    if (total > std::numeric_limits<size_t>::max() / p.values.size())
      return std::numeric_limits<size_t>::max();
    total *= p.values.size();
  }
  return total;
}

std::vector<std::string> combination(const std::vector<Parameter>& parameters, size_t index) {
  std::vector<std::string> values(parameters.size());
  for (size_t i = parameters.size(); i-- > 0;) {
    const auto& v = parameters[i].values;
    values[i] = v[index % v.size()];
    index /= v.size();
  }
  return values;
}

std::string substitute(const std::string& text, const std::vector<Parameter>& parameters,
                       const std::vector<std::string>& values) {
  std::string out;
  size_t last = 0;
  for (const auto& ph : find_placeholders(text)) {
    for (size_t i = 0; i < parameters.size(); ++i) {
      if (parameters[i].name != ph.name) continue;
      out += text.substr(last, ph.offset - last);
      out += values[i];
      last = ph.offset + ph.length;
      break;
    }
  }
  out += text.substr(last);
  return out;
}

std::string parameter_env_name(const std::string& name) {
  std::string env;
  for (char c : name) {
    env += (c == '-' || c == '.') ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return env;
}

}  // namespace riseml
