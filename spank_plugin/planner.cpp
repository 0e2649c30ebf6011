#include "planner.hpp"

#include "cpu_list.hpp"
#include "plan_steps.hpp"

namespace riseml::placement {
namespace detail {

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += ',';
    out += p;
  }
  return out;
}

}  // namespace detail

namespace {
constexpr unsigned max_tasks = 4096;
}  // namespace

std::string one_line(const TaskPlan& plan) {
  auto or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  return "task=" + std::to_string(plan.task) + " gpus=" + or_dash(detail::join(plan.gpus)) +
         " cpus=" + or_dash(format_number_list(plan.cpus)) + " mems=" + or_dash(format_number_list(plan.mems)) +
         " nics=" + or_dash(detail::join(plan.nics));
}

std::vector<TaskPlan> make_plan(const NodeTopology& topo, const StepFacts& facts, const PlanOptions& options) {
  const unsigned ntasks = facts.local_tasks;
  if (ntasks == 0 || ntasks > max_tasks) {
    throw PlanError("the number of local tasks must be 1 to " + std::to_string(max_tasks) + ", not " +
                    std::to_string(ntasks));
  }
  detail::Work w{topo, facts, options, std::vector<TaskPlan>(ntasks), std::vector<detail::TaskState>(ntasks), {}, {}, {}};
  for (unsigned t = 0; t < ntasks; ++t) w.plans[t].task = t;
  detail::assign_gpus(w);
  detail::assign_cpus_and_memory(w);
  detail::assign_nics(w);
  detail::set_environment(w);
  return std::move(w.plans);
}

}  // namespace riseml::placement
