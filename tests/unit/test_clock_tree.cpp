// The clock synchronisation tree: a binomial tree over the
// ranks, so synchronising N ranks takes ceil(log2 N) steps, not N - 1 serial
// ping-pongs at rank 0; and offsets composed down the tree stay within the
// composed uncertainty. Also the /proc/self/status reading behind
// FABSCOPE_REPORT_MEMORY.
#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <set>

#include "runtime/ClockSync.hpp"
#include "runtime/MemoryUse.hpp"

using namespace fabscope::runtime;

namespace {

// The step in which `rank` is synchronised by its parent (-1 for rank 0).
int stepOf(int rank) { return rank == 0 ? -1 : static_cast<int>(std::bit_width(static_cast<unsigned>(rank))) - 1; }

}  // namespace

TEST(ClockTree, EveryRankHasOneParentThatListsIt) {
  for (int size : {1, 2, 3, 4, 7, 8, 64, 100, 257, 16384}) {
    std::map<int, int> parentOf;
    for (int r = 0; r < size; ++r)
      for (int c : clockTreeChildren(r, size)) {
        ASSERT_LT(c, size);
        ASSERT_TRUE(parentOf.emplace(c, r).second) << "rank " << c << " has two parents at size " << size;
      }
    EXPECT_EQ(parentOf.size(), static_cast<std::size_t>(size - 1)) << size;
    EXPECT_EQ(clockTreeParent(0), -1);
    for (const auto& [child, parent] : parentOf) EXPECT_EQ(clockTreeParent(child), parent) << child;
  }
}

TEST(ClockTree, LogarithmicStepsAndEveryRankInAtMostOnePairPerStep) {
  for (int size : {2, 3, 5, 8, 64, 100, 256, 16384}) {
    const int steps = clockTreeSteps(size);
    EXPECT_EQ(steps, static_cast<int>(std::bit_width(static_cast<unsigned>(size - 1)))) << size;
    EXPECT_LE(1 << (steps - 1), size - 1);
    std::map<int, std::set<int>> busy;  // step -> ranks in a pair
    for (int r = 0; r < size; ++r) {
      int previous = stepOf(r);
      for (int c : clockTreeChildren(r, size)) {
        const int step = stepOf(c);
        // The parent is on rank 0's clock before it synchronises anyone, and
        // synchronises its children in step order.
        EXPECT_GT(step, previous) << r << "->" << c;
        EXPECT_LT(step, steps);
        previous = step;
        EXPECT_TRUE(busy[step].insert(r).second) << "rank " << r << " twice in step " << step;
        EXPECT_TRUE(busy[step].insert(c).second) << "rank " << c << " twice in step " << step;
      }
    }
    // Depth of a rank = its set bits: at most `steps` hops from rank 0.
    for (int r = 1; r < size; ++r) {
      int hops = 0;
      for (int x = r; x != 0; x = clockTreeParent(x)) ++hops;
      EXPECT_EQ(hops, std::popcount(static_cast<unsigned>(r)));
      EXPECT_LE(hops, steps);
    }
  }
}

TEST(ClockTree, ComposedOffsetsStayWithinTheComposedUncertainty) {
  // Made-up clocks: rank r runs trueOffset[r] ahead of rank 0. Each hop's
  // measurement errs by up to its half round trip (the midpoint estimate's
  // bound); the composed error must stay within the summed bound.
  const int size = 256;
  std::vector<Nanoseconds> trueOffset(size), halfRtt(size);
  std::vector<ClockOffset> composed(size);
  for (int r = 0; r < size; ++r) {
    trueOffset[r] = r == 0 ? 0 : 1'000'003 * (r % 17) - 7'777 * r;
    halfRtt[r] = 500 + 37 * (r % 11);
  }
  for (int r = 1; r < size; ++r) {
    const int p = clockTreeParent(r);
    ASSERT_LT(p, r);                                     // composed before its children
    const Nanoseconds error = (r % 3 - 1) * halfRtt[r];  // -bound, 0 or +bound
    composed[r] = composeOffset(composed[p], trueOffset[r] - trueOffset[p] + error, halfRtt[r]);
  }
  Nanoseconds worst = 0;
  for (int r = 1; r < size; ++r) {
    EXPECT_LE(std::abs(composed[r].offset - trueOffset[r]), composed[r].uncertainty) << r;
    worst = std::max(worst, composed[r].uncertainty);
  }
  EXPECT_LE(worst, clockTreeSteps(size) * Nanoseconds{500 + 37 * 10});
  EXPECT_EQ(composed[1].uncertainty, halfRtt[1]);  // one hop: the plain midpoint bound
}

TEST(MemoryUse, ReadsTheKernelsSplitOfTheResidentSet) {
  const auto use = parseProcStatus(
      "Name:\tfabscope\nVmHWM:\t  133000 kB\nVmRSS:\t  120000 kB\nRssAnon:\t   40000 kB\n"
      "RssFile:\t   30000 kB\nRssShmem:\t   50000 kB\nThreads:\t4\n");
  EXPECT_EQ(use.rssAnonBytes, 40000 * 1024);
  EXPECT_EQ(use.rssShmemBytes, 50000 * 1024);
  EXPECT_EQ(use.rssFileBytes, 30000 * 1024);
  EXPECT_EQ(use.vmHwmBytes, 133000 * 1024);
  EXPECT_EQ(parseProcStatus("RssAnonymous: 5 kB\nRssAnon:\n").rssAnonBytes, 0);  // not the line, no number
  EXPECT_GT(currentMemoryUse().rssAnonBytes, 0);                                 // this test's own process
}
