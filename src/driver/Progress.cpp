#include "driver/Progress.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <utility>

namespace fabscope::driver {

void Progress::starting(int done, const std::string& what) {
  heading_ = "[" + std::to_string(done + 1) + "/" + std::to_string(total_) + "] " + what;
  if (!enabled_) return;
  const double elapsed = static_cast<double>(runtime::monotonicNow() - start_) / 1e9;
  if (elapsed < quietSeconds) return;
  const double left = done > 0 ? elapsed / done * (total_ - done) : 0;
  std::fprintf(stderr, "%s  (elapsed %.0fs, ~%.0fs left)\n", heading_.c_str(), elapsed, left);
  std::fflush(stderr);
}

ProgressWatch::ProgressWatch(std::string heading, const suite::SampleBuffer& samples, double timeoutSeconds)
    : heading_(std::move(heading)), samples_(samples), timeoutSeconds_(timeoutSeconds), thread_([this] { watch(); }) {}

ProgressWatch::~ProgressWatch() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
}

void ProgressWatch::watch() {
  using namespace std::chrono;
  const auto started = steady_clock::now();
  auto next = started + duration_cast<steady_clock::duration>(duration<double>(firstLineSeconds));
  std::size_t doneBefore = 0;
  std::unique_lock lock(mutex_);
  while (!wake_.wait_until(lock, next, [this] { return stop_; })) {
    const std::size_t done = samples_.count();
    printLine(duration<double>(steady_clock::now() - started).count(), done, doneBefore);
    doneBefore = done;
    next += duration_cast<steady_clock::duration>(duration<double>(intervalSeconds));
  }
}

void ProgressWatch::printLine(double elapsed, std::size_t done, std::size_t doneBefore) const {
  const std::size_t planned = samples_.capacity();
  const double deadlineIn = std::max(0.0, timeoutSeconds_ - elapsed);
  char what[192];
  if (planned == 0) {
    std::snprintf(what, sizeof what, "rank 0 records no samples in this test; deadline in %.0fs", deadlineIn);
  } else if (done == 0) {
    std::snprintf(what, sizeof what, "rank 0: no sample yet of %zu planned; deadline in %.0fs", planned, deadlineIn);
  } else {
    // At this rank's rate so far; never past the deadline.
    const double atThisRate =
        elapsed / static_cast<double>(done) * static_cast<double>(planned - std::min(done, planned));
    std::snprintf(what, sizeof what, "rank 0: %zu of %zu samples (%.0f%%)%s, ~%.0fs left (deadline in %.0fs)", done,
                  planned, 100.0 * static_cast<double>(done) / static_cast<double>(planned),
                  done == doneBefore ? ", none new since the last line" : "", std::min(atThisRate, deadlineIn),
                  deadlineIn);
  }
  std::fprintf(stderr, "%s: running %.0fs, %s\n", heading_.c_str(), elapsed, what);
  std::fflush(stderr);
}

}  // namespace fabscope::driver
