#pragma once
// A child process: started with an argument vector (no shell) and extra
// environment, in its own process group, its stdout and stderr into an
// anonymous file; waited for under a deadline, killed (the whole group) when
// the deadline passes. The reference kind's external benchmarks and the run's
// closing verdict line run through it.
#include <sys/types.h>

#include <string>
#include <vector>

#include "runtime/Deadline.hpp"
#include "runtime/Errors.hpp"

namespace fabscope::runtime {

class ChildProcess {
 public:
  static constexpr std::size_t maxOutputBytes = 64 * 1024;

  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();  // kills and reaps a child still running

  // `environment`: "NAME=value" entries that replace or extend the caller's;
  // `unset`: names of the caller's variables the child does not get.
  // Throws RuntimeFailure when the process cannot be started.
  void start(const std::vector<std::string>& args, const std::vector<std::string>& environment,
             const std::vector<std::string>& unset = {});
  // Non-blocking: true once the child has exited.
  bool exited();
  // Waits until the child exits or `deadline` passes; at the deadline kills
  // its process group and returns false.
  bool wait(const runtime::Deadline& deadline);
  bool running() const { return pid_ > 0 && !reaped_; }
  pid_t pid() const { return pid_; }
  int exitStatus() const { return exitStatus_; }  // 128 + N when killed by signal N
  std::string output() const;                     // what it printed so far (at most maxOutputBytes)

 private:
  void kill();
  pid_t pid_ = -1;
  int outputFd_ = -1;
  bool reaped_ = false;
  int exitStatus_ = -1;
};

// How a bounded run ended.
struct ChildRun {
  int exitStatus = -1;    // 128 + N when killed by signal N; -1 when it never ran
  bool timedOut = false;  // killed (with its process group) at the deadline
  std::string output;     // stdout and stderr together, at most ChildProcess::maxOutputBytes
  std::string error;      // why it could not be started
};
// Runs `args` to its end or until `seconds` have passed; never throws.
ChildRun runBounded(const std::vector<std::string>& args, double seconds,
                    const std::vector<std::string>& environment = {});

// Runs `args` to its end, bounded by `seconds`; its output, or "" when it
// could not start, took longer or (unless `anyStatus`: perftest's --version
// exits 1) ended with a status other than 0.
std::string runToEnd(const std::vector<std::string>& args, double seconds, bool anyStatus = false);

}  // namespace fabscope::runtime
