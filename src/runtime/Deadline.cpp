#include "runtime/Deadline.hpp"

#include "runtime/Timestamp.hpp"

namespace fabscope::runtime {

void Deadline::fail(const std::string& waitingFor, int peer) const {
  const Nanoseconds now = monotonicNow();
  // One peer only: a collective's error names no rank (rank 0's loss round finds the silent one).
  throw DeadlineExceeded(utcTimestamp(realtimeNow()) + ": deadline exceeded while waiting for " + waitingFor +
                             (peer >= 0 ? watchdog::describePeer(peer) : std::string()) + " (" +
                             std::to_string((now - at_) / 1'000'000) + " ms past the deadline)",
                         now);
}

}  // namespace fabscope::runtime
