#include "exchange.hpp"

#include <algorithm>
#include <limits>
#include <vector>

#include "progress_waiter.hpp"

namespace riseml {

namespace {
constexpr std::size_t kAll = std::numeric_limits<std::size_t>::max();
}

void exchange(PeerLinks& peers, const CallTag& tag, const SendSpec& send, const RecvSpec& recv) {
  Link* sender = send.peer >= 0 ? &peers.link(send.peer) : nullptr;
  Link* receiver = recv.peer >= 0 ? &peers.link(recv.peer) : nullptr;
  if (sender) sender->begin_send(tag, send.data, send.bytes);
  if (receiver) receiver->begin_recv(tag, recv.bytes, recv.direct, recv.sink);
  bool send_done = sender == nullptr;
  bool recv_done = receiver == nullptr;
  ProgressWaiter waiter(peers, tag);
  for (;;) {
    bool moved = false;
    if (!send_done) send_done = sender->progress_send(moved, kAll);
    if (!recv_done) recv_done = receiver->progress_recv(moved);
    if (send_done && recv_done) return;
    if (moved)
      waiter.moved();
    else
      waiter.idle(send_done ? nullptr : sender, send.peer, recv_done ? nullptr : receiver,
                  recv.peer);
  }
}

void receive_each(PeerLinks& peers, const CallTag& tag, std::size_t count,
                  FunctionRef<RecvSpec(std::size_t)> recv, FunctionRef<void(std::size_t)> done) {
  // The pending peers, swapped to the end as they complete (on the stack up to 64 peers).
  constexpr std::size_t kInline = 64;
  struct Pending {
    std::size_t k;
    int peer;
  };
  Pending inline_pending[kInline];
  std::vector<Pending> heap;
  Pending* pending = inline_pending;
  if (count > kInline) {
    heap.resize(count);
    pending = heap.data();
  }
  std::size_t left = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const RecvSpec r = recv(k);
    if (r.peer < 0) continue;
    peers.link(r.peer).begin_recv(tag, r.bytes, r.direct, r.sink);
    pending[left++] = {k, r.peer};
  }
  ProgressWaiter waiter(peers, tag);
  std::size_t turn = 0;  // whose link the waiter watches (and checks) next
  while (left > 0) {
    bool moved = false;
    for (std::size_t j = 0; j < left;) {
      if (!peers.link(pending[j].peer).progress_recv(moved)) {
        ++j;
        continue;
      }
      const std::size_t k = pending[j].k;
      pending[j] = pending[--left];
      waiter.moved();  // disarmed before done() waits on the same doorbell
      done(k);
      moved = true;
    }
    if (left == 0) return;
    if (moved) {
      waiter.moved();
    } else {
      const Pending& p = pending[turn++ % left];
      waiter.idle(nullptr, -1, &peers.link(p.peer), p.peer);
    }
  }
}

void exchange_all(PeerLinks& peers, const CallTag& tag, std::size_t count,
                  FunctionRef<SendSpec(std::size_t)> send, FunctionRef<RecvSpec(std::size_t)> recv) {
  // The pending links, swapped to the end as they finish (on the stack up to 64 peers).
  constexpr std::size_t kInline = 64;
  int inline_peers[2 * kInline];
  std::vector<int> heap;
  int* sends = inline_peers;
  if (count > kInline) {
    heap.resize(2 * count);
    sends = heap.data();
  }
  int* recvs = sends + std::max(count, kInline);
  std::size_t sending = 0, receiving = 0;
  for (std::size_t k = 0; k < count; ++k) {
    const SendSpec s = send(k);
    if (s.peer >= 0) {
      peers.link(s.peer).begin_send(tag, s.data, s.bytes);
      sends[sending++] = s.peer;
    }
    const RecvSpec r = recv(k);
    if (r.peer >= 0) {
      peers.link(r.peer).begin_recv(tag, r.bytes, r.direct, r.sink);
      recvs[receiving++] = r.peer;
    }
  }
  ProgressWaiter waiter(peers, tag);
  std::size_t turn = 0;  // whose links the waiter watches (and checks) next
  while (sending > 0 || receiving > 0) {
    bool moved = false;
    for (std::size_t j = 0; j < sending;) {
      if (peers.link(sends[j]).progress_send(moved, kAll))
        sends[j] = sends[--sending];
      else
        ++j;
    }
    for (std::size_t j = 0; j < receiving;) {
      if (peers.link(recvs[j]).progress_recv(moved))
        recvs[j] = recvs[--receiving];
      else
        ++j;
    }
    if (moved) {
      waiter.moved();
    } else if (sending > 0 || receiving > 0) {
      const int s = sending > 0 ? sends[turn % sending] : -1;
      const int r = receiving > 0 ? recvs[turn % receiving] : -1;
      ++turn;
      waiter.idle(s >= 0 ? &peers.link(s) : nullptr, s, r >= 0 ? &peers.link(r) : nullptr, r);
    }
  }
}

void exchange_stream(PeerLinks& peers, const CallTag& tag, int right, int left,
                     std::size_t n, FunctionRef<StreamSend(std::size_t)> send_step,
                     FunctionRef<StreamRecv(std::size_t)> recv_step) {
  if (n == 0) return;
  Link& sender = peers.link(right);
  Link& receiver = peers.link(left);
  std::size_t send_index = 0, recv_index = 0;
  bool send_independent = true;
  auto begin_send = [&] {
    const StreamSend s = send_step(send_index);
    send_independent = send_index == 0 || s.independent;
    sender.begin_send(tag, s.data, s.bytes);
  };
  auto begin_recv = [&] {
    const StreamRecv r = recv_step(recv_index);
    receiver.begin_recv(tag, r.bytes, r.direct, r.sink);
  };
  begin_send();
  begin_recv();
  ProgressWaiter waiter(peers, tag);
  while (send_index < n || recv_index < n) {
    bool moved = false;
    // Send k forwards what receive k - 1 produces: only as far as that got.
    if (send_index < n && (send_independent || recv_index + 1 >= send_index)) {
      const std::size_t ready = !send_independent && recv_index + 1 == send_index
                                    ? receiver.received_bytes()
                                    : kAll;
      if (sender.progress_send(moved, ready)) {
        moved = true;
        if (++send_index < n) begin_send();
      }
    }
    if (recv_index < n && receiver.progress_recv(moved)) {
      moved = true;
      if (++recv_index < n) begin_recv();
    }
    if (moved)
      waiter.moved();
    else
      waiter.idle(send_index < n ? &sender : nullptr, right,
                  recv_index < n ? &receiver : nullptr, left);
  }
}

}  // namespace riseml
