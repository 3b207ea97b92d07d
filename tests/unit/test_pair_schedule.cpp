#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "topology/PairSchedule.hpp"

using namespace fabscope::suite;

namespace {
void expectEveryPairOnceEveryRankBusy(int n) {
  const auto schedule = allPairsParallelSchedule(n, false);
  std::set<std::pair<int, int>> seen;
  for (const auto& round : schedule) {
    std::set<int> busy;
    for (const auto& p : round) {
      ASSERT_NE(p.initiator, p.responder);
      ASSERT_TRUE(busy.insert(p.initiator).second) << "rank twice in one round";
      ASSERT_TRUE(busy.insert(p.responder).second) << "rank twice in one round";
      const auto key = std::minmax(p.initiator, p.responder);
      ASSERT_TRUE(seen.insert(key).second) << "pair measured twice";
    }
    if (n % 2 == 0) {
      EXPECT_EQ(static_cast<int>(busy.size()), n) << "a rank idles in a round";
    }
  }
  EXPECT_EQ(static_cast<int>(seen.size()), n * (n - 1) / 2);
  EXPECT_EQ(static_cast<int>(schedule.size()), n % 2 == 0 ? n - 1 : n);
}
}  // namespace

TEST(PairSchedule, AllPairsCoversEveryPairOnce) {
  for (int n : {2, 3, 4, 5, 6, 8, 16, 17}) expectEveryPairOnceEveryRankBusy(n);
}

TEST(PairSchedule, BothDirectionsMirrorsEachRound) {
  const auto s = allPairsParallelSchedule(4, true);
  ASSERT_EQ(s.size(), 6u);
  for (std::size_t r = 0; r < s.size(); r += 2)
    for (std::size_t i = 0; i < s[r].size(); ++i) {
      EXPECT_EQ(s[r][i].initiator, s[r + 1][i].responder);
      EXPECT_EQ(s[r][i].responder, s[r + 1][i].initiator);
    }
}

TEST(PairSchedule, PairsHalfApart) {
  const auto s = pairsSchedule(6);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0], (Round{{0, 3}, {1, 4}, {2, 5}}));
  EXPECT_EQ(pairsSchedule(5)[0].size(), 2u);  // the last rank idles
}

TEST(PairSchedule, SerialRunsOnePairPerRound) {
  const auto serial = serialSchedule(allPairsParallelSchedule(4, false));
  EXPECT_EQ(serial.size(), 6u);
  for (const auto& round : serial) EXPECT_EQ(round.size(), 1u);
  const auto only = serialScheduleOf({{2, 3}, {0, 1}});
  EXPECT_EQ(roundsOf(only, 3).size(), 1u);
  EXPECT_EQ(roundsOf(only, 3)[0].first, 0);
}

namespace {
std::vector<RankPair> rankedPairs(int n) {  // every pair of n ranks, in a fixed order
  std::vector<RankPair> out;
  for (int a = 0; a < n; ++a)
    for (int b = a + 1; b < n; ++b) out.push_back({a, b});
  return out;
}
}  // namespace

// 28 pairs of 8 ranks, worst first: the 3 retested pairs share ranks 0..3; 4 more
// pairs touching them, then the 10 pairs among ranks 4..7 (positions 7..16, inside
// the middle half 7..20), then the other pairs touching 0..3.
std::vector<RankPair> rankedWithSuspects() {
  std::vector<RankPair> retested{{0, 1}, {0, 2}, {0, 3}}, touching, disjoint;
  for (const auto& p : rankedPairs(8)) {
    if (std::find(retested.begin(), retested.end(), p) != retested.end()) continue;
    (p.initiator < 4 || p.responder < 4 ? touching : disjoint).push_back(p);
  }
  auto out = retested;
  out.insert(out.end(), touching.begin(), touching.begin() + 4);
  out.insert(out.end(), disjoint.begin(), disjoint.end());
  out.insert(out.end(), touching.begin() + 4, touching.end());
  return out;
}

TEST(PairSchedule, ControlsNeverShareARankWithTheRetestedWhenOthersRemain) {
  const auto ranked = rankedWithSuspects();
  for (std::uint64_t seed : {1ull, 2ull, 3ull, 99ull})
    for (const auto& c : controlPairs(ranked, 3, 3, seed)) {
      EXPECT_GE(c.initiator, 4) << "seed " << seed;  // not 0..3: those are the suspects' ranks
      EXPECT_GE(c.responder, 4) << "seed " << seed;
    }
  // 4 ranks: every other pair shares a rank with (0,1) or (2,3): they fill in.
  const std::vector<RankPair> small{{0, 1}, {2, 3}, {0, 2}, {1, 3}, {0, 3}, {1, 2}};
  EXPECT_EQ(controlPairs(small, 2, 2, 5).size(), 2u);
}

TEST(PairSchedule, ControlsComeFromTheMiddleAndNeverFromTheRetested) {
  const auto ranked = rankedWithSuspects();  // 28 pairs; middle half = positions 7..20
  for (std::uint64_t seed : {1ull, 2ull, 3ull, 99ull}) {
    const auto controls = controlPairs(ranked, 3, 3, seed);
    ASSERT_EQ(controls.size(), 3u);
    std::set<std::pair<int, int>> seen;
    for (const auto& c : controls) {
      const auto at = static_cast<std::size_t>(std::find(ranked.begin(), ranked.end(), c) - ranked.begin());
      EXPECT_GE(at, 7u) << "seed " << seed;
      EXPECT_LT(at, 21u) << "seed " << seed;
      EXPECT_TRUE(seen.insert({c.initiator, c.responder}).second) << "a control drawn twice";
    }
  }
}

TEST(PairSchedule, ControlsAreSeeded) {
  const auto ranked = rankedPairs(12);
  EXPECT_EQ(controlPairs(ranked, 4, 4, 7), controlPairs(ranked, 4, 4, 7));
  bool differs = false;
  for (std::uint64_t seed = 1; seed < 10; ++seed)
    differs = differs || controlPairs(ranked, 4, 4, seed) != controlPairs(ranked, 4, 4, 0);
  EXPECT_TRUE(differs) << "the seed does not change the draw";
}

TEST(PairSchedule, FewPairsStillGiveControlsOutsideTheRetested) {
  const auto ranked = rankedPairs(4);  // 6 pairs, 3 retested: the middle half alone has too few
  const auto controls = controlPairs(ranked, 3, 3, 5);
  ASSERT_EQ(controls.size(), 3u);
  for (const auto& c : controls) EXPECT_GE(std::find(ranked.begin(), ranked.end(), c) - ranked.begin(), 3);
  EXPECT_TRUE(controlPairs(ranked, 6, 3, 5).empty());  // nothing left to draw from
  EXPECT_TRUE(controlPairs(ranked, 2, 0, 5).empty());
}

TEST(PairSchedule, RetestAlternatesRetestedAndControlPairsOnePerRoundThenRevisitsTheRetested) {
  const auto schedule = retestSchedule({{0, 1}, {2, 3}}, {{4, 5}, {6, 7}, {0, 2}});
  ASSERT_EQ(schedule.size(), 7u);
  const std::vector<RankPair> order = {{0, 1}, {4, 5}, {2, 3}, {6, 7}, {0, 2}, {0, 1}, {2, 3}};
  for (std::size_t i = 0; i < schedule.size(); ++i) {
    ASSERT_EQ(schedule[i].size(), 1u);
    EXPECT_EQ(schedule[i][0], order[i]);
  }
}

// A retested pair's two visits lie apart: every other pair of the first pass
// (controls included) comes between them, so at least as many slots as there
// are controls, and a burst as long as one visit cannot cover both.
TEST(PairSchedule, EachRetestedPairIsVisitedTwiceWithAtLeastTheControlsBetween) {
  const auto ranked = rankedPairs(8);
  const std::vector<RankPair> retested(ranked.begin(), ranked.begin() + 3);
  const auto controls = controlPairs(ranked, 3, controlCount(3), 5);
  const auto schedule = retestSchedule(retested, controls);
  EXPECT_EQ(schedule.size(), 2 * retested.size() + controls.size());  // 16 slots, not 13: bounded
  for (const auto& pair : retested) {
    std::vector<std::size_t> at;
    for (std::size_t i = 0; i < schedule.size(); ++i)
      if (schedule[i][0] == pair) at.push_back(i);
    ASSERT_EQ(at.size(), 2u);
    EXPECT_GE(at[1] - at[0] - 1, controls.size());
  }
  for (const auto& c : controls)
    EXPECT_EQ(std::count_if(schedule.begin(), schedule.end(), [&](const auto& r) { return r[0] == c; }), 1);
}

TEST(PairSchedule, SecondVisitsAreTheLaterOccurrencesOfARetestedPairOnly) {
  // rank 0's rounds of a retest of {0,1} and {0,2}, control {0,3}
  const std::vector<std::pair<int, RankPair>> mine = {{0, {0, 1}}, {1, {0, 3}}, {2, {0, 2}}, {4, {0, 1}}, {5, {0, 2}}};
  const auto second = secondVisits(mine, {{0, 1}, {0, 2}});
  EXPECT_EQ(second, (std::vector<bool>{false, false, false, true, true}));
  // no retested pairs (a parallel pass, or a pass whose mirror repeats a pair): nothing is a revisit
  EXPECT_EQ(secondVisits(mine, {}), std::vector<bool>(5, false));
}

TEST(PairSchedule, ARetestMeasuresAtLeastTenControlPairs) {
  // The analysis takes one pair's noise alone from the controls' spread: 2 or 3
  // controls (as many as the retested pairs) are no estimate of it.
  EXPECT_EQ(controlCount(2), kMinControlPairs);
  EXPECT_EQ(controlCount(3), 10);
  EXPECT_EQ(controlCount(25), 25);
  const auto ranked = rankedPairs(8);  // 28 pairs, 3 retested: 10 controls fit outside them
  const auto controls = controlPairs(ranked, 3, controlCount(3), 5);
  EXPECT_EQ(controls.size(), 10u);
  for (const auto& c : controls) EXPECT_GE(std::find(ranked.begin(), ranked.end(), c) - ranked.begin(), 3);
  EXPECT_EQ(controlPairs(rankedPairs(4), 3, controlCount(3), 5).size(), 3u);  // only 3 left
}
