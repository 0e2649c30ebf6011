#include "rendezvous_prefix.hpp"

namespace riseml::runtime {

std::string job_rendezvous_prefix(int generation) {
  return generation == 0 ? std::string("riseml") : "riseml.g" + std::to_string(generation);
}

std::string process_set_rendezvous_prefix(int generation, int process_set) {
  return job_rendezvous_prefix(generation) + ".ps" + std::to_string(process_set);
}

}  // namespace riseml::runtime
