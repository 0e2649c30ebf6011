// Setting up a communicator: learn where every rank runs, pick a transport per peer (shared
// memory on the same host, TCP otherwise, or in-process for tests) and connect. Every rank
// runs the same sequence of rendezvous fences whatever transports it needs itself.
#include "context.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <riseml/collective_error.hpp>
#include <riseml/fine_timer_slack.hpp>
#include <riseml/reduce_kernels.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include "../security/hmac_sha256.hpp"
#include "../transport/inproc_link.hpp"
#include "../transport/shm_link.hpp"
#include "../transport/tcp_mesh.hpp"
#include "automatic_settings.hpp"

namespace riseml {

namespace {

std::vector<std::byte> to_bytes(const std::string& s) {
  std::vector<std::byte> v(s.size());
  std::memcpy(v.data(), s.data(), s.size());
  return v;
}

std::string to_string(const std::vector<std::byte>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

std::string read_boot_id() {
  std::ifstream f("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(f, id);
  return id;
}

std::string this_hostname() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

std::string random_hex(std::size_t bytes) {
  std::vector<unsigned char> r(bytes);
  random_bytes(r.data(), r.size());
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (unsigned char c : r) {
    s += digits[c >> 4];
    s += digits[c & 15];
  }
  return s;
}

Mac segment_mac(const std::vector<std::byte>& secret, const std::string& name) {
  return hmac_sha256(secret, std::span(reinterpret_cast<const unsigned char*>(name.data()),
                                       name.size()));
}

}  // namespace

Context::Context(Rendezvous& rendezvous, const CommunicatorOptions& options)
    : options_(options), rank_(rendezvous.rank()), size_(rendezvous.size()) {
  timeout_ = options_.timeout;
  if (size_ < 1 || rank_ < 0 || rank_ >= size_)
    throw CollectiveError(ErrorKind::invalid_argument, "rendezvous reports rank " +
                                                           std::to_string(rank_) + " of " +
                                                           std::to_string(size_));
  // The kernels are shared by the whole process (see kernels::use_generic_kernels).
  if (options_.kernels == KernelChoice::generic) kernels::use_generic_kernels();
  start_call();
  try {
    exchange_host_facts(rendezvous);
    build_layout();
    std::vector<std::vector<int>> local_cpus;
    for (int r : local_ranks_) local_cpus.push_back(peers_[static_cast<std::size_t>(r)].cpus);
    spin_decision_ = decide_spin(local_cpus, local_index_);
    spin_time_ = options_.spin_time ? *options_.spin_time : automatic_spin_time(spin_decision_);
    connect(rendezvous);
  } catch (const RendezvousError& e) {
    throw CollectiveError(ErrorKind::setup,
                          "rank " + std::to_string(rank_) + ": rendezvous failed: " + e.what());
  }
  for (const auto& l : links_)
    if (l && l->doorbell()) doorbell_ = l->doorbell();
  interrupt_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (interrupt_fd_ < 0) throw CollectiveError(ErrorKind::system, std::string("eventfd: ") + std::strerror(errno));
}

// exchange_host_facts fences once, connect twice: keep this in step with them.
constexpr int kSetupFences = 3;

void Context::stand_by(Rendezvous& rendezvous, const CommunicatorOptions& options) {
  try {
    for (int i = 0; i < kSetupFences; ++i) rendezvous.fence(options.timeout);
  } catch (const RendezvousError& e) {
    throw CollectiveError(ErrorKind::setup, "rank " + std::to_string(rendezvous.rank()) +
                                                ": rendezvous failed while other ranks set up "
                                                "a process set: " + e.what());
  }
}

Context::~Context() {
  if (interrupt_fd_ >= 0) ::close(interrupt_fd_);
}

void Context::wait_for_peers(std::chrono::microseconds timeout,
                             const std::function<bool()>& has_local_work, std::mutex* links_guard) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + timeout;
  // Sockets (and the in-process fabric) are polled with the interrupt eventfd; shared memory
  // has no descriptor, its peers ring this rank's doorbell instead.
  std::vector<pollfd> fds{{interrupt_fd_, POLLIN, 0}};
  for (const auto& l : links_)
    if (l && l->incoming_fd() >= 0 &&
        std::none_of(fds.begin(), fds.end(), [&](const pollfd& p) { return p.fd == l->incoming_fd(); }))
      fds.push_back({l->incoming_fd(), POLLIN, 0});
  for (;;) {
    std::uint64_t drained;
    while (::read(interrupt_fd_, &drained, sizeof drained) > 0) {
    }
    // Announced as a sleeper before looking, so a peer's message or an interrupt that comes
    // after the look rings the doorbell (doorbell.hpp).
    const std::uint32_t armed_at = doorbell_ ? doorbell_->arm() : 0;
    bool ready = has_local_work();
    if (!ready) {
      std::unique_lock<std::mutex> looking;
      if (links_guard) looking = std::unique_lock(*links_guard, std::try_to_lock);
      if (links_guard && !looking.owns_lock()) ready = true;  // another thread runs a collective
      for (const auto& l : links_) ready = ready || (l && l->has_incoming());
    }
    const auto now = Clock::now();
    if (ready || now >= until) {
      if (doorbell_) doorbell_->disarm();
      return;
    }
    const auto left = std::chrono::duration_cast<std::chrono::microseconds>(until - now) +
                      std::chrono::microseconds(1);
    // The deadline is the engine's next cycle: a sleep that ends 50 us late (Linux's default
    // slack) or rounded up to a millisecond delays every rank's collectives by as much.
    const FineTimerSlack on_time;
    if (doorbell_ && fds.size() == 1) {
      doorbell_->sleep(armed_at, std::min<std::chrono::microseconds>(left, std::chrono::seconds(1)));
    } else if (doorbell_) {
      // Shared memory and sockets: short sleeps on the doorbell, then a look at the sockets.
      doorbell_->sleep(armed_at, std::min<std::chrono::microseconds>(left, std::chrono::milliseconds(2)));
      ::poll(fds.data(), fds.size(), 0);
    } else {
      const auto us = std::min<long long>(left.count(), 1000000);
      const timespec t{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
      ::ppoll(fds.data(), fds.size(), &t, nullptr);
    }
  }
}

void Context::interrupt_wait() noexcept {
  const std::uint64_t one = 1;
  [[maybe_unused]] const auto n = ::write(interrupt_fd_, &one, sizeof one);
  if (doorbell_) doorbell_->ring();
}

void Context::exchange_host_facts(Rendezvous& rendezvous) {
  const std::string host = this_hostname();
  // A key of the caller's lets tests pretend ranks of one machine run on different hosts.
  const std::string key =
      options_.host_key.empty() ? host + "/" + read_boot_id() : options_.host_key;
  rendezvous.put(options_.rendezvous_prefix + "/host",
                 to_bytes(host + "\n" + key + "\n" + std::to_string(::getpid()) + "\n" +
                          format_cpu_list(this_process_cpus())));
  rendezvous.fence(options_.timeout);
  peers_.resize(static_cast<std::size_t>(size_));
  host_names_.resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) {
    std::istringstream in(to_string(rendezvous.get(r, options_.rendezvous_prefix + "/host",
                                                   options_.timeout)));
    PeerInfo& p = peers_[static_cast<std::size_t>(r)];
    std::getline(in, host_names_[static_cast<std::size_t>(r)]);
    std::getline(in, p.host_key);
    std::string pid, cpus;
    std::getline(in, pid);
    std::getline(in, cpus);
    p.pid = std::atoi(pid.c_str());
    p.cpus = parse_cpu_list(cpus).value_or(std::vector<int>{});
  }
}

void Context::build_layout() {
  world_.resize(static_cast<std::size_t>(size_));
  for (int r = 0; r < size_; ++r) world_[static_cast<std::size_t>(r)] = r;
  // Hosts in order of their first rank; ranks of a host in rank order.
  std::vector<std::string> host_order;
  std::map<std::string, std::vector<int>> by_host;
  for (int r = 0; r < size_; ++r) {
    const std::string& k = peers_[static_cast<std::size_t>(r)].host_key;
    if (!by_host.count(k)) host_order.push_back(k);
    by_host[k].push_back(r);
  }
  hosts_ = static_cast<int>(host_order.size());
  local_ranks_ = by_host[peers_[static_cast<std::size_t>(rank_)].host_key];
  local_index_ = static_cast<int>(std::find(local_ranks_.begin(), local_ranks_.end(), rank_) -
                                  local_ranks_.begin());
  uniform_hosts_ = true;
  for (const auto& k : host_order)
    if (by_host[k].size() != local_ranks_.size()) uniform_hosts_ = false;
  column_ranks_.clear();
  for (const auto& k : host_order) {
    const auto& ranks = by_host[k];
    if (static_cast<std::size_t>(local_index_) < ranks.size()) {
      if (ranks[static_cast<std::size_t>(local_index_)] == rank_)
        column_index_ = static_cast<int>(column_ranks_.size());
      column_ranks_.push_back(ranks[static_cast<std::size_t>(local_index_)]);
    }
  }
}

void Context::connect(Rendezvous& rendezvous) {
  const std::string& prefix = options_.rendezvous_prefix;
  links_.resize(static_cast<std::size_t>(size_));
  const bool inproc = options_.transport == TransportChoice::inproc;
  const std::string& my_key = peers_[static_cast<std::size_t>(rank_)].host_key;
  std::vector<int> shm_peers, tcp_peers;
  if (!inproc) {
    for (int r = 0; r < size_; ++r) {
      if (r == rank_) continue;
      const bool same_host = peers_[static_cast<std::size_t>(r)].host_key == my_key;
      if (options_.transport == TransportChoice::shm && !same_host)
        throw CollectiveError(ErrorKind::setup, "RISEML_TRANSPORT=shm but " + name(r) +
                                                    " runs on another host", r);
      if (same_host && options_.transport != TransportChoice::tcp)
        shm_peers.push_back(r);
      else
        tcp_peers.push_back(r);
    }
  }
  const std::vector<std::byte> secret = rendezvous.job_secret();
  {
    std::vector<int> host_of(static_cast<std::size_t>(size_));
    std::map<std::string, int> host_index;
    for (int r = 0; r < size_; ++r)
      host_of[static_cast<std::size_t>(r)] =
          host_index.emplace(peers_[static_cast<std::size_t>(r)].host_key,
                             static_cast<int>(host_index.size()))
              .first->second;
    waits_for_ = std::make_unique<WaitsFor>(rank_, std::move(host_of), secret);
  }

  // Phase 1: publish how to reach this rank.
  std::shared_ptr<InprocFabric>* fabric_holder = nullptr;
  if (inproc && rank_ == 0) {
    fabric_holder = new std::shared_ptr<InprocFabric>(std::make_shared<InprocFabric>(size_));
    const std::string v = std::to_string(::getpid()) + " " +
                          std::to_string(reinterpret_cast<std::uintptr_t>(fabric_holder));
    rendezvous.put(prefix + "/inproc", to_bytes(v));
  }
  std::shared_ptr<ShmSegment> my_segment;
  if (!shm_peers.empty()) {
    ShmLayout layout;
    layout.channels = static_cast<std::uint32_t>(local_ranks_.size());
    layout.slots = static_cast<std::uint32_t>(options_.shm_slots);
    layout.slot_bytes = options_.shm_slot_kib > 0
                            ? static_cast<std::uint64_t>(options_.shm_slot_kib) << 10
                            : automatic_shm_slot_bytes(layout.channels, layout.slots);
    const std::string seg_name = "/riseml-" + std::to_string(::getpid()) + "-" +
                                 std::to_string(rank_) + "-" + random_hex(8);
    my_segment = std::make_shared<ShmSegment>(ShmSegment::create(seg_name, layout, rank_));
    const Mac mac = segment_mac(secret, seg_name);
    std::memcpy(my_segment->header().auth, mac.data(), mac.size());
    rendezvous.put(prefix + "/shm", to_bytes(seg_name));
    waits_for_->set_own_record(&my_segment->header());
  }
  std::unique_ptr<TcpMesh> tcp;
  if (!tcp_peers.empty()) {
    tcp = std::make_unique<TcpMesh>(options_, rank_, secret);
    rendezvous.put(prefix + "/tcp", to_bytes(tcp->address()));
    // The status socket (who waits on whom, at a timeout) beside the TCP listener; without it
    // a timeout blames the peer waited on, as before.
    std::string status;
    try {
      const std::string& a = tcp->address();
      status = waits_for_->open_udp(a.substr(0, a.rfind(':')));
    } catch (const CollectiveError&) {
    }
    rendezvous.put(prefix + "/status", to_bytes(status));
  }
  rendezvous.fence(options_.timeout);

  // Phase 2: connect.
  try {
    if (inproc) {
      const std::string v = to_string(rendezvous.get(0, prefix + "/inproc", options_.timeout));
      std::istringstream in(v);
      long pid = 0;
      std::uintptr_t address = 0;
      in >> pid >> address;
      if (pid != ::getpid())
        throw CollectiveError(ErrorKind::setup,
                              "RISEML_TRANSPORT=inproc needs every rank in one process");
      auto fabric = *reinterpret_cast<std::shared_ptr<InprocFabric>*>(address);
      for (int r = 0; r < size_; ++r)
        if (r != rank_)
          links_[static_cast<std::size_t>(r)] = std::make_unique<InprocLink>(fabric, rank_, r, name(r));
    }
    for (int r : shm_peers) {
      const std::string seg_name = to_string(rendezvous.get(r, prefix + "/shm", options_.timeout));
      auto theirs = std::make_shared<ShmSegment>(ShmSegment::open(seg_name));
      if (!mac_equal(segment_mac(secret, seg_name), theirs->header().auth))
        throw CollectiveError(ErrorKind::authentication,
                              "the shared memory segment of " + name(r) +
                                  " does not prove knowledge of the job secret", r);
      const auto their_index = static_cast<std::uint32_t>(
          std::find(local_ranks_.begin(), local_ranks_.end(), r) - local_ranks_.begin());
      links_[static_cast<std::size_t>(r)] = std::make_unique<ShmLink>(
          my_segment, their_index, theirs, static_cast<std::uint32_t>(local_index_), r, name(r));
    }
    if (tcp) {
      std::vector<std::string> addresses(static_cast<std::size_t>(size_));
      for (int r : tcp_peers) {
        addresses[static_cast<std::size_t>(r)] = to_string(rendezvous.get(r, prefix + "/tcp", options_.timeout));
        waits_for_->set_udp_address(r, to_string(rendezvous.get(r, prefix + "/status", options_.timeout)));
      }
      std::vector<std::string> names;
      for (int r = 0; r < size_; ++r) names.push_back(name(r));
      auto tcp_links = tcp->connect(tcp_peers, addresses, names, deadline_);
      for (int r : tcp_peers) links_[static_cast<std::size_t>(r)] = std::move(tcp_links[static_cast<std::size_t>(r)]);
    }
  } catch (...) {
    // Keep the fence sequence of the other ranks intact where we can; they will time out on
    // our links otherwise.
    delete fabric_holder;
    throw;
  }
  for (auto& l : links_)
    if (l) l->set_world_size(size_);
  rendezvous.fence(options_.timeout);
  if (my_segment) my_segment->unlink();
  delete fabric_holder;
}

std::byte* Context::scratch(std::size_t bytes, int which) {
  auto& s = scratch_[which];
  if (s.size() < bytes) s.resize(bytes);
  return s.data();
}

void Context::fail(const CollectiveError& error) noexcept {
  if (failed_) return;
  failed_ = true;
  failure_kind_ = error.kind();
  try {
    failure_ = error.what();
  } catch (...) {
  }
  // A dead or silent rank found by this one travels with the abort (the reason names it
  // first), so the peers blame it too, not this messenger. Other errors (a mismatch, say) are
  // this rank's view and go out as "rank R gave up: ...".
  const bool blames = error.kind() == ErrorKind::timeout || error.kind() == ErrorKind::peer_failed;
  const int culprit = blames && error.culprit_rank() >= 0 && error.culprit_rank() < size_ &&
                              error.culprit_rank() != rank_
                          ? error.culprit_rank()
                          : -1;
  std::string reason;
  try {
    reason = culprit >= 0 ? failure_ : "rank " + std::to_string(rank_) + " gave up: " + failure_;
  } catch (...) {
  }
  if (waits_for_ && culprit >= 0) {
    try {
      waits_for_->announce(Verdict{culprit, reason});
    } catch (...) {
    }
  }
  for (auto& l : links_)
    if (l) l->abort(reason, culprit);
}

void Context::throw_if_failed() const {
  if (failed_)
    throw CollectiveError(ErrorKind::aborted,
                          "the communicator failed earlier and cannot be used: " + failure_);
}

std::string Context::describe_transports() const {
  std::string s;
  for (int r = 0; r < size_; ++r) {
    if (!s.empty()) s += ' ';
    s += r == rank_ ? "self" : links_[static_cast<std::size_t>(r)]->kind();
  }
  return s;
}

std::string Context::describe_placement() const {
  std::string s = "cpus";
  for (int r : local_ranks_) s += " [" + format_cpu_list(peers_[static_cast<std::size_t>(r)].cpus) + "]";
  s += ", spin " + std::to_string(spin_time_.count()) + " us";
  if (!options_.spin_time)
    s += " (" + std::to_string(spin_decision_.sharing_ranks) + " rank(s) share " +
         std::to_string(spin_decision_.cpus) + " CPU(s))";
  else
    s += " (RISEML_SPIN_US)";
  return s;
}

}  // namespace riseml
