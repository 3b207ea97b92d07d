#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kinds/Kind.hpp"
#include "scenario/Scenario.hpp"

namespace fabscope::suite {

// Every test kind this build has, by name.
class Registry {
 public:
  Registry();
  // Only these kinds (test doubles in fabscope's unit tests).
  explicit Registry(std::vector<std::unique_ptr<Kind>> kinds);
  const Kind& kind(const std::string& name) const;
  const std::map<std::string, std::unique_ptr<Kind>>& all() const { return kinds_; }
  // Scenario rules for the loader: kinds, transports and memory kinds of this build.
  scenario::ScenarioRules scenarioRules(int worldSize) const;

 private:
  std::map<std::string, std::unique_ptr<Kind>> kinds_;
};

}  // namespace fabscope::suite
