#pragma once
// Fabric counters around a test: every counter file that exists is read
// generically (RDMA port counters and hw_counters, interface statistics, the
// TCP/IP counters of this network namespace), so a before/after difference
// shows retransmissions, congestion notifications and link errors.
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace fabscope::inventory {

struct CounterOptions {
  std::filesystem::path sysRoot = "/sys";
  std::filesystem::path procRoot = "/proc";  // /proc/net/* is per network namespace
  bool rdma = true;
  bool interfaces = true;
  bool tcp = true;
  std::vector<std::string> interfaceNames;  // empty: every interface
};

struct CounterValue {
  std::string source;  // "ib:mlx5_0/1", "hw:mlx5_0/1", "net:eth0", "snmp:Tcp", "netstat:TcpExt"
  std::string name;    // "port_xmit_wait", "rx_bytes", "RetransSegs", ...
  std::int64_t value = 0;
};

struct CounterSnapshot {
  std::vector<CounterValue> values;  // in reading order: sources sorted, names as found
};

struct CounterDelta {
  std::string source;
  std::string name;
  std::int64_t before = 0;
  std::int64_t after = 0;
  std::int64_t delta = 0;  // after - before, modulo 2^64 (a 64-bit counter that wrapped stays right)
};

// Never throws for a missing or unreadable file: it is skipped.
CounterSnapshot readCounters(const CounterOptions& options);

// Rows for counters present in both snapshots, in `after`'s order. A counter
// present in only one snapshot (a device that appeared) is left out.
std::vector<CounterDelta> diff(const CounterSnapshot& before, const CounterSnapshot& after);

// Header/value line pairs of /proc/net/snmp and /proc/net/netstat
// ("Tcp: RtoAlgorithm ..." then "Tcp: 1 ..."), as values with source prefix:Group.
std::vector<CounterValue> parseProcNetPairs(const std::string& text, const std::string& sourcePrefix);

struct KnownCounter {
  std::string_view name;
  std::string_view meaning;
};

// Counters that explain a latency tail; the summary names these.
const std::vector<KnownCounter>& knownCounters();
bool isKnownCounter(std::string_view name);

}  // namespace fabscope::inventory
