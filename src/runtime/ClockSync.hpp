#pragma once
// Puts every rank's CLOCK_MONOTONIC onto rank 0's: rank 0 exchanges a short
// ping-pong with each rank and keeps the round with the smallest round trip
// (least queueing, so the midpoint estimate is tightest).
#include <vector>

#include "runtime/Mpi.hpp"

namespace fabscope::runtime {

struct ClockOffset {
  Nanoseconds offset = 0;       // local - global
  Nanoseconds uncertainty = 0;  // half the minimum round trip
};

class ClockSync {
 public:
  // Collective over `world`. `rounds` ping-pongs per rank.
  static ClockSync measure(const Communicator& world, int rounds, const Deadline& deadline);

  const ClockOffset& mine() const { return mine_; }
  const std::vector<ClockOffset>& all() const { return all_; }
  Nanoseconds toGlobal(Nanoseconds local) const { return local - mine_.offset; }

 private:
  ClockOffset mine_;
  std::vector<ClockOffset> all_;  // every rank's offset, on every rank
};

}  // namespace fabscope::runtime
