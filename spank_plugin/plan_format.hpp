// Plans as riseml-plan prints them: JSON (one object per local task) or a table.
#pragma once

#include <string>
#include <vector>

#include "planner.hpp"

namespace riseml::placement {

std::string plans_to_json(const std::vector<TaskPlan>& plans);
std::string plans_to_table(const std::vector<TaskPlan>& plans);

}  // namespace riseml::placement
