// Keeps a PMIx server as busy as a job's setup can: rounds of put, commit, fence (the server
// collects every rank's data and hands it to all) and gets of every peer's value, as fast as
// the ranks go. Runs rounds for argv[1] seconds (rank 0 decides, so every rank runs as many
// fences), checks every value, and prints "storm rank=R rounds=N ok" or the failure (exit
// status 1). Gets that the server has to answer (a key not yet committed) are left out:
// libpmix 4.2.2 leaks its NOT-FOUND answers, which the sanitizer build would report.
#include <riseml/pmix/session.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

std::vector<std::byte> bytes_of(const std::string& text) {
  const auto* begin = reinterpret_cast<const std::byte*>(text.data());
  return {begin, begin + text.size()};
}

std::string text_of(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

int run(double duration_seconds) {
  auto session = riseml::pmix::init();
  const int rank = session->facts().rank;
  const int size = session->facts().size;
  const auto until = Clock::now() + std::chrono::duration<double>(duration_seconds);
  int rounds = 0;
  for (bool more = true; more; ++rounds) {
    const std::string key = "round." + std::to_string(rounds);
    // Rank 0 adds whether another round follows.
    std::string suffix = rank != 0 ? "" : Clock::now() < until ? ":more" : ":last";
    session->put(key, bytes_of(std::to_string(rounds) + ":" + std::to_string(rank) + suffix));
    session->commit();
    session->fence(seconds(60));
    for (int peer = 0; peer < size; ++peer) {
      std::string got = text_of(session->get(peer, key, seconds(0)));
      std::string expected = std::to_string(rounds) + ":" + std::to_string(peer);
      if (peer == 0) {
        more = got == expected + ":more";
        expected += more ? ":more" : ":last";
      }
      if (got != expected) {
        std::fprintf(stderr, "storm rank=%d error: round %d: got '%s' from rank %d\n", rank, rounds,
                     got.c_str(), peer);
        return 1;
      }
    }
  }
  std::printf("storm rank=%d rounds=%d ok\n", rank, rounds);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc > 1 ? std::atof(argv[1]) : 5.0);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "storm: %s\n", error.what());
    return 1;
  }
}
