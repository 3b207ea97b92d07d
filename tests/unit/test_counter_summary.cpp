// The closing summary names the known counters that moved during a test; the
// window around a test keeps every counter that moved.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "driver/CounterSummary.hpp"
#include "driver/FabricRecorder.hpp"
#include "driver/SummaryTable.hpp"
#include "inventory/Counters.hpp"

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

TEST(CounterSummary, AReaderOutsideTheHostListIsNamedByItsRank) {
  const std::vector<output::CounterRecord> rows = {row(2, "snmp:Tcp", "RetransSegs", 4),
                                                   row(7, "snmp:Tcp", "RetransSegs", 9)};
  for (const auto& only : rows) {
    const auto notes = driver::movedKnownCounters(std::span(&only, 1), {"a", "b"});
    ASSERT_EQ(notes.size(), 1u);
    EXPECT_EQ(notes[0].largestWhere, "rank " + std::to_string(only.rank) + " snmp:Tcp");
  }
}

namespace {

// One datagram through the loopback interface: this namespace's UDP counters move.
void sendOneDatagramToMyself() {
  const int in = socket(AF_INET, SOCK_DGRAM, 0), out = socket(AF_INET, SOCK_DGRAM, 0);
  ASSERT_GE(in, 0);
  ASSERT_GE(out, 0);
  sockaddr_in at{};
  at.sin_family = AF_INET;
  at.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(in, reinterpret_cast<sockaddr*>(&at), sizeof at), 0);
  socklen_t length = sizeof at;
  ASSERT_EQ(getsockname(in, reinterpret_cast<sockaddr*>(&at), &length), 0);
  const char byte = 1;
  ASSERT_EQ(sendto(out, &byte, 1, 0, reinterpret_cast<sockaddr*>(&at), sizeof at), 1);
  char got = 0;
  ASSERT_EQ(recv(in, &got, 1, 0), 1);
  close(in);
  close(out);
}

}  // namespace

TEST(CounterWindow, KeepsEveryCounterThatMovedAndOfTheRestOnlyTheKnownOnes) {
  driver::CounterWindow window(true);
  sendOneDatagramToMyself();
  window.finish();
  const auto rows = window.rows(3);
  bool sawSentDatagrams = false;
  for (const auto& r : rows) {
    const std::string source(r.source, strnlen(r.source, sizeof r.source)),
        name(r.name, strnlen(r.name, sizeof r.name));
    EXPECT_EQ(r.rank, 3) << source << " " << name;
    if (r.delta == 0) {
      EXPECT_TRUE(inventory::isKnownCounter(name)) << "an unknown counter that did not move: " << name;
    }
    sawSentDatagrams = sawSentDatagrams || (source == "snmp:Udp" && name == "OutDatagrams" && r.delta >= 1);
  }
  EXPECT_TRUE(sawSentDatagrams) << "the datagram sent inside the window is not among the " << rows.size() << " rows";
  EXPECT_TRUE(driver::CounterWindow(false).rows(3).empty()) << "a rank that reads no counters has rows";
}
