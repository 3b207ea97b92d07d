// Site scopes: samples inside a site and between sites are never summarised together.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "driver/ScopedStatistics.hpp"
#include "driver/SummaryTable.hpp"
#include "stats/SiteScopes.hpp"

using namespace fabscope;
using stats::ScopedSample;
using stats::SiteScopes;

namespace {

// Ranks 0,1 in site A, 2,3 in site B; every pair of ranks (all-pairs), one
// sample each: inside a site 1000 ns, between sites 50000 ns.
std::vector<ScopedSample> allPairs(const std::vector<std::string>& sites) {
  std::vector<ScopedSample> out;
  for (int r = 0; r < 4; ++r)
    for (int p = 0; p < 4; ++p)
      if (r != p) {
        const double ns = sites[r] == sites[p] ? 1000 + r : 50000 + r;
        out.push_back({r, p, ns, ns, 4096});
      }
  return out;
}

std::string printed(const std::vector<driver::InstanceResult>& results) {
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  driver::printSummaryTable(out, results);
  std::fclose(out);
  std::string text(buffer, size);
  std::free(buffer);
  return text;
}

}  // namespace

TEST(SiteScopes, PairsSplitIntoSitesAndInterSite) {
  const std::vector<std::string> sites = {"A", "A", "B", "B"};
  const std::vector<int> group = {0, 1, 2, 3};
  SiteScopes scopes(sites, group);
  ASSERT_TRUE(scopes.labelled());
  const auto samples = allPairs(sites);
  const auto summary = stats::summarizeByScope(scopes, samples);
  ASSERT_EQ(summary.size(), 3u);
  EXPECT_EQ(summary[0].scope.name, "site=A");
  EXPECT_EQ(summary[1].scope.name, "site=B");
  EXPECT_EQ(summary[2].scope.name, "inter-site A<->B");
  EXPECT_FALSE(summary[0].scope.crossesSites);
  EXPECT_TRUE(summary[2].scope.crossesSites);
  EXPECT_EQ(summary[2].scope.sites, "A,B");
  // Both directions of a pair are one scope: 0->2 and 2->0 alike.
  EXPECT_EQ(scopes.indexOf(0, 2), scopes.indexOf(2, 0));
  EXPECT_EQ(summary[0].latency.count, 2u);  // 0->1, 1->0
  EXPECT_EQ(summary[1].latency.count, 2u);
  EXPECT_EQ(summary[2].latency.count, 8u);
  // No WAN sample leaks into a site's tail, and no site sample into the WAN's.
  EXPECT_LT(summary[0].latency.max, 2000);
  EXPECT_LT(summary[1].latency.max, 2000);
  EXPECT_GT(summary[2].latency.min, 40000);
  EXPECT_DOUBLE_EQ(summary[0].bytesPerSample, 4096);
  EXPECT_NEAR(summary[2].gbpsMean, 8 * 4096.0 / (8 * 50000 + 2 * (0 + 1 + 2 + 3)), 1e-12);
}

TEST(SiteScopes, WithoutLabelsOneUnnamedScopeOverEverything) {
  const std::vector<std::string> sites(4, "");
  const std::vector<int> group = {0, 1, 2, 3};
  SiteScopes scopes(sites, group);
  EXPECT_FALSE(scopes.labelled());
  const auto samples = allPairs({"A", "A", "B", "B"});
  const auto summary = stats::summarizeByScope(scopes, samples);
  ASSERT_EQ(summary.size(), 1u);
  EXPECT_EQ(summary[0].scope.name, "");
  EXPECT_EQ(summary[0].latency.count, samples.size());
  std::vector<double> all;
  for (const auto& s : samples) all.push_back(s.value);
  const auto expected = stats::summarize(all);
  EXPECT_DOUBLE_EQ(summary[0].latency.p99, expected.p99);
  // No samples at all: still the one scope, empty.
  const auto empty = stats::summarizeByScope(scopes, std::span<const ScopedSample>{});
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].latency.count, 0u);
}

TEST(SiteScopes, UnknownSiteNeverJoinsAKnownOne) {
  const std::vector<std::string> sites = {"A", "", "A", ""};
  const std::vector<int> group = {0, 1, 2, 3};
  SiteScopes scopes(sites, group);
  const auto& all = scopes.scopes();
  EXPECT_EQ(all[scopes.indexOf(0, 2)].name, "site=A");
  EXPECT_EQ(all[scopes.indexOf(1, 3)].name, "site=?");
  EXPECT_EQ(all[scopes.indexOf(0, 1)].name, "inter-site ?<->A");
  EXPECT_TRUE(all[scopes.indexOf(1, 0)].crossesSites);
}

TEST(SiteScopes, CollectiveSamplesTakeTheGroupsScope) {
  const std::vector<std::string> sites = {"A", "A", "B", "B"};
  const std::vector<int> inside = {0, 1};
  SiteScopes one(sites, inside);
  EXPECT_EQ(one.scopes()[one.indexOf(0, -1)].name, "group site=A");
  EXPECT_FALSE(one.scopes()[one.indexOf(1, -1)].crossesSites);
  const std::vector<int> across = {0, 1, 2, 3};
  SiteScopes wan(sites, across);
  const auto& scope = wan.scopes()[wan.indexOf(3, -1)];
  EXPECT_EQ(scope.name, "group across A,B");
  EXPECT_TRUE(scope.crossesSites);
  EXPECT_EQ(wan.scopes().size(), 1u);  // every rank's collective samples: the one group scope
}

TEST(ScopedStatistics, HeadlineIsTheOneScopeOrNotANumber) {
  const std::vector<int> group = {0, 1, 2, 3};
  const auto samples = allPairs({"A", "A", "B", "B"});
  driver::InstanceResult split;
  SiteScopes labelled({"A", "A", "B", "B"}, group);
  driver::summarizeInstance(split, samples, labelled);
  EXPECT_TRUE(split.labelled);
  ASSERT_EQ(split.scopes.size(), 3u);
  EXPECT_TRUE(std::isnan(split.latency.p50));
  EXPECT_EQ(split.latency.count, samples.size());
  driver::InstanceResult whole;
  SiteScopes unlabelled({"", "", "", ""}, group);
  driver::summarizeInstance(whole, samples, unlabelled);
  ASSERT_EQ(whole.scopes.size(), 1u);
  EXPECT_FALSE(whole.labelled);
  EXPECT_DOUBLE_EQ(whole.latency.p50, whole.scopes[0].summary.latency.p50);
  // One site only: named, and the headline is that site's numbers.
  driver::InstanceResult single;
  SiteScopes oneSite({"A", "A", "A", "A"}, group);
  driver::summarizeInstance(single, samples, oneSite);
  ASSERT_EQ(single.scopes.size(), 1u);
  EXPECT_EQ(single.scopes[0].summary.scope.name, "site=A");
  EXPECT_DOUBLE_EQ(single.latency.p99, single.scopes[0].summary.latency.p99);
}

TEST(ScopedStatistics, ImpactComparesTheSameScope) {
  const std::vector<int> group = {0, 1, 2, 3};
  const std::vector<std::string> sites = {"A", "A", "B", "B"};
  auto quietSamples = allPairs(sites);
  auto congestedSamples = quietSamples;
  for (auto& s : congestedSamples)
    if (sites[s.rank] == "A" && sites[s.peer] == "A") s.value *= 3, s.duration *= 3;  // only site A suffers
  driver::InstanceResult quiet, congested;
  SiteScopes q(sites, group), c(sites, group);
  driver::summarizeInstance(quiet, quietSamples, q);
  driver::summarizeInstance(congested, congestedSamples, c);
  ASSERT_TRUE(driver::compareWithQuiet(congested, quiet));
  EXPECT_NEAR(congested.scopes[0].impactP99, 3.0, 1e-9);  // site=A
  EXPECT_NEAR(congested.scopes[1].impactP99, 1.0, 1e-9);  // site=B
  EXPECT_NEAR(congested.scopes[2].impactP99, 1.0, 1e-9);  // inter-site
  EXPECT_EQ(congested.impactP99, 0);                      // no headline impact over several scopes
  const auto rows = driver::scopeRows(congested);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_STREQ(rows[2].scope, "inter-site A<->B");
  EXPECT_EQ(rows[2].crosses_sites, 1);
  EXPECT_EQ(rows[2].samples, 8);
  EXPECT_NEAR(rows[0].impact_p99, 3.0, 1e-9);
  EXPECT_NEAR(rows[0].impact_mean, 3.0, 1e-9);
  EXPECT_NEAR(rows[1].impact_mean, 1.0, 1e-9);
  EXPECT_TRUE(std::isnan(rows[0].gbps_p50));  // a latency test
  EXPECT_EQ(driver::scopeList(congested), "site=A;site=B;inter-site A<->B");
  // docs/file-format.md: a scope row's impact is NaN unless it was compared with the
  // quiet instance's same scope; the quiet instance's own rows say so, not "0x".
  for (const auto& row : driver::scopeRows(quiet)) {
    EXPECT_TRUE(std::isnan(row.impact_mean)) << row.scope;
    EXPECT_TRUE(std::isnan(row.impact_p99)) << row.scope;
  }
}

TEST(ScopedStatistics, RankSummaryRowsOnePerScope) {
  const std::vector<std::string> sites = {"A", "A", "B", "B"};
  const std::vector<int> group = {0, 1, 2, 3};
  std::vector<ScopedSample> mine;
  for (const auto& s : allPairs(sites))
    if (s.rank == 0) mine.push_back(s);
  SiteScopes scopes(sites, group);
  const auto rows = driver::rankSummaryRows(0, mine, scopes, false);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_STREQ(rows[0].scope, "site=A");
  EXPECT_EQ(rows[0].samples, 1);
  EXPECT_STREQ(rows[1].scope, "inter-site A<->B");
  EXPECT_EQ(rows[1].samples, 2);
  EXPECT_GT(rows[1].p50_ns, 40000);
}

TEST(SummaryTable, OneRowPerScopeWithLabelsAndTheOldTableWithout) {
  const std::vector<int> group = {0, 1, 2, 3};
  const auto samples = allPairs({"A", "A", "B", "B"});
  driver::InstanceResult r;
  r.index = 0, r.name = "lat", r.kind = "latency", r.condition = "quiet", r.pattern = "all-pairs", r.pass = "parallel",
  r.status = "passed", r.bytes = 8;
  SiteScopes labelled({"A", "A", "B", "B"}, group);
  driver::summarizeInstance(r, samples, labelled);
  const auto text = printed({r});
  EXPECT_NE(text.find("scope"), std::string::npos);
  EXPECT_NE(text.find("site=A "), std::string::npos);
  EXPECT_NE(text.find("site=B "), std::string::npos);
  EXPECT_NE(text.find("inter-site A<->B"), std::string::npos);
  EXPECT_NE(text.find("50.00 us"), std::string::npos);  // the WAN row's own tail
  EXPECT_EQ(text.find(" nan"), std::string::npos);

  driver::InstanceResult plain = r;
  SiteScopes unlabelled({"", "", "", ""}, group);
  driver::summarizeInstance(plain, samples, unlabelled);
  const auto old = printed({plain});
  EXPECT_EQ(old.find("scope"), std::string::npos);
  EXPECT_EQ(old.find("site="), std::string::npos);
  EXPECT_EQ(std::count(old.begin(), old.end(), '\n'), 5);  // blank, header, one row, blank, legend
}
