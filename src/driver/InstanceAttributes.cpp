// The attributes of an instance's group, built once for every status (see
// InstanceAttributes.hpp).
#include "driver/InstanceAttributes.hpp"

#include <span>

namespace fabscope::driver {

output::Attributes coreInstanceAttributes(int index, const PlannedInstance& planned) {
  const auto& instance = planned.instance;
  const auto& spec = *instance.spec;
  output::Attributes attrs{{"index", std::int64_t{index}},
                           {"name", spec.name},
                           {"kind", spec.kind},
                           {"case", instance.caseId},
                           {"condition", instance.condition},
                           {"transport", spec.transport},
                           {"memory", spec.memory},
                           {"bytes", instance.bytes},
                           {"iterations", std::int64_t{spec.iterations}},
                           {"pattern", planned.plan.pattern},
                           {"pass", planned.plan.pass},
                           {"retest_of", std::int64_t{planned.plan.followUpOf}}};
  if (spec.repeats > 1) {  // only then: files without `repeats` keep their layout
    attrs.emplace_back("replicate", std::int64_t{instance.replicate});
    attrs.emplace_back("repeats", std::int64_t{spec.repeats});
  }
  if (spec.groups > 0) {  // a rotation over groups (roles.groups): which one measured; its ranks are `canaries`
    attrs.emplace_back("group", std::int64_t{instance.group});
    attrs.emplace_back("groups", std::int64_t{spec.groups});
  }
  return attrs;
}

InstanceResult coreInstanceResult(int index, const PlannedInstance& planned) {
  const auto& instance = planned.instance;
  InstanceResult r;
  r.index = index;
  r.name = instance.spec->name;
  r.kind = instance.spec->kind;
  r.caseId = instance.caseId;
  r.condition = instance.condition;
  r.pattern = planned.plan.pattern;
  r.pass = planned.plan.pass;
  r.bytes = instance.bytes;
  r.replicate = instance.replicate;
  r.repeats = instance.spec->repeats;
  return r;
}

output::Attributes finishedAttributes(int index, const PlannedInstance& planned, std::int64_t tStartNs,
                                      std::int64_t tEndNs, const suite::RoleAssignment& roles) {
  const auto& spec = *planned.instance.spec;
  const auto& plan = planned.plan;
  auto attrs = coreInstanceAttributes(index, planned);
  const output::Attributes ran = {
      {"description", plan.description},
      {"window", std::int64_t{plan.window}},
      {"warmup", std::int64_t{spec.warmup}},
      {"timeout_s", spec.timeoutSeconds},
      {"metric", std::string(plan.metric == suite::Metric::latency ? "latency" : "bandwidth")},
      {"sample_divisor", std::int64_t{plan.sampleDivisor}},
      {"t_start_ns", tStartNs},
      {"t_end_ns", tEndNs},
      {"canaries", suite::joinRanks(roles.canaries)},
      {"congestors", suite::joinRanks(roles.congestors)},
      {"placement", roles.placement},
      {"size_formula", planned.instance.sizeFormula},
  };
  attrs.insert(attrs.end(), ran.begin(), ran.end());
  plan.part->addAttributes(attrs);
  return attrs;
}

output::Attributes unfinishedAttributes(int index, const PlannedInstance& planned, const std::string& status,
                                        const std::string& why) {
  auto attrs = coreInstanceAttributes(index, planned);
  attrs.emplace_back("status", status);
  attrs.emplace_back("error", why);
  return attrs;
}

}  // namespace fabscope::driver
