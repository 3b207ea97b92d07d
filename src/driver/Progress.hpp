#pragma once
// Progress on stderr (rank 0) for runs that last more than a few seconds:
// test i of N, elapsed, and an estimate of what is left, between tests; and,
// while one test runs long, a line every few seconds with the samples rank 0
// has recorded so far and the time left. N is the planned count, serial
// retests included, so it never grows during the run.
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "kinds/SampleBuffer.hpp"
#include "runtime/Clock.hpp"

namespace fabscope::driver {

// While one instance runs: a thread that wakes every few seconds, reads the
// count of samples the timed loop has recorded (SampleBuffer::count, an
// atomic: the loop itself is not touched, nothing is added to it) and prints
// one line. Stops and joins when destroyed; a short test prints nothing.
class ProgressWatch {
 public:
  ProgressWatch(std::string heading, const suite::SampleBuffer& samples, double timeoutSeconds);
  ~ProgressWatch();
  ProgressWatch(const ProgressWatch&) = delete;
  ProgressWatch& operator=(const ProgressWatch&) = delete;

  static constexpr double firstLineSeconds = 5.0;
  static constexpr double intervalSeconds = 5.0;

 private:
  void watch();
  void printLine(double elapsed, std::size_t done, std::size_t doneBefore) const;

  std::string heading_;
  const suite::SampleBuffer& samples_;
  double timeoutSeconds_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;
};

class Progress {
 public:
  Progress(int total, bool enabled) : total_(total), enabled_(enabled), start_(runtime::monotonicNow()) {}

  // Instance `done` (0-based) of the total starts.
  void starting(int done, const std::string& what);
  bool enabled() const noexcept { return enabled_; }
  // "[i/N] what", for the lines printed while the current instance runs.
  const std::string& heading() const noexcept { return heading_; }

 private:
  static constexpr double quietSeconds = 3.0;
  int total_;
  bool enabled_;
  runtime::Nanoseconds start_;
  std::string heading_;
};

}  // namespace fabscope::driver
