// The primitive every algorithm is written in: send one message to a peer and receive one from
// a peer (maybe the same one, maybe nobody) at the same time, until both are done or the
// call's deadline passes.
#pragma once

#include <cstddef>
#include <span>

#include "link.hpp"
#include "peer_links.hpp"

namespace riseml {

struct SendSpec {
  int peer = -1;  // -1: send nothing
  const std::byte* data = nullptr;
  std::size_t bytes = 0;
};

struct RecvSpec {
  int peer = -1;  // -1: receive nothing
  std::size_t bytes = 0;
  std::byte* direct = nullptr;  // copy segments here (may be null)
  SegmentSink sink{};           // and/or hand them to this
};

// Throws CollectiveError (timeout naming the silent peer, mismatch, peer_failed).
void exchange(PeerLinks& peers, const CallTag& tag, const SendSpec& send, const RecvSpec& recv);

// Receives one message from each of `count` peers at once, in whatever order they arrive:
// recv(k) gives the k-th receive (asked once, at the start; peer -1: none), done(k) runs as
// soon as it is complete and may send on that peer's link. For the small messages of a
// protocol among many ranks, where taking them in a fixed order would wait on a peer that is
// not scheduled yet while the others' messages are already there.
void receive_each(PeerLinks& peers, const CallTag& tag, std::size_t count,
                  FunctionRef<RecvSpec(std::size_t)> recv, FunctionRef<void(std::size_t)> done);

// Sends one message to and receives one from each of `count` peer slots at once (send(k) and
// recv(k), asked once at the start; peer -1: none; each peer in at most one send and one
// receive), progressing all of them until every one is done, in whatever order they move. A
// linear exchange among ranks of one host: nobody waits for the peer of a step while another
// peer could move (more ranks than cores), and sends never wait for each other, so it cannot
// deadlock however large the messages.
void exchange_all(PeerLinks& peers, const CallTag& tag, std::size_t count,
                  FunctionRef<SendSpec(std::size_t)> send, FunctionRef<RecvSpec(std::size_t)> recv);

// One step of a pipelined stream: a message to the right and one from the left.
struct StreamSend {
  const std::byte* data = nullptr;
  std::size_t bytes = 0;
  // Carries data that is all there already (not what receive k - 1 writes): it is sent as
  // soon as the previous send is done, without waiting for the previous receive.
  bool independent = false;
};
struct StreamRecv {
  std::size_t bytes = 0;
  std::byte* direct = nullptr;
  SegmentSink sink{};
};

// Runs `steps` steps as one pipeline, asking for each step's send and receive when it begins
// (receives begin in order, so a sink may keep per-step state). Send k (k >= 1), unless marked
// independent, must carry exactly what receive k - 1 writes, in order: it starts as soon as the first segments of it
// are there, so a ring forwards each segment while it is still in cache instead of waiting
// for whole blocks.
void exchange_stream(PeerLinks& peers, const CallTag& tag, int right, int left,
                     std::size_t steps, FunctionRef<StreamSend(std::size_t)> send_step,
                     FunctionRef<StreamRecv(std::size_t)> recv_step);

}  // namespace riseml
