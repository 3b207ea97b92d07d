#pragma once
// Error types mapped onto the exit-code contract:
//   UsageError       -> 2 (bad command line or scenario; nothing measured)
//   RuntimeFailure   -> 3 (the run could not go on; partial file kept)
//   DeadlineExceeded -> a RuntimeFailure; inside a test it ends that test with
//                       status `timeout` and the run goes on.
// A failed check (wrong data, a test not passed) is no exception: the runner
// records it and the run exits 1 (exit_code::checkFailed).
#include <stdexcept>
#include <string>

#include "runtime/Clock.hpp"

namespace fabscope {

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class RuntimeFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A blocking wait ran past its deadline: the peer is lost or stuck. Carries
// the moment it was noticed so the error can be placed on the timeline.
class DeadlineExceeded : public RuntimeFailure {
 public:
  DeadlineExceeded(const std::string& what, runtime::Nanoseconds noticedAt)
      : RuntimeFailure(what), noticedAt_(noticedAt) {}
  runtime::Nanoseconds noticedAt() const noexcept { return noticedAt_; }

 private:
  runtime::Nanoseconds noticedAt_;
};

namespace exit_code {
inline constexpr int ok = 0;
inline constexpr int checkFailed = 1;
inline constexpr int usage = 2;
inline constexpr int runtimeFailure = 3;
}  // namespace exit_code

}  // namespace fabscope
