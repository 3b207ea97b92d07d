#pragma once
// Every blocking wait in fabscope takes a Deadline: a lost peer must become a
// timestamped error, never a hang.
#include <sched.h>

#include <atomic>
#include <string>

#include "runtime/Clock.hpp"
#include "runtime/Errors.hpp"
#include "runtime/Watchdog.hpp"

namespace fabscope::runtime {

class Deadline {
 public:
  static Deadline after(Nanoseconds budget) { return Deadline(monotonicNow() + budget); }
  static Deadline afterSeconds(double seconds) { return after(static_cast<Nanoseconds>(seconds * 1e9)); }
  explicit Deadline(Nanoseconds at) : at_(at) {}

  Nanoseconds at() const noexcept { return at_; }
  bool expired() const noexcept { return monotonicNow() >= at_; }
  bool expiredAt(Nanoseconds now) const noexcept { return now >= at_; }

  // Throws DeadlineExceeded naming what was being waited for and, when the
  // wait is on one peer, that peer's rank and host (watchdog::describePeer).
  [[noreturn]] void fail(const std::string& waitingFor, int peer = watchdog::noPeer) const;

 private:
  Nanoseconds at_;
};

// How every wait polls: spinning, or giving the CPU away between polls.
//
// Process-wide, set once at startup from the validity facts (validity::
// waitsMustYield), before any timed loop, and never changed afterwards: the
// policy is a property of where the ranks were placed, the same for every wait
// of the run, and the waits live deep in every transport, collective and test
// kind (about fifteen call sites); passing an object through all of them would
// change every signature for one fact that cannot differ between them. Relaxed
// loads: there is exactly one write, before the first wait that matters.
enum class WaitPolicy { spin, yield };
namespace detail {
inline std::atomic<WaitPolicy> waitPolicy{WaitPolicy::spin};
}
inline void setWaitPolicy(WaitPolicy policy) noexcept { detail::waitPolicy.store(policy, std::memory_order_relaxed); }
inline WaitPolicy waitPolicy() noexcept { return detail::waitPolicy.load(std::memory_order_relaxed); }

// For poll loops of their own (several things polled at once): after a sweep,
// gives the CPU away when the policy says waits yield, else does nothing.
inline void betweenPolls() noexcept {
  if (waitPolicy() == WaitPolicy::yield) sched_yield();
}

// Polls `done()` until it returns true. Spinning checks the clock only every
// few polls so the check costs nothing next to the poll itself. Yielding gives
// the CPU to another runnable rank after every failed poll: with more polling
// ranks than CPUs a spinning wait holds the CPU the awaited peer needs until
// the scheduler's time slice ends (milliseconds); sched_yield makes no system
// allocation and writes nothing, so it is allowed in a timed loop.
// `peer` is the rank waited on (watchdog::everyRank for a collective,
// watchdog::noPeer when none): the watchdog names it if a poll never returns.
template <typename Poll>
void waitUntil(Poll&& done, const Deadline& deadline, const char* waitingFor, int peer = watchdog::noPeer) {
  // Seen by the watchdog, which ends the rank if a poll never returns.
  const watchdog::Watch watch(waitingFor, deadline.at(), peer);
  if (waitPolicy() == WaitPolicy::yield) {
    for (;;) {
      for (int i = 0; i < 16; ++i) {
        if (done()) return;
        sched_yield();
      }
      if (deadline.expired()) deadline.fail(waitingFor, peer);
    }
  }
  for (;;) {
    for (int i = 0; i < 64; ++i)
      if (done()) return;
    if (deadline.expired()) deadline.fail(waitingFor, peer);
  }
}

}  // namespace fabscope::runtime
