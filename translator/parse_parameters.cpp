// parameters: a sweep of named values (scalars, lists, ranges) and the {{placeholders}} using them.
#include <algorithm>
#include <cctype>
#include <set>

#include "did_you_mean.hpp"
#include "parameter_sweep.hpp"
#include "section_parsers.hpp"

namespace riseml {

namespace {

// More values than any real sweep, small enough that expansion stays cheap.
constexpr size_t kMaxValuesPerParameter = 10000;

std::optional<std::vector<std::string>> parse_range(YamlReader& r, const YAML::Node& node,
                                                    const std::string& path) {
  r.check_keys(node, path, {"range"});
  const YAML::Node range = node["range"];
  const std::string rpath = join_key(path, "range");
  if (!range) {
    r.error(node, path, "a mapping here must be range: {min, max, step}; or give a value or a list");
    return std::nullopt;
  }
  if (!r.expect_map(range, rpath, "range: {min: 1, max: 5, step: 1}")) return std::nullopt;
  r.check_keys(range, rpath, {"min", "max", "step"});
  std::string texts[3];
  const char* keys[3] = {"min", "max", "step"};
  bool ok = true;
  for (int i = 0; i < 3; ++i) {
    const YAML::Node v = range[keys[i]];
    if (!v) {
      r.error(range, join_key(rpath, keys[i]), "missing: a range needs min, max and step");
      ok = false;
      continue;
    }
    if (!r.number(v, join_key(rpath, keys[i]), -1e300, false, std::string(keys[i]) + ": 1")) {
      ok = false;
      continue;
    }
    texts[i] = v.Scalar();
  }
  if (!ok) return std::nullopt;
  if (std::strtod(texts[2].c_str(), nullptr) <= 0) {
    r.error(range["step"], join_key(rpath, "step"), "must be greater than 0, got " + texts[2]);
    return std::nullopt;
  }
  if (std::strtod(texts[1].c_str(), nullptr) < std::strtod(texts[0].c_str(), nullptr)) {
    r.error(range["max"], join_key(rpath, "max"),
            "max " + texts[1] + " is below min " + texts[0] + ": swap them");
    return std::nullopt;
  }
  auto values = expand_range(texts[0], texts[1], texts[2], kMaxValuesPerParameter);
  if (!values) {
    r.error(range, rpath,
            "gives more than " + std::to_string(kMaxValuesPerParameter) +
                " values: use a larger step");
  }
  return values;
}

std::optional<std::vector<std::string>> parse_values(YamlReader& r, const YAML::Node& node,
                                                     const std::string& path) {
  if (node.IsNull()) {
    r.error(node, path, "has no value: give a value, a list, or range: {min, max, step}");
    return std::nullopt;
  }
  // A value is exported quoted and put into run and install lines as written: one line.
  if (node.IsScalar()) {
    auto value = r.string(node, path);
    if (!value) return std::nullopt;
    return std::vector<std::string>{*value};
  }
  if (node.IsMap()) return parse_range(r, node, path);
  std::vector<std::string> values;
  std::set<std::string> seen;
  int index = 0;
  bool ok = true;  // every bad value is reported, not only the first
  for (const auto& item : node) {
    const std::string ipath = path + "[" + std::to_string(index++) + "]";
    if (!item.IsScalar()) {
      r.error(item, ipath, "each value must be a number or text, got " + YamlReader::describe(item));
      return std::nullopt;
    }
    auto value = r.string(item, ipath);
    if (!value) {
      ok = false;
      continue;
    }
    if (!seen.insert(*value).second) {
      r.warning(item, ipath, "the value " + *value + " is listed twice: it runs twice");
    }
    values.push_back(*value);
  }
  if (!ok) return std::nullopt;
  if (values.empty()) {
    r.error(node, path, "the list is empty: give at least one value");
    return std::nullopt;
  }
  return values;
}

}  // namespace

void parse_parameters(YamlReader& r, const YAML::Node& node, const std::string& path,
                      TrainSection& train) {
  if (node.IsNull()) return;
  if (!r.expect_map(node, path, "parameters: {lr: [0.01, 0.1]}")) return;
  // [A-Za-z_][A-Za-z0-9_.-]*, by hand: std::regex recurses per character on long keys.
  auto usable_name = [](const std::string& name) {
    if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0])) || name[0] == '.' ||
        name[0] == '-')
      return false;
    return std::all_of(name.begin(), name.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
    });
  };
  std::set<std::string> env_names;
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) {
      r.error(kv.first, path, "a parameter name must be a word, got " + YamlReader::describe(kv.first));
      continue;
    }
    const std::string& name = kv.first.Scalar();
    const std::string ppath = join_key(path, name);
    if (!usable_name(name)) {
      r.error(kv.first, ppath,
              "'" + name + "' is not a usable parameter name: start with a letter, then letters, "
              "digits, '-', '_' or '.' (it becomes the variable " + parameter_env_name(name) + ")");
      continue;
    }
    const std::string env = parameter_env_name(name);
    if (!env_names.insert(env).second) {
      r.error(kv.first, ppath,
              "clashes with another parameter: both become the variable " + env + "; rename one");
      // Still declared: its {{placeholders}} are not "undeclared" too. No values: an error
      // was reported, so this job never reaches the layout.
      train.parameters.push_back({name, {}, r.where(kv.first)});
      continue;
    }
    // An invalid parameter is still declared (see above); its error is already reported.
    auto values = parse_values(r, kv.second, ppath);
    if (values || r.diags().has_errors())
      train.parameters.push_back({name, values.value_or(std::vector<std::string>{}),
                                  r.where(kv.first)});
  }
}

void check_placeholders(YamlReader& r, const TrainSection& train) {
  std::vector<std::string> declared;
  for (const auto& p : train.parameters) declared.push_back(p.name);
  std::set<std::string> used;
  auto check = [&](const std::vector<SourceText>& lines, const std::string& path) {
    for (const auto& line : lines) {
      // RiseML 0.7 wrote {name}; {{name}} replaced it. ${name} is the shell's own.
      for (const auto& name : declared) {
        const std::string old = "{" + name + "}";
        for (size_t at = line.text.find(old); at != std::string::npos;
             at = line.text.find(old, at + 1)) {
          bool doubled = at > 0 && line.text[at - 1] == '{';
          bool shell = at > 0 && line.text[at - 1] == '$';
          if (!doubled && !shell) {
            r.diags().warning(line.where, path,
                              "'" + old + "' is the old placeholder spelling and is left as is: "
                              "write {{" + name + "}}");
            break;
          }
        }
      }
      std::set<std::string> reported;  // one error per name and line, however often it occurs
      for (const auto& ph : find_placeholders(line.text)) {
        used.insert(ph.name);
        if (std::find(declared.begin(), declared.end(), ph.name) != declared.end()) continue;
        if (!reported.insert(ph.name).second) continue;
        std::string suggestion = did_you_mean(ph.name, declared);
        if (suggestion.empty() && !declared.empty()) {
          std::string list;
          for (const auto& d : declared) list += (list.empty() ? "" : ", ") + d;
          suggestion = " (the parameters are: " + list + ")";
        }
        std::string fix = declared.empty()
                              ? "declare it under train.parameters, e.g. parameters: {" + ph.name +
                                    ": [1, 2]}"
                              : "declare it under train.parameters" + suggestion;
        r.diags().error(line.where, path,
                        "{{" + ph.name + "}} names no parameter: " + fix);
      }
    }
  };
  check(train.run, "train.run");
  check(train.install, "train.install");
  for (const auto& p : train.parameters) {
    if (p.values.empty()) continue;  // invalid: its error is reported already
    if (!used.count(p.name)) {
      r.diags().warning(p.where, "train.parameters." + p.name,
                        "not used as {{" + p.name + "}} in run; it is still exported as $" +
                            parameter_env_name(p.name));
    }
  }
}

}  // namespace riseml
