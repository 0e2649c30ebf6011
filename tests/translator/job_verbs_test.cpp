// riseml status, logs, kill, monitor, monitor-probe and submit --follow against fake Slurm
// programs ($RISEML_SQUEUE, $RISEML_SACCT, $RISEML_SCANCEL, $RISEML_SRUN, $RISEML_SBATCH point
// at scripts that print recorded output and note their arguments). The recorded squeue JSON is
// shaped as Slurm 22.05's (openapi v0.0.38), trimmed to the fields riseml reads.
#include <sys/wait.h>
#include <csignal>
#include <unistd.h>

#include <cstdlib>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace riseml::test {
namespace {

#define REQUIRE_CLI()                                          \
  if (cli_path().empty()) GTEST_SKIP() << "no riseml CLI in this build (a fuzz build)"

using nlohmann::json;

const std::string kRisemlSweep =
    R"(riseml {"parameters":[["lr",["0.1","0.01","0.001"]]]})";
const std::string kRisemlTf = R"(riseml {"roles":[["master",1],["ps",1],["worker",2]]})";


class JobVerbs : public ::testing::Test {
 protected:
  TempDir tmp;
  fs::path out_dir;

  void SetUp() override {
    out_dir = tmp / "work";
    fs::create_directories(out_dir);
    const std::string user = user_name();
    json jobs = json::array();
    auto job = [&](json j) {
      j.emplace("user_name", user);
      j.emplace("current_working_directory", out_dir.string());
      j.emplace("submit_time", 1000);
      j.emplace("restart_cnt", 0);
      j.emplace("state_reason", "None");
      j.emplace("array_job_id", 0);
      j.emplace("array_task_id", nullptr);
      j.emplace("array_task_string", "");
      j.emplace("het_job_id", 0);
      j.emplace("het_job_offset", 0);
      j.emplace("exit_code", 0);
      jobs.push_back(j);
    };
    // A single job, running; it prints three lines (two labelled by srun --label).
    job({{"job_id", 100}, {"name", "digits"}, {"comment", "riseml"}, {"job_state", "RUNNING"},
         {"node_count", 2}, {"tasks", 4}, {"nodes", "n[1-2]"},
         {"standard_output", (out_dir / "riseml-%x-%j.out").string()}});
    // A sweep of 3: task 0 done, task 1 running, task 2 pending.
    job({{"job_id", 201}, {"name", "sweep"}, {"comment", kRisemlSweep}, {"job_state", "COMPLETED"},
         {"array_job_id", 200}, {"array_task_id", 0}, {"node_count", 1}, {"tasks", 1},
         {"standard_output", "riseml-%x-%A_%a.out"}});
    job({{"job_id", 202}, {"name", "sweep"}, {"comment", kRisemlSweep}, {"job_state", "RUNNING"},
         {"array_job_id", 200}, {"array_task_id", 1}, {"node_count", 1}, {"tasks", 1},
         {"nodes", "n3"}, {"standard_output", "riseml-%x-%A_%a.out"}});
    job({{"job_id", 200}, {"name", "sweep"}, {"comment", kRisemlSweep}, {"job_state", "PENDING"},
         {"array_job_id", 200}, {"array_task_string", "2"}, {"node_count", 1}, {"tasks", 1},
         {"state_reason", "JobArrayTaskLimit"}, {"standard_output", "riseml-%x-%A_%a.out"}});
    // Distributed TensorFlow: three heterogeneous components.
    for (int k = 0; k < 3; ++k)
      job({{"job_id", 300 + k}, {"name", "tf"}, {"comment", kRisemlTf}, {"job_state", "RUNNING"},
           {"het_job_id", 300}, {"het_job_offset", k}, {"node_count", 1}, {"tasks", k == 2 ? 2 : 1},
           {"nodes", "n" + std::to_string(k + 1)}});
    // Finished with exit status 3; not riseml's; someone else's.
    job({{"job_id", 400}, {"name", "failing"}, {"comment", "riseml"}, {"job_state", "FAILED"},
         {"exit_code", 768}, {"node_count", 1}, {"tasks", 1}, {"standard_output", "out-%j.txt"}});
    job({{"job_id", 500}, {"name", "plain"}, {"comment", ""}, {"job_state", "RUNNING"}});
    job({{"job_id", 600}, {"name", "theirs"}, {"comment", "riseml"}, {"job_state", "RUNNING"},
         {"user_name", "alice"}, {"node_count", 1}, {"tasks", 1}});
    jobs.back()["user_name"] = "alice";
    write_file(tmp / "squeue.json", json{{"jobs", jobs}}.dump(2));
    write_file(out_dir / "riseml-digits-100.out",
               "riseml: starting\n0: epoch 1: loss 1.0\n 3: epoch 1 from rank 3\n");
    write_file(out_dir / "riseml-sweep-200_0.out", "0: lr 0.1 done\n");
    write_file(out_dir / "riseml-sweep-200_1.out", "0: lr 0.01 running\n");
    write_file(out_dir / "out-400.txt", "0: about to fail\n");

    script("squeue", "cat " + (tmp / "squeue.json").string());
    script("sacct", "echo 'Slurm accounting storage is disabled' >&2; exit 1");
    script("scancel", "echo \"$@\" >> " + (tmp / "scancel.args").string());
    // srun: notes its arguments and prints what monitor-probe prints on each of two nodes.
    script("srun", "echo \"$@\" >> " + (tmp / "srun.args").string() + "\n" +
                       "echo '{\"node\":\"n1\",\"ranks\":[{\"step\":\"0\",\"rank\":0,\"cpu_percent\":"
                       "97.4,\"rss_bytes\":104857600,\"gpus\":\"0\",\"processes\":2}],\"gpus\":"
                       "[{\"index\":0,\"util\":81,\"mem_used_mb\":2048,\"mem_total_mb\":16000}]}'\n"
                       "echo '{\"node\":\"n2\",\"ranks\":[{\"step\":\"0\",\"rank\":1,\"cpu_percent\":"
                       "50,\"rss_bytes\":2048,\"gpus\":\"\",\"processes\":1}],\"gpus\":[]}'");
    setenv("RISEML_SQUEUE", (tmp / "squeue").c_str(), 1);
    setenv("RISEML_SACCT", (tmp / "sacct").c_str(), 1);
    setenv("RISEML_SCANCEL", (tmp / "scancel").c_str(), 1);
    setenv("RISEML_SRUN", (tmp / "srun").c_str(), 1);
    setenv("RISEML_POLL_S", "0.1", 1);
  }

  void TearDown() override {
    for (const char* v : {"RISEML_SQUEUE", "RISEML_SACCT", "RISEML_SCANCEL", "RISEML_SRUN",
                          "RISEML_POLL_S", "RISEML_SBATCH"})
      unsetenv(v);
  }

  void script(const std::string& name, const std::string& body) {
    write_file(tmp / name, "#!/bin/bash\n" + body + "\n");
    fs::permissions(tmp / name, fs::perms::owner_all);
  }

  static std::string user_name();

  CommandResult riseml(std::vector<std::string> args) {
    args.insert(args.begin(), cli_path());
    return run_command(args);
  }

  void expect_refused(const std::vector<std::string>& args, const std::string& message) {
    CommandResult r = riseml(args);
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(lines_of(r.err).size(), 1u) << "want one line:\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
  }
};

std::string JobVerbs::user_name() {
  CommandResult r = run_command({"id", "-un"});
  return r.out.substr(0, r.out.find('\n'));
}

TEST_F(JobVerbs, StatusListsTheUsersRisemlJobs) {
  REQUIRE_CLI();
  CommandResult r = riseml({"status"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 5u) << r.out;  // header, 100, 200, 300, 400
  EXPECT_EQ(lines[0].rfind("ID ", 0), 0u);
  EXPECT_NE(r.out.find("digits"), std::string::npos);
  EXPECT_NE(lines[1].find("RUNNING"), std::string::npos) << lines[1];
  EXPECT_NE(lines[1].find("2x2"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find("sweep of 3: 1 COMPLETED 1 PENDING 1 RUNNING"), std::string::npos) << lines[2];
  EXPECT_NE(lines[3].find("master 1x1 on n1, ps 1x1 on n2, worker 1x2 on n3"), std::string::npos)
      << lines[3];
  EXPECT_NE(lines[4].find("FAILED (exit 3)"), std::string::npos) << lines[4];
  EXPECT_EQ(r.out.find("plain"), std::string::npos) << "a job riseml did not submit is listed";
  EXPECT_EQ(r.out.find("theirs"), std::string::npos) << "another user's job is listed";

  r = riseml({"status", "--all"});
  EXPECT_NE(r.out.find("theirs"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("plain"), std::string::npos) << r.out;
}

TEST_F(JobVerbs, StatusLongShowsEachExperimentWithItsParameters) {
  REQUIRE_CLI();
  CommandResult r = riseml({"status", "--long"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = lines_of(r.out);
  EXPECT_TRUE(std::any_of(lines.begin(), lines.end(), [](const std::string& l) {
    return l.rfind("  200.0", 0) == 0 && l.find("COMPLETED") != std::string::npos &&
           l.find("lr=0.1") != std::string::npos;
  })) << r.out;
  EXPECT_NE(r.out.find("lr=0.01"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PENDING (JobArrayTaskLimit)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("lr=0.001"), std::string::npos) << r.out;

  r = riseml({"status", "200.1"});
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(lines_of(r.out).size(), 2u) << r.out;
  EXPECT_NE(r.out.find("lr=0.01"), std::string::npos) << r.out;
}

TEST_F(JobVerbs, BadIdsUnknownForeignAndOthersJobsAreRefused) {
  REQUIRE_CLI();
  expect_refused({"status", "12x"}, "'12x' is not a job id");
  expect_refused({"logs", "0"}, "'0' is not a job id");
  expect_refused({"kill", "999"}, "no job 999 in the queue");
  expect_refused({"status", "500"}, "job 500 was not submitted by riseml submit");
  expect_refused({"kill", "600"}, "job 600 belongs to alice");
  expect_refused({"logs", "600"}, "job 600 belongs to alice");
  expect_refused({"monitor", "600", "--once"}, "job 600 belongs to alice");
  expect_refused({"kill", "200.7"}, "job 200 has no experiment 200.7");
  expect_refused({"kill", "100.1"}, "job 100 is not a sweep");
  expect_refused({"status", "202"}, "job 202 is part of job 200 (experiment 200.1)");
  EXPECT_FALSE(fs::exists(tmp / "scancel.args")) << "scancel ran for a refused id";
}

TEST_F(JobVerbs, SqueueFailingIsOneLineAndStatusOne) {
  REQUIRE_CLI();
  script("squeue", "echo 'slurm_load_jobs error: Unable to contact slurm controller' >&2; exit 1");
  CommandResult r = riseml({"status"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("squeue --json failed with status 1 (slurm_load_jobs error"),
            std::string::npos) << r.err;
  script("squeue", "echo 'not json'");
  r = riseml({"logs", "100"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot read squeue --json: its output is not JSON"), std::string::npos)
      << r.err;
}

TEST_F(JobVerbs, LogsPrefixEveryLineWithExperimentAndRank) {
  REQUIRE_CLI();
  CommandResult r = riseml({"logs", "100"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[100] riseml: starting\n[100 r0] epoch 1: loss 1.0\n[100 r3] epoch 1 from rank 3\n");

  r = riseml({"logs", "200"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[200.0 r0] lr 0.1 done\n[200.1 r0] lr 0.01 running\n");
  r = riseml({"logs", "200.1"});
  EXPECT_EQ(r.out, "[200.1 r0] lr 0.01 running\n");
}

TEST_F(JobVerbs, LogsFollowEndsWithTheJobsExitStatus) {
  REQUIRE_CLI();
  CommandResult r = riseml({"logs", "-f", "400"});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.out, "[400 r0] about to fail\n");
  r = riseml({"logs", "-f", "200.0"});
  EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(JobVerbs, KillCancelsAJobOrOneExperiment) {
  REQUIRE_CLI();
  CommandResult r = riseml({"kill", "200"});
  EXPECT_EQ(r.status, 0) << r.err;
  r = riseml({"kill", "200.1"});
  EXPECT_EQ(r.status, 0) << r.err;
  r = riseml({"kill", "300"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_file(tmp / "scancel.args"), "200\n200_1\n300\n");
  r = riseml({"kill", "200.0"});  // already done: nothing to cancel, not an error
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("has already ended (COMPLETED)"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(tmp / "scancel.args"), "200\n200_1\n300\n");
}

TEST_F(JobVerbs, MonitorOncePrintsARowPerNodeAndRank) {
  REQUIRE_CLI();
  CommandResult r = riseml({"monitor", "100", "--once"});
  ASSERT_EQ(r.status, 0) << r.err;
  auto lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  EXPECT_EQ(lines[0], "EXPERIMENT  NODE  STEP  RANK  CPU  MEMORY    GPUS  GPU-UTIL  GPU-MEM");
  EXPECT_EQ(lines[1], "100         n1    0     0     97%  100.0MiB  0     81%       2.0GiB");
  EXPECT_EQ(lines[2], "100         n2    0     1     50%  2.0KiB    -     -         -");
  std::string args = read_file(tmp / "srun.args");
  EXPECT_EQ(args.rfind("--overlap --jobid=100 --nodes=2 --ntasks=2 --ntasks-per-node=1 --quiet ", 0), 0u)
      << args;
  EXPECT_NE(args.find(" monitor-probe --job 100"), std::string::npos) << args;

  // Every running experiment of every job; a heterogeneous job per component (its role).
  fs::remove(tmp / "srun.args");
  r = riseml({"monitor", "--once"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("200.1  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("300 worker  "), std::string::npos) << r.out;
  EXPECT_NE(read_file(tmp / "srun.args").find("--jobid=300 --het-group=2 --nodes=1"),
            std::string::npos);
  EXPECT_EQ(riseml({"monitor", "400", "--once"}).err, "riseml: job 400 is not running\n");
}

TEST_F(JobVerbs, MonitorProbeMeasuresTheJobsTasksOnThisNode) {
  REQUIRE_CLI();
  // A stand-in task of step 0, rank 3 of job 424242 on node "probe-node".
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    setenv("SLURM_JOB_ID", "424242", 1);
    setenv("SLURMD_NODENAME", "probe-node", 1);
    setenv("SLURM_STEP_ID", "0", 1);
    setenv("SLURM_PROCID", "3", 1);
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    execlp("sleep", "sleep", "5", static_cast<char*>(nullptr));
    _exit(127);
  }
  usleep(200000);
  setenv("SLURMD_NODENAME", "probe-node", 1);
  setenv("SLURM_STEP_ID", "1", 1);
  CommandResult r = riseml({"monitor-probe", "--job", "424242"});
  unsetenv("SLURMD_NODENAME");
  unsetenv("SLURM_STEP_ID");
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  ASSERT_EQ(r.status, 0) << r.err;
  json j = json::parse(r.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << r.out;
  EXPECT_EQ(j["node"], "probe-node");
  ASSERT_EQ(j["ranks"].size(), 1u) << r.out;
  EXPECT_EQ(j["ranks"][0]["rank"], 3);
  EXPECT_EQ(j["ranks"][0]["step"], "0");
  EXPECT_EQ(j["ranks"][0]["gpus"], "1");
  EXPECT_GT(j["ranks"][0]["rss_bytes"].get<long long>(), 0);
}

TEST_F(JobVerbs, SubmitFollowMarksTheJobAndEndsWithItsExitStatus) {
  REQUIRE_CLI();
  write_file(tmp / "riseml.yml", "project: failing\ntrain:\n  parameters:\n    lr: [0.1, 0.2]\n"
                                 "  run:\n    - echo hi\n");
  write_file(tmp / "site.yml", "containers: none\n");
  script("sbatch", "printf '%s\\n' \"$@\" > " + (tmp / "sbatch.args").string() +
                       "; cat > /dev/null; echo '400;cluster'");
  setenv("RISEML_SBATCH", (tmp / "sbatch").c_str(), 1);
  CommandResult r = riseml({"submit", "--follow", "--site", (tmp / "site.yml").string(),
                            (tmp / "riseml.yml").string()});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.out, "400\n[400 r0] about to fail\n");
  EXPECT_NE(r.err.find("riseml: 400 FAILED, exit status 3\n"), std::string::npos) << r.err;
  EXPECT_EQ(read_file(tmp / "sbatch.args"),
            "--parsable\n--comment=riseml {\"parameters\":[[\"lr\",[\"0.1\",\"0.2\"]]]}\n");
}

}  // namespace
}  // namespace riseml::test
