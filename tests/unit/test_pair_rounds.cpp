// The per-rank form of the pair schedules: every rank keeps
// the pattern's parameters and its own rounds only. It must give the same pairs
// in the same rounds as the whole-schedule reference (tests/support/
// ReferenceSchedules.hpp) for every pattern, layout, seed and budget cut.
#include <gtest/gtest.h>
#include <malloc.h>

#include <memory>
#include <string>
#include <vector>

#include "ReferenceSchedules.hpp"
#include "topology/PairRounds.hpp"

using namespace fabscope::suite;

namespace {

struct NamedLayout {
  std::string name;
  std::shared_ptr<const RankLayout> layout;
};

std::vector<NamedLayout> layouts() {
  std::vector<NamedLayout> out;
  const auto add = [&](std::string name, RankLayout layout) {
    out.push_back({std::move(name), std::make_shared<const RankLayout>(std::move(layout))});
  };
  add("16 ranks, 4 per node, 2 nodes a leaf, 2 leaves a pod", RankLayout::uniform(16, 4, 2, 2));
  add("64 ranks, 8 per node, 2 nodes a leaf, 2 leaves a pod", RankLayout::uniform(64, 8, 2, 2));
  add("96 ranks, 8 per node, 4 nodes a leaf, no pods", RankLayout::uniform(96, 8, 4, 0));
  add("128 ranks, 8 per node, 2 nodes a leaf, 4 leaves a pod", RankLayout::uniform(128, 8, 2, 4));
  add("33 ranks, 4 per node (last node 1), 2 nodes a leaf, 2 leaves a pod", RankLayout::uniform(33, 4, 2, 2));
  add("24 ranks, 3 per node, unlabelled", RankLayout::uniform(24, 3, 0, 0));
  add("7 ranks, one per node, unlabelled", RankLayout::uniform(7, 1, 0, 0));
  // Uneven hosts (5, 3, 6, 2 ranks), leaves named within pods, and measuring
  // ranks that are a subset of the world in a shuffled role order.
  WorldLayout world;
  const std::vector<std::pair<int, std::pair<std::string, std::string>>> hosts = {
      {5, {"leaf01", "podA"}}, {3, {"leaf01", "podB"}}, {6, {"leaf02", "podA"}}, {2, {"leaf01", "podA"}}};
  for (std::size_t h = 0; h < hosts.size(); ++h)
    for (int i = 0; i < hosts[h].first; ++i) {
      world.hostOfRank.push_back("host" + std::to_string(h));
      world.leafOfRank.push_back(hosts[h].second.first);
      world.podOfRank.push_back(hosts[h].second.second);
    }
  add("14 of 16 uneven world ranks", groupLayout(world, {15, 3, 0, 8, 12, 1, 9, 5, 14, 6, 10, 2, 13, 7}));
  return out;
}

Schedule referenceOf(Pattern pattern, const RankLayout& layout, const PatternOptions& options, bool serial) {
  if (serial)
    return reference::serialSchedule(reference::allPairsParallelSchedule(layout.size(), options.bothDirections));
  return reference::topologySchedule(pattern, layout, options);
}

std::int64_t pairsIn(const Schedule& schedule) {
  std::int64_t pairs = 0;
  for (const auto& round : schedule) pairs += static_cast<std::int64_t>(round.size());
  return pairs;
}

std::int64_t busiestIn(const Schedule& schedule, int ranks) {
  std::vector<std::int64_t> busy(static_cast<std::size_t>(ranks), 0);
  std::int64_t most = 0;
  for (const auto& round : schedule)
    for (const auto& p : round)
      for (int r : {p.initiator, p.responder}) most = std::max(most, ++busy[static_cast<std::size_t>(r)]);
  return most;
}

// Same rounds, counts and every rank's own rounds as the whole schedule.
void expectSameAs(const PairRounds& rounds, const Schedule& whole, int ranks, const std::string& what) {
  ASSERT_EQ(rounds.whole(), whole) << what;
  EXPECT_EQ(rounds.rounds(), static_cast<std::int64_t>(whole.size())) << what;
  EXPECT_EQ(rounds.pairs(), pairsIn(whole)) << what;
  EXPECT_EQ(rounds.busiestRankRounds(), busiestIn(whole, ranks)) << what;
  for (int r = 0; r < ranks; ++r)
    ASSERT_EQ(rounds.roundsOf(r), reference::roundsOf(whole, r)) << what << ", rank " << r;
}

}  // namespace

TEST(PairRounds, EveryPatternMatchesTheWholeScheduleOnEveryRankWithAndWithoutBudget) {
  int compared = 0;
  for (const auto& [name, layout] : layouts())
    for (const auto pattern : {Pattern::pairs, Pattern::allPairs, Pattern::rails, Pattern::crossRail, Pattern::ring,
                               Pattern::bisection, Pattern::hierarchical})
      for (const bool both : {false, true})
        for (const bool serial : {false, true}) {
          if (serial && pattern != Pattern::allPairs) continue;
          for (const bool byLeaf : {true, false}) {
            if (!byLeaf && pattern != Pattern::hierarchical) continue;
            for (const std::uint64_t seed : {1ull, 977ull})
              for (const int draws : {1, 4, 7}) {
                PatternOptions options;
                options.draws = draws;
                options.seed = seed;
                options.groupByLeaf = byLeaf;
                options.bothDirections = both;
                if (!patternUnfit(pattern, *layout, options).empty()) continue;
                const std::string what = std::string(patternName(pattern)) + (serial ? " serial" : "") +
                                         (both ? " both directions" : "") + (byLeaf ? "" : " by node") + ", seed " +
                                         std::to_string(seed) + ", draws " + std::to_string(draws) + ", " + name;
                const auto whole = referenceOf(pattern, *layout, options, serial);
                ASSERT_FALSE(whole.empty()) << what;
                const auto rounds = PairRounds::ofPattern(pattern, layout, options, serial);
                expectSameAs(rounds, whole, layout->size(), what);
                ++compared;
                if (serial) continue;  // the budget thins parallel passes only
                // The budget's cuts, and a second cut of the first (a test's
                // budget, then the scenario's).
                for (const std::size_t keep : {std::size_t{1}, whole.size() / 2, whole.size() - 1}) {
                  if (keep == 0 || keep >= whole.size()) continue;
                  auto thinned = rounds;
                  thinned.keepSample(keep, seed + 5);
                  const auto expected = reference::keepRounds(whole, keep, seed + 5);
                  expectSameAs(thinned, expected, layout->size(), what + ", kept " + std::to_string(keep));
                  if (keep < 3) continue;
                  thinned.keepSample(keep / 2, 11);
                  expectSameAs(thinned, reference::keepRounds(expected, keep / 2, 11), layout->size(),
                               what + ", kept " + std::to_string(keep) + " then " + std::to_string(keep / 2));
                }
              }
          }
        }
  EXPECT_GT(compared, 300);  // every pattern on most layouts, not a loop that skipped everything
}

TEST(PairRounds, SampleRoundsDependsOnCountKeepAndSeedOnly) {
  const auto a = sampleRounds(100, 10, 3);
  ASSERT_EQ(a.size(), 10u);
  EXPECT_TRUE(std::is_sorted(a.begin(), a.end()));
  EXPECT_EQ(a, sampleRounds(100, 10, 3));
  EXPECT_NE(a, sampleRounds(100, 10, 4));
  EXPECT_EQ(sampleRounds(5, 9, 3), (std::vector<std::size_t>{0, 1, 2, 3, 4}));
}

TEST(PairRounds, RetestRoundsAreGivenPairByPair) {
  const auto layout = std::make_shared<const RankLayout>(RankLayout::uniform(8, 2, 0, 0));
  const Schedule retest = {{{0, 5}}, {{2, 7}}, {{1, 4}}};
  const auto rounds = PairRounds::explicitRounds(retest, layout);
  expectSameAs(rounds, retest, 8, "retest");
  EXPECT_TRUE(PairRounds::explicitRounds({}, layout).empty());
  EXPECT_TRUE(PairRounds().empty());
}

// What a rank holds does not grow with the schedule: all-pairs among 2,048
// ranks is 2,047 rounds of 1,024 pairs (2.1 M pairs, 17 MB whole); the plan's
// form holds the layout and a few counts, and one rank's rounds are 2,047 pairs.
TEST(PairRounds, HoldsNoWholeScheduleAtTwoThousandRanks) {
  const int ranks = 2048;
  const auto layout = std::make_shared<const RankLayout>(RankLayout::uniform(ranks, 8, 4, 8));
  PatternOptions options;
  const auto inUse = [] {
    const auto m = mallinfo2();
    return m.uordblks + m.hblkhd;
  };
  const auto before = inUse();
  {
    const auto rounds = PairRounds::ofPattern(Pattern::allPairs, layout, options);
    const auto mine = rounds.roundsOf(1000);
    const auto held = inUse() - before;
    EXPECT_EQ(rounds.rounds(), ranks - 1);
    EXPECT_EQ(rounds.pairs(), std::int64_t{ranks} * (ranks - 1) / 2);
    EXPECT_EQ(mine.size(), static_cast<std::size_t>(ranks - 1));
    // Own rounds: 2,047 x 12 B (rounded up by the vector); the whole schedule would be 17 MB.
    EXPECT_LT(held, std::size_t{256} << 10) << "bytes held after planning and taking one rank's rounds";
  }
}
