#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "topology/TopologySchedule.hpp"

using namespace fabscope::suite;

namespace {

// Every rank in at most one pair per round, no self pairs, ranks in range.
void expectEveryRankBusyAtMostOnce(const Schedule& schedule, int n) {
  for (std::size_t r = 0; r < schedule.size(); ++r) {
    std::set<int> busy;
    for (const auto& p : schedule[r]) {
      ASSERT_NE(p.initiator, p.responder) << "round " << r;
      ASSERT_GE(std::min(p.initiator, p.responder), 0);
      ASSERT_LT(std::max(p.initiator, p.responder), n);
      ASSERT_TRUE(busy.insert(p.initiator).second) << "rank " << p.initiator << " twice in round " << r;
      ASSERT_TRUE(busy.insert(p.responder).second) << "rank " << p.responder << " twice in round " << r;
    }
  }
}

std::set<std::pair<int, int>> pairsOf(const Schedule& schedule) {
  std::set<std::pair<int, int>> out;
  for (const auto& round : schedule)
    for (const auto& p : round) out.insert(std::minmax(p.initiator, p.responder));
  return out;
}

std::map<Level, int> levelsOf(const Schedule& schedule, const RankLayout& layout) {
  std::map<Level, int> out;
  for (const auto& round : schedule)
    for (const auto& p : round) ++out[levelOf(layout, p.initiator, p.responder)];
  return out;
}

// 4 nodes of 4 ranks, 2 nodes to a leaf, 1 leaf to a pod: 2 pods.
RankLayout fourByFour() { return RankLayout::uniform(16, 4, 2, 1); }

}  // namespace

TEST(TopologySchedule, LevelsFollowTheLayout) {
  const auto layout = RankLayout::uniform(32, 4, 2, 2);  // 8 nodes, 4 leaves, 2 pods
  EXPECT_EQ(levelOf(layout, 0, 3), Level::sameNode);
  EXPECT_EQ(levelOf(layout, 0, 4), Level::sameLeaf);   // node 0 and 1: leaf0
  EXPECT_EQ(levelOf(layout, 0, 8), Level::samePod);    // leaf0 and leaf1: pod0
  EXPECT_EQ(levelOf(layout, 0, 16), Level::crossPod);  // leaf2: pod1
  const auto unlabelled = RankLayout::uniform(8, 4);
  EXPECT_EQ(levelOf(unlabelled, 0, 4), Level::crossNode);
  EXPECT_EQ(levelOf(unlabelled, 1, 2), Level::sameNode);
  // A leaf name repeated in two pods is two switches.
  RankLayout twoPods;
  twoPods.ranks = {{0, 0, "leaf01", "a"}, {1, 0, "leaf01", "b"}};
  EXPECT_EQ(levelOf(twoPods, 0, 1), Level::crossPod);
}

TEST(TopologySchedule, RailsPairSameLocalRankOnDifferentNodesOnly) {
  const auto layout = RankLayout::uniform(32, 8);  // 4 nodes of 8: 8 rails of 4
  const auto schedule = railsSchedule(layout, false);
  expectEveryRankBusyAtMostOnce(schedule, 32);
  EXPECT_EQ(schedule.size(), 3u);  // circle method on 4 nodes
  for (const auto& round : schedule) {
    EXPECT_EQ(round.size(), 16u) << "every rank busy in every round";
    for (const auto& p : round) {
      EXPECT_EQ(p.initiator % 8, p.responder % 8) << "a rail pair on two rails";
      EXPECT_NE(p.initiator / 8, p.responder / 8) << "a rail pair on one node";
    }
  }
  EXPECT_EQ(pairsOf(schedule).size(), 8u * 6u);  // every pair of every rail once
  EXPECT_EQ(railsSchedule(layout, true).size(), 6u);
}

TEST(TopologySchedule, CrossRailPairsDifferentNodesAndRails) {
  const auto layout = fourByFour();
  const auto schedule = crossRailSchedule(layout, 5, 7);
  expectEveryRankBusyAtMostOnce(schedule, 16);
  EXPECT_EQ(schedule.size(), 5u);
  for (const auto& round : schedule) {
    EXPECT_GE(round.size(), 6u);
    for (const auto& p : round) {
      EXPECT_NE(p.initiator % 4, p.responder % 4);
      EXPECT_NE(p.initiator / 4, p.responder / 4);
    }
  }
}

TEST(TopologySchedule, RingsCoverEveryRankTwicePerRing) {
  for (int n : {8, 9, 16}) {
    const auto schedule = ringSchedule(n, 3, 42);
    expectEveryRankBusyAtMostOnce(schedule, n);
    ASSERT_EQ(schedule.size(), static_cast<std::size_t>(n % 2 == 0 ? 6 : 9));
    const std::size_t perRing = n % 2 == 0 ? 2 : 3;
    for (std::size_t ring = 0; ring < 3; ++ring) {
      std::map<int, int> initiated, responded;
      for (std::size_t r = ring * perRing; r < (ring + 1) * perRing; ++r)
        for (const auto& p : schedule[r]) ++initiated[p.initiator], ++responded[p.responder];
      for (int rank = 0; rank < n; ++rank) {
        EXPECT_EQ(initiated[rank], 1) << "n " << n << " ring " << ring << " rank " << rank;
        EXPECT_EQ(responded[rank], 1) << "n " << n << " ring " << ring << " rank " << rank;
      }
    }
  }
}

TEST(TopologySchedule, BisectionPairsTheHalvesAllAtOnce) {
  const auto schedule = bisectionSchedule(16, 4, 3);
  expectEveryRankBusyAtMostOnce(schedule, 16);
  ASSERT_EQ(schedule.size(), 4u);
  for (const auto& round : schedule) EXPECT_EQ(round.size(), 8u);
  EXPECT_NE(schedule[0], schedule[1]) << "each split is drawn anew";
}

TEST(TopologySchedule, SeededAndReproducible) {
  const auto layout = RankLayout::uniform(64, 8, 2, 2);
  PatternOptions options;
  options.draws = 6;
  for (auto pattern : {Pattern::crossRail, Pattern::ring, Pattern::bisection, Pattern::hierarchical}) {
    options.seed = 11;
    const auto a = topologySchedule(pattern, layout, options);
    const auto b = topologySchedule(pattern, layout, options);
    EXPECT_EQ(a, b) << patternName(pattern);
    options.seed = 12;
    EXPECT_NE(a, topologySchedule(pattern, layout, options)) << patternName(pattern) << " ignores its seed";
  }
  // Fixed generator: the first ring of seed 5 on 6 ranks is the same on any build.
  const auto ring = ringSchedule(6, 1, 5);
  std::vector<int> order;
  for (const auto& p : ring[0]) order.push_back(p.initiator), order.push_back(p.responder);
  EXPECT_EQ(order.size(), 6u);
}

TEST(TopologySchedule, HierarchicalCoversEveryLeafPairAndSamplesBetween) {
  const auto layout = RankLayout::uniform(32, 4, 2, 2);  // leaves of 8 ranks, 2 pods of 2 leaves
  PatternOptions options;
  options.draws = 4;
  options.seed = 9;
  const auto schedule = hierarchicalSchedule(layout, options);
  expectEveryRankBusyAtMostOnce(schedule, 32);
  ASSERT_EQ(schedule.size(), 7u + 4u);  // all-pairs of 8 per leaf, then 4 draws
  const auto within = pairsOf(Schedule(schedule.begin(), schedule.begin() + 7));
  EXPECT_EQ(within.size(), 4u * 28u);
  for (const auto& [a, b] : within) EXPECT_EQ(a / 8, b / 8) << "first pass stays in a leaf";
  auto between = levelsOf(Schedule(schedule.begin() + 7, schedule.end()), layout);
  EXPECT_EQ(between.count(Level::sameNode) + between.count(Level::sameLeaf), 0u);
  EXPECT_GT(between[Level::samePod], 0) << "draws alternate within a pod";
  EXPECT_GT(between[Level::crossPod], 0) << "and across pods";
  options.groupByLeaf = false;
  const auto byNode = hierarchicalSchedule(layout, options);
  expectEveryRankBusyAtMostOnce(byNode, 32);
  EXPECT_EQ(byNode.size(), 3u + 4u);
}

TEST(TopologySchedule, UnfitLayoutsSayWhy) {
  PatternOptions options;
  const auto oneNode = RankLayout::uniform(8, 8);
  EXPECT_NE(patternUnfit(Pattern::rails, oneNode, options).find("one node"), std::string::npos);
  EXPECT_NE(patternUnfit(Pattern::hierarchical, oneNode, options).find("no leaf labels"), std::string::npos);
  EXPECT_NE(patternUnfit(Pattern::crossRail, RankLayout::uniform(8, 1), options).find("2 ranks per node"),
            std::string::npos);
  EXPECT_NE(patternUnfit(Pattern::bisection, RankLayout::uniform(3, 1), options), "");
  options.groupByLeaf = false;
  EXPECT_EQ(patternUnfit(Pattern::hierarchical, oneNode, options), "");
  EXPECT_EQ(patternUnfit(Pattern::rails, RankLayout::uniform(16, 8), options), "");
}

TEST(TopologySchedule, KeepRoundsIsASeededSubsetInOrder) {
  const auto all = allPairsParallelSchedule(16, false);
  const auto kept = keepRounds(all, 5, 3);
  ASSERT_EQ(kept.size(), 5u);
  std::size_t from = 0;
  for (const auto& round : kept) {
    const auto at = std::find(all.begin() + static_cast<long>(from), all.end(), round);
    ASSERT_NE(at, all.end()) << "a kept round is not one of the schedule's, in order";
    from = static_cast<std::size_t>(at - all.begin()) + 1;
  }
  EXPECT_EQ(kept, keepRounds(all, 5, 3));
  EXPECT_EQ(keepRounds(all, 99, 3), all);
}
