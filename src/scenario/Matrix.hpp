#pragma once
// The expanded test matrix: one instance per test x size x group (roles.groups)
// x condition x replicate, in the order they run (conditions of one case are adjacent so quiet
// and congested runs of a case are measured close in time; replicates are rounds
// over the whole matrix, so drift over the run spreads over every case alike).
#include <string>
#include <vector>

#include "scenario/Scenario.hpp"

namespace fabscope::scenario {

struct TestInstance {
  const TestSpec* spec = nullptr;
  std::int64_t bytes = 0;
  std::string condition;
  std::string caseId;       // same for one test, size and group across conditions
  std::string sizeFormula;  // how the size was derived from the model, "" if literal
  int replicate = 0;        // 0 .. spec->repeats - 1
  int group = 0;            // 0 .. spec->groups - 1: which group of the rotation measures (roles.groups)
};

std::vector<TestInstance> expandMatrix(const Scenario& scenario);

}  // namespace fabscope::scenario
