#include <gtest/gtest.h>

#include <set>

#include "kinds/Roles.hpp"
#include "runtime/Errors.hpp"

using namespace fabscope::suite;

namespace {
const std::vector<std::string> fourHostsTwoEach = {"h0", "h0", "h1", "h1", "h2", "h2", "h3", "h3"};
}

TEST(Roles, QuietOnlyTestsMeasureWithEveryRank) {
  const auto r = assignRoles({}, fourHostsTwoEach, 2, false, 1);
  EXPECT_EQ(r.canaries.size(), 8u);
  EXPECT_TRUE(r.congestors.empty());
}

TEST(Roles, CongestedTestsSplitHalfAndHalf) {
  const auto r = assignRoles({}, fourHostsTwoEach, 2, true, 1);
  EXPECT_EQ(r.canaries.size(), 4u);
  EXPECT_EQ(r.congestors.size(), 4u);
  std::set<int> all(r.canaries.begin(), r.canaries.end());
  all.insert(r.congestors.begin(), r.congestors.end());
  EXPECT_EQ(all.size(), 8u);
}

TEST(Roles, SpreadPutsConsecutiveCanariesOnDifferentHosts) {
  const auto r = assignRoles({0, 4, 0, "spread"}, fourHostsTwoEach, 2, true, 1);
  std::set<std::string> hosts;
  for (int c : r.canaries) hosts.insert(fourHostsTwoEach[static_cast<std::size_t>(c)]);
  EXPECT_EQ(hosts.size(), 4u);
}

TEST(Roles, PackedFillsHostsInOrder) {
  const auto r = assignRoles({0, 2, 0, "packed"}, fourHostsTwoEach, 2, true, 1);
  EXPECT_EQ(r.canaries, (std::vector<int>{0, 1}));  // both on h0
}

TEST(Roles, FractionAndRanksLimit) {
  const auto r = assignRoles({6, 0, 0.5, "packed"}, fourHostsTwoEach, 2, true, 1);
  EXPECT_EQ(r.canaries.size(), 3u);
  EXPECT_EQ(r.congestors.size(), 3u);  // ranks 6 and 7 are not used
}

TEST(Roles, RandomPlacementIsSeeded) {
  const RoleSpec spec{0, 4, 0, "random"};
  const auto a = assignRoles(spec, fourHostsTwoEach, 2, true, 42);
  EXPECT_EQ(a.canaries, assignRoles(spec, fourHostsTwoEach, 2, true, 42).canaries);
  bool differs = false;
  for (std::uint64_t seed = 1; seed < 20 && !differs; ++seed)
    differs = assignRoles(spec, fourHostsTwoEach, 2, true, seed).canaries != a.canaries;
  EXPECT_TRUE(differs);
}

TEST(Roles, TooFewCanariesIsAUsageError) {
  EXPECT_THROW(assignRoles({0, 1, 0, "spread"}, fourHostsTwoEach, 2, true, 1), fabscope::UsageError);
  EXPECT_THROW(assignRoles({0, 0, 0, "diagonal"}, fourHostsTwoEach, 2, true, 1), fabscope::UsageError);
}

// roles.groups: group g measures with the canaries at positions g x canaries.. of the
// placement's order; every other used rank makes load.
TEST(Roles, EachGroupOfARotationTakesTheNextCanariesInPlacementOrder) {
  RoleSpec packed{0, 2, 0, "packed"};
  std::set<int> seen;
  for (int g = 0; g < 4; ++g) {
    packed.group = g;
    const auto r = assignRoles(packed, fourHostsTwoEach, 2, true, 1);
    EXPECT_EQ(r.canaries, (std::vector<int>{2 * g, 2 * g + 1})) << "group " << g;
    EXPECT_EQ(r.congestors.size(), 6u);
    for (int c : r.congestors) EXPECT_FALSE(r.isCanary(c));
    seen.insert(r.canaries.begin(), r.canaries.end());
  }
  EXPECT_EQ(seen.size(), 8u);  // the rotation measures every rank once
  // spread: group 1 of 4 canaries is the second local rank of each host
  const auto spread = assignRoles({0, 4, 0, "spread", 1}, fourHostsTwoEach, 2, true, 1);
  EXPECT_EQ(spread.canaries, (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(spread.congestors, (std::vector<int>{0, 2, 4, 6}));
}

TEST(Roles, AGroupPastTheUsedRanksIsAUsageError) {
  EXPECT_THROW(assignRoles({0, 2, 0, "packed", 4}, fourHostsTwoEach, 2, true, 1), fabscope::UsageError);
  EXPECT_THROW(assignRoles({6, 2, 0, "packed", 3}, fourHostsTwoEach, 2, true, 1), fabscope::UsageError);
  EXPECT_THROW(assignRoles({0, 3, 0, "packed", -1}, fourHostsTwoEach, 2, true, 1), fabscope::UsageError);
  EXPECT_NO_THROW(assignRoles({6, 2, 0, "packed", 2}, fourHostsTwoEach, 2, true, 1));
}
