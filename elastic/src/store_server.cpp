#include <riseml/elastic/store_server.hpp>

#include "store_protocol.hpp"

#include <riseml/tcp_socket.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <stdexcept>
#include <thread>

namespace riseml::elastic {

namespace p = protocol;

namespace {
Deadline after(std::chrono::milliseconds d) { return std::chrono::steady_clock::now() + d; }
// Between requests a worker may be silent for as long as it trains.
Deadline idle_deadline() { return after(std::chrono::hours(24 * 365)); }

p::Message reply(unsigned char op, std::vector<std::string> fields = {}) {
  return p::Message{op, std::move(fields)};
}
}  // namespace

struct StoreServer::Impl {
  StoreServerOptions options;
  Fd listener;
  std::string address;
  int wake[2] = {-1, -1};
  std::thread acceptor;

  struct Fence {
    std::vector<int> members;
    std::set<int> arrived;
    bool done = false;
  };

  mutable std::mutex mutex;  // guards what follows
  std::condition_variable changed;
  bool stopping = false;
  std::map<std::string, std::string> values;
  std::map<std::string, Fence> fences;
  std::vector<int> last_world;  // members of the last completed fence
  long long announcements = 0;
  std::set<int> connections;
  std::vector<std::thread> servers;

  void log(const std::string& line) const {
    if (options.log) options.log(line);
  }

  void accept_loop() {
    for (;;) {
      pollfd fds[2] = {{listener.get(), POLLIN, 0}, {wake[0], POLLIN, 0}};
      if (::poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        return;
      }
      if (fds[1].revents != 0) return;
      const int fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) continue;
      std::lock_guard lock(mutex);
      if (stopping || static_cast<int>(connections.size()) >= options.max_connections) {
        ::close(fd);
        continue;
      }
      tune_socket(fd);
      connections.insert(fd);
      servers.emplace_back([this, fd] { serve(fd); });
    }
  }

  void serve(int fd) {
    const std::string peer = peer_address(fd);
    if (handshake(fd, peer)) {
      while (auto request = p::receive_frame(fd, idle_deadline())) {
        const p::Message answer = handle(*request, peer);
        if (!p::send_frame(fd, answer, after(options.handshake_timeout))) break;
      }
    }
    std::lock_guard lock(mutex);
    connections.erase(fd);
    ::close(fd);
  }

  bool handshake(int fd, const std::string& peer) {
    const Deadline deadline = after(options.handshake_timeout);
    const p::Nonce server_nonce = p::random_nonce();
    std::string hello(p::magic);
    hello.append(reinterpret_cast<const char*>(server_nonce.data()), server_nonce.size());
    if (!write_all(fd, hello.data(), hello.size(), deadline)) return false;
    p::Nonce client_nonce{};
    p::Mac client_mac{};
    if (!read_all(fd, client_nonce.data(), client_nonce.size(), deadline) ||
        !read_all(fd, client_mac.data(), client_mac.size(), deadline)) {
      log("turned away " + peer + ": no answer to the handshake");
      return false;
    }
    if (!p::mac_equal(client_mac, p::handshake_mac(options.secret, 'c', server_nonce, client_nonce))) {
      log("turned away " + peer + ": it does not know the job secret");
      return false;
    }
    const p::Mac server_mac = p::handshake_mac(options.secret, 's', server_nonce, client_nonce);
    return write_all(fd, server_mac.data(), server_mac.size(), deadline);
  }

  p::Message handle(const p::Message& m, const std::string& peer) {
    const auto refuse = [&](const std::string& why) {
      log("refused a request of " + peer + ": " + why);
      return reply(p::refused, {why});
    };
    switch (m.op) {
      case p::put: {
        if (m.fields.size() != 2) return refuse("a put needs a key and a value");
        if (m.fields[0].starts_with(p::failure_key_prefix)) return failure_report(m, refuse);
        if (m.fields[0].starts_with(p::ready_key_prefix)) {
          const auto rank = p::parse_count(std::string_view(m.fields[0]).substr(p::ready_key_prefix.size()));
          if (!rank || *rank > (1 << 24)) return refuse("a ready report needs ready.<rank>");
          if (options.on_worker_ready) options.on_worker_ready(static_cast<int>(*rank));
          return reply(p::ok);
        }
        std::lock_guard lock(mutex);
        values[m.fields[0]] = m.fields[1];
        return reply(p::ok);
      }
      case p::get: {
        if (m.fields.size() != 1) return refuse("a get needs a key");
        std::lock_guard lock(mutex);
        const auto it = values.find(m.fields[0]);
        if (it == values.end()) return reply(p::missing);
        return reply(p::value, {it->second});
      }
      case p::fence:
        return fence(m, refuse);
      default:
        return refuse("unknown operation");
    }
  }

  // "failure.<rank>" = "<world>:<culprits>": handed to the driver, not kept.
  template <typename Refuse>
  p::Message failure_report(const p::Message& m, Refuse refuse) {
    const std::string& key = m.fields[0];
    const std::string& value = m.fields[1];
    const auto rank = p::parse_count(std::string_view(key).substr(p::failure_key_prefix.size()));
    const auto colon = value.find(':');
    const auto world = colon == std::string::npos ? std::nullopt
                                                  : p::parse_count(value.substr(0, colon));
    std::optional<std::vector<int>> culprits;
    if (world) culprits = colon + 1 == value.size() ? std::vector<int>{} : p::parse_ranks(value.substr(colon + 1));
    if (!rank || *rank > (1 << 24) || !world || !culprits)
      return refuse("a failure report needs failure.<rank> = <world>:<ranks>");
    if (options.on_failure_report)
      options.on_failure_report(FailureReport{static_cast<int>(*rank), *world, *culprits});
    return reply(p::ok);
  }

  template <typename Refuse>
  p::Message fence(const p::Message& m, Refuse refuse) {
    if (m.fields.size() != 4) return refuse("a fence needs a name, a timeout, a rank and members");
    const auto timeout_ms = p::parse_count(m.fields[1]);
    const auto rank = p::parse_count(m.fields[2]);
    const auto members = p::parse_ranks(m.fields[3]);
    if (!timeout_ms || !rank || !members || members->empty() ||
        !std::is_sorted(members->begin(), members->end()) ||
        std::adjacent_find(members->begin(), members->end()) != members->end() ||
        !std::binary_search(members->begin(), members->end(), static_cast<int>(*rank)))
      return refuse("a fence needs sorted distinct members that include its rank");
    const std::string& name = m.fields[0];
    std::unique_lock lock(mutex);
    Fence& f = fences[name];
    if (f.members.empty()) f.members = *members;
    if (f.members != *members)
      return refuse("fence " + name + " was entered with other members (" +
                    p::format_ranks(f.members) + ")");
    f.arrived.insert(static_cast<int>(*rank));
    if (!f.done && f.arrived.size() == f.members.size()) {
      f.done = true;
      completed(f.members);
      changed.notify_all();
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(*timeout_ms);
    changed.wait_until(lock, deadline, [&] { return f.done || stopping; });
    if (f.done) return reply(p::ok);
    std::vector<int> missing;
    for (int r : f.members)
      if (!f.arrived.count(r)) missing.push_back(r);
    return reply(p::timed_out, {p::format_ranks(missing)});
  }

  // Under `mutex`.
  void completed(const std::vector<int>& members) {
    if (last_world.empty() || members == last_world) {
      last_world = members;
      return;
    }
    WorldChange change;
    change.members = members;
    std::set_difference(last_world.begin(), last_world.end(), members.begin(), members.end(),
                        std::back_inserter(change.left));
    std::set_difference(members.begin(), members.end(), last_world.begin(), last_world.end(),
                        std::back_inserter(change.joined));
    // Every fence of a job is among the members of its world (process sets fence the world).
    last_world = members;
    if (options.on_world_change) options.on_world_change(change);
  }
};

StoreServer::StoreServer(StoreServerOptions options) : impl_(std::make_unique<Impl>()) {
  Impl& s = *impl_;
  if (options.secret.size() < 16) throw std::runtime_error("the store needs a job secret of 16 bytes or more");
  s.options = std::move(options);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (::inet_pton(AF_INET, s.options.listen_address.c_str(), &a.sin_addr) != 1)
    throw std::runtime_error("not an IPv4 address to listen on: '" + s.options.listen_address + "'");
  s.listener = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  socklen_t len = sizeof a;
  if (!s.listener || ::bind(s.listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(s.listener.get(), 1024) != 0 ||
      ::getsockname(s.listener.get(), reinterpret_cast<sockaddr*>(&a), &len) != 0)
    throw std::runtime_error("cannot listen on " + s.options.listen_address + ": " +
                             std::strerror(errno));
  s.address = s.options.listen_address + ":" + std::to_string(ntohs(a.sin_port));
  if (::pipe2(s.wake, O_CLOEXEC) != 0) throw std::runtime_error("pipe2 failed");
  s.acceptor = std::thread([&s] { s.accept_loop(); });
}

StoreServer::~StoreServer() {
  Impl& s = *impl_;
  const char byte = 1;
  (void)!::write(s.wake[1], &byte, 1);
  s.acceptor.join();
  std::vector<std::thread> servers;
  {
    std::lock_guard lock(s.mutex);
    s.stopping = true;
    s.changed.notify_all();
    for (int fd : s.connections) ::shutdown(fd, SHUT_RDWR);
    servers.swap(s.servers);
  }
  for (auto& t : servers) t.join();
  ::close(s.wake[0]);
  ::close(s.wake[1]);
}

std::string StoreServer::address() const { return impl_->address; }

long long StoreServer::announce_world(const std::vector<int>& members, const std::string& why) {
  std::lock_guard lock(impl_->mutex);
  const long long number = impl_->announcements++;
  impl_->values["world"] = std::to_string(number) + ":" + p::format_ranks(members) + ":" + why;
  return number;
}

void StoreServer::announce_pending(long long number) {
  std::lock_guard lock(impl_->mutex);
  impl_->values["pending"] = std::to_string(number);
}


}  // namespace riseml::elastic
