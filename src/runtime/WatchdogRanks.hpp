#pragma once
// What the watchdog (runtime/Watchdog.hpp) may learn about the other ranks
// once they are known, to name the silent one. Apart from Watchdog.hpp, which
// every wait includes, because only the runner sets it.
#include <cstdint>
#include <vector>

namespace fabscope::runtime::watchdog {

// The process id of every rank (with knowHosts: their hosts). The watchdog's
// line then also names the ranks of its own host (same host name) that are
// gone or stopped (SIGSTOP): the silent rank of a collective, found without
// MPI by reading /proc.
void knowPids(const std::vector<std::int64_t>& pidOfRank);

}  // namespace fabscope::runtime::watchdog
