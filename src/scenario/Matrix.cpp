#include "scenario/Matrix.hpp"

#include "scenario/Units.hpp"

namespace fabscope::scenario {

std::vector<TestInstance> expandMatrix(const Scenario& scenario) {
  std::vector<TestInstance> out;
  for (const auto& spec : scenario.tests)
    for (std::size_t i = 0; i < spec.sizes.size(); ++i)
      for (const auto& condition : spec.conditions)
        out.push_back({&spec, spec.sizes[i], condition, spec.name + "/" + formatSize(spec.sizes[i]),
                       i < spec.sizeFormulas.size() ? spec.sizeFormulas[i] : ""});
  return out;
}

}  // namespace fabscope::scenario
