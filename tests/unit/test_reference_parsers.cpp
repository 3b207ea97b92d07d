// Parsers of reference tools' outputs (kind: reference), on
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
  EXPECT_NE(errorOf(text.substr(0, final) + "Final: 10 0.3 x 1 2 3 4 5\n").find("'x' is not a number"),
            std::string::npos);
  EXPECT_NE(errorOf(text.substr(0, final) + "Final: 10 0.3\n").find("expected 8 numbers after 'Final:', found 2"),
            std::string::npos);
  EXPECT_NE(errorOf("Final: 1 2 3 4 5 6 7 8\n").find("line 1: 'Final:' before a header"), std::string::npos);
}

TEST(UcxPerftestOutput, UcxInfoVersion) {
  EXPECT_EQ(parseUcxInfoVersion(recorded("ucx_info-v.txt")), "1.13.1");
  EXPECT_EQ(parseUcxInfoVersion("nothing\n"), "");
}

// -- OSU, perftest, nccl-tests: the plug-ins' parsers ---------------------------------------

#include <yaml-cpp/yaml.h>

#include <cmath>

#include "kinds/reference/ReferenceTool.hpp"

namespace ref = fabscope::suite::reference;

namespace {

std::string dataFile(const std::string& path) {
  std::ifstream in(std::string(FABSCOPE_TEST_DATA_DIR) + "/reference/" + path);
  EXPECT_TRUE(in) << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

template <typename Parse>
std::string parseError(Parse parse) {
  try {
    parse();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST(OsuOutput, LatencyRecordedWithOmb74AndOmb53) {
  const auto one = ref::parseOsuOutput(dataFile("osu/osu_latency-8.txt"), 8);
  EXPECT_EQ(one.timeMeaning, "latency");
  EXPECT_EQ(one.version, "7.4");
  EXPECT_DOUBLE_EQ(one.averageUs, 58.46);
  EXPECT_TRUE(std::isnan(one.medianUs));  // no -z: no P50 column
  EXPECT_TRUE(std::isnan(one.gbps));
  // -z: the P50 column beside the average, the row of the instance's size among 13.
  const auto tail = ref::parseOsuOutput(dataFile("osu/osu_latency-z-1-4096.txt"), 2048);
  EXPECT_DOUBLE_EQ(tail.averageUs, 64.00);
  EXPECT_DOUBLE_EQ(tail.medianUs, 0.97);
  const auto old = ref::parseOsuOutput(dataFile("osu/osu_latency-5.3.txt"), 8);
  EXPECT_EQ(old.version, "5.3");
  EXPECT_DOUBLE_EQ(old.averageUs, 210.38);
}

TEST(OsuOutput, BandwidthInMegabytesOfTenToTheSix) {
  const auto bw = ref::parseOsuOutput(dataFile("osu/osu_bw-1MiB.txt"), 1 << 20);
  EXPECT_EQ(bw.timeMeaning, "");
  EXPECT_DOUBLE_EQ(bw.gbps, 1166.71 / 1e3);
  EXPECT_DOUBLE_EQ(ref::parseOsuOutput(dataFile("osu/osu_bw-1-4MiB.txt"), 4096).gbps, 11.01 / 1e3);
  EXPECT_DOUBLE_EQ(ref::parseOsuOutput(dataFile("osu/osu_bw-z-64KiB.txt"), 65536).gbps, 885.06 / 1e3);
  EXPECT_DOUBLE_EQ(ref::parseOsuOutput(dataFile("osu/osu_bw-5.3.txt"), 1 << 20).gbps, 1648.80 / 1e3);
  // The tool checks the table is its own: osu_latency's parser refuses osu_bw's output.
  const auto& latency = ref::referenceTool("osu_latency");
  EXPECT_NE(parseError([&] { latency.parse(dataFile("osu/osu_bw-1MiB.txt"), 1 << 20); }).find("not osu_latency's"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(ref::referenceTool("osu_bw").parse(dataFile("osu/osu_bw-1MiB.txt"), 1 << 20).gbps, 1.16671);
}

TEST(OsuOutput, MissingRowsAndGarbleNameTheLine) {
  const std::string text = dataFile("osu/osu_latency-8.txt");
  EXPECT_NE(parseError([&] { ref::parseOsuOutput(text, 64); }).find("the table (line 4) has no row for 64 bytes"),
            std::string::npos)
      << parseError([&] { ref::parseOsuOutput(text, 64); });
  EXPECT_NE(
      parseError([&] { ref::parseOsuOutput("mpirun: not enough slots\n", 8); }).find("no '# Size' header in 1 lines"),
      std::string::npos);
  std::string garbled = text;
  garbled.replace(garbled.find("58.46"), 5, "58.4x");
  EXPECT_NE(parseError([&] { ref::parseOsuOutput(garbled, 8); }).find("OSU output line 5: '58.4x' is not a number"),
            std::string::npos)
      << parseError([&] { ref::parseOsuOutput(garbled, 8); });
}

TEST(PerftestOutput, ConstructedFromItsPrintingCode) {
  const auto bw = ref::parsePerftestOutput(dataFile("perftest/ib_write_bw-65536.txt"), 65536);
  EXPECT_EQ(bw.iterations, 5000);
  EXPECT_NEAR(bw.gbps, 11032.17 * 1048576 / 1e9, 1e-9);  // perftest's MiB: 2^20 bytes
  EXPECT_NEAR(bw.messageRate, 176515, 1e-6);
  // --report_gbits: the same bandwidth in Gb/s.
  const auto gbits = ref::parsePerftestOutput(dataFile("perftest/ib_write_bw-65536-report_gbits.txt"), 65536);
  EXPECT_NEAR(gbits.gbps, 92.54 / 8, 1e-12);
  EXPECT_NEAR(gbits.gbps, bw.gbps, 0.01);
  const auto read = ref::referenceTool("ib_read_lat").parse(dataFile("perftest/ib_read_lat-8.txt"), 8);
  EXPECT_EQ(read.timeMeaning, "round trip");  // a read is reported whole
  EXPECT_DOUBLE_EQ(read.medianUs, 1.75);      // t_typical
  EXPECT_DOUBLE_EQ(read.averageUs, 1.76);     // t_avg
  EXPECT_EQ(read.iterations, 1000);
  const auto send = ref::referenceTool("ib_send_lat").parse(dataFile("perftest/ib_send_lat-8.txt"), 8);
  EXPECT_EQ(send.timeMeaning, "latency");
  EXPECT_DOUBLE_EQ(send.medianUs, 1.02);
  EXPECT_EQ(ref::parsePerftestVersion(dataFile("perftest/version.txt")), "6.29");
  EXPECT_NE(parseError([&] {
              ref::referenceTool("ib_send_lat").parse(dataFile("perftest/ib_write_bw-65536.txt"), 65536);
            }).find("not ib_send_lat's"),
            std::string::npos);
  EXPECT_NE(parseError([&] {
              ref::parsePerftestOutput(" Couldn't find any IB devices\n", 8);
            }).find("no '#bytes' header in 1 lines"),
            std::string::npos);
  std::string cut = dataFile("perftest/ib_read_lat-8.txt");
  cut = cut.substr(0, cut.find("1.76"));  // the client killed mid-line
  EXPECT_NE(parseError([&] { ref::parsePerftestOutput(cut, 8); }).find("expected 9 numbers, found 5"),
            std::string::npos)
      << parseError([&] { ref::parsePerftestOutput(cut, 8); });
}

TEST(NcclTestsOutput, TextAgreesWithTheJsonOfTheSameRecordedRun) {
  for (const std::string tool : {"all_reduce_perf", "alltoall_perf"}) {
    const std::string text = dataFile("nccl-tests/" + tool + "-g1.txt");
    const YAML::Node json = YAML::Load(dataFile("nccl-tests/" + tool + "-g1.json"));  // JSON is YAML
    int rows = 0;
    for (const auto& row : json["results"]) {
      const auto bytes = row["size"].as<std::int64_t>();
      if (bytes == 0) continue;  // alltoall's 0-byte row: no figures worth comparing
      const auto f = ref::referenceTool(tool).parse(text, bytes);
      const auto out = row["out_of_place"];
      // The text rounds to 2 decimals, or fewer digits for large values (util.cu's getFloatStr).
      const auto close = [](double printed, double exact) { return std::abs(printed - exact) <= 0.006 + 1e-3 * exact; };
      EXPECT_TRUE(close(f.averageUs, out["time"].as<double>())) << tool << " " << bytes << ": " << f.averageUs;
      EXPECT_TRUE(close(f.gbps, out["alg_bw"].as<double>())) << tool << " " << bytes << ": " << f.gbps;
      EXPECT_TRUE(close(f.busGbps, out["bus_bw"].as<double>())) << tool << " " << bytes;
      EXPECT_EQ(f.timeMeaning, "collective");
      EXPECT_EQ(f.version, "2.19.6 (NCCL 22803)");
      ++rows;
    }
    EXPECT_GE(rows, 10) << tool;
  }
  // The out-of-place columns, not the in-place ones of the same row.
  const auto big = ref::parseNcclTestsOutput(dataFile("nccl-tests/all_reduce_perf-g1.txt"), 33554432);
  EXPECT_DOUBLE_EQ(big.averageUs, 19.41);
  EXPECT_DOUBLE_EQ(big.gbps, 1728.9);
  EXPECT_NE(parseError([&] {
              ref::parseNcclTestsOutput(dataFile("nccl-tests/all_reduce_perf-g1.txt"), 100);
            }).find("has no row for 100 bytes"),
            std::string::npos);
}

TEST(ReferenceTools, EveryToolIsAPlugInWithItsLaunch) {
  EXPECT_EQ(ref::referenceToolNames(),
            (std::vector<std::string>{"ucx_perftest", "osu_latency", "osu_bw", "ib_write_bw", "ib_read_lat",
                                      "ib_send_lat", "all_reduce_perf", "alltoall_perf"}));
  EXPECT_EQ(ref::referenceTool("osu_bw").launch(), ref::Launch::mpirun);
  EXPECT_EQ(ref::referenceTool("all_reduce_perf").launch(), ref::Launch::mpirun);
  EXPECT_EQ(ref::referenceTool("ib_write_bw").launch(), ref::Launch::clientServer);
  EXPECT_THROW(ref::referenceTool("osu_bibw"), std::out_of_range);
}
