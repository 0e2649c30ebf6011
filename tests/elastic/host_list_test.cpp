// The hosts of an elastic job: "host[:slots]" lists, the discovery script's output and its
// failures (each named), and the blacklist's cooldown (Horovod's rule).
#include "host_health.hpp"
#include "host_list.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace riseml::elastic {
namespace {

using namespace std::chrono_literals;

// The files the tests write in the temporary folder, removed when the test program ends.
struct TemporaryFiles {
  std::vector<std::string> paths;
  ~TemporaryFiles() {
    for (const auto& p : paths) std::remove(p.c_str());
  }
} temporary_files;

std::string script(const std::string& name, const std::string& body) {
  const std::string path = ::testing::TempDir() + "/riseml_discovery_" + name + "_" +
                           std::to_string(::getpid()) + ".sh";
  temporary_files.paths.push_back(path);
  std::ofstream(path) << "#!/bin/bash\n" << body << "\n";
  ::chmod(path.c_str(), 0755);
  return path;
}

// Dead or a zombie (reaped by whoever adopted it).
bool gone_within(int pid, std::chrono::milliseconds wait) {
  const auto until = std::chrono::steady_clock::now() + wait;
  do {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    if (!std::getline(stat, line)) return true;
    const auto close = line.rfind(')');
    if (close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z') return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  } while (std::chrono::steady_clock::now() < until);
  return false;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(ElasticHostList, HostsWithAndWithoutSlots) {
  EXPECT_EQ(parse_host("localhost:2", 1, "x"), (HostSlots{"localhost", 2}));
  EXPECT_EQ(parse_host("127.0.0.1", 3, "x"), (HostSlots{"127.0.0.1", 3}));
  EXPECT_EQ(parse_hosts({"a", "b:4"}, 1, "--hosts"), (std::vector<HostSlots>{{"a", 1}, {"b", 4}}));
  for (const char* bad : {"", ":2", "a:", "a:0", "a:x", "a:2:3", "a b", "a;rm -rf /", "a:99999", "a:-1"})
    EXPECT_THROW(parse_host(bad, 1, "--hosts"), std::invalid_argument) << bad;
  EXPECT_NE(error_of([] { parse_host("a:0", 1, "--hosts"); }).find("--hosts: 'a:0' has no slot count"),
            std::string::npos);
  EXPECT_NE(error_of([] { parse_hosts({"a", "a:2"}, 1, "--hosts"); }).find("host a is listed twice"),
            std::string::npos);
}

TEST(ElasticHostList, TheDiscoveryScriptsAnswer) {
  const auto hosts = run_discovery_script(
      script("good", "echo localhost:2\necho\necho '  127.0.0.1:2  '\necho -e 'n3\\r'"), 1, 5s);
  EXPECT_EQ(hosts, (std::vector<HostSlots>{{"localhost", 2}, {"127.0.0.1", 2}, {"n3", 1}}));
  EXPECT_TRUE(run_discovery_script(script("none", "true"), 1, 5s).empty());
  const std::string bad_line = error_of([] { run_discovery_script(script("bad", "echo a:2\necho 'b c'"), 1, 5s); });
  EXPECT_NE(bad_line.find("line 2: 'b c' is not a host name"), std::string::npos) << bad_line;
  EXPECT_NE(error_of([] { run_discovery_script(script("fails", "echo a; exit 3"), 1, 5s); }).find("exited with status 3"),
            std::string::npos);
  // Stopped with what it started: nothing is left holding this process's standard error.
  const std::string child_pid = ::testing::TempDir() + "/riseml_discovery_child_" + std::to_string(::getpid());
  temporary_files.paths.push_back(child_pid);
  EXPECT_NE(error_of([&] {
              run_discovery_script(script("slow", "sleep 30 & echo $! > " + child_pid + "; wait"), 1, 300ms);
            }).find("ran longer than 300 ms"),
            std::string::npos);
  int pid = 0;
  std::ifstream(child_pid) >> pid;
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(gone_within(pid, 2s)) << "the script's child " << pid << " outlived it";
  EXPECT_NE(error_of([] { run_discovery_script("/no/such/script", 1, 5s); }).find("exited with status 127"),
            std::string::npos);
  EXPECT_NE(error_of([] { run_discovery_script(script("twice", "echo a\necho a:2"), 1, 5s); }).find("listed twice"),
            std::string::npos);
  EXPECT_NE(error_of([] { run_discovery_script(script("flood", "yes localhost:1 | head -c 2000000"), 1, 10s); })
                .find("more than 1 MiB"),
            std::string::npos);
}

TEST(ElasticHostHealth, BlacklistedForGoodOrForACooldownThatDoubles) {
  const auto t0 = HostHealth::Clock::now();
  HostHealth never(std::nullopt);
  EXPECT_TRUE(never.usable("a", t0));
  EXPECT_FALSE(never.blacklist("a", t0).has_value());
  EXPECT_FALSE(never.usable("a", t0 + 1000h));
  EXPECT_FALSE(never.cooling("a", t0));

  // LOW 1, HIGH 10, the random part 0.5: 2.5 s, then (again after it ended) 4.5 s, then 8.5,
  // then the ceiling 10.
  HostHealth health(std::make_pair(1.0, 10.0), [] { return 0.5; });
  EXPECT_EQ(health.blacklist("a", t0), std::optional<HostHealth::Clock::duration>(2500ms));
  EXPECT_TRUE(health.cooling("a", t0 + 2s));
  EXPECT_FALSE(health.usable("a", t0 + 2s));
  // Failing again while out changes nothing.
  EXPECT_EQ(health.blacklist("a", t0 + 1s), std::optional<HostHealth::Clock::duration>(1500ms));
  EXPECT_EQ(health.failures("a"), 1);
  EXPECT_TRUE(health.usable("a", t0 + 2500ms));
  EXPECT_EQ(health.blacklist("a", t0 + 3s), std::optional<HostHealth::Clock::duration>(4500ms));
  EXPECT_EQ(health.blacklist("a", t0 + 10s), std::optional<HostHealth::Clock::duration>(8500ms));
  EXPECT_EQ(health.blacklist("a", t0 + 20s), std::optional<HostHealth::Clock::duration>(10s));
  EXPECT_TRUE(health.usable("b", t0));
}

}  // namespace
}  // namespace riseml::elastic
