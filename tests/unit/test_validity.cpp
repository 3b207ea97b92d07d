// Validity findings on made-up machines: oversubscription from
// affinity sets and machine identity (not hostnames), governors, load, clocks.
#include <gtest/gtest.h>

#include "validity/Validity.hpp"

using namespace fabscope::validity;

namespace {

RankFacts rank(int r, std::string host, std::string machine, std::vector<int> cpus, double load = 0.1, int online = 2) {
  RankFacts f;
  f.rank = r;
  f.host = std::move(host);
  f.machine = std::move(machine);
  f.cpus = std::move(cpus);
  f.onlineCpus = online;
  f.otherBusyCpus = load;
  f.governors.assign(f.cpus.size(), "");
  return f;
}

}  // namespace

TEST(Validity, TwoRanksOnTwoCpusAreNotOversubscribed) {
  const std::vector<RankFacts> ranks = {rank(0, "a", "m", {0, 1}), rank(1, "a", "m", {0, 1})};
  EXPECT_TRUE(oversubscription(ranks).empty());
  EXPECT_FALSE(waitsMustYield(atStart(ranks)));
}

TEST(Validity, NamespaceHostsOnOneMachineShareItsCpus) {
  // Six emulated hosts (network namespaces), one rank each, one 2-CPU machine:
  // every hostname differs, the machine is the same.
  std::vector<RankFacts> ranks;
  for (int r = 0; r < 6; ++r) ranks.push_back(rank(r, "fv" + std::to_string(r), "m", {0, 1}));
  const auto found = oversubscription(ranks);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].host, "*");  // every host of the run
  EXPECT_EQ(found[0].what, "oversubscribed");
  EXPECT_EQ(found[0].value, 6);
  EXPECT_EQ(found[0].limit, 2);
  EXPECT_TRUE(waitsMustYield(found));
}

TEST(Validity, SeparateMachinesAreJudgedApart) {
  // Same hostname-free story, but on two machines of 2 CPUs: 2 + 3 ranks.
  const std::vector<RankFacts> ranks = {rank(0, "a", "m1", {0, 1}), rank(1, "b", "m1", {0, 1}),
                                        rank(2, "c", "m2", {0, 1}), rank(3, "d", "m2", {0, 1}),
                                        rank(4, "e", "m2", {0, 1})};
  const auto found = oversubscription(ranks);
  ASSERT_EQ(found.size(), 3u);  // one row per host of the oversubscribed machine
  for (const auto& f : found) {
    EXPECT_TRUE(f.host == "c" || f.host == "d" || f.host == "e") << f.host;
    EXPECT_EQ(f.value, 3);
    EXPECT_EQ(f.limit, 2);
  }
}

TEST(Validity, PinnedRanksCountAgainstTheirOwnCpus) {
  // 4 CPUs, 4 ranks: enough in total, but three are pinned to CPU 0.
  const std::vector<RankFacts> ranks = {rank(0, "a", "m", {0}), rank(1, "a", "m", {0}), rank(2, "a", "m", {0}),
                                        rank(3, "a", "m", {1, 2, 3})};
  const auto found = oversubscription(ranks);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].value, 3);
  EXPECT_EQ(found[0].limit, 1);
  // Each on its own CPU: fine.
  const std::vector<RankFacts> apart = {rank(0, "a", "m", {0}), rank(1, "a", "m", {1}), rank(2, "a", "m", {2})};
  EXPECT_TRUE(oversubscription(apart).empty());
}

TEST(Validity, UnreadableAffinityJudgesNothing) {
  const std::vector<RankFacts> ranks = {rank(0, "a", "m", {}), rank(1, "a", "m", {})};
  EXPECT_TRUE(oversubscription(ranks).empty());
}

TEST(Validity, GovernorOtherThanPerformance) {
  auto a = rank(0, "a", "m1", {0, 1});
  a.governors = {"performance", "powersave"};
  auto b = rank(1, "b", "m2", {0, 1});
  b.governors = {"performance", "performance"};
  auto c = rank(2, "c", "m3", {0});  // no cpufreq: unreadable, nothing said
  const auto found = governors({a, b, c});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].host, "a");
  EXPECT_EQ(found[0].what, "cpu_governor");
  EXPECT_EQ(found[0].value, 1);
  EXPECT_NE(found[0].effect.find("powersave"), std::string::npos);
}

TEST(Validity, BusyMachineAtStart) {
  // One rank on each 2-CPU machine leaves 1 CPU free: other work on 1.6 CPUs is a
  // finding, on 0.3 is not.
  const auto found = busyMachines({rank(0, "a", "m1", {0, 1}, 1.6, 2), rank(1, "b", "m2", {0, 1}, 0.3, 2)});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].host, "a");
  EXPECT_EQ(found[0].value, 1.6);
  EXPECT_EQ(found[0].limit, 1);
  // Two ranks on 2 CPUs leave none: more than half a CPU of others' work is a finding.
  EXPECT_EQ(busyMachines({rank(0, "a", "m", {0, 1}, 0.7, 2), rank(1, "a", "m", {0, 1}, 0.9, 2)}).size(), 1u);
  // The lowest reading of a machine counts (a rank's own wake-up adds to its reading).
  EXPECT_TRUE(busyMachines({rank(0, "a", "m", {0, 1}, 0.2, 2), rank(1, "a", "m", {0, 1}, 0.9, 2)}).empty());
  EXPECT_TRUE(busyMachines({rank(0, "a", "m1", {0}, -1, 2)}).empty());  // unreadable
}

TEST(Validity, ClockUncertaintyAgainstTheSmallestLatency) {
  // About one latency is the ping-pong method's own floor: not a finding.
  EXPECT_TRUE(clockSync(12'000, 10'000).empty());
  const auto found = clockSync(25'000, 10'000);  // a disturbed sync
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].host, "*");
  EXPECT_EQ(found[0].limit, 20'000);
  EXPECT_TRUE(clockSync(25'000, 0).empty());  // no latency measured
}

TEST(Validity, FactsSurviveTheWire) {
  auto f = rank(3, "fv3", "id/boot", {0, 2, 5}, 1.25, 8);
  f.governors = {"performance", "", "powersave"};
  const auto back = decode(encode(f));
  EXPECT_EQ(back.rank, 3);
  EXPECT_EQ(back.host, "fv3");
  EXPECT_EQ(back.machine, "id/boot");
  EXPECT_EQ(back.cpus, f.cpus);
  EXPECT_EQ(back.onlineCpus, 8);
  EXPECT_DOUBLE_EQ(back.otherBusyCpus, 1.25);
  EXPECT_EQ(back.governors, f.governors);
  EXPECT_THROW(decode("1\t2"), std::runtime_error);
}

TEST(Validity, ThisProcessHasFacts) {
  const auto f = readFacts(0, "here", 0.05);
  EXPECT_FALSE(f.cpus.empty());
  EXPECT_GT(f.onlineCpus, 0);
  EXPECT_NE(f.machine, "/");
  // measured from /proc/stat: between no CPU and all of them
  EXPECT_GE(f.otherBusyCpus, 0);
  EXPECT_LE(f.otherBusyCpus, f.onlineCpus);
}
