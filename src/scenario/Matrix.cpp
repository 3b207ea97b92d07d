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
        for (const auto& condition : spec.conditions)
          out.push_back({&spec, spec.sizes[i], condition, spec.name + "/" + formatSize(spec.sizes[i]),
                         i < spec.sizeFormulas.size() ? spec.sizeFormulas[i] : "", round});
    }
  return out;
}

}  // namespace fabscope::scenario
