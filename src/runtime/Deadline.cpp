#include "runtime/Deadline.hpp"

#include "runtime/Timestamp.hpp"

namespace fabscope::runtime {

void Deadline::fail(const std::string& waitingFor) const {
  const Nanoseconds now = monotonicNow();
  throw DeadlineExceeded(utcTimestamp(realtimeNow()) + ": deadline exceeded while waiting for " + waitingFor + " (" +
                             std::to_string((now - at_) / 1'000'000) + " ms past the deadline)",
                         now);
}

}  // namespace fabscope::runtime
