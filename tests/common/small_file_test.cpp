// small_file.hpp: a file read whole up to a limit, and nothing (no exception) when it cannot be:
// the /proc file of a process that exited between the open and the read (riseml-launch read
// one so while its rank was being reaped, and std::ifstream's exception ended the launcher).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <riseml/common/small_file.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace riseml::test {
namespace {

std::string temp_file_with(const std::string& content) {
  char path[] = "/tmp/riseml-small-file-XXXXXX";
  const int fd = ::mkstemp(path);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, content.data(), content.size()), static_cast<ssize_t>(content.size()));
  ::close(fd);
  return path;
}

TEST(SmallFile, ReadsAFileWhole) {
  std::string content(10000, 'x');
  content += "end";
  const std::string path = temp_file_with(content);
  const auto got = read_small_file(path);
  ::unlink(path.c_str());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, content);
}

TEST(SmallFile, StopsAtTheLimit) {
  const std::string path = temp_file_with(std::string(5000, 'y'));
  const auto got = read_small_file(path, 4097);
  ::unlink(path.c_str());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->size(), 4097u);
}

TEST(SmallFile, AnEmptyFileIsEmptyAndAMissingOneIsNothing) {
  const std::string path = temp_file_with("");
  const auto empty = read_small_file(path);
  ::unlink(path.c_str());
  ASSERT_TRUE(empty.has_value());
  EXPECT_TRUE(empty->empty());
  EXPECT_FALSE(read_small_file("/proc/self/no-such-file").has_value());
}

TEST(SmallFile, ProcStatOfAProcessReapedAfterTheOpenIsNothingNotAnException) {
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  const std::string path = "/proc/" + std::to_string(child) + "/stat";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  // Alive: the stat line, starting with the pid.
  const auto alive = read_small_file(path);
  ASSERT_TRUE(alive.has_value());
  EXPECT_EQ(alive->rfind(std::to_string(child) + " (", 0), 0u) << *alive;
  ::kill(child, SIGKILL);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  // Opened before, read after the reaping: read() fails with ESRCH.
  std::optional<std::string> got;
  EXPECT_NO_THROW(got = read_small_file(fd));
  EXPECT_FALSE(got.has_value());
  ::close(fd);
  EXPECT_FALSE(read_small_file(path).has_value());
}

}  // namespace
}  // namespace riseml::test
