// Exercises riseml::pmix::SessionRendezvous the way the collectives core uses it: every rank
// puts, fences, gets every peer's value; an absent key is an error at once; the job secret is
// the same in every rank. Prints "rendezvous rank=R ok" or the failure (exit status 1).
#include <riseml/pmix/session.hpp>
#include <riseml/pmix/session_rendezvous.hpp>

#include <chrono>
#include <cstdio>
#include <string>

namespace {

using std::chrono::seconds;

std::vector<std::byte> bytes_of(const std::string& text) {
  const auto* begin = reinterpret_cast<const std::byte*>(text.data());
  return {begin, begin + text.size()};
}

void check(bool condition, int rank, const std::string& what) {
  if (condition) return;
  std::fprintf(stderr, "rendezvous rank=%d error: %s\n", rank, what.c_str());
  std::exit(1);
}

void run() {
  auto session = std::shared_ptr<riseml::pmix::Session>(riseml::pmix::init());
  riseml::pmix::SessionRendezvous rendezvous(session);
  const int rank = rendezvous.rank();
  const int size = rendezvous.size();

  rendezvous.put("address", bytes_of("endpoint-of-" + std::to_string(rank)));
  // Sharing the secret through PMIx (never printing it) checks that every rank holds the same.
  rendezvous.put("secret", rendezvous.job_secret());
  rendezvous.fence(seconds(30));
  for (int peer = 0; peer < size; ++peer) {
    check(rendezvous.get(peer, "address", seconds(5)) ==
              bytes_of("endpoint-of-" + std::to_string(peer)),
          rank, "wrong address of rank " + std::to_string(peer));
    check(rendezvous.get(peer, "secret", seconds(5)) == rendezvous.job_secret(), rank,
          "rank " + std::to_string(peer) + " holds another job secret");
  }
  check(rendezvous.job_secret().size() == 32, rank, "the job secret is not 32 bytes");

  auto asked = std::chrono::steady_clock::now();
  try {
    rendezvous.get((rank + 1) % size, "absent", seconds(30));
    check(false, rank, "an absent key was found");
  } catch (const riseml::RendezvousError& error) {
    check(std::string(error.what()).find("'absent'") != std::string::npos, rank,
          std::string("the error does not name the key: ") + error.what());
    check(std::chrono::steady_clock::now() - asked < seconds(2), rank,
          "an absent key took the whole timeout to report");
  }
  rendezvous.fence(seconds(30));
  std::printf("rendezvous rank=%d ok\n", rank);
}

}  // namespace

int main() {
  try {
    run();
  } catch (const std::exception& error) {
    std::fprintf(stderr, "rendezvous: %s\n", error.what());
    return 1;
  }
  return 0;
}
