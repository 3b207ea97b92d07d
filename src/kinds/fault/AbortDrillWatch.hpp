#pragma once
// One survivor of a fault drill over a communicator it aborts alone (NCCL),
// as a state machine apart from NCCL and CUDA so that it runs and is tested
// without a GPU: it launches the drill's all-reduce steps at their due times,
// one in flight, and polls. The victim is declared lost on the first of
// NCCL's asynchronous error, a CUDA error on the stream, or the survivor's own
// step deadline (a step unfinished for request_timeout); the communicator is
// then aborted, and the abort must return within abort_within of the
// detection (past it: stuck). poll() neither allocates nor logs, except once,
// at the detection (its path).
#include <cstdint>
#include <optional>
#include <string>

#include "kinds/fault/FaultDrillConfig.hpp"

namespace fabscope::suite::fault_drill {

// What the caller's loop does after a poll.
enum class AbortDrillAction {
  wait,           // nothing due: poll again
  launch,         // launch the next step now, then call launched()
  stepCompleted,  // the step in flight finished: record its sample (lastStep())
  abort,          // the victim was declared lost (detection()): abort the communicator
  finished,       // every step completed; nothing was lost
};

enum class AbortDrillPhase { stepping, aborting, aborted, abortStuck, finished };

// What one poll saw of the step in flight: whether it finished, and the error
// NCCL (asynchronous error state) or CUDA (the stream) reported, if any
// (nullptr: none; a static string such as ncclGetErrorString's).
struct AbortDrillPoll {
  bool stepDone = false;
  const char* ncclError = nullptr;
  const char* cudaError = nullptr;
};

struct AbortDrillStep {
  std::int64_t index = -1;
  runtime::Nanoseconds launchedAt = 0, doneAt = 0;
};

class AbortDrillWatch {
 public:
  explicit AbortDrillWatch(const AbortDrillTiming& timing) : t_(timing) {}

  AbortDrillAction poll(runtime::Nanoseconds now, const AbortDrillPoll& seen);
  void launched(runtime::Nanoseconds at);
  // The abort returned at `at`; or the caller gave up waiting for it at `at`
  // (past abortDeadline()). Only in phase aborting.
  void abortReturned(runtime::Nanoseconds at);
  void abortGivenUp(runtime::Nanoseconds at);

  AbortDrillPhase phase() const { return phase_; }
  const AbortDrillStep& lastStep() const { return last_; }
  std::int64_t launchedSteps() const { return launched_; }
  std::int64_t completedSteps() const { return completed_; }
  bool stepInFlight() const { return inFlight_; }
  // The detection (at: monotonic; path: "NCCL asynchronous error: ...",
  // "CUDA error: ...", "step deadline: ..."); empty until then.
  const std::optional<runtime::Nanoseconds>& detectedAt() const { return detectedAt_; }
  const std::string& detectionPath() const { return path_; }
  // detection + abort_within (only once detected).
  runtime::Nanoseconds abortDeadline() const { return detectedAt_.value_or(0) + t_.abortWithin; }
  // How long the abort took (ns), -1 while it has not returned.
  runtime::Nanoseconds abortTook() const { return abortedAt_ ? *abortedAt_ - *detectedAt_ : -1; }
  // The abort returned within abort_within.
  bool abortedInTime() const { return phase_ == AbortDrillPhase::aborted && abortTook() <= t_.abortWithin; }

 private:
  AbortDrillAction declareLost(runtime::Nanoseconds at, std::string path);

  const AbortDrillTiming t_;
  AbortDrillPhase phase_ = AbortDrillPhase::stepping;
  bool inFlight_ = false;
  std::int64_t launched_ = 0, completed_ = 0;
  AbortDrillStep last_;
  std::optional<runtime::Nanoseconds> detectedAt_, abortedAt_;
  std::string path_;
};

}  // namespace fabscope::suite::fault_drill
