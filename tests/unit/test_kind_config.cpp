// Typed configuration, parsed once: a kind's parse step runs
// once per test at load, plan reads the typed config it made, and nothing the
// planner or a kind's run sees carries YAML.
//
// These headers come first, on purpose: what plan and run see (the test spec,
// the kind interface, the runner) must not bring yaml-cpp in.
#include "driver/Runner.hpp"
#include "kinds/Kind.hpp"
#include "kinds/Registry.hpp"
#include "scenario/Matrix.hpp"
#include "scenario/Scenario.hpp"

#if defined(NODE_NODE_H_62B23520_7C8E_11DE_8A39_0800200C9A66) || defined(YAML_H_62B23520_7C8E_11DE_8A39_0800200C9A66)
constexpr bool yamlInPlanAndRunHeaders = true;
#else
constexpr bool yamlInPlanAndRunHeaders = false;
#endif

#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "scenario/TestSource.hpp"

namespace fabscope {
namespace {

// The spec that plan and run receive has no YAML in it: the members that
// carried the test's node and the scenario's model and parallel are gone.
template <typename T>
concept HasTestNode = requires(const T& t) {
  t.node;
};
template <typename T>
concept HasScenarioModel = requires(const T& t) {
  t.scenarioModel;
};
template <typename T>
concept HasScenarioParallel = requires(const T& t) {
  t.scenarioParallel;
};
static_assert(!HasTestNode<scenario::TestSpec>, "TestSpec must not carry the test's YAML node");
static_assert(!HasScenarioModel<scenario::TestSpec>, "TestSpec must not carry the scenario's model node");
static_assert(!HasScenarioParallel<scenario::TestSpec>, "TestSpec must not carry the scenario's parallel node");
static_assert(!yamlInPlanAndRunHeaders, "Scenario.hpp, Kind.hpp or Runner.hpp includes yaml-cpp");

// A test double: a kind with one key of its own that counts how often its
// parse step and its plan run.
struct Counts {
  int parses = 0;
  int plans = 0;
};

struct CountingConfig final : scenario::KindConfig {
  std::int64_t depth = 0;
};

struct OtherConfig final : scenario::KindConfig {};

class CountingKind final : public suite::Kind {
 public:
  explicit CountingKind(Counts& counts) : counts_(counts) {}
  std::string name() const override { return "counting"; }
  std::string summary() const override { return "counts its parse and plan calls"; }
  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"depth"};
    r.parse = [this](const scenario::TestSpec& spec, const scenario::TestSource& source) {
      ++counts_.parses;
      auto c = std::make_shared<CountingConfig>();
      c->depth = scenario::ParamReader(spec, source).integer("depth", 1, 1, 100);
      return c;
    };
    return r;
  }
  suite::InstancePlan plan(const scenario::TestInstance& instance, int) const override {
    ++counts_.plans;
    suite::InstancePlan p;
    p.maxSamplesPerRank = instance.spec->iterations;
    p.description = "depth " + std::to_string(scenario::configOf<CountingConfig>(*instance.spec).depth);
    return p;
  }
  suite::Outcome run(suite::RunContext&) const override { return {}; }

 private:
  Counts& counts_;
};

suite::Registry countingRegistry(Counts& counts) {
  std::vector<std::unique_ptr<suite::Kind>> kinds;
  kinds.push_back(std::make_unique<CountingKind>(counts));
  return suite::Registry(std::move(kinds));
}

// Two tests, each 2 sizes x 2 conditions x 2 repeats = 8 instances.
const char* const twoCountingTests = R"(
name: t
tests:
  - name: shallow
    kind: counting
    sizes: [8, 16]
    conditions: [quiet, incast]
    repeats: 2
  - name: deep
    kind: counting
    depth: 7
    sizes: [8, 16]
    conditions: [quiet, incast]
    repeats: 2
)";

TEST(KindConfig, ParsedOncePerTestAtLoadAndReadByPlan) {
  Counts counts;
  const auto registry = countingRegistry(counts);
  const auto s = scenario::loadScenarioText(twoCountingTests, "t.yaml", {}, registry.scenarioRules(4));
  EXPECT_EQ(counts.parses, 2);
  EXPECT_EQ(counts.plans, 0);
  const auto planned = driver::planMatrix(s, registry, 4);
  ASSERT_EQ(planned.size(), 16u);
  EXPECT_EQ(counts.parses, 2) << "planning must not parse the kind's keys again";
  EXPECT_EQ(counts.plans, 16);
  EXPECT_EQ(planned.front().plan.description, "depth 1");
  EXPECT_EQ(planned.back().plan.description, "depth 7");
  EXPECT_EQ(scenario::configOf<CountingConfig>(s.tests.at(1)).depth, 7);
}

TEST(KindConfig, ParseErrorsStillPointAtTheFile) {
  Counts counts;
  const auto registry = countingRegistry(counts);
  try {
    (void)scenario::loadScenarioText("tests:\n  - kind: counting\n    sizes: [8]\n    depth: 500\n", "t.yaml", {},
                                     registry.scenarioRules(2));
    FAIL() << "depth 500 was accepted";
  } catch (const scenario::ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()), "t.yaml:4:12: 'depth' in test 'counting-1' is 500; expected 1..100");
  }
}

TEST(KindConfig, PositionsCapturedAtLoadForLaterMessages) {
  Counts counts;
  const auto registry = countingRegistry(counts);
  const auto s = scenario::loadScenarioText(twoCountingTests, "t.yaml", {}, registry.scenarioRules(4));
  const auto& deep = s.tests.at(1);
  EXPECT_EQ(deep.at, "t.yaml:9:5");
  EXPECT_EQ(deep.where("depth"), "t.yaml:11:12");
  EXPECT_EQ(deep.where("window"), "t.yaml:9:5");  // not in the test: the test's own position
}

TEST(KindConfig, AskingForAnotherKindsConfigIsAClearError) {
  Counts counts;
  const auto registry = countingRegistry(counts);
  const auto s = scenario::loadScenarioText(twoCountingTests, "t.yaml", {}, registry.scenarioRules(4));
  try {
    (void)scenario::configOf<OtherConfig>(s.tests.at(0));
    FAIL() << "another kind's config type was handed out";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("test 'shallow' (counting): its config is not the type asked for"),
              std::string::npos)
        << e.what();
  }
  scenario::TestSpec bare;
  bare.name = "bare";
  bare.kind = "counting";
  EXPECT_THROW((void)scenario::configOf<CountingConfig>(bare), std::logic_error);
}

// Every shipped kind makes its config at load: planning a test of each reads
// it without parsing again (a kind that still read YAML in plan would not
// compile; one that forgot its parse step fails here).
TEST(KindConfig, EveryShippedKindHasAParseStep) {
  const suite::Registry registry;
  for (const auto& [name, kind] : registry.all()) EXPECT_TRUE(static_cast<bool>(kind->rules().parse)) << name;
}

}  // namespace
}  // namespace fabscope
