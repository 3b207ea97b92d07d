#pragma once
// The known counters (inventory::knownCounters: retransmissions, congestion
// notifications, link errors, drops) that moved while an instance ran, named
// in the closing summary next to the latency they may explain.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "output/Records.hpp"

namespace fabscope::driver {

struct CounterNote {
  std::string name;          // e.g. RetransSegs
  std::int64_t total = 0;    // sum of the positive deltas over every reader
  int hosts = 0;             // readers (one per host) where it moved
  std::string largestWhere;  // "host source" of the largest delta
  std::int64_t largest = 0;
};

// Known counters with a positive delta, largest total first. `hostOfRank`
// names where each row was read.
std::vector<CounterNote> movedKnownCounters(std::span<const output::CounterRecord> rows,
                                            const std::vector<std::string>& hostOfRank);

// "RetransSegs +57 (largest fh1 snmp:Tcp +50 of 2 hosts), ..." (at most `limit` counters).
std::string describeCounterNotes(const std::vector<CounterNote>& notes, std::size_t limit = 4);

// "RetransSegs: TCP segments retransmitted" for each name, for the legend.
std::string counterMeaning(const std::string& name);

}  // namespace fabscope::driver
