#include <riseml/elastic/store_client.hpp>

#include "store_protocol.hpp"

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace riseml::elastic {

namespace p = protocol;

namespace {

// Splits "host:port"; nullopt unless the port is 1-65535.
std::optional<std::pair<std::string, std::string>> split_address(const std::string& address) {
  const auto colon = address.rfind(':');
  if (colon == std::string::npos || colon == 0) return std::nullopt;
  const std::string port = address.substr(colon + 1);
  const auto n = p::parse_count(port);
  if (!n || *n < 1 || *n > 65535) return std::nullopt;
  return std::make_pair(address.substr(0, colon), port);
}

// A connected, tuned socket, or an empty Fd with `why` set.
Fd connect_once(const std::string& host, const std::string& port, Deadline deadline,
                std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    why = "cannot resolve '" + host + "': " + ::gai_strerror(rc);
    return Fd();
  }
  Fd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  int rc = fd ? ::connect(fd.get(), found->ai_addr, found->ai_addrlen) : -1;
  ::freeaddrinfo(found);
  if (rc != 0 && errno == EINPROGRESS) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      pollfd pfd{fd.get(), POLLOUT, 0};
      const int r = left.count() > 0 ? ::poll(&pfd, 1, static_cast<int>(std::min<long long>(left.count(), 1000))) : 0;
      if (r < 0 && errno == EINTR) continue;
      if (r == 0 && left.count() > 0) continue;
      if (r <= 0) {
        errno = ETIMEDOUT;
        break;
      }
      int error = 0;
      socklen_t len = sizeof error;
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &len);
      errno = error;
      rc = error == 0 ? 0 : -1;
      break;
    }
  }
  if (rc != 0) {
    why = std::strerror(errno);
    return Fd();
  }
  tune_socket(fd.get());
  return fd;
}

}  // namespace

StoreClient::StoreClient(std::string address, std::vector<std::byte> secret,
                         std::chrono::milliseconds timeout)
    : address_(std::move(address)), secret_(std::move(secret)), timeout_(timeout) {
  const auto parts = split_address(address_);
  if (!parts) fail("the address is not host:port");
  const Deadline deadline = std::chrono::steady_clock::now() + timeout_;
  std::string why;
  for (;;) {
    fd_ = connect_once(parts->first, parts->second, deadline, why);
    if (fd_ || std::chrono::steady_clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the store may be starting
  }
  if (!fd_) fail("cannot connect: " + why);
  char magic[p::magic.size()];
  p::Nonce server_nonce{};
  if (!read_all(fd_.get(), magic, sizeof magic, deadline) ||
      std::string_view(magic, sizeof magic) != p::magic ||
      !read_all(fd_.get(), server_nonce.data(), server_nonce.size(), deadline))
    fail("it is not riseml-elastic's store (no greeting)");
  const p::Nonce client_nonce = p::random_nonce();
  const p::Mac mine = p::handshake_mac(secret_, 'c', server_nonce, client_nonce);
  p::Mac theirs{};
  if (!write_all(fd_.get(), client_nonce.data(), client_nonce.size(), deadline) ||
      !write_all(fd_.get(), mine.data(), mine.size(), deadline) ||
      !read_all(fd_.get(), theirs.data(), theirs.size(), deadline))
    fail("the store turned this worker away (a different job secret: is RISEML_ELASTIC_SECRET "
         "the one riseml-elastic gave?)");
  if (!p::mac_equal(theirs, p::handshake_mac(secret_, 's', server_nonce, client_nonce)))
    fail("the process on that port does not know the job secret: not this job's store");
}

void StoreClient::fail(const std::string& why) const {
  throw RendezvousError("elastic rendezvous with the store of riseml-elastic at " + address_ +
                        ": " + why);
}

StoreClient::Answer StoreClient::call(unsigned char op, std::vector<std::string> fields,
                                      std::chrono::milliseconds wait) {
  std::lock_guard lock(mutex_);
  if (!fd_) fail("the connection was lost before");
  // The store answers a fence when it ends; a lost store must not hang the worker.
  const Deadline deadline = std::chrono::steady_clock::now() + wait + timeout_;
  if (!p::send_frame(fd_.get(), p::Message{op, std::move(fields)}, deadline)) {
    fd_ = Fd();
    fail(std::string("the store is gone (") + std::strerror(errno) +
         "): did riseml-elastic end?");
  }
  auto answer = p::receive_frame(fd_.get(), deadline);
  if (!answer) {
    fd_ = Fd();
    fail("no answer from the store: did riseml-elastic end?");
  }
  if (answer->op == p::refused)
    fail("the store refused a request: " + (answer->fields.empty() ? std::string("?") : answer->fields[0]));
  return Answer{answer->op, std::move(answer->fields)};
}

void StoreClient::put(const std::string& key, const std::string& value) {
  call(p::put, {key, value}, std::chrono::milliseconds(0));
}

std::optional<std::string> StoreClient::get(const std::string& key) {
  Answer a = call(p::get, {key}, std::chrono::milliseconds(0));
  if (a.op == p::value && a.fields.size() == 1) return std::move(a.fields[0]);
  if (a.op == p::missing) return std::nullopt;
  fail("an answer to a get that makes no sense");
}

std::optional<StoreClient::AnnouncedWorld> StoreClient::announced_world() {
  const auto text = get("world");
  if (!text) return std::nullopt;
  const auto colon = text->find(':');
  const auto second = colon == std::string::npos ? std::string::npos : text->find(':', colon + 1);
  const auto number = second == std::string::npos ? std::nullopt : p::parse_count(text->substr(0, colon));
  const auto members = number ? p::parse_ranks(text->substr(colon + 1, second - colon - 1)) : std::nullopt;
  if (!members || members->empty()) fail("the announced world makes no sense: '" + text->substr(0, 80) + "'");
  return AnnouncedWorld{*number, *members, text->substr(second + 1)};
}

std::optional<long long> StoreClient::pending_world() {
  const auto text = get("pending");
  if (!text) return std::nullopt;
  const auto number = p::parse_count(*text);
  if (!number) fail("the pending world makes no sense: '" + text->substr(0, 80) + "'");
  return *number;
}

StoreClient::AnnouncedWorld StoreClient::join(int rank, std::chrono::milliseconds timeout) {
  put(std::string(p::ready_key_prefix) + std::to_string(rank), "");
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (auto world = announced_world();
        world && std::find(world->members.begin(), world->members.end(), rank) != world->members.end())
      return *world;
    if (std::chrono::steady_clock::now() > deadline)
      fail("rank " + std::to_string(rank) + " joined, but no world with it was announced within " +
           std::to_string(std::chrono::duration_cast<std::chrono::seconds>(timeout).count()) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

void StoreClient::report_failure(int rank, long long world, const std::vector<int>& culprits) {
  put(std::string(p::failure_key_prefix) + std::to_string(rank),
      std::to_string(world < 0 ? 0 : world) + ":" + p::format_ranks(culprits));
}

std::vector<int> StoreClient::fence(const std::string& name, const std::vector<int>& members,
                                    int rank, std::chrono::milliseconds timeout) {
  Answer a = call(p::fence,
                  {name, std::to_string(timeout.count()), std::to_string(rank), p::format_ranks(members)},
                  timeout);
  if (a.op == p::ok) return {};
  if (a.op == p::timed_out && a.fields.size() == 1)
    if (auto missing = p::parse_ranks(a.fields[0]); missing && !missing->empty()) return *missing;
  fail("an answer to a fence that makes no sense");
}

}  // namespace riseml::elastic
