#pragma once
// Every blocking wait in fabscope takes a Deadline: a lost peer must become a
// timestamped error, never a hang.
#include <string>

#include "runtime/Clock.hpp"
#include "runtime/Errors.hpp"

namespace fabscope::runtime {

class Deadline {
 public:
  static Deadline after(Nanoseconds budget) { return Deadline(monotonicNow() + budget); }
  static Deadline afterSeconds(double seconds) {
    return after(static_cast<Nanoseconds>(seconds * 1e9));
  }
  explicit Deadline(Nanoseconds at) : at_(at) {}

  Nanoseconds at() const noexcept { return at_; }
  bool expired() const noexcept { return monotonicNow() >= at_; }
  bool expiredAt(Nanoseconds now) const noexcept { return now >= at_; }

  // Throws DeadlineExceeded naming what was being waited for.
  [[noreturn]] void fail(const std::string& waitingFor) const;

 private:
  Nanoseconds at_;
};

// Spins on `done()` until it returns true, checking the clock only every few
// polls so the check costs nothing next to the poll itself.
template <typename Poll>
void waitUntil(Poll&& done, const Deadline& deadline, const char* waitingFor) {
  for (;;) {
    for (int i = 0; i < 64; ++i)
      if (done()) return;
    if (deadline.expired()) deadline.fail(waitingFor);
  }
}

}  // namespace fabscope::runtime
