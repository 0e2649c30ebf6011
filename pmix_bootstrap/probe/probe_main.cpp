// riseml-pmix-probe: checks that a launcher gives consistent job facts and a working key
// exchange. Each rank prints two lines in a fixed form that tests parse (one line each):
//   probe rank=R size=N local_rank=L local_size=LS node_rank=NR node_id=I nnodes=K
//         host=H nspace=NS jobid=J
//   probe rank=R exchange ok peers=N hosts=K fence_us=T sync_fence_us=T2
// (fence_us: the first fence, carrying every rank's key and waiting for late starters;
// sync_fence_us: a second fence once the ranks are in step), and fails loudly (stderr, exit
// status 1) on any inconsistency. Options make one rank misbehave, for failure tests.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <set>
#include <string>
#include <thread>

#include <riseml/pmix/session.hpp>

namespace {

using riseml::pmix::Session;

struct ProbeOptions {
  double fence_timeout_seconds = 60;
  std::optional<int> exit_code;
  std::optional<int> kill_signal;
  std::optional<int> on_rank;
  std::optional<int> hang_on_rank;
  std::string marker;  // ignored; lets tests find their processes with pgrep -f
};

void print_line(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
}

[[noreturn]] void fail(int rank, const std::string& what) {
  std::fprintf(stderr, "probe rank=%d error: %s\n", rank, what.c_str());
  std::exit(1);
}

// A fingerprint of the job secret, exchanged (never printed) to check that all ranks hold the
// same secret.
std::string secret_fingerprint(const std::vector<std::byte>& secret) {
  std::uint64_t hash = 1469598103934665603ULL;
  for (std::byte b : secret) hash = (hash ^ static_cast<std::uint64_t>(b)) * 1099511628211ULL;
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

std::string card_of(int rank, const std::string& host, const std::string& fingerprint) {
  return "rank=" + std::to_string(rank) + " host=" + host + " secret=" + fingerprint;
}

std::vector<std::byte> as_bytes(const std::string& text) {
  const auto* begin = reinterpret_cast<const std::byte*>(text.data());
  return {begin, begin + text.size()};
}

std::string as_text(const std::vector<std::byte>& bytes) {
  return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
}

// The host a card names, or nullopt when the card is not rank `rank`'s with our secret.
std::optional<std::string> host_of_card(const std::string& card, int rank,
                                        const std::string& fingerprint) {
  std::string head = "rank=" + std::to_string(rank) + " host=";
  std::string tail = " secret=" + fingerprint;
  if (!card.starts_with(head) || !card.ends_with(tail) ||
      card.size() <= head.size() + tail.size()) {
    return std::nullopt;
  }
  return card.substr(head.size(), card.size() - head.size() - tail.size());
}

int run_probe(const ProbeOptions& options) {
  auto timeout =
      std::chrono::milliseconds(static_cast<long long>(options.fence_timeout_seconds * 1000.0));
  riseml::pmix::InitOptions init_options;
  init_options.timeout = timeout;
  std::unique_ptr<Session> session = riseml::pmix::init(init_options);
  const auto& facts = session->facts();
  print_line("probe rank=" + std::to_string(facts.rank) + " size=" + std::to_string(facts.size) +
             " local_rank=" + std::to_string(facts.local_rank) + " local_size=" +
             std::to_string(facts.local_size) + " node_rank=" + std::to_string(facts.node_rank) +
             " node_id=" + std::to_string(facts.node_id) +
             " nnodes=" + std::to_string(facts.num_nodes) + " host=" + facts.hostname +
             " nspace=" + facts.nspace + " jobid=" + facts.job_id);

  if (options.hang_on_rank == facts.rank) {
    while (true) pause();  // never reaches the fence; the launcher has to stop it
  }

  if (session->job_secret().size() != 32) fail(facts.rank, "job secret is not 32 bytes");
  std::string fingerprint = secret_fingerprint(session->job_secret());
  session->put("probe", as_bytes(card_of(facts.rank, facts.hostname, fingerprint)));
  auto fence_started = std::chrono::steady_clock::now();
  session->commit();
  session->fence(timeout);
  auto fence_us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - fence_started)
                      .count();

  if (options.on_rank == facts.rank) {
    if (options.exit_code) std::_Exit(*options.exit_code);
    if (options.kill_signal) raise(*options.kill_signal);
  }

  std::set<std::string> hosts;
  int on_my_host = 0;
  for (int peer = 0; peer < facts.size; ++peer) {
    std::string card = as_text(session->get(peer, "probe", timeout));
    std::optional<std::string> host = host_of_card(card, peer, fingerprint);
    if (!host) {
      fail(facts.rank, "rank " + std::to_string(peer) + " put '" + card +
                           "', not its rank, a host and this job's secret fingerprint");
    }
    hosts.insert(*host);
    if (*host == facts.hostname) ++on_my_host;
  }
  if (static_cast<int>(hosts.size()) != facts.num_nodes) {
    fail(facts.rank, "peers are on " + std::to_string(hosts.size()) +
                         " hosts but nnodes=" + std::to_string(facts.num_nodes));
  }
  if (on_my_host != facts.local_size) {
    fail(facts.rank, std::to_string(on_my_host) + " peers share host " + facts.hostname +
                         " but local_size=" + std::to_string(facts.local_size));
  }
  // Leave together, timing a fence of ranks already in step (the first one also waited for
  // late starters). When a peer vanished, wait (bounded) to be stopped by the launcher instead
  // of failing at once, so the launcher names the rank that failed first, not the ones that
  // failed because of it.
  auto sync_fence_started = std::chrono::steady_clock::now();
  try {
    session->fence(timeout);
  } catch (const riseml::pmix::BootstrapError& error) {
    std::fprintf(stderr, "probe rank=%d: closing fence failed, waiting to be stopped: %s\n",
                 facts.rank, error.what());
    std::fflush(stderr);
    std::this_thread::sleep_for(timeout);
    throw;
  }
  auto sync_fence_us = std::chrono::duration_cast<std::chrono::microseconds>(
                           std::chrono::steady_clock::now() - sync_fence_started)
                           .count();
  print_line("probe rank=" + std::to_string(facts.rank) +
             " exchange ok peers=" + std::to_string(facts.size) +
             " hosts=" + std::to_string(hosts.size()) + " fence_us=" + std::to_string(fence_us) +
             " sync_fence_us=" + std::to_string(sync_fence_us));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Checks job facts and the PMIx key exchange; prints one parseable line per step.",
               "riseml-pmix-probe"};
  ProbeOptions options;
  app.add_option("--fence-timeout", options.fence_timeout_seconds,
                 "seconds to wait in a fence (default 60)")
      ->check(CLI::PositiveNumber);
  auto* exit_code = app.add_option("--exit-code", options.exit_code,
                                   "the --on-rank rank exits with this status after the fence");
  auto* kill_self = app.add_option("--kill-self", options.kill_signal,
                                   "the --on-rank rank raises this signal after the fence")
                        ->check(CLI::Range(1, 64));
  auto* on_rank = app.add_option("--on-rank", options.on_rank, "the rank that misbehaves");
  app.add_option("--hang-on-rank", options.hang_on_rank,
                 "this rank never enters the fence, so the others time out");
  app.add_option("--marker", options.marker, "ignored; a tag to find the processes by");
  exit_code->needs(on_rank)->excludes(kill_self);
  kill_self->needs(on_rank);
  CLI11_PARSE(app, argc, argv);
  if (options.on_rank && !options.exit_code && !options.kill_signal) {
    std::fprintf(stderr, "riseml-pmix-probe: --on-rank needs --exit-code or --kill-self\n");
    return 2;
  }

  try {
    return run_probe(options);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "probe: %s\n", error.what());
    return 1;
  }
}
