// Our own `slurm:` section: the sbatch settings RiseML never needed.
#include <cctype>
#include <optional>
#include <regex>
#include <set>
#include <string_view>

#include "section_parsers.hpp"

namespace riseml {

namespace {

const std::string kSection = "slurm";

// Options the translator writes from resources, horovod, distributed and parameters;
// setting them again through `extra` would contradict the generated layout.
const std::vector<std::pair<std::string, std::string>> kGeneratedOptions = {
    {"--nodes", "horovod workers"}, {"-N", "horovod workers"},
    {"--ntasks", "horovod processes"}, {"-n", "horovod processes"},
    {"--ntasks-per-node", "horovod processes"}, {"--gpus", "resources.gpus"},
    {"-G", "resources.gpus"}, {"--gpus-per-node", "resources.gpus"},
    {"--gpus-per-task", "resources.gpus"}, {"--gres", "resources.gpus"},
    {"--cpus-per-task", "resources.cpus"}, {"-c", "resources.cpus"},
    {"--cpus-per-gpu", "resources.cpus"}, {"--mem", "resources.mem"},
    {"--mem-per-cpu", "resources.mem"}, {"--mem-per-gpu", "resources.mem"},
    {"--array", "parameters"}, {"-a", "parameters"}, {"--job-name", "project"},
    {"-J", "project"}, {"--output", "slurm.output"}, {"-o", "slurm.output"},
    {"--error", "slurm.error"}, {"-e", "slurm.error"}, {"--partition", "slurm.partition"},
    {"-p", "slurm.partition"}, {"--time", "slurm.time"}, {"-t", "slurm.time"},
    {"--account", "slurm.account"}, {"-A", "slurm.account"}, {"--qos", "slurm.qos"},
    {"-q", "slurm.qos"}, {"--constraint", "slurm.constraint"}, {"-C", "slurm.constraint"},
    {"--exclusive", "slurm.exclusive"}, {"--signal", "slurm.signal"},
    {"--requeue", "slurm.requeue"}, {"--no-requeue", "slurm.requeue"},
    {"--dependency", "slurm.dependency"}, {"-d", "slurm.dependency"},
    {"--mail-type", "slurm.mail"}, {"--mail-user", "slurm.mail"}, {"--chdir", "riseml submit"},
    {"-D", "riseml submit"}, {"--wrap", "run"}, {"--hetjob", "distributed"},
    {"--reservation", "slurm.reservation"}};

bool valid_time(const std::string& t) {
  // minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS, or UNLIMITED
  static const std::regex re(
      "[0-9]+|[0-9]+:[0-9]{1,2}|[0-9]+:[0-9]{1,2}:[0-9]{1,2}|[0-9]+-[0-9]{1,2}"
      "(:[0-9]{1,2}(:[0-9]{1,2})?)?|UNLIMITED|unlimited|infinite");
  return t.size() <= 32 && std::regex_match(t, re);  // bounded: std::regex recurses per char
}

// A whole number of at most 65535 (Slurm keeps a signal and its time in 16 bits).
std::optional<unsigned> small_number(std::string_view v) {
  if (v.empty() || v.size() > 5 || v.find_first_not_of("0123456789") != std::string_view::npos) return std::nullopt;
  const unsigned n = static_cast<unsigned>(std::stoul(std::string(v)));
  return n <= 65535 ? std::optional(n) : std::nullopt;
}

// sbatch's --signal=[{R|B}:]SIG[@TIME]: SIG a number or one of the names Slurm knows (any case,
// SIG optional), TIME seconds; what sbatch would refuse at submission is refused here, with
// the line (checked against sbatch 22.05 on the testbed: PIPE, USR1@65536 and 0 refused,
// usr1 taken).
bool valid_signal(const std::string& s) {
  static const std::set<std::string> kNames = {"HUP",  "INT",  "QUIT", "ABRT", "KILL", "ALRM", "TERM", "USR1",
                                               "USR2", "URG",  "CONT", "STOP", "TSTP", "TTIN", "TTOU", "XCPU"};
  std::string_view v = s;
  if (const auto colon = v.find(':'); colon != std::string_view::npos) {
    const std::string_view who = v.substr(0, colon);
    if (who.empty() || who.size() > 2 || who.find_first_not_of("RB") != std::string_view::npos) return false;
    v.remove_prefix(colon + 1);
  }
  std::string_view sig = v;
  if (const auto at = v.find('@'); at != std::string_view::npos) {
    sig = v.substr(0, at);
    if (!small_number(v.substr(at + 1))) return false;
  }
  if (auto n = small_number(sig)) return *n > 0;
  std::string name;
  for (char c : sig) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.rfind("SIG", 0) == 0) name.erase(0, 3);
  return kNames.count(name) > 0;
}

// sbatch's --dependency: items joined by ',' (all) or '?' (any), each `singleton` or
// TYPE:JOB[:JOB...], a JOB an id with an optional array index (_3, _[1-5]) and, for `after`,
// +MINUTES. slurmctld refuses the others only at submission ("Job dependency problem", no line).
bool valid_dependency(const std::string& d) {
  static const std::regex item(
      "singleton|(after|afterany|afterburstbuffer|aftercorr|afternotok|afterok|expand)"
      "(:[0-9]{1,12}(_([0-9]{1,9}|\\[[0-9,-]{1,40}\\]))?(\\+[0-9]{1,9})?)+",
      std::regex::icase);
  if (d.size() > 1024) return false;
  std::size_t from = 0;
  for (;;) {
    const std::size_t end = d.find_first_of(",?", from);
    const std::string part = d.substr(from, end == std::string::npos ? std::string::npos : end - from);
    if (part.size() > 256 || !std::regex_match(part, item)) return false;  // bounded: regex recurses
    if (end == std::string::npos) return true;
    from = end + 1;
  }
}

// A value for an #SBATCH line. The reader already refused control characters, so it is one
// line and cannot end the #SBATCH comment.
void text(YamlReader& r, const YAML::Node& map, const std::string& map_path,
          const std::string& key, std::optional<std::string>& out) {
  const YAML::Node node = map[key];
  if (!node) return;
  const std::string path = join_key(map_path, key);
  auto s = r.string(node, path);
  if (!s) return;
  if (s->empty()) {
    r.error(node, path, "is empty: give a value, or remove the key");
    return;
  }
  out = *s;
}

void parse_extra(YamlReader& r, const YAML::Node& node, SlurmSection& slurm) {
  const std::string path = join_key(kSection, "extra");
  auto lines = r.string_list(node, path);
  if (!lines) return;
  for (const auto& line : *lines) {
    const std::string& opt = line.text;
    if (opt.empty() || opt[0] != '-') {
      r.diags().error(line.where, path,
                      "'" + opt + "' is not an sbatch option: write it as on the command line, "
                      "e.g. - --reservation=maint");
      continue;
    }
    std::string name = opt.substr(0, opt.find_first_of("= \t"));
    if (name.size() < 2 || name.find_first_not_of("-abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") !=
                               std::string::npos) {
      r.diags().error(line.where, path,
                      "'" + opt + "' is not an sbatch option: an option's name is letters, digits and "
                      "'-', e.g. - --reservation=maint or - --comment=\"two words\"");
      continue;
    }
    bool denied = false;
    for (const auto& [option, owner] : kGeneratedOptions) {
      bool short_form = option.size() == 2;
      // "-N2" and "-N 2" match -N; "--mem-bind" does not match --mem.
      bool matches = short_form ? opt.rfind(option, 0) == 0 : name == option;
      if (matches) {
        r.diags().error(line.where, path,
                        option + " is written by the translator from " + owner +
                            "; set it there instead of in extra");
        denied = true;
        break;
      }
    }
    if (!denied) slurm.extra_options.push_back(opt);
  }
}

}  // namespace

std::vector<std::string> parse_module_list(YamlReader& r, const YAML::Node& node,
                                           const std::string& path) {
  std::vector<std::string> modules;
  auto lines = r.string_list(node, path);
  if (!lines) return modules;
  // Written unquoted after `module load`, so a name is one word of these characters.
  static const std::regex mod_re("[A-Za-z0-9_.+/-]+");
  for (const auto& m : *lines) {
    if (m.text.size() > 256 || !std::regex_match(m.text, mod_re)) {
      r.diags().error(m.where, path,
                      "'" + m.text + "' is not a module name: one name per entry, e.g. "
                      "- cuda/12.2");
    } else {
      modules.push_back(m.text);
    }
  }
  return modules;
}

void parse_slurm_section(YamlReader& r, const YAML::Node& node, SlurmSection& slurm) {
  if (node.IsNull()) return;
  if (!r.expect_map(node, kSection, "slurm: {partition: gpu, time: '4:00:00'}")) return;
  r.check_keys(node, kSection,
               {"partition", "account", "qos", "time", "constraint", "exclusive", "output",
                "error", "signal", "requeue", "mail", "dependency", "modules", "environment",
                "extra", "reservation"});
  // Plain-word settings, each straight into its field.
  const std::pair<const char*, std::optional<std::string> SlurmSection::*> words[] = {
      {"partition", &SlurmSection::partition},   {"account", &SlurmSection::account},
      {"qos", &SlurmSection::qos},               {"constraint", &SlurmSection::constraint},
      {"dependency", &SlurmSection::dependency}, {"reservation", &SlurmSection::reservation}};
  for (const auto& [key, member] : words) {
    std::optional<std::string>& field = slurm.*member;
    text(r, node, kSection, key, field);
    if (field && field->find_first_of(" \t'\"\\$`") != std::string::npos) {
      r.error(node[key], join_key(kSection, key),
              "'" + *field + "' has spaces, quotes or '$'; Slurm " + key +
                  " values are plain words");
      field.reset();
    }
  }
  if (slurm.dependency && !valid_dependency(*slurm.dependency)) {
    r.error(node["dependency"], "slurm.dependency",
            "'" + *slurm.dependency + "' is not a Slurm dependency: write TYPE:JOBID[:JOBID...], "
            "TYPE one of after, afterany, afterok, afternotok, aftercorr, afterburstbuffer, expand "
            "(after:JOBID+MINUTES), or singleton; several joined by ',' (all) or '?' (any), "
            "e.g. dependency: afterok:1234");
    slurm.dependency.reset();
  }
  if (auto t = node["time"]) {
    auto s = r.string(t, "slurm.time");
    if (s && !valid_time(*s)) {
      r.error(t, "slurm.time",
              "'" + *s + "' is not a Slurm time: write minutes (90), 'HH:MM:SS' or 'D-HH:MM:SS' "
              "in quotes, e.g. time: '4:00:00'");
    } else if (s) {
      slurm.time = *s;
    }
  }
  text(r, node, kSection, "output", slurm.output);
  text(r, node, kSection, "error", slurm.error);
  if (auto sig = node["signal"]) {
    auto s = r.string(sig, "slurm.signal");
    if (s && !valid_signal(*s)) {
      r.error(sig, "slurm.signal",
              "'" + *s + "' is not a Slurm signal spec: write e.g. signal: USR1@120 (send SIGUSR1 "
              "120 s before the time limit), or B:USR1@120 for the batch shell only; the signal "
              "a number or one of HUP, INT, QUIT, ABRT, KILL, ALRM, TERM, USR1, USR2, URG, CONT, "
              "STOP, TSTP, TTIN, TTOU, XCPU, the time at most 65535 s");
    } else if (s) {
      slurm.signal = *s;
    }
  }
  if (auto e = node["exclusive"]) slurm.exclusive = r.boolean(e, "slurm.exclusive");
  if (auto q = node["requeue"]) slurm.requeue = r.boolean(q, "slurm.requeue");
  if (auto mail = node["mail"]) {
    if (r.expect_map(mail, "slurm.mail", "mail: {type: END,FAIL, user: me@example.org}")) {
      r.check_keys(mail, "slurm.mail", {"type", "user"});
      text(r, mail, "slurm.mail", "type", slurm.mail_type);
      text(r, mail, "slurm.mail", "user", slurm.mail_user);
      // As sbatch 22.05 takes them: any case; TIME_LIMIT_85 refused (only 50, 80, 90).
      static const std::regex type_re(
          "(NONE|BEGIN|END|FAIL|REQUEUE|ALL|INVALID_DEPEND|STAGE_OUT|TIME_LIMIT(_(50|80|90))?|"
          "ARRAY_TASKS)(,(NONE|BEGIN|END|FAIL|REQUEUE|ALL|INVALID_DEPEND|STAGE_OUT|"
          "TIME_LIMIT(_(50|80|90))?|ARRAY_TASKS))*",
          std::regex::icase);
      if (slurm.mail_type && (slurm.mail_type->size() > 512 ||
                              !std::regex_match(*slurm.mail_type, type_re))) {
        r.error(mail["type"], "slurm.mail.type",
                "'" + *slurm.mail_type + "' is not a Slurm mail type: use BEGIN, END, FAIL, "
                "REQUEUE, ALL or TIME_LIMIT (TIME_LIMIT_50, _80, _90), comma-separated");
        slurm.mail_type.reset();
      }
    }
  }
  if (auto mods = node["modules"]) slurm.modules = parse_module_list(r, mods, "slurm.modules");
  if (auto env = node["environment"]) {
    if (r.expect_map(env, "slurm.environment", "environment: {NCCL_DEBUG: INFO}")) {
      static const std::regex env_re("[A-Za-z_][A-Za-z0-9_]*");
      for (const auto& kv : env) {
        std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
        const std::string path = join_key("slurm.environment", key);
        if (key.size() > 256 || !std::regex_match(key, env_re)) {
          r.error(kv.first, path, "'" + key + "' is not a variable name: letters, digits and '_'");
          continue;
        }
        if (auto v = r.string(kv.second, path)) slurm.environment.emplace_back(key, *v);
      }
    }
  }
  if (auto extra = node["extra"]) parse_extra(r, extra, slurm);
}

}  // namespace riseml
