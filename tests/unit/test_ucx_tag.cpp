// The UCX tag layout: the sender's rank is part of the tag and receives use a
// full mask, so messages of different ranks, tags or epochs never cross-match.
#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "transport/UcxTag.hpp"

namespace tag = fabscope::transport::ucx_tag;

TEST(UcxTag, RoundTripsEachField) {
  const auto t = tag::pack(7, 123456, 0xdeadbeefu);
  EXPECT_EQ(tag::epochOf(t), 7u);
  EXPECT_EQ(tag::sourceOf(t), 123456u);
  EXPECT_EQ(tag::userTagOf(t), 0xdeadbeefu);
}

TEST(UcxTag, LargestValuesStayInTheirFields) {
  const auto t = tag::pack(255, static_cast<std::uint32_t>(tag::maxSourceRank), 0xffffffffu);
  EXPECT_EQ(t, ~std::uint64_t{0});
  EXPECT_EQ(tag::epochOf(t), 255u);
  EXPECT_EQ(tag::sourceOf(t), tag::maxSourceRank);
  // A user tag of all ones must not leak into the source field.
  EXPECT_EQ(tag::sourceOf(tag::pack(0, 0, 0xffffffffu)), 0u);
  EXPECT_EQ(tag::epochOf(tag::pack(0, static_cast<std::uint32_t>(tag::maxSourceRank), 0)), 0u);
}

TEST(UcxTag, EpochWrapsInsteadOfSpillingIntoTheRank) {
  EXPECT_EQ(tag::pack(256, 5, 1), tag::pack(0, 5, 1));
  EXPECT_EQ(tag::sourceOf(tag::pack(257, 5, 1)), 5u);
}

TEST(UcxTag, DistinctRanksTagsAndEpochsNeverCrossMatch) {
  // With a full mask a receive matches only an identical tag: every
  // (epoch, rank, tag) triple must give a distinct value.
  std::set<std::uint64_t> seen;
  for (std::uint32_t e = 0; e < 3; ++e)
    for (std::uint32_t r = 0; r < 64; ++r)
      for (std::uint32_t u : {0u, 1u, 2u, 0x7fffffffu, 0xffffffffu})
        EXPECT_TRUE(seen.insert(tag::pack(e, r, u)).second) << e << " " << r << " " << u;
  EXPECT_EQ(tag::fullMask, ~std::uint64_t{0});
}

TEST(UcxTag, NegativeUserTagsKeepTheirBits) {
  const int userTag = -2;
  const auto t = tag::pack(1, 3, static_cast<std::uint32_t>(userTag));
  EXPECT_EQ(static_cast<int>(tag::userTagOf(t)), -2);
  EXPECT_EQ(tag::sourceOf(t), 3u);
}
