// Parsing Slurm's JSON and the riseml view of jobs (translator/slurm_jobs): odd output never
// crashes, array task strings, output file patterns, wait statuses, ids, the riseml comment.
#include "slurm_jobs.hpp"

#include <gtest/gtest.h>

namespace riseml {
namespace {

TEST(SlurmJobs, RejectsWhatIsNotSqueueJson) {
  std::string error;
  EXPECT_FALSE(parse_squeue_json("slurm_load_jobs error: Unable to contact slurm controller", error));
  EXPECT_EQ(error, "its output is not JSON");
  EXPECT_FALSE(parse_squeue_json("{\"meta\": {}}", error));
  EXPECT_EQ(error, "its JSON has no \"jobs\" list");
}

TEST(SlurmJobs, OddRecordsAreSkippedOrReadAsUnset) {
  std::string error;
  auto jobs = parse_squeue_json(R"({"jobs": [
      7, "x", {"job_id": "abc"}, {"job_id": -3},
      {"job_id": {"set": true, "number": 12}, "job_state": ["RUNNING"], "tasks": "4",
       "node_count": 2.0, "array_task_id": {"set": false, "number": 0}, "user_name": 5,
       "exit_code": {"return_code": 0}},
      {"job_id": 13, "job_state": "FAILED", "exit_code": 768, "array_job_id": 4294967294}]})",
                                error);
  ASSERT_TRUE(jobs) << error;
  ASSERT_EQ(jobs->size(), 2u);
  const SlurmJob& a = (*jobs)[0];
  EXPECT_EQ(a.job_id, 12);
  EXPECT_EQ(a.state, "RUNNING");
  EXPECT_EQ(a.tasks, 4);
  EXPECT_EQ(a.node_count, 2);
  EXPECT_FALSE(a.array_task_id);
  EXPECT_EQ(a.user, "");
  EXPECT_FALSE(a.exit_status);  // running: no exit status yet
  const SlurmJob& b = (*jobs)[1];
  EXPECT_EQ(b.exit_status, 3);
  EXPECT_EQ(b.array_job_id, 0) << "NO_VAL means unset";
}

TEST(SlurmJobs, ReadsSacctRecords) {
  std::string error;
  auto jobs = parse_sacct_json(R"({"jobs": [{"job_id": 41, "name": "p", "user": "ann",
      "comment": {"job": "riseml"}, "state": {"current": "CANCELLED", "reason": "None"},
      "array": {"job_id": 40, "task_id": 1}, "het": {"job_id": 0, "job_offset": 0},
      "time": {"submission": 100, "start": 110, "end": 120}, "working_directory": "/w",
      "exit_code": {"status": "SIGNALED", "return_code": 0, "signal": {"signal_id": 15}}}]})",
                              error);
  ASSERT_TRUE(jobs) << error;
  ASSERT_EQ(jobs->size(), 1u);
  const SlurmJob& j = jobs->front();
  EXPECT_EQ(j.array_job_id, 40);
  EXPECT_EQ(j.array_task_id, 1);
  EXPECT_EQ(j.state, "CANCELLED");
  EXPECT_EQ(j.exit_status, 143);
  EXPECT_EQ(j.comment, "riseml");
  EXPECT_EQ(expand_output_path(j, ""), "/w/slurm-40_1.out");
}

TEST(SlurmJobs, DecodesWaitStatuses) {
  EXPECT_EQ(decode_wait_status(0), 0);
  EXPECT_EQ(decode_wait_status(768), 3);
  EXPECT_EQ(decode_wait_status(9), 137);
}

TEST(SlurmJobs, ExpandsArrayTaskStrings) {
  EXPECT_EQ(expand_task_string("1-3%1"), (std::vector<long long>{1, 2, 3}));
  EXPECT_EQ(expand_task_string("0,4-8:2"), (std::vector<long long>{0, 4, 6, 8}));
  EXPECT_EQ(expand_task_string("5"), (std::vector<long long>{5}));
  EXPECT_TRUE(expand_task_string("3-1").empty());
  EXPECT_TRUE(expand_task_string("a").empty());
  EXPECT_TRUE(expand_task_string("1-2:0").empty());
  EXPECT_EQ(expand_task_string("0-4294967294", 10).size(), 10u);
}

TEST(SlurmJobs, ExpandsOutputPatterns) {
  SlurmJob j;
  j.job_id = 57;
  j.array_job_id = 50;
  j.array_task_id = 7;
  j.name = "proj";
  j.user = "ann";
  j.cwd = "/home/ann/p";
  EXPECT_EQ(expand_output_path(j, "riseml-%x-%A_%a.out"), "/home/ann/p/riseml-proj-50_7.out");
  EXPECT_EQ(expand_output_path(j, "/o/%u/%j-%3a-%%-%q.log"), "/o/ann/57-007-%-%q.log");
  EXPECT_EQ(expand_output_path(j, "end%"), "/home/ann/p/end%");
}

TEST(SlurmJobs, ParsesJobIds) {
  EXPECT_EQ(parse_job_ref("12")->id, 12);
  EXPECT_EQ(parse_job_ref("12.3")->index, 3);
  EXPECT_EQ(parse_job_ref("12_3")->index, 3);
  for (const char* bad : {"", "0", "x", "12.", ".3", "12.3.4", "-1", "12a", "99999999999", "1 2"})
    EXPECT_FALSE(parse_job_ref(bad)) << bad;
}

TEST(SlurmJobs, RisemlCommentRoundTrips) {
  RisemlMark mark;
  mark.parameters = {Parameter{"lr", {"0.1", "1e-3"}, {}}, Parameter{"opt", {"sgd"}, {}}};
  mark.roles = {{"master", 1}, {"worker", 2}};
  std::string comment = format_riseml_comment(mark);
  EXPECT_EQ(comment.rfind("riseml {", 0), 0u) << comment;
  auto back = parse_riseml_comment(comment);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->parameters.size(), 2u);
  EXPECT_EQ(back->parameters[0].values, (std::vector<std::string>{"0.1", "1e-3"}));
  EXPECT_EQ(back->roles, mark.roles);
  EXPECT_EQ(format_riseml_comment(RisemlMark{}), "riseml");
  EXPECT_TRUE(parse_riseml_comment("riseml"));
  EXPECT_TRUE(parse_riseml_comment("riseml {broken"));  // still riseml's, without details
  EXPECT_FALSE(parse_riseml_comment("risemlx"));
  EXPECT_FALSE(parse_riseml_comment(""));
  EXPECT_FALSE(parse_riseml_comment("my comment"));
}

TEST(SlurmJobs, GroupsSweepsAndHeterogeneousJobs) {
  std::vector<SlurmJob> records(4);
  auto set = [](SlurmJob& r, long long id, long long array, long long het, long long offset,
                const std::string& state) {
    r.job_id = id;
    r.array_job_id = array;
    r.het_job_id = het;
    r.het_job_offset = offset;
    r.state = state;
  };
  set(records[0], 21, 20, 0, 0, "RUNNING");
  records[0].array_task_id = 1;
  set(records[1], 20, 20, 0, 0, "PENDING");
  records[1].array_pending = "2-3";
  set(records[2], 30, 0, 30, 0, "COMPLETED");
  set(records[3], 31, 0, 30, 1, "COMPLETED");
  auto jobs = group_jobs(records);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_TRUE(jobs[0].sweep());
  auto es = jobs[0].experiments();
  ASSERT_EQ(es.size(), 3u);
  EXPECT_EQ(es[0].index, 1);
  EXPECT_EQ(es[2].state(), "PENDING");
  EXPECT_EQ(jobs[0].state(), "RUNNING");
  EXPECT_FALSE(jobs[0].exit_status());
  EXPECT_TRUE(jobs[1].heterogeneous());
  EXPECT_EQ(jobs[1].experiments().front().components.size(), 2u);
  EXPECT_EQ(jobs[1].exit_status(), 0);
}

}  // namespace
}  // namespace riseml
