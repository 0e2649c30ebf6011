// The one exception type of pmix_bootstrap. It is a RendezvousError so the collectives core,
// which only knows the rendezvous interface, can catch it.
#pragma once

#include <riseml/rendezvous.hpp>

namespace riseml::pmix {

class BootstrapError : public RendezvousError {
 public:
  using RendezvousError::RendezvousError;
};

}  // namespace riseml::pmix
