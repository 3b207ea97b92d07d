// The core attributes of an instance's group: a finished, a skipped and an
// interrupted instance carry the same set with the same values, built once
// (driver/InstanceAttributes.hpp), through the real loader and planner.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <string>

#include "driver/InstanceAttributes.hpp"
#include "driver/Planning.hpp"
#include "kinds/Registry.hpp"
#include "scenario/Scenario.hpp"

// A namespace of its own: the unity build puts several test files in one unit.
namespace fabscope::instance_attributes_test {
namespace {

const suite::Registry& registry() {
  static const suite::Registry r;
  return r;
}

// A plain instance, an all-pairs pass with its serial retest slot (retest_of
// set), a test with repeats (replicate and repeats set) and one rotating over
// groups (group and groups set).
constexpr const char* scenarioText = R"(name: t
seed: 1
defaults:
  iterations: 10
  warmup: 1
  timeout: 10s
tests:
  - name: lat
    kind: latency
    pattern: pairs
    sizes: [8]
  - name: allpairs
    kind: latency
    pattern: all-pairs
    all_pairs: {mode: parallel, retest_worst: 1}
    sizes: [8]
  - name: repeated
    kind: bandwidth
    pattern: pairs
    sizes: [1KiB]
    conditions: [quiet, incast]
    repeats: 2
  - name: rotated
    kind: allreduce
    sizes: [8]
    roles: {canaries: 2, placement: packed, groups: all}
)";

// The plan points into its scenario (TestInstance::spec): both kept for the program's life.
const std::vector<driver::PlannedInstance>& planned() {
  static const auto s = scenario::loadScenarioText(scenarioText, "t.yaml", {}, registry().scenarioRules(4));
  static const auto plan = driver::planMatrix(s, registry(), 4);
  return plan;
}

std::map<std::string, output::AttributeValue> byName(const output::Attributes& attributes) {
  std::map<std::string, output::AttributeValue> map;
  for (const auto& [key, value] : attributes) {
    EXPECT_TRUE(map.emplace(key, value).second) << "attribute " << key << " written twice";
  }
  return map;
}

std::set<std::string> namesOf(const std::map<std::string, output::AttributeValue>& map) {
  std::set<std::string> names;
  for (const auto& [key, value] : map) names.insert(key);
  return names;
}

// The core set as docs/file-format.md describes it, written out here so a
// key dropped from the one builder is caught too.
std::set<std::string> expectedCore(const driver::PlannedInstance& p) {
  std::set<std::string> names{"index",  "name",  "kind",       "case",    "condition", "transport",
                              "memory", "bytes", "iterations", "pattern", "pass",      "retest_of"};
  if (p.instance.spec->repeats > 1) names.insert({"replicate", "repeats"});
  if (p.instance.spec->groups > 0) names.insert({"group", "groups"});
  return names;
}

TEST(InstanceAttributes, FinishedSkippedAndUnfinishedCarryTheSameCoreSet) {
  const auto& plan = planned();
  bool sawRetest = false, sawRepeats = false;
  std::set<std::int64_t> groupsSeen;
  for (int index = 0; index < static_cast<int>(plan.size()); ++index) {
    const auto& p = plan[static_cast<std::size_t>(index)];
    sawRetest |= p.plan.followUpOf >= 0;
    sawRepeats |= p.instance.spec->repeats > 1;
    SCOPED_TRACE("instance " + std::to_string(index) + " (" + p.instance.caseId + ", " + p.plan.pass + ")");
    const auto core = byName(driver::coreInstanceAttributes(index, p));
    EXPECT_EQ(namesOf(core), expectedCore(p));
    const auto finished = byName(driver::finishedAttributes(index, p, 100, 200, suite::RoleAssignment{}));
    const auto skipped = byName(driver::unfinishedAttributes(index, p, "skipped", "why"));
    const auto interrupted = byName(driver::unfinishedAttributes(index, p, "timeout", "a rank was lost"));
    for (const auto& [kind, attributes] :
         {std::pair{"finished", &finished}, {"skipped", &skipped}, {"interrupted", &interrupted}})
      for (const auto& [key, value] : core) {
        const auto found = attributes->find(key);
        ASSERT_NE(found, attributes->end()) << "a " << kind << " instance lacks the core attribute " << key;
        EXPECT_EQ(found->second, value) << "a " << kind << " instance's " << key << " differs from the core set's";
      }
    // A skipped or interrupted instance: the core set, its status and why, nothing more.
    auto unfinishedNames = namesOf(core);
    unfinishedNames.insert({"status", "error"});
    EXPECT_EQ(namesOf(skipped), unfinishedNames);
    EXPECT_EQ(namesOf(interrupted), unfinishedNames);
    EXPECT_EQ(std::get<std::string>(skipped.at("status")), "skipped");
    EXPECT_EQ(std::get<std::string>(interrupted.at("error")), "a rank was lost");
    EXPECT_EQ(std::get<std::int64_t>(core.at("retest_of")), p.plan.followUpOf);
    if (p.instance.spec->groups > 0) {
      EXPECT_EQ(std::get<std::int64_t>(core.at("groups")), 2);  // 4 ranks, groups of 2
      groupsSeen.insert(std::get<std::int64_t>(core.at("group")));
    }
  }
  EXPECT_EQ(groupsSeen, (std::set<std::int64_t>{0, 1})) << "the rotation did not plan one instance per group";
  EXPECT_TRUE(sawRetest) << "the scenario planned no serial retest slot: retest_of was not exercised";
  EXPECT_TRUE(sawRepeats) << "the scenario planned no repeats: replicate and repeats were not exercised";
}

TEST(InstanceAttributes, RankZerosResultHoldsTheSameCoreFacts) {
  const auto& plan = planned();
  for (int index = 0; index < static_cast<int>(plan.size()); ++index) {
    const auto& p = plan[static_cast<std::size_t>(index)];
    const auto core = byName(driver::coreInstanceAttributes(index, p));
    const auto result = driver::coreInstanceResult(index, p);
    EXPECT_EQ(result.index, std::get<std::int64_t>(core.at("index")));
    EXPECT_EQ(result.name, std::get<std::string>(core.at("name")));
    EXPECT_EQ(result.kind, std::get<std::string>(core.at("kind")));
    EXPECT_EQ(result.caseId, std::get<std::string>(core.at("case")));
    EXPECT_EQ(result.condition, std::get<std::string>(core.at("condition")));
    EXPECT_EQ(result.pattern, std::get<std::string>(core.at("pattern")));
    EXPECT_EQ(result.pass, std::get<std::string>(core.at("pass")));
    EXPECT_EQ(result.bytes, std::get<std::int64_t>(core.at("bytes")));
    EXPECT_EQ(result.replicate, p.instance.replicate);
    EXPECT_EQ(result.repeats, p.instance.spec->repeats);
  }
}

// A skipped instance's result is this core and nothing else: nothing measured, no
// site scopes (a run without site labels must not grow a scope column for a skipped
// row), no impact, no batch figure, no counters.
TEST(InstanceAttributes, RankZerosCoreResultHoldsNothingMeasured) {
  const auto& plan = planned();
  for (int index = 0; index < static_cast<int>(plan.size()); ++index) {
    const auto result = driver::coreInstanceResult(index, plan[static_cast<std::size_t>(index)]);
    EXPECT_FALSE(result.labelled) << index;
    EXPECT_TRUE(result.scopes.empty()) << index;
    EXPECT_TRUE(result.spansSites.empty()) << index;
    EXPECT_TRUE(result.counters.empty()) << index;
    EXPECT_TRUE(result.status.empty() && result.error.empty()) << index;
    EXPECT_EQ(result.impactMean, 0.0) << index;
    EXPECT_EQ(result.impactP99, 0.0) << index;
    EXPECT_TRUE(std::isnan(result.batchMeanNs) && std::isnan(result.batchGbps)) << index;
  }
}

}  // namespace
}  // namespace fabscope::instance_attributes_test
