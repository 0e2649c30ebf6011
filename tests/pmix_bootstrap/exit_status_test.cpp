#include "exit_status.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

namespace riseml::launch {
namespace {

int wait_status_of_child(void (*body)()) {
  pid_t pid = fork();
  if (pid == 0) body();
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

TEST(ExitStatus, NormalExit) {
  int status = wait_status_of_child([] { _exit(3); });
  EXPECT_EQ(describe_wait_status(status), "exited with status 3");
  EXPECT_EQ(exit_code_of(status), 3);
  EXPECT_TRUE(is_failure(status));
}

TEST(ExitStatus, Success) {
  int status = wait_status_of_child([] { _exit(0); });
  EXPECT_EQ(exit_code_of(status), 0);
  EXPECT_FALSE(is_failure(status));
}

TEST(ExitStatus, KilledBySignal) {
  int status = wait_status_of_child([] {
    raise(SIGKILL);
    _exit(0);
  });
  EXPECT_EQ(describe_wait_status(status), "was killed by signal 9 (Killed)");
  EXPECT_EQ(exit_code_of(status), 137);
  EXPECT_TRUE(is_failure(status));
}

}  // namespace
}  // namespace riseml::launch
