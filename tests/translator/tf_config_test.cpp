// tf_config.hpp: the roles string, the TF_CONFIG JSON, and the rendezvous through a shared
// folder (threads and processes here stand in for the tasks of a job).
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include <gtest/gtest.h>

#include "test_support.hpp"
#include "tf_config.hpp"

namespace riseml::test {
namespace {

using namespace std::chrono_literals;

TEST(ParseTfRoles, ValidList) {
  EXPECT_EQ(parse_tf_roles("master:1,ps:2,worker:3"),
            (TfRoles{{"master", 1}, {"ps", 2}, {"worker", 3}}));
  EXPECT_EQ(parse_tf_roles("chief:1"), (TfRoles{{"chief", 1}}));
  EXPECT_EQ(parse_tf_roles("ps:0,worker:1"), (TfRoles{{"ps", 0}, {"worker", 1}}));
}

void expect_invalid(const std::string& text, const std::string& part) {
  try {
    parse_tf_roles(text);
    ADD_FAILURE() << "'" << text << "' was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(ParseTfRoles, Errors) {
  expect_invalid("", "is not ROLE:COUNT");
  expect_invalid("master", "'master' is not ROLE:COUNT");
  expect_invalid(":1", "is not ROLE:COUNT");
  expect_invalid("master:1,", "'' is not ROLE:COUNT");
  expect_invalid("boss:1", "unknown role 'boss'");
  expect_invalid("ps:x", "the count is not a number");
  expect_invalid("ps:2x", "the count is not a number");
  expect_invalid("ps:", "the count is not a number");
  expect_invalid("ps:-1", "bad count");
  expect_invalid("ps:99999999999999999999", "the count is not a number");
}

TEST(TfConfigJson, Shape) {
  TfRoles roles{{"master", 1}, {"ps", 0}, {"worker", 2}};
  std::string json = tf_config_json(roles, {{"m:1"}, {}, {"w0:2", "w1:3"}}, {"worker", 1});
  EXPECT_EQ(json,
            "{\"cluster\": {\"master\": [\"m:1\"], \"worker\": [\"w0:2\", \"w1:3\"]}, "
            "\"task\": {\"type\": \"worker\", \"index\": 1}, \"environment\": \"cloud\"}");
}

const TfRoles kRoles{{"master", 1}, {"ps", 1}, {"worker", 1}};
const std::vector<TfTask> kTasks{{"master", 0}, {"ps", 0}, {"worker", 0}};

std::string address_of(const TfTask& t) { return t.role + "-host:" + std::to_string(2220 + t.index); }

// The cluster part of the JSON, which must be the same for every task.
std::string cluster_of(const std::string& json) { return json.substr(0, json.find(", \"task\"")); }

TEST(Rendezvous, ThreeThreadsAgreeOnTheCluster) {
  TempDir tmp;
  std::vector<std::string> results(kTasks.size());
  std::vector<std::string> errors(kTasks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < kTasks.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        results[i] = rendezvous_tf_config((tmp / "tf").string(), kRoles, kTasks[i],
                                          address_of(kTasks[i]), 10s);
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t i = 0; i < kTasks.size(); ++i) {
    ASSERT_EQ(errors[i], "");
    EXPECT_EQ(cluster_of(results[i]), cluster_of(results[0]));
    EXPECT_NE(results[i].find("\"task\": {\"type\": \"" + kTasks[i].role + "\", \"index\": 0}"),
              std::string::npos)
        << results[i];
  }
  EXPECT_EQ(cluster_of(results[0]),
            "{\"cluster\": {\"master\": [\"master-host:2220\"], \"ps\": [\"ps-host:2220\"], "
            "\"worker\": [\"worker-host:2220\"]}");
}

TEST(Rendezvous, ThreeProcessesAgreeOnTheCluster) {
  TempDir tmp;
  const fs::path dir = tmp / "tf";
  std::vector<pid_t> children;
  for (const auto& task : kTasks) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int rc = 0;
      try {
        std::string json =
            rendezvous_tf_config(dir.string(), kRoles, task, address_of(task), 10s);
        write_file(tmp / ("result-" + task.role), json);
      } catch (...) {
        rc = 1;
      }
      _exit(rc);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  std::string first = cluster_of(read_file(tmp / "result-master"));
  for (const auto& task : kTasks) EXPECT_EQ(cluster_of(read_file(tmp / ("result-" + task.role))), first);
}

TEST(Rendezvous, TimeoutNamesTheMissingTasks) {
  TempDir tmp;
  TfRoles roles{{"master", 1}, {"ps", 2}, {"worker", 1}};
  try {
    rendezvous_tf_config((tmp / "tf").string(), roles, {"ps", 1}, "h:1", 300ms);
    ADD_FAILURE() << "no timeout";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("did not start within the timeout: master 0, ps 0, worker 0"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("ps 1"), std::string::npos) << "ps 1 is the caller: " << what;
    EXPECT_NE(what.find("shares?"), std::string::npos) << what;
  }
}

TEST(Rendezvous, TaskOutsideTheClusterIsRefused) {
  TempDir tmp;
  EXPECT_THROW(rendezvous_tf_config((tmp / "tf").string(), kRoles, {"worker", 1}, "h:1", 100ms),
               std::runtime_error);
  EXPECT_THROW(rendezvous_tf_config((tmp / "tf").string(), kRoles, {"chief", 0}, "h:1", 100ms),
               std::runtime_error);
  EXPECT_FALSE(fs::exists(tmp / "tf")) << "nothing published for a task outside the cluster";
}

TEST(PickFreePort, GivesAUsablePort) {
  int port = pick_free_port();
  EXPECT_GT(port, 0);
  EXPECT_LT(port, 65536);
}

}  // namespace
}  // namespace riseml::test
