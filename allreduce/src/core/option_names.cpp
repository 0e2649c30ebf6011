#include <riseml/communicator.hpp>

namespace riseml {

std::string_view to_string(Algorithm a) {
  switch (a) {
    case Algorithm::automatic: return "auto";
    case Algorithm::ring: return "ring";
    case Algorithm::halving_doubling: return "halving_doubling";
    case Algorithm::hierarchical: return "hierarchical";
    case Algorithm::direct: return "direct";
  }
  return "?";
}

std::string_view to_string(TransportChoice t) {
  switch (t) {
    case TransportChoice::automatic: return "auto";
    case TransportChoice::shm: return "shm";
    case TransportChoice::tcp: return "tcp";
    case TransportChoice::inproc: return "inproc";
  }
  return "?";
}

}  // namespace riseml
