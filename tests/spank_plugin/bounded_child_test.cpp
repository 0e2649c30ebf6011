// run_bounded with misbehaving children (shell scripts): a crash is a signal, a sleeper and a
// child that closes its pipes are killed at the time limit, a flood is cut, a background process
// holding the pipes is not waited for; the child gets /dev/null as stdin, none of our
// descriptors, / as working directory and default signal handling.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "bounded_child.hpp"
#include "scratch_folder.hpp"

namespace riseml::placement::test {
namespace {

using Ending = ChildResult::Ending;
using namespace std::chrono_literals;

class BoundedChild : public ::testing::Test {
 protected:
  ChildResult run(const std::string& body, ChildLimits limits = {}) {
    const std::string prog = scratch_.script("child.sh", body);
    const auto start = std::chrono::steady_clock::now();
    ChildResult r = run_bounded({prog}, limits);
    elapsed_ = std::chrono::steady_clock::now() - start;
    return r;
  }
  static ChildLimits quick(std::chrono::milliseconds t) {
    ChildLimits l;
    l.timeout = t;
    return l;
  }

  ScratchFolder scratch_;
  std::chrono::steady_clock::duration elapsed_{};
};

TEST_F(BoundedChild, OutputErrorsAndExitStatus) {
  const ChildResult r = run("echo out; echo err >&2; exit 3");
  EXPECT_EQ(r.ending, Ending::exited);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
}

TEST_F(BoundedChild, ArgumentsArePassedWithoutAShell) {
  const std::string prog = scratch_.script("args.sh", "printf '%s|' \"$#\" \"$@\"");
  const ChildResult r = run_bounded({prog, "a b", "$(touch /tmp/x)", ";"}, {});
  EXPECT_EQ(r.ending, Ending::exited);
  EXPECT_EQ(r.out, "3|a b|$(touch /tmp/x)|;|");
}

TEST_F(BoundedChild, ACrashIsASignal) {
  const ChildResult r = run("echo partial; kill -SEGV $$");
  EXPECT_EQ(r.ending, Ending::signaled);
  EXPECT_EQ(r.signal, SIGSEGV);
  EXPECT_EQ(r.out, "partial\n");
}

TEST_F(BoundedChild, ASleeperIsKilledAtTheTimeLimit) {
  const ChildResult r = run("echo started; exec sleep 600", quick(300ms));
  EXPECT_EQ(r.ending, Ending::timed_out);
  EXPECT_GE(elapsed_, 300ms);
  EXPECT_LT(elapsed_, 5s);
}

TEST_F(BoundedChild, ClosingItsPipesDoesNotHideAHang) {
  const ChildResult r = run("exec >/dev/null 2>&1; exec sleep 600", quick(300ms));
  EXPECT_EQ(r.ending, Ending::timed_out);
  EXPECT_LT(elapsed_, 5s);
}

TEST_F(BoundedChild, ABackgroundProcessHoldingThePipesIsNotWaitedFor) {
  const ChildResult r = run("sleep 20 & echo done", quick(10s));
  EXPECT_EQ(r.ending, Ending::exited);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "done\n");
  EXPECT_LT(elapsed_, 5s);
}

TEST_F(BoundedChild, AFloodIsCutAndTheChildKilled) {
  ChildLimits l = quick(20s);
  l.max_stdout = 1 << 20;
  const ChildResult r = run("exec yes riseml", l);
  EXPECT_EQ(r.ending, Ending::too_much_output);
  EXPECT_EQ(r.out.size(), std::size_t{1} << 20);
  EXPECT_LT(elapsed_, 10s);
}

TEST_F(BoundedChild, ALastBurstOverTheLimitCountsToo) {
  ChildLimits l;
  l.max_stdout = 1000;
  const ChildResult r = run("head -c 1001 /dev/zero", l);
  EXPECT_EQ(r.ending, Ending::too_much_output);
  EXPECT_EQ(r.out.size(), 1000u);
}

TEST_F(BoundedChild, StderrIsReadButOnlyItsStartKept) {
  const ChildResult r = run("head -c 5000000 /dev/zero >&2; echo ok");
  EXPECT_EQ(r.ending, Ending::exited);
  EXPECT_EQ(r.out, "ok\n");
  EXPECT_EQ(r.err.size(), 4096u);
}

TEST_F(BoundedChild, AnEndlessStderrEndsAtTheTimeLimit) {
  const ChildResult r = run("exec yes riseml >&2", quick(500ms));
  EXPECT_EQ(r.ending, Ending::timed_out);
  EXPECT_LT(elapsed_, 5s);
}

TEST_F(BoundedChild, AFloodFromWhatItLeftBehindIsNotWaitedFor) {
  const ChildResult r = run("yes riseml >&2 & echo done", quick(10s));
  EXPECT_EQ(r.ending, Ending::exited);
  EXPECT_EQ(r.out, "done\n");
  EXPECT_LT(elapsed_, 5s);
}

TEST_F(BoundedChild, StdinIsDevNull) {
  // Our stdin becomes a pipe nobody writes to: a child that inherited it would wait forever.
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  const int saved = dup(0);
  dup2(p[0], 0);
  const ChildResult r = run("cat; echo eof", quick(5s));
  dup2(saved, 0);
  close(saved);
  close(p[0]);
  close(p[1]);
  EXPECT_EQ(r.ending, Ending::exited);
  EXPECT_EQ(r.out, "eof\n");
}

TEST_F(BoundedChild, NoDescriptorOfOursLeaks) {
  const int fd = open("/dev/null", O_RDONLY);  // not close-on-exec, like many of slurmstepd's
  ASSERT_GE(fd, 3);
  const std::string n = std::to_string(fd);
  const ChildResult r = run("if [ -e /proc/$$/fd/" + n + " ]; then echo leaked; else echo clean; fi");
  close(fd);
  EXPECT_EQ(r.out, "clean\n");
}

TEST_F(BoundedChild, RunsInTheRootFolder) {
  const ChildResult r = run("pwd");
  EXPECT_EQ(r.out, "/\n");
}

TEST_F(BoundedChild, SignalHandlingStartsFromTheDefaults) {
  // A caller that ignores SIGUSR1 and blocks SIGTERM (slurmstepd has its own) must not pass that on.
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(sigprocmask(SIG_BLOCK, &term, &old), 0);
  struct sigaction ignore {}, saved {};
  ignore.sa_handler = SIG_IGN;
  sigaction(SIGUSR1, &ignore, &saved);
  const ChildResult usr1 = run("kill -USR1 $$; echo survived");
  const ChildResult termed = run("kill -TERM $$; echo survived");
  sigaction(SIGUSR1, &saved, nullptr);
  sigprocmask(SIG_SETMASK, &old, nullptr);
  EXPECT_EQ(usr1.ending, Ending::signaled);
  EXPECT_EQ(usr1.signal, SIGUSR1);
  EXPECT_EQ(termed.ending, Ending::signaled);
  EXPECT_EQ(termed.signal, SIGTERM);
}

TEST_F(BoundedChild, WhatCannotStartSaysWhy) {
  ChildResult r = run_bounded({scratch_.path() + "/missing"}, {});
  EXPECT_EQ(r.ending, Ending::not_started);
  EXPECT_EQ(r.error, ENOENT);
  r = run_bounded({scratch_.file("plain.txt", "echo hi\n")}, {});
  EXPECT_EQ(r.ending, Ending::not_started);
  EXPECT_EQ(r.error, EACCES);
  r = run_bounded({}, {});
  EXPECT_EQ(r.ending, Ending::not_started);
  EXPECT_EQ(r.error, EINVAL);
}

}  // namespace
}  // namespace riseml::placement::test
