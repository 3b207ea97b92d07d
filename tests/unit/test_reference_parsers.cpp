// Parsers of reference tools' outputs (kind: reference, issue 21 item 5), on
// outputs recorded from real runs here (tests/data/reference/*/README.md).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "kinds/reference/UcxPerftestOutput.hpp"

using namespace fabscope::suite;

namespace {

std::string recorded(const std::string& name) {
  std::ifstream in(std::string(FABSCOPE_TEST_DATA_DIR) + "/reference/ucx_perftest/" + name);
  EXPECT_TRUE(in) << name;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string errorOf(const std::string& output) {
  try {
    parseUcxPerftestOutput(output);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST(UcxPerftestOutput, LatencyRunsOverSharedMemoryAndTcp) {
  const auto shm = parseUcxPerftestOutput(recorded("tag_lat-shm.txt"));
  EXPECT_EQ(shm.timeMeaning, "latency");
  EXPECT_EQ(shm.iterations, 10000);
  EXPECT_DOUBLE_EQ(shm.timeMedianUs, 0.366);
  EXPECT_DOUBLE_EQ(shm.timeOverallUs, 26.743);
  EXPECT_DOUBLE_EQ(shm.messageRateOverall, 37393);
  const auto tcp = parseUcxPerftestOutput(recorded("tag_lat-tcp.txt"));
  EXPECT_EQ(tcp.iterations, 5000);
  EXPECT_DOUBLE_EQ(tcp.timeMedianUs, 3.751);
}

TEST(UcxPerftestOutput, BandwidthRunsReportOverheadAndMiBps) {
  const auto shm = parseUcxPerftestOutput(recorded("tag_bw-shm.txt"));
  EXPECT_EQ(shm.timeMeaning, "overhead");
  EXPECT_EQ(shm.iterations, 200);
  EXPECT_DOUBLE_EQ(shm.bandwidthOverallMiBps, 3040.57);
  EXPECT_DOUBLE_EQ(shm.bandwidthAverageMiBps, 3040.57);
  const auto tcp = parseUcxPerftestOutput(recorded("tag_bw-tcp.txt"));
  EXPECT_DOUBLE_EQ(tcp.bandwidthOverallMiBps, 197.62);
  EXPECT_DOUBLE_EQ(tcp.timeAverageUs, 5060.27);
}

TEST(UcxPerftestOutput, TruncatedOrGarbledOutputNamesTheLine) {
  std::string text = recorded("tag_lat-shm.txt");
  const auto final = text.find("Final:");
  ASSERT_NE(final, std::string::npos);
  EXPECT_NE(errorOf(text.substr(0, final)).find("no 'Final:' line"), std::string::npos);
  EXPECT_NE(errorOf(text.substr(0, final) + "Final: 10 0.3 x 1 2 3 4 5\n").find("'x' is not a number"), std::string::npos);
  EXPECT_NE(errorOf(text.substr(0, final) + "Final: 10 0.3\n").find("expected 8 numbers after 'Final:', found 2"),
            std::string::npos);
  EXPECT_NE(errorOf("Final: 1 2 3 4 5 6 7 8\n").find("line 1: 'Final:' before a header"), std::string::npos);
}

TEST(UcxPerftestOutput, UcxInfoVersion) {
  EXPECT_EQ(parseUcxInfoVersion(recorded("ucx_info-v.txt")), "1.13.1");
  EXPECT_EQ(parseUcxInfoVersion("nothing\n"), "");
}
