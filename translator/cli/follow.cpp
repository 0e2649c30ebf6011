#include "follow.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <thread>

#include "../printable_text.hpp"
#include "commands.hpp"
#include "slurm_client.hpp"

namespace riseml::cli {

namespace {

// One output file, read from where the last read stopped.
struct LogStream {
  std::string path;
  std::string prefix;  // the experiment's name
  off_t offset = 0;
  std::string partial;  // a line not ended yet
  bool seen = false;    // the file existed once
};

// Reads what is new in the file and prints whole lines (and, at the end, the rest).
void pump(LogStream& s, bool final) {
  int fd = open(s.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    s.seen = true;
    struct stat st {};
    // Smaller than what we read: rewritten (a requeued job that truncated its output).
    if (fstat(fd, &st) == 0 && st.st_size < s.offset) {
      std::cerr << "riseml: [" << s.prefix << "] output file started again\n";
      s.offset = 0;
      s.partial.clear();
    }
    char buf[65536];
    ssize_t n;
    while ((n = pread(fd, buf, sizeof buf, s.offset)) > 0) {
      s.offset += n;
      s.partial.append(buf, static_cast<size_t>(n));
      size_t start = 0, nl;
      while ((nl = s.partial.find('\n', start)) != std::string::npos) {
        std::cout << prefixed_line(s.prefix, s.partial.substr(start, nl - start)) << '\n';
        start = nl + 1;
      }
      s.partial.erase(0, start);
    }
    close(fd);
  }
  if (final && !s.partial.empty()) {
    std::cout << prefixed_line(s.prefix, s.partial) << '\n';
    s.partial.clear();
  }
  std::cout.flush();
}

// The files of one experiment: its output, and its error file when that is another file.
std::vector<std::pair<std::string, std::string>> files_of(const RisemlJob& job,
                                                          const Experiment& e) {
  SlurmJob r = e.main();
  if (e.index) r.array_task_id = e.index;  // a task not started yet: its own %a
  const std::string name = experiment_name(job, e);
  std::vector<std::pair<std::string, std::string>> out = {
      {name, expand_output_path(r, r.stdout_pattern)}};
  if (!r.stderr_pattern.empty()) {
    std::string err = expand_output_path(r, r.stderr_pattern);
    if (err != out.front().second) out.emplace_back(name + " stderr", err);
  }
  return out;
}

std::string describe(const Experiment& e) {
  std::string s = e.state();
  if (s == "RUNNING" && !e.main().nodes.empty()) s += " on " + e.main().nodes;
  if (s == "PENDING" && !e.main().reason.empty() && e.main().reason != "None")
    s += " (" + e.main().reason + ")";
  if (is_final_state(e.state()) && e.main().exit_status)
    s += ", exit status " + std::to_string(*e.main().exit_status);
  return s;
}

double poll_seconds() {
  const char* v = std::getenv("RISEML_POLL_S");  // tests poll faster
  double s = v ? std::atof(v) : 0;
  return s > 0 ? s : 2.0;
}

}  // namespace

std::string prefixed_line(const std::string& experiment, const std::string& line) {
  size_t i = 0;
  while (i < line.size() && line[i] == ' ') ++i;
  size_t digits = i;
  while (digits < line.size() && digits - i < 9 && line[digits] >= '0' && line[digits] <= '9')
    ++digits;
  if (digits > i && digits + 1 < line.size() + 1 && line.compare(digits, 2, ": ") == 0)
    return "[" + experiment + " r" + line.substr(i, digits - i) + "] " +
           printable(line.substr(digits + 2));
  return "[" + experiment + "] " + printable(line);
}

int show_logs(const JobRef& ref, const FollowOptions& options) {
  std::string error;
  std::map<std::string, LogStream> streams;  // by experiment (and stderr)
  std::map<std::string, std::string> states;  // what was last reported
  int missing_polls = 0, failed_queries = 0;
  for (;;) {
    auto snapshot = query_jobs(/*history=*/!options.follow, ref.id, error);
    if (!snapshot && options.follow && ++failed_queries < 5) {
      // A busy slurmctld may not answer once; a long follow should not end for that.
      std::this_thread::sleep_for(std::chrono::duration<double>(poll_seconds()));
      continue;
    }
    if (!snapshot) {
      std::cerr << "riseml: " << error << '\n';
      return kExitFailure;
    }
    failed_queries = 0;
    auto job = find_job(*snapshot, ref, /*others_ok=*/false, error);
    if (!job && options.report_states && states.empty() && ++missing_polls < 3) {
      // Just submitted: give slurmctld a moment to list it.
      std::this_thread::sleep_for(std::chrono::duration<double>(poll_seconds()));
      continue;
    }
    if (!job) {
      // Followed before: the job left the queue (MinJobAge) before we saw it end.
      if (!streams.empty() || !states.empty()) {
        if (++missing_polls < 3) {
          std::this_thread::sleep_for(std::chrono::duration<double>(poll_seconds()));
          continue;
        }
        for (auto& [key, s] : streams) pump(s, true);
        std::cerr << "riseml: job " << ref.text()
                  << " left the queue before riseml saw it end; its exit status is unknown\n";
        return kExitFailure;
      }
      std::cerr << "riseml: " << error << '\n';
      return kExitBadInput;
    }
    missing_polls = 0;
    auto experiments = selected_experiments(*job, ref);
    bool all_final = true;
    for (const auto& e : experiments) {
      const std::string name = experiment_name(*job, e);
      std::string now = describe(e);
      if (options.report_states && states[name] != now)
        std::cerr << "riseml: " << name << " " << now << '\n';
      states[name] = now;
      all_final = all_final && is_final_state(e.state());
      if (job->sweep() && !e.main().array_task_id) continue;  // not started: no file yet
      for (const auto& [key, path] : files_of(*job, e)) {
        LogStream& s = streams[key];
        if (s.path != path) {
          if (!s.path.empty()) pump(s, true);
          s = LogStream{};
          s.path = path;
          s.prefix = key;
        }
      }
    }
    for (auto& [key, s] : streams) pump(s, all_final);
    if (!options.follow || all_final) {
      if (!options.follow) {
        for (const auto& [key, s] : streams)
          if (!s.seen)
            std::cerr << "riseml: [" << key << "] no output yet (" << printable(s.path) << ")\n";
        return kExitOk;
      }
      int status = 0;
      for (const auto& e : experiments) {
        int s = e.main().exit_status.value_or(e.state() == "COMPLETED" ? 0 : 1);
        if (s != 0 && status == 0) status = s;
      }
      return status;
    }
    std::this_thread::sleep_for(std::chrono::duration<double>(poll_seconds()));
  }
}

}  // namespace riseml::cli
