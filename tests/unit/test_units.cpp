#include <gtest/gtest.h>

#include <stdexcept>

#include "scenario/Units.hpp"

using namespace fabscope::scenario;

TEST(SizeParser, PlainAndBinaryUnits) {
  EXPECT_EQ(parseSize("8"), 8);
  EXPECT_EQ(parseSize("4KiB"), 4096);
  EXPECT_EQ(parseSize("1MiB"), 1 << 20);
  EXPECT_EQ(parseSize(" 1 GiB "), 1ll << 30);
}

TEST(SizeParser, DecimalUnitsAndBytes) {
  EXPECT_EQ(parseSize("4kB"), 4000);
  EXPECT_EQ(parseSize("1MB"), 1000000);
  EXPECT_EQ(parseSize("512B"), 512);
  EXPECT_EQ(parseSize("1.5KiB"), 1536);
}

TEST(SizeParser, RejectsImpossibleSizes) {
  EXPECT_THROW(parseSize("0"), std::invalid_argument);
  EXPECT_THROW(parseSize("-8"), std::invalid_argument);
  EXPECT_THROW(parseSize("4XB"), std::invalid_argument);
  EXPECT_THROW(parseSize("KiB"), std::invalid_argument);
  EXPECT_THROW(parseSize("0.5"), std::invalid_argument);
  EXPECT_THROW(parseSize("2GiB"), std::invalid_argument);  // beyond the 1 GiB message limit
  EXPECT_THROW(parseSize(""), std::invalid_argument);
}

TEST(SizeParser, GeometricRanges) {
  EXPECT_EQ(parseSizeList("8..64 x2"), (std::vector<std::int64_t>{8, 16, 32, 64}));
  EXPECT_EQ(parseSizeList("8..4MiB x2").size(), 20u);
  EXPECT_EQ(parseSizeList("8..4MiB x2").back(), 4 << 20);
  EXPECT_EQ(parseSizeList("1KiB..1MiB x4"), (std::vector<std::int64_t>{1024, 4096, 16384, 65536, 262144, 1048576}));
  EXPECT_EQ(parseSizeList("8..32"), (std::vector<std::int64_t>{8, 16, 32}));
  EXPECT_EQ(parseSizeList("4KiB"), (std::vector<std::int64_t>{4096}));
}

TEST(SizeParser, RejectsBadRanges) {
  EXPECT_THROW(parseSizeList("64..8"), std::invalid_argument);
  EXPECT_THROW(parseSizeList("8..64 x1"), std::invalid_argument);
  EXPECT_THROW(parseSizeList("8..64 x1.5"), std::invalid_argument);
  EXPECT_THROW(parseSizeList("0..64"), std::invalid_argument);
}

TEST(DurationParser, Units) {
  EXPECT_DOUBLE_EQ(parseDurationSeconds("30s"), 30);
  EXPECT_DOUBLE_EQ(parseDurationSeconds("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(parseDurationSeconds("2m"), 120);
  EXPECT_DOUBLE_EQ(parseDurationSeconds("10"), 10);
  EXPECT_THROW(parseDurationSeconds("0s"), std::invalid_argument);
  EXPECT_THROW(parseDurationSeconds("5 days"), std::invalid_argument);
}

TEST(SizeFormat, PrefersExactBinaryUnits) {
  EXPECT_EQ(formatSize(8), "8B");
  EXPECT_EQ(formatSize(4096), "4KiB");
  EXPECT_EQ(formatSize(1536), "1536B");
  EXPECT_EQ(formatSize(3 << 20), "3MiB");
}
