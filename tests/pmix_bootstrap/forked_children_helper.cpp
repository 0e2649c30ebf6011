// A rank whose forked children each join the job in turn, as `pytest --forked` runs one test per
// child: child i of every rank initialises, puts a value of its own under the same key as the
// children before it, fences, and must read child i's value of every peer (not a stale one) and
// the same job secret; odd children then _exit without finalizing (what pytest-forked's child
// does), even ones finalize first (none do with a second argument "none"). Last, the rank's own
// process joins. Prints "forked rank=R child=I ok" per child and "forked rank=R parent ok"; exit
// status 1 on an error.
#include <riseml/pmix/session.hpp>
#include <riseml/pmix/session_rendezvous.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <vector>

namespace {

using std::chrono::seconds;

std::vector<std::byte> bytes_of(const std::string& text) {
  const auto* begin = reinterpret_cast<const std::byte*>(text.data());
  return {begin, begin + text.size()};
}

[[noreturn]] void fail(const std::string& who, const std::string& what) {
  std::fprintf(stderr, "forked %s error: %s\n", who.c_str(), what.c_str());
  std::fflush(stderr);
  _exit(1);
}

// Joins the job as `incarnation` ("child=3", "parent"); returns the session, still open.
std::shared_ptr<riseml::pmix::Session> join(const std::string& incarnation) {
  auto session = std::shared_ptr<riseml::pmix::Session>(riseml::pmix::init());
  riseml::pmix::SessionRendezvous rendezvous(session);
  const int rank = rendezvous.rank();
  const std::string who = "rank=" + std::to_string(rank) + " " + incarnation;
  rendezvous.put("incarnation", bytes_of(incarnation + " of rank " + std::to_string(rank)));
  rendezvous.put("secret", rendezvous.job_secret());
  rendezvous.fence(seconds(30));
  for (int peer = 0; peer < rendezvous.size(); ++peer) {
    if (rendezvous.get(peer, "incarnation", seconds(5)) !=
        bytes_of(incarnation + " of rank " + std::to_string(peer)))
      fail(who, "rank " + std::to_string(peer) + "'s value is not its " + incarnation + "'s");
    if (rendezvous.get(peer, "secret", seconds(5)) != rendezvous.job_secret())
      fail(who, "rank " + std::to_string(peer) + " holds another job secret");
  }
  rendezvous.fence(seconds(30));
  std::printf("forked %s ok\n", who.c_str());
  std::fflush(stdout);
  return session;
}

}  // namespace

int main(int argc, char** argv) {
  const int children = argc > 1 ? std::atoi(argv[1]) : 4;
  // "none": no child finalizes, as under pytest --forked.
  const bool some_finalize = !(argc > 2 && std::string(argv[2]) == "none");
  for (int i = 0; i < children; ++i) {
    pid_t pid = fork();
    if (pid < 0) fail("parent", "fork failed");
    if (pid == 0) {
      try {
        auto session = join("child=" + std::to_string(i));
        if (some_finalize && i % 2 == 0) session.reset();  // PMIx_Finalize
      } catch (const std::exception& error) {
        fail("child=" + std::to_string(i), error.what());
      }
      _exit(0);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fail("parent", "child " + std::to_string(i) + " failed");
  }
  try {
    join("parent");
  } catch (const std::exception& error) {
    fail("parent", error.what());
  }
  return 0;
}
