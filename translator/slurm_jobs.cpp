#include "slurm_jobs.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace riseml {

namespace {

using nlohmann::json;

// Slurm's JSON changes shape between releases (22.05: plain numbers; 23.02: {"set", "number"}
// objects; some fields strings). Each reader takes what it finds and never throws.
std::optional<long long> number(const json& j) {
  if (j.is_number_integer() || j.is_number_unsigned()) {
    // Slurm's NO_VAL / INFINITE (0xfffffffe, 0xffffffff) mean "not set".
    auto v = j.is_number_unsigned() ? static_cast<long long>(std::min<unsigned long long>(
                                          j.get<unsigned long long>(), 1ULL << 62))
                                    : j.get<long long>();
    if (v == 0xfffffffeLL || v == 0xffffffffLL) return std::nullopt;
    return v;
  }
  if (j.is_number_float()) return static_cast<long long>(j.get<double>());
  if (j.is_object()) {
    if (j.contains("set") && j["set"].is_boolean() && !j["set"].get<bool>()) return std::nullopt;
    if (j.contains("number")) return number(j["number"]);
    return std::nullopt;
  }
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    long long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec == std::errc() && p == s.data() + s.size()) return v;
  }
  return std::nullopt;
}

const json& field(const json& obj, const char* key) {
  static const json null_value;
  if (!obj.is_object()) return null_value;
  auto it = obj.find(key);
  return it == obj.end() ? null_value : *it;
}

long long num(const json& obj, const char* key, long long fallback = 0) {
  return number(field(obj, key)).value_or(fallback);
}

std::string str(const json& j) {
  if (j.is_string()) return j.get<std::string>();
  // 23.02 writes states as lists: ["RUNNING"] or ["PENDING", "REQUEUED"].
  if (j.is_array() && !j.empty() && j.front().is_string()) return j.front().get<std::string>();
  return "";
}

std::string str(const json& obj, const char* key) { return str(field(obj, key)); }

std::optional<json> parse_jobs(const std::string& text, std::string& error) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) {
    error = "its output is not JSON";
    return std::nullopt;
  }
  const json& jobs = field(doc, "jobs");
  if (!jobs.is_array()) {
    error = "its JSON has no \"jobs\" list";
    return std::nullopt;
  }
  return jobs;
}

// squeue's exit_code is a raw wait status; newer versions and sacct give an object.
std::optional<int> exit_of(const json& j) {
  if (j.is_object()) {
    if (auto sig = number(field(field(j, "signal"), "signal_id")); sig && *sig > 0)
      return 128 + static_cast<int>(*sig);
    if (auto rc = number(field(j, "return_code"))) return static_cast<int>(*rc & 0xff);
    return std::nullopt;
  }
  if (auto raw = number(j)) return decode_wait_status(*raw);
  return std::nullopt;
}

// The records both commands share the shape of: a "jobs" list whose entries have a positive
// job_id, a restart count and an exit code that means something once the state is final;
// `fill` maps the fields whose names differ between squeue and sacct.
std::optional<std::vector<SlurmJob>> parse_job_list(
    const std::string& text, std::string& error,
    const std::function<void(const json&, SlurmJob&)>& fill) {
  auto jobs = parse_jobs(text, error);
  if (!jobs) return std::nullopt;
  std::vector<SlurmJob> out;
  for (const json& j : *jobs) {
    SlurmJob r;
    r.job_id = num(j, "job_id");
    if (r.job_id <= 0) continue;
    fill(j, r);
    r.restarts = num(j, "restart_cnt");
    if (is_final_state(r.state)) r.exit_status = exit_of(field(j, "exit_code"));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

int decode_wait_status(long long raw) {
  if (raw & 0x7f) return 128 + static_cast<int>(raw & 0x7f);
  return static_cast<int>((raw >> 8) & 0xff);
}

bool is_final_state(const std::string& state) {
  static const std::set<std::string> final_states = {
      "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
      "BOOT_FAIL", "DEADLINE", "PREEMPTED", "REVOKED", "SPECIAL_EXIT"};
  return final_states.count(state) > 0;
}

std::optional<std::vector<SlurmJob>> parse_squeue_json(const std::string& text,
                                                       std::string& error) {
  return parse_job_list(text, error, [](const json& j, SlurmJob& r) {
    r.array_job_id = num(j, "array_job_id");
    r.array_task_id = number(field(j, "array_task_id"));
    r.array_pending = str(j, "array_task_string");
    r.het_job_id = num(j, "het_job_id");
    r.het_job_offset = num(j, "het_job_offset");
    r.name = str(j, "name");
    r.user = str(j, "user_name");
    r.user_id = num(j, "user_id", -1);
    r.comment = str(j, "comment");
    r.state = str(j, "job_state");
    r.reason = str(j, "state_reason");
    r.nodes = str(j, "nodes");
    r.batch_host = str(j, "batch_host");
    r.cwd = str(j, "current_working_directory");
    r.stdout_pattern = str(j, "standard_output");
    r.stderr_pattern = str(j, "standard_error");
    r.node_count = num(j, "node_count");
    r.tasks = num(j, "tasks");
    r.submit_time = num(j, "submit_time");
    r.start_time = num(j, "start_time");
    r.end_time = num(j, "end_time");
  });
}

std::optional<std::vector<SlurmJob>> parse_sacct_json(const std::string& text,
                                                      std::string& error) {
  return parse_job_list(text, error, [](const json& j, SlurmJob& r) {
    const json& array = field(j, "array");
    r.array_job_id = num(array, "job_id");
    if (r.array_job_id > 0) r.array_task_id = number(field(array, "task_id"));
    const json& het = field(j, "het");
    r.het_job_id = num(het, "job_id");
    r.het_job_offset = num(het, "job_offset");
    r.name = str(j, "name");
    r.user = str(j, "user");
    const json& comment = field(j, "comment");
    r.comment = comment.is_object() ? str(comment, "job") : str(comment);
    const json& state = field(j, "state");
    r.state = state.is_object() ? str(state, "current") : str(state);
    if (state.is_object()) r.reason = str(state, "reason");
    r.nodes = str(j, "nodes");
    r.cwd = str(j, "working_directory");
    r.stdout_pattern = str(j, "stdout");  // absent in 22.05's sacct: then Slurm's default
    r.stderr_pattern = str(j, "stderr");
    r.node_count = num(j, "allocation_nodes");
    const json& time = field(j, "time");
    r.submit_time = num(time, "submission");
    r.start_time = num(time, "start");
    r.end_time = num(time, "end");
  });
}

std::vector<long long> expand_task_string(const std::string& text, size_t limit) {
  std::vector<long long> out;
  std::string body = text.substr(0, text.find('%'));  // "%N": the throttle, not tasks
  size_t pos = 0;
  auto read_number = [&](size_t& p, long long& v) {
    auto [end, ec] = std::from_chars(body.data() + p, body.data() + body.size(), v);
    if (ec != std::errc() || v < 0) return false;
    p = static_cast<size_t>(end - body.data());
    return true;
  };
  while (pos < body.size()) {
    long long first = 0, last = 0, step = 1;
    if (!read_number(pos, first)) return {};
    last = first;
    if (pos < body.size() && body[pos] == '-') {
      ++pos;
      if (!read_number(pos, last) || last < first) return {};
      if (pos < body.size() && body[pos] == ':') {
        ++pos;
        if (!read_number(pos, step) || step <= 0) return {};
      }
    }
    for (long long v = first; v <= last; v += step) {
      if (out.size() >= limit) return out;
      out.push_back(v);
    }
    if (pos < body.size()) {
      if (body[pos] != ',') return {};
      ++pos;
    }
  }
  return out;
}

std::string expand_output_path(const SlurmJob& job, const std::string& given) {
  std::string pattern = given;
  if (pattern.empty())
    pattern = job.array_job_id > 0 ? "slurm-%A_%a.out" : "slurm-%j.out";  // sbatch's default
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 >= pattern.size()) {
      out += pattern[i];
      continue;
    }
    size_t j = i + 1;
    size_t width = 0;
    while (j < pattern.size() && std::isdigit(static_cast<unsigned char>(pattern[j])) && width < 10)
      width = width * 10 + static_cast<size_t>(pattern[j++] - '0');
    if (j >= pattern.size()) {
      out += pattern.substr(i);
      break;
    }
    std::string value;
    bool known = true;
    const long long id = job.het_job_id > 0 ? job.het_job_id : job.job_id;
    switch (pattern[j]) {
      case '%': value = "%"; break;
      case 'j': value = std::to_string(id); break;
      case 'J': value = std::to_string(id); break;
      case 'A': value = std::to_string(job.array_job_id > 0 ? job.array_job_id : job.job_id); break;
      case 'a': value = job.array_task_id ? std::to_string(*job.array_task_id) : "4294967294"; break;
      case 'x': value = job.name; break;
      case 'u': value = job.user; break;
      case 'N': value = job.batch_host; break;
      case 'n': case 't': value = "0"; break;
      case 's': value = "batch"; break;
      default: known = false;
    }
    if (!known) {
      out += pattern.substr(i, j - i + 1);
    } else {
      if (pattern[j] != '%' && pattern[j] != 'x' && pattern[j] != 'u' && pattern[j] != 'N' &&
          value.size() < width)
        value.insert(0, width - value.size(), '0');
      out += value;
    }
    i = j;
  }
  if (!out.empty() && out[0] != '/' && !job.cwd.empty()) out = job.cwd + "/" + out;
  return out;
}

std::string format_riseml_comment(const RisemlMark& mark) {
  if (mark.parameters.empty() && mark.roles.empty()) return kRisemlCommentPrefix;
  json j = json::object();
  if (!mark.parameters.empty()) {
    json params = json::array();
    for (const auto& p : mark.parameters) params.push_back({p.name, p.values});
    j["parameters"] = params;
  }
  if (!mark.roles.empty()) {
    json roles = json::array();
    for (const auto& [role, count] : mark.roles) roles.push_back({role, count});
    j["roles"] = roles;
  }
  // Slurm keeps comments whole, but a sweep with huge value lists would make every squeue
  // line heavy: past a few KB, only the mark.
  std::string payload = j.dump(-1, ' ', /*ensure_ascii=*/true);
  if (payload.size() > 4000) return kRisemlCommentPrefix;
  return std::string(kRisemlCommentPrefix) + " " + payload;
}

std::optional<RisemlMark> parse_riseml_comment(const std::string& comment) {
  const std::string prefix = kRisemlCommentPrefix;
  if (comment.rfind(prefix, 0) != 0) return std::nullopt;
  if (comment.size() > prefix.size() && comment[prefix.size()] != ' ') return std::nullopt;
  RisemlMark mark;
  if (comment.size() <= prefix.size() + 1) return mark;
  json j = json::parse(comment.substr(prefix.size() + 1), nullptr, false);
  if (!j.is_object()) return mark;
  for (const json& p : field(j, "parameters").is_array() ? field(j, "parameters") : json::array()) {
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !p[1].is_array()) continue;
    Parameter param;
    param.name = p[0].get<std::string>();
    for (const json& v : p[1])
      if (v.is_string()) param.values.push_back(v.get<std::string>());
    if (param.values.empty()) continue;
    mark.parameters.push_back(std::move(param));
  }
  for (const json& r : field(j, "roles").is_array() ? field(j, "roles") : json::array()) {
    if (!r.is_array() || r.size() != 2 || !r[0].is_string()) continue;
    mark.roles.emplace_back(r[0].get<std::string>(), number(r[1]).value_or(0));
  }
  return mark;
}

std::string Experiment::state() const {
  // A sweep task that has not started shares the pending record's state.
  return main().state.empty() ? "UNKNOWN" : main().state;
}

bool RisemlJob::sweep() const { return first().array_job_id > 0; }
bool RisemlJob::heterogeneous() const { return first().het_job_id > 0; }

std::vector<Experiment> RisemlJob::experiments() const {
  std::vector<Experiment> out;
  if (!sweep()) {
    Experiment e;
    for (const auto& r : records) e.components.push_back(&r);
    std::sort(e.components.begin(), e.components.end(),
              [](const SlurmJob* a, const SlurmJob* b) { return a->het_job_offset < b->het_job_offset; });
    out.push_back(e);
    return out;
  }
  std::map<long long, const SlurmJob*> by_index;
  for (const auto& r : records) {
    if (r.array_task_id) {
      by_index[*r.array_task_id] = &r;
    } else {
      for (long long i : expand_task_string(r.array_pending))
        by_index.emplace(i, &r);  // a started task's own record wins
    }
  }
  for (const auto& [i, r] : by_index) out.push_back(Experiment{i, {r}});
  return out;
}

std::string RisemlJob::state() const {
  auto es = experiments();
  for (const char* s : {"RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED", "PENDING",
                        "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "STOPPED"})
    for (const auto& e : es)
      if (e.state() == s) return s;
  for (const auto& e : es)
    if (e.state() != "COMPLETED") return e.state();
  return es.empty() ? "UNKNOWN" : "COMPLETED";
}

std::optional<int> RisemlJob::exit_status() const {
  int status = 0;
  for (const auto& e : experiments()) {
    // Components of a heterogeneous job share the batch script, which runs in the first.
    if (!is_final_state(e.state())) return std::nullopt;
    int s = e.main().exit_status.value_or(e.state() == "COMPLETED" ? 0 : 1);
    if (s != 0 && status == 0) status = s;
  }
  return status;
}

std::vector<RisemlJob> group_jobs(const std::vector<SlurmJob>& records) {
  std::map<long long, RisemlJob> by_id;
  std::set<long long> seen;
  for (const auto& r : records) {
    if (!seen.insert(r.job_id).second) continue;
    long long id = r.array_job_id > 0 ? r.array_job_id : r.het_job_id > 0 ? r.het_job_id : r.job_id;
    RisemlJob& job = by_id[id];
    job.id = id;
    job.records.push_back(r);
  }
  std::vector<RisemlJob> out;
  for (auto& [id, job] : by_id) {
    // The comment is the same on every record; the first non-empty one decides.
    for (const auto& r : job.records) {
      if (auto m = parse_riseml_comment(r.comment)) {
        job.mark = std::move(m);
        break;
      }
    }
    out.push_back(std::move(job));
  }
  return out;
}

std::string JobRef::text() const {
  return std::to_string(id) + (index ? "." + std::to_string(*index) : "");
}

std::optional<JobRef> parse_job_ref(const std::string& text) {
  auto read = [](const std::string& s) -> std::optional<long long> {
    if (s.empty() || s.size() > 10) return std::nullopt;
    long long v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < 0 || v >= 0xfffffffeLL)
      return std::nullopt;
    return v;
  };
  size_t sep = text.find_first_of("._");
  JobRef ref;
  auto id = read(text.substr(0, sep));
  if (!id || *id == 0) return std::nullopt;
  ref.id = *id;
  if (sep != std::string::npos) {
    auto index = read(text.substr(sep + 1));
    if (!index) return std::nullopt;
    ref.index = *index;
  }
  return ref;
}

std::string experiment_name(const RisemlJob& job, const Experiment& e) {
  return std::to_string(job.id) + (e.index ? "." + std::to_string(*e.index) : "");
}

}  // namespace riseml
