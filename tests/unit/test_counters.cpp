// Counters: generic reading of the fixture tree and /proc/net files, diff,
// and the live machine (cheap, never throws).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>

#include "inventory/Counters.hpp"

using namespace fabscope::inventory;

namespace {

const std::string kData = std::string(FABSCOPE_TEST_DATA_DIR) + "/sysfs/";

CounterOptions fixtureOptions(const std::string& proc) {
  CounterOptions options;
  options.sysRoot = kData + "host-a";
  options.procRoot = kData + proc;
  return options;
}

std::optional<std::int64_t> valueOf(const CounterSnapshot& snapshot, const std::string& source,
                                    const std::string& name) {
  for (const auto& v : snapshot.values)
    if (v.source == source && v.name == name) return v.value;
  return std::nullopt;
}

}  // namespace

TEST(Counters, ReadsRdmaAndInterfaceCountersGenerically) {
  CounterSnapshot snapshot = readCounters(fixtureOptions("proc-before"));
  EXPECT_EQ(valueOf(snapshot, "ib:mlx5_0/1", "port_xmit_wait"), 42);
  EXPECT_EQ(valueOf(snapshot, "ib:mlx5_0/1", "link_downed"), 1);
  EXPECT_EQ(valueOf(snapshot, "hw:mlx5_0/1", "packet_seq_err"), 3);
  EXPECT_EQ(valueOf(snapshot, "hw:mlx5_0/1", "lifespan"), std::nullopt) << "lifespan is not a counter";
  EXPECT_EQ(valueOf(snapshot, "hw:mlx5_1/1", "np_cnp_sent"), 17);
  EXPECT_EQ(valueOf(snapshot, "hw:mlx5_1/1", "np_ecn_marked_roce_packets"), 21);
  EXPECT_EQ(valueOf(snapshot, "net:ens1f0", "rx_dropped"), 1);
  EXPECT_EQ(valueOf(snapshot, "net:lo", "rx_bytes"), 10);
}

TEST(Counters, ParsesSnmpAndNetstatPairs) {
  CounterSnapshot snapshot = readCounters(fixtureOptions("proc-before"));
  EXPECT_EQ(valueOf(snapshot, "snmp:Tcp", "RetransSegs"), 12);
  EXPECT_EQ(valueOf(snapshot, "snmp:Tcp", "MaxConn"), -1);
  EXPECT_EQ(valueOf(snapshot, "snmp:Udp", "InDatagrams"), 286);
  EXPECT_EQ(valueOf(snapshot, "netstat:TcpExt", "TCPTimeouts"), 1);
  EXPECT_TRUE(valueOf(snapshot, "netstat:IpExt", "InOctets").has_value());
}

TEST(Counters, ProcPairsSkipMismatchedGroups) {
  auto values = parseProcNetPairs("Tcp: A B\nUdp: 1 2\nIp: X Y\nIp: 5 x\n", "snmp");
  ASSERT_EQ(values.size(), 1u);
  EXPECT_EQ(values[0].source, "snmp:Ip");
  EXPECT_EQ(values[0].name, "X");
  EXPECT_EQ(values[0].value, 5);
}

TEST(Counters, DiffShowsRetransmissions) {
  CounterSnapshot before = readCounters(fixtureOptions("proc-before"));
  CounterSnapshot after = readCounters(fixtureOptions("proc-after"));
  auto rows = diff(before, after);
  EXPECT_EQ(rows.size(), after.values.size());
  auto find = [&](const std::string& source, const std::string& name) {
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&](const CounterDelta& d) { return d.source == source && d.name == name; });
    if (it == rows.end()) throw std::runtime_error("no delta for " + source + " " + name);
    return *it;
  };
  CounterDelta retrans = find("snmp:Tcp", "RetransSegs");
  EXPECT_EQ(retrans.before, 12);
  EXPECT_EQ(retrans.after, 57);
  EXPECT_EQ(retrans.delta, 45);
  EXPECT_EQ(find("netstat:TcpExt", "TCPTimeouts").delta, 4);
  EXPECT_EQ(find("netstat:TcpExt", "TCPLostRetransmit").delta, 3);
  EXPECT_EQ(find("ib:mlx5_0/1", "port_xmit_wait").delta, 0);
}

TEST(Counters, DiffWrapsModulo64Bits) {
  CounterSnapshot before{{{"ib:x/1", "port_xmit_data", -2}}};  // 2^64 - 2 as read
  CounterSnapshot after{{{"ib:x/1", "port_xmit_data", 3}, {"ib:x/1", "new_counter", 9}}};
  auto rows = diff(before, after);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].delta, 5);
}

TEST(Counters, KnownCountersAreNamed) {
  EXPECT_TRUE(isKnownCounter("RetransSegs"));
  EXPECT_TRUE(isKnownCounter("np_cnp_sent"));
  EXPECT_TRUE(isKnownCounter("port_xmit_wait"));
  EXPECT_FALSE(isKnownCounter("rx_bytes"));
  for (const auto& counter : knownCounters()) EXPECT_FALSE(counter.meaning.empty());
}

TEST(Counters, LiveReadIsCheapAndHasTcp) {
  CounterOptions options;
  readCounters(options);  // warm the dentry cache like a run does before its first test
  auto start = std::chrono::steady_clock::now();
  CounterSnapshot snapshot = readCounters(options);
  auto elapsed = std::chrono::steady_clock::now() - start;
  EXPECT_TRUE(valueOf(snapshot, "snmp:Tcp", "RetransSegs").has_value());
  EXPECT_TRUE(valueOf(snapshot, "net:lo", "rx_bytes").has_value());
  EXPECT_LT(std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count(), 200)
      << "a snapshot must stay cheap (a few ms on an idle machine)";
}

TEST(Counters, MissingRootsGiveAnEmptySnapshot) {
  CounterOptions options;
  options.sysRoot = kData + "does-not-exist";
  options.procRoot = kData + "does-not-exist";
  EXPECT_TRUE(readCounters(options).values.empty());
}
