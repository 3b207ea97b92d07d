#include "scenario/Matrix.hpp"

#include <algorithm>

#include "scenario/Units.hpp"

namespace fabscope::scenario {

std::vector<TestInstance> expandMatrix(const Scenario& scenario) {
  std::vector<TestInstance> out;
  int rounds = 1;
  for (const auto& spec : scenario.tests) rounds = std::max(rounds, spec.repeats);
  for (int round = 0; round < rounds; ++round)
    for (const auto& spec : scenario.tests) {
      if (round >= spec.repeats) continue;
      for (std::size_t i = 0; i < spec.sizes.size(); ++i)
        for (int group = 0; group < std::max(spec.groups, 1); ++group) {
          // A rotated test's case names its group: quiet and congested runs of one group compare.
          const std::string caseId = spec.name + "/" + formatSize(spec.sizes[i]) +
                                     (spec.groups > 0 ? "/group" + std::to_string(group) : std::string());
          for (const auto& condition : spec.conditions)
            out.push_back({&spec, spec.sizes[i], condition, caseId,
                           i < spec.sizeFormulas.size() ? spec.sizeFormulas[i] : "", round, group});
        }
    }
  return out;
}

}  // namespace fabscope::scenario
