// How the engine's messages name things: an operation ("allreduce") and a list of ranks
// ("rank 2", "ranks 0, 3"). Shared by the request checks, the agreement rules and the stall
// inspector, so that every message words them alike.
#pragma once

#include <riseml/engine/engine.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace riseml::engine {

std::string_view kind_name(OpKind kind);
std::string rank_list(const std::vector<int>& ranks);

}  // namespace riseml::engine
