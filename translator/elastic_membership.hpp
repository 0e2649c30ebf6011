// What `riseml status` says about an elastic job's workers, read from riseml-elastic's lines in
// the job's log: the nodes of its current world and the nodes that left.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace riseml {

// "elastic: 3 workers on rml1, rml2, rml4; left: rml3", from the lines of a job log (the last
// "started ..." and "the world re-formed ..." win); nullopt when the log has none.
std::optional<std::string> elastic_membership(std::string_view log);

}  // namespace riseml
