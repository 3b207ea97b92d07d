// Checks at load: patterns that follow the topology need a layout that fits,
// and a time budget thins or refuses (exit 2 with the scenario's position).
#include <gtest/gtest.h>

#include "driver/Runner.hpp"
#include "kinds/Registry.hpp"
#include "kinds/p2p/PairPlan.hpp"
#include "scenario/Scenario.hpp"

using namespace fabscope;

namespace {

const suite::Registry& registry() {
  static const suite::Registry r;
  return r;
}

std::vector<driver::PlannedInstance> plan(const std::string& text, const suite::WorldLayout& world) {
  const auto s = std::make_shared<scenario::Scenario>(
      scenario::loadScenarioText(text, "t.yaml", {}, registry().scenarioRules(world.size())));
  static std::vector<std::shared_ptr<scenario::Scenario>> keep;  // instances point into the scenario
  keep.push_back(s);
  return driver::planMatrix(*s, registry(), world);
}

std::string errorOf(const std::string& text, const suite::WorldLayout& world) {
  try {
    plan(text, world);
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(PatternBudget, HierarchicalWithoutLabelsIsRefusedAtItsKey) {
  const auto e = errorOf("tests:\n  - kind: latency\n    sizes: [8]\n    pattern: hierarchical\n",
                         suite::WorldLayout::uniform(16, 4, 0, 0));
  EXPECT_NE(e.find("t.yaml:4:14:"), std::string::npos) << e;
  EXPECT_NE(e.find("no leaf labels"), std::string::npos) << e;
  EXPECT_NE(e.find("group: node"), std::string::npos) << e;
  EXPECT_EQ(errorOf("tests:\n  - kind: latency\n    sizes: [8]\n    pattern: hierarchical\n",
                    suite::WorldLayout::uniform(16, 4, 2, 0)),
            "no error");
}

TEST(PatternBudget, TooFewRanksOrNodesAreRefused) {
  EXPECT_NE(
      errorOf("tests:\n  - {kind: latency, sizes: [8], pattern: rails}\n", suite::WorldLayout::uniform(8, 8, 0, 0))
          .find("on one node"),
      std::string::npos);
  EXPECT_NE(errorOf("tests:\n  - {kind: latency, sizes: [8], pattern: ring}\n", suite::WorldLayout::uniform(2, 1, 0, 0))
                .find("at least 3 measuring ranks"),
            std::string::npos);
  EXPECT_NE(errorOf("tests:\n  - {kind: latency, sizes: [8], pattern: rails, roles: {placement: random}}\n",
                    suite::WorldLayout::uniform(16, 4, 0, 0))
                .find("placement random"),
            std::string::npos);
}

TEST(PatternBudget, RailsFollowTheLayoutOfTheMeasuringRanks) {
  const auto planned =
      plan("tests:\n  - {kind: latency, sizes: [8], pattern: rails}\n", suite::WorldLayout::uniform(16, 4, 0, 0));
  ASSERT_EQ(planned.size(), 1u);
  const auto& p = suite::pairPlanOf(planned[0].plan);
  ASSERT_TRUE(p.rounds.layout());
  const auto& layout = *p.rounds.layout();
  EXPECT_EQ(p.rounds.rounds(), 3);  // 4 nodes
  for (const auto& round : p.rounds.whole())
    for (const auto& pair : round) {
      EXPECT_EQ(layout.ranks[static_cast<std::size_t>(pair.initiator)].localRank,
                layout.ranks[static_cast<std::size_t>(pair.responder)].localRank);
      EXPECT_EQ(suite::levelOf(layout, pair.initiator, pair.responder), suite::Level::crossNode);
    }
}

TEST(PatternBudget, ABudgetKeepsASampleOfRoundsAndSaysWhatWent) {
  const std::string text =
      "budget: 50ms\ntests:\n  - {kind: latency, sizes: [8], iterations: 100, warmup: 0, pattern: all-pairs,\n"
      "     all_pairs: {retest_worst: 0}}\n";
  const auto world = suite::WorldLayout::uniform(64, 8, 0, 0);
  const auto planned = plan(text, world);
  ASSERT_EQ(planned.size(), 1u);
  const auto& p = planned[0];
  EXPECT_LT(suite::pairPlanOf(p.plan).rounds.rounds(), 63);
  EXPECT_GE(suite::pairPlanOf(p.plan).rounds.rounds(), 1);
  EXPECT_LE(driver::estimateSeconds(p), 0.05);
  EXPECT_EQ(suite::pairPlanOf(p.plan).roundsLeftOut, 63 - suite::pairPlanOf(p.plan).rounds.rounds());
  EXPECT_EQ(suite::pairPlanOf(p.plan).pairsLeftOut, suite::pairPlanOf(p.plan).roundsLeftOut * 32);
  EXPECT_NE(suite::pairPlanOf(p.plan).leftOut.find("left out"), std::string::npos);
  EXPECT_EQ(p.plan.maxSamplesPerRank, suite::pairPlanOf(p.plan).rounds.rounds() * 100);
  // Without the budget nothing is left out; the same budget gives the same rounds.
  const auto full = plan(
      "tests:\n  - {kind: latency, sizes: [8], iterations: 100, warmup: 0, pattern: all-pairs,\n"
      "     all_pairs: {retest_worst: 0}}\n",
      world);
  EXPECT_EQ(suite::pairPlanOf(full[0].plan).rounds.rounds(), 63);
  EXPECT_TRUE(suite::pairPlanOf(full[0].plan).leftOut.empty());
  EXPECT_EQ(suite::pairPlanOf(plan(text, world)[0].plan).rounds.whole(), suite::pairPlanOf(p.plan).rounds.whole());
}

TEST(PatternBudget, ABudgetNoInstanceFitsIsRefusedWithTheEstimate) {
  const auto e = errorOf("tests:\n  - {kind: latency, sizes: [8, 1MiB], pattern: all-pairs,\n     budget: 10ms}\n",
                         suite::WorldLayout::uniform(64, 8, 0, 0));
  EXPECT_NE(e.find("t.yaml:3:14:"), std::string::npos) << e;
  EXPECT_NE(e.find("test 'latency-1'"), std::string::npos) << e;
  EXPECT_NE(e.find("with one round per instance"), std::string::npos) << e;
  EXPECT_NE(e.find("what would fit: budget: "), std::string::npos) << e;
  const auto scenarioWide =
      errorOf("budget: 1ms\ntests:\n  - {kind: latency, sizes: [8]}\n", suite::WorldLayout::uniform(4, 1, 0, 0));
  EXPECT_NE(scenarioWide.find("t.yaml:1:9: scenario"), std::string::npos) << scenarioWide;
  EXPECT_NE(errorOf("budget: 0s\ntests:\n  - {kind: latency, sizes: [8]}\n", suite::WorldLayout::uniform(4, 1, 0, 0))
                .find("t.yaml:1:9: duration '0s' must be greater than 0"),
            std::string::npos);
}

// The pair patterns' plan part travels with a copy of the plan (a retest starts
// as one) as a copy of its own, and a follow-up's choice comes back as the
// worst pairs first, then the control pairs: flagged, never counted as worst.
TEST(PairPlanPart, CopiesAndFollowUpKeepWorstAndControlsApart) {
  const auto planned = plan(
      "tests:\n  - {kind: latency, sizes: [8], iterations: 10, warmup: 0, pattern: all-pairs,\n"
      "     all_pairs: {retest_worst: 2}}\n",
      suite::WorldLayout::uniform(16, 1, 0, 0));
  ASSERT_EQ(planned.size(), 2u);  // the parallel pass, then its retest's slot
  const auto& measured = planned[0].plan;
  EXPECT_TRUE(measured.part->followedUp());
  EXPECT_TRUE(measured.part->pairMatrix());
  EXPECT_EQ(planned[1].plan.followUpOf, 0);
  EXPECT_EQ(planned[1].plan.pass, "serial-retest");
  EXPECT_FALSE(planned[1].plan.part->followedUp());
  EXPECT_EQ(planned[1].plan.part->roundCount(), -1);  // its pairs are not chosen yet

  auto copy = measured;
  suite::pairPlanOf(copy).rounds = suite::PairRounds{};
  EXPECT_EQ(suite::pairPlanOf(measured).rounds.rounds(), 15);  // the copy's part is its own

  std::vector<std::pair<std::int32_t, std::int32_t>> worstFirst;
  for (std::int32_t a = 0; a < 16; ++a)
    for (std::int32_t b = a + 1; b < 16; ++b) worstFirst.push_back({a, b});
  const auto choice = measured.part->chooseFollowUp(worstFirst, 7);
  ASSERT_FALSE(choice.empty());
  EXPECT_EQ(choice[0], 2);
  auto next = measured;
  measured.part->followUp(next, choice, 0, 10);
  const auto& retest = suite::pairPlanOf(next);
  const std::size_t controls = (choice.size() - 1) / 2 - 2;
  EXPECT_EQ(controls, static_cast<std::size_t>(suite::controlCount(2)));
  EXPECT_EQ(retest.controlPairs.size(), controls);
  for (const auto& c : retest.controlPairs) {  // never one of the two worst
    EXPECT_FALSE(c == (suite::RankPair{0, 1}));
    EXPECT_FALSE(c == (suite::RankPair{0, 2}));
  }
  // one pair at a time, each worst pair twice (its second visit after every other pair)
  EXPECT_EQ(retest.rounds.rounds(), static_cast<std::int64_t>(2 * 2 + controls));
  EXPECT_EQ(next.maxSamplesPerRank, static_cast<std::int64_t>(2 * 2 + controls) * 10);
  EXPECT_EQ(retest.revisitedPairs, (std::vector<suite::RankPair>{{0, 1}, {0, 2}}));
  // the slot planned before the choice bounds the same samples
  EXPECT_EQ(planned[1].plan.maxSamplesPerRank, static_cast<std::int64_t>(2 * 2 + controls) * 10);
  EXPECT_EQ(next.followUpOf, 0);
  EXPECT_EQ(next.pass, "serial-retest");
  EXPECT_FALSE(retest.followedUp());
  // Nothing ranked: nothing to follow up (the slot is then recorded as not run).
  EXPECT_TRUE(measured.part->chooseFollowUp({}, 7).empty());
  EXPECT_NE(measured.part->followUpNotRun(0).find("did not pass"), std::string::npos);
}
