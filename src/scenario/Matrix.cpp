#include "scenario/Matrix.hpp"

#include "scenario/Units.hpp"

namespace fabscope::scenario {

std::vector<TestInstance> expandMatrix(const Scenario& scenario) {
  std::vector<TestInstance> out;
  for (const auto& spec : scenario.tests)
    for (const auto bytes : spec.sizes)
      for (const auto& condition : spec.conditions)
        out.push_back({&spec, bytes, condition, spec.name + "/" + formatSize(bytes)});
  return out;
}

}  // namespace fabscope::scenario
