#include "inventory/Counters.hpp"

#include <charconv>
#include <sstream>
#include <unordered_map>

#include "inventory/SysfsFiles.hpp"

namespace fabscope::inventory {
namespace fs = std::filesystem;

namespace {

// Counter files hold one unsigned decimal; wider than int64 wraps on purpose
// (deltas are taken modulo 2^64).
bool parseCounter(std::string_view text, std::int64_t& value) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  if (text.empty()) return false;
  if (text.front() == '-') {
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    return ec == std::errc() && ptr == text.data() + text.size();
  }
  std::uint64_t unsignedValue = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), unsignedValue);
  if (ec != std::errc() || ptr != text.data() + text.size()) return false;
  value = static_cast<std::int64_t>(unsignedValue);
  return true;
}

void readCounterFolder(const fs::path& folder, const std::string& source, std::vector<CounterValue>& out) {
  for (const auto& name : listDirectory(folder)) {
    // hw_counters/lifespan is the refresh interval of the others, not a counter.
    if (name == "lifespan") continue;
    auto text = readSmallFile(folder / name, 64);
    std::int64_t value = 0;
    if (text && parseCounter(*text, value)) out.push_back({source, name, value});
  }
}

bool wanted(const std::vector<std::string>& names, const std::string& name) {
  if (names.empty()) return true;
  for (const auto& n : names)
    if (n == name) return true;
  return false;
}

}  // namespace

std::vector<CounterValue> parseProcNetPairs(const std::string& text, const std::string& sourcePrefix) {
  std::vector<CounterValue> values;
  std::istringstream lines(text);
  std::string header, numbers;
  while (std::getline(lines, header)) {
    if (!std::getline(lines, numbers)) break;
    auto headerColon = header.find(':');
    auto numbersColon = numbers.find(':');
    if (headerColon == std::string::npos || numbersColon == std::string::npos) continue;
    const std::string group = header.substr(0, headerColon);
    // A pair whose groups differ means the file is not in the expected shape: skip it.
    if (numbers.substr(0, numbersColon) != group) continue;
    std::istringstream names(header.substr(headerColon + 1));
    std::istringstream counts(numbers.substr(numbersColon + 1));
    std::string name, count;
    while (names >> name && counts >> count) {
      std::int64_t value = 0;
      if (parseCounter(count, value)) values.push_back({sourcePrefix + ":" + group, name, value});
    }
  }
  return values;
}

CounterSnapshot readCounters(const CounterOptions& options) {
  CounterSnapshot snapshot;
  auto& out = snapshot.values;
  if (options.rdma) {
    const fs::path classDir = options.sysRoot / "class" / "infiniband";
    for (const auto& device : listDirectory(classDir)) {
      for (const auto& port : listDirectory(classDir / device / "ports")) {
        const fs::path portDir = classDir / device / "ports" / port;
        readCounterFolder(portDir / "counters", "ib:" + device + "/" + port, out);
        readCounterFolder(portDir / "hw_counters", "hw:" + device + "/" + port, out);
      }
    }
  }
  if (options.interfaces) {
    const fs::path classDir = options.sysRoot / "class" / "net";
    for (const auto& name : listDirectory(classDir))
      if (wanted(options.interfaceNames, name)) readCounterFolder(classDir / name / "statistics", "net:" + name, out);
  }
  if (options.tcp) {
    if (auto snmp = readSmallFile(options.procRoot / "net" / "snmp", 1 << 16)) {
      auto parsed = parseProcNetPairs(*snmp, "snmp");
      out.insert(out.end(), parsed.begin(), parsed.end());
    }
    if (auto netstat = readSmallFile(options.procRoot / "net" / "netstat", 1 << 16)) {
      auto parsed = parseProcNetPairs(*netstat, "netstat");
      out.insert(out.end(), parsed.begin(), parsed.end());
    }
  }
  return snapshot;
}

std::vector<CounterDelta> diff(const CounterSnapshot& before, const CounterSnapshot& after) {
  std::unordered_map<std::string, std::int64_t> earlier;
  earlier.reserve(before.values.size());
  for (const auto& v : before.values) earlier.emplace(v.source + '\n' + v.name, v.value);
  std::vector<CounterDelta> rows;
  rows.reserve(after.values.size());
  for (const auto& v : after.values) {
    auto found = earlier.find(v.source + '\n' + v.name);
    if (found == earlier.end()) continue;
    const auto delta =
        static_cast<std::int64_t>(static_cast<std::uint64_t>(v.value) - static_cast<std::uint64_t>(found->second));
    rows.push_back({v.source, v.name, found->second, v.value, delta});
  }
  return rows;
}

const std::vector<KnownCounter>& knownCounters() {
  static const std::vector<KnownCounter> known = {
      {"port_xmit_wait", "ticks the port had data to send but no credits (congestion back-pressure)"},
      {"port_xmit_discards", "packets dropped on send (port down or congested)"},
      {"port_rcv_errors", "malformed packets received"},
      {"symbol_error", "physical-layer symbol errors (cable, transceiver)"},
      {"link_error_recovery", "link retrained after errors"},
      {"link_downed", "link went down"},
      {"local_link_integrity_errors", "local physical errors beyond threshold"},
      {"excessive_buffer_overrun_errors", "receive buffer overruns"},
      {"port_rcv_remote_physical_errors", "packets marked bad by a remote physical error"},
      {"out_of_sequence", "packets received out of order (RoCE: loss or reordering)"},
      {"packet_seq_err", "NAKs for packet sequence errors"},
      {"local_ack_timeout_err", "transport retries after an ACK timeout"},
      {"rnr_nak_retry_err", "receiver-not-ready retries exhausted"},
      {"implied_nak_seq_err", "implied NAKs (lost responses)"},
      {"duplicate_request", "requests received twice (retransmissions)"},
      {"rx_icrc_encapsulated", "RoCE packets with a bad ICRC"},
      {"np_cnp_sent", "congestion notifications sent by this receiver (ECN marks seen)"},
      {"rp_cnp_handled", "congestion notifications handled by this sender (rate reduced)"},
      {"rp_cnp_ignored", "congestion notifications ignored"},
      {"np_ecn_marked_roce_packets", "received RoCE packets that carried an ECN mark"},
      {"rx_dropped", "interface receive drops"},
      {"tx_dropped", "interface transmit drops"},
      {"rx_errors", "interface receive errors"},
      {"tx_errors", "interface transmit errors"},
      {"RetransSegs", "TCP segments retransmitted"},
      {"TCPLostRetransmit", "TCP retransmissions that were lost again"},
      {"TCPTimeouts", "TCP retransmission timeouts"},
      {"TCPSynRetrans", "TCP SYN retransmissions"},
      {"InErrs", "TCP segments received in error"},
  };
  return known;
}

bool isKnownCounter(std::string_view name) {
  for (const auto& counter : knownCounters())
    if (counter.name == name) return true;
  return false;
}

}  // namespace fabscope::inventory
