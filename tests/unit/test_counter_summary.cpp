// The closing summary names the known counters that moved during a test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver/CounterSummary.hpp"
#include "driver/SummaryTable.hpp"

using namespace fabscope;

namespace {

output::CounterRecord row(int rank, const char* source, const char* name, std::int64_t delta) {
  output::CounterRecord r{};
  r.rank = rank;
  output::setText(r.source, source);
  output::setText(r.name, name);
  r.before = 100;
  r.after = 100 + delta;
  r.delta = delta;
  return r;
}

}  // namespace

TEST(CounterSummary, KnownCountersThatMovedLargestFirst) {
  const std::vector<output::CounterRecord> rows = {
      row(0, "snmp:Tcp", "RetransSegs", 7),    row(2, "snmp:Tcp", "RetransSegs", 50),
      row(0, "net:eth0", "rx_bytes", 99999),  // moved, but not a known counter
      row(2, "hw:mlx5_0/1", "np_cnp_sent", 3), row(0, "net:eth0", "rx_dropped", 0),
      row(2, "net:eth0", "tx_dropped", -5),  // a reset, not an event
  };
  const auto notes = driver::movedKnownCounters(rows, {"fh0", "fh0", "fh1"});
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0].name, "RetransSegs");
  EXPECT_EQ(notes[0].total, 57);
  EXPECT_EQ(notes[0].hosts, 2);
  EXPECT_EQ(notes[0].largestWhere, "fh1 snmp:Tcp");
  EXPECT_EQ(notes[1].name, "np_cnp_sent");
  EXPECT_EQ(driver::describeCounterNotes(notes),
            "RetransSegs +57 (largest fh1 snmp:Tcp +50 of 2 readers), np_cnp_sent +3 (fh1 hw:mlx5_0/1)");
  EXPECT_EQ(driver::describeCounterNotes(notes, 1),
            "RetransSegs +57 (largest fh1 snmp:Tcp +50 of 2 readers) and 1 more");
  EXPECT_NE(driver::counterMeaning("RetransSegs").find("retransmitted"), std::string::npos);
}

TEST(CounterSummary, PrintedUnderTheTestWithTheirMeaning) {
  driver::InstanceResult r;
  r.name = "lossy", r.kind = "bibw", r.condition = "quiet", r.pattern = "pairs", r.pass = "parallel",
  r.status = "passed", r.bytes = 1024;
  const std::vector<output::CounterRecord> rows = {row(1, "snmp:Tcp", "RetransSegs", 12)};
  r.counters = driver::movedKnownCounters(rows, {"a", "b"});
  char* buffer = nullptr;
  std::size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  driver::printSummaryTable(out, {r});
  std::fclose(out);
  const std::string text(buffer, size);
  std::free(buffer);
  EXPECT_NE(text.find("~ counters moved: RetransSegs +12 (b snmp:Tcp)"), std::string::npos) << text;
  EXPECT_NE(text.find("~ RetransSegs: TCP segments retransmitted"), std::string::npos) << text;
}
