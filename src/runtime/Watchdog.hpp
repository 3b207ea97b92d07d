#pragma once
// A per-rank watchdog that needs no MPI, UCX or NCCL progress (issue 20, "no
// hang anywhere"). Every bounded wait (waitUntil) says what it waits for and
// until when; a thread of the watchdog's own looks four times a second, and
// when a wait has not returned `grace` after its deadline (waitUntil checks its
// deadline between polls, so a poll itself is stuck inside a library, e.g. UCX
// shared memory after a peer was killed), it writes one line on stderr naming
// the rank, its host and the wait, and ends the process with exit code 3, so
// the launcher and the other ranks finish instead of hanging.
#include <atomic>
#include <string>

#include "runtime/Clock.hpp"

namespace fabscope::runtime::watchdog {

// Extra time after a wait's deadline before the watchdog ends the process.
inline constexpr double graceSeconds = 10;

// Starts the watchdog thread once per process (later calls change nothing).
void start(int rank, const std::string& host, double grace = graceSeconds);

namespace detail {
// One slot per thread that waits (threads take the next free slot once).
struct Slot {
  std::atomic<const char*> what{nullptr};
  std::atomic<Nanoseconds> deadline{0};  // 0: not waiting
};
inline constexpr int kSlots = 32;
Slot* slotOfThisThread() noexcept;  // null when every slot is taken (then unwatched)
}  // namespace detail

// Marks the current thread as waiting for `what` until `deadline` for its
// lifetime: two relaxed stores in, one out (nested waits restore the outer).
class Watch {
 public:
  Watch(const char* what, Nanoseconds deadline) noexcept : slot_(detail::slotOfThisThread()) {
    if (!slot_) return;
    outerWhat_ = slot_->what.load(std::memory_order_relaxed);
    outerDeadline_ = slot_->deadline.load(std::memory_order_relaxed);
    slot_->what.store(what, std::memory_order_relaxed);
    slot_->deadline.store(deadline, std::memory_order_release);
  }
  ~Watch() {
    if (!slot_) return;
    slot_->deadline.store(outerDeadline_, std::memory_order_release);
    slot_->what.store(outerWhat_, std::memory_order_relaxed);
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  detail::Slot* slot_;
  const char* outerWhat_ = nullptr;
  Nanoseconds outerDeadline_ = 0;
};

}  // namespace fabscope::runtime::watchdog
