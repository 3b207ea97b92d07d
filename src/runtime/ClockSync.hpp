#pragma once
// Puts every rank's CLOCK_MONOTONIC onto rank 0's along a binomial tree: each
// rank is synchronised by its parent (itself already on rank 0's clock) with a
// short ping-pong, keeping the round with the smallest round trip (least
// queueing, so the midpoint estimate is tightest), and the offsets compose down
// the tree. ceil(log2 N) steps instead of N - 1 serial ones at rank 0; the
// price is that a rank's uncertainty is the sum of the half round trips along
// its path (at most ceil(log2 N) hops), reported as such.
#include <vector>

#include "runtime/Mpi.hpp"

namespace fabscope::runtime {

struct ClockOffset {
  Nanoseconds offset = 0;       // local - global
  Nanoseconds uncertainty = 0;  // the half minimum round trips of every hop from rank 0, summed
};

// The binomial tree: rank r > 0 is synchronised by r minus its highest set
// bit, in step floor(log2 r); in step s every rank below 2^s synchronises rank
// + 2^s, so all pairs of a step run at once.
int clockTreeParent(int rank);                           // -1 for rank 0
std::vector<int> clockTreeChildren(int rank, int size);  // in the order they are synchronised
int clockTreeSteps(int size);                            // ceil(log2 size)

// A child's offset from its parent's (both on the parent's clock: child - parent)
// and the half round trip, composed with the parent's own offset from rank 0.
ClockOffset composeOffset(const ClockOffset& parent, Nanoseconds childMinusParent, Nanoseconds halfRoundTrip);

class ClockSync {
 public:
  // Collective over `world`. `rounds` ping-pongs per tree edge.
  static ClockSync measure(const Communicator& world, int rounds, const Deadline& deadline);

  const ClockOffset& mine() const { return mine_; }
  Nanoseconds toGlobal(Nanoseconds local) const { return local - mine_.offset; }

 private:
  ClockOffset mine_;  // only this rank's: no rank holds all N offsets
};

}  // namespace fabscope::runtime
