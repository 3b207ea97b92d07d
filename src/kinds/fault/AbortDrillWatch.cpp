#include "kinds/fault/AbortDrillWatch.hpp"

#include <cstdio>
#include <stdexcept>

namespace fabscope::suite::fault_drill {

AbortDrillAction AbortDrillWatch::declareLost(runtime::Nanoseconds at, std::string path) {
  detectedAt_ = at;
  path_ = std::move(path);
  phase_ = AbortDrillPhase::aborting;
  return AbortDrillAction::abort;
}

AbortDrillAction AbortDrillWatch::poll(runtime::Nanoseconds now, const AbortDrillPoll& seen) {
  if (phase_ == AbortDrillPhase::finished) return AbortDrillAction::finished;
  if (phase_ != AbortDrillPhase::stepping) return AbortDrillAction::wait;  // the abort is the caller's now
  // An error the library or the GPU reports comes first: the step cannot be trusted to finish.
  if (seen.ncclError) return declareLost(now, std::string("NCCL asynchronous error: ") + seen.ncclError);
  if (seen.cudaError) return declareLost(now, std::string("CUDA error: ") + seen.cudaError);
  if (inFlight_) {
    if (seen.stepDone) {
      inFlight_ = false;
      ++completed_;
      last_.doneAt = now;
      return AbortDrillAction::stepCompleted;
    }
    const auto waited = now - last_.launchedAt;
    if (waited > t_.stepTimeout) {
      char text[160];
      std::snprintf(text, sizeof text,
                    "step deadline: all-reduce step %lld unfinished for %.1f ms (request_timeout %.1f ms)",
                    static_cast<long long>(last_.index), static_cast<double>(waited) / 1e6,
                    static_cast<double>(t_.stepTimeout) / 1e6);
      return declareLost(now, text);
    }
    return AbortDrillAction::wait;
  }
  if (launched_ == t_.steps) {
    phase_ = AbortDrillPhase::finished;
    return AbortDrillAction::finished;
  }
  // One step in flight at a time, each at its due time or as soon as the one before it finished.
  return now >= t_.start + launched_ * t_.interval ? AbortDrillAction::launch : AbortDrillAction::wait;
}

void AbortDrillWatch::launched(runtime::Nanoseconds at) {
  if (phase_ != AbortDrillPhase::stepping || inFlight_ || launched_ == t_.steps)
    throw std::logic_error("AbortDrillWatch: a step launched while none was due");
  inFlight_ = true;
  last_ = {launched_++, at, 0};
}

void AbortDrillWatch::abortReturned(runtime::Nanoseconds at) {
  if (phase_ != AbortDrillPhase::aborting)
    throw std::logic_error("AbortDrillWatch: an abort returned without one begun");
  abortedAt_ = at;
  phase_ = AbortDrillPhase::aborted;
}

void AbortDrillWatch::abortGivenUp(runtime::Nanoseconds at) {
  if (phase_ != AbortDrillPhase::aborting)
    throw std::logic_error("AbortDrillWatch: an abort given up without one begun");
  (void)at;
  phase_ = AbortDrillPhase::abortStuck;
}

}  // namespace fabscope::suite::fault_drill
