#include <gtest/gtest.h>

#include <set>

#include "kinds/p2p/PairSchedule.hpp"

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
    if (n % 2 == 0) EXPECT_EQ(static_cast<int>(busy.size()), n) << "a rank idles in a round";
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
