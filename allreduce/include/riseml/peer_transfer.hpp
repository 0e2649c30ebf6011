// Point-to-point transfers of one batch (torch's send/recv, batch_isend_irecv): bytes to and
// from single peers, matched per pair of ranks in call order (NCCL's rule: no tags). A batch
// is posted as a whole, so its order of sends and receives cannot deadlock.
#pragma once

#include <cstddef>

namespace riseml {

struct PeerSend {
  const void* data = nullptr;
  std::size_t bytes = 0;
  int peer = -1;
};

struct PeerReceive {
  void* data = nullptr;
  std::size_t bytes = 0;
  int peer = -1;
};

}  // namespace riseml
