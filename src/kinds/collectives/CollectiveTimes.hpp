#pragma once
// A collective's per-iteration times on the global clock, from every rank's
// own (arrival, exit) stamps gathered to one rank: duration = last exit -
// first arrival (the collective is as slow as its slowest member), arrival
// spread = last arrival - first arrival, and which rank arrived last.
// Shared by the all-reduce and the all-to-all (each of its phases).
#include <cstdint>
#include <vector>

#include "runtime/Mpi.hpp"

namespace fabscope::suite {

struct CollectiveTimes {
  std::vector<double> duration;  // ns, per iteration
  std::vector<double> lateness;  // ns, per iteration
  std::vector<int> lastCount;    // per group rank: iterations it arrived last
  int straggler = 0;             // group rank that arrived last most often
  double stragglerFraction = 0;  // of the iterations
};

// stamps[r]: rank r's stamps, `width` per iteration; `in` and `out` pick the
// columns of the phase's arrival and exit.
CollectiveTimes collectiveTimes(const std::vector<std::vector<std::int64_t>>& stamps, std::size_t iterations,
                                std::size_t width, std::size_t in, std::size_t out);

// Every rank's stamps (global clock) on group rank 0; empty on the others.
std::vector<std::vector<std::int64_t>> gatherStamps(const runtime::Communicator& group,
                                                    const std::vector<std::int64_t>& mine,
                                                    const runtime::Deadline& deadline);

}  // namespace fabscope::suite
