#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "stats/Statistics.hpp"

using namespace fabscope::stats;

TEST(Statistics, PercentilesMatchNumpyLinearInterpolation) {
  // numpy.percentile([1..10], [50, 99, 99.9]) = 5.5, 9.91, 9.991
  std::vector<double> v{10, 9, 8, 7, 6, 5, 4, 3, 2, 1};
  const auto s = summarize(v);
  EXPECT_EQ(s.count, 10u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.p50, 5.5);
  EXPECT_NEAR(s.p99, 9.91, 1e-12);
  EXPECT_NEAR(s.p999, 9.991, 1e-12);
}

TEST(Statistics, TailDominatedByOneOutlier) {
  std::vector<double> v(1000, 100.0);
  v[500] = 1e6;
  const auto s = summarize(v);
  EXPECT_DOUBLE_EQ(s.p50, 100);
  EXPECT_DOUBLE_EQ(s.p99, 100);
  EXPECT_GT(s.p999, 100);  // 99.9th percentile of 1000 values interpolates toward the outlier
  EXPECT_DOUBLE_EQ(s.max, 1e6);
}

TEST(Statistics, EmptyAndSingle) {
  std::vector<double> none;
  EXPECT_TRUE(std::isnan(summarize(none).p50));
  std::vector<double> one{42};
  const auto s = summarize(one);
  EXPECT_DOUBLE_EQ(s.p50, 42);
  EXPECT_DOUBLE_EQ(s.p999, 42);
}

TEST(Statistics, JainFairness) {
  std::vector<double> fair{5, 5, 5, 5};
  EXPECT_DOUBLE_EQ(jainFairness(fair), 1.0);
  std::vector<double> oneTakesAll{1, 0, 0, 0};
  EXPECT_DOUBLE_EQ(jainFairness(oneTakesAll), 0.25);
}
