#pragma once
// An admin-supplied shell command that causes or undoes a fault (e.g. takes a
// link down), started without blocking the caller's loop and bounded by a
// deadline. Its exit status and output are kept for the result file.
#include <sys/types.h>

#include <string>
#include <vector>

#include "runtime/Clock.hpp"
#include "runtime/Deadline.hpp"

namespace fabscope::suite {

struct FaultCommandResult {
  std::string command;
  runtime::Nanoseconds startedAt = 0, endedAt = 0;  // monotonic
  int exitStatus = -1;    // the command's exit status; 128 + N when killed by signal N; -1 if it never ran
  bool timedOut = false;  // killed (with its process group) at the deadline
  std::string output;     // stdout and stderr together, at most maxOutputBytes
  std::string error;      // why it could not be started
  bool ok() const { return error.empty() && !timedOut && exitStatus == 0; }
  std::string describe() const;  // one line for an event row
};

class FaultCommand {
 public:
  static constexpr std::size_t maxOutputBytes = 4096;

  FaultCommand() = default;
  FaultCommand(const FaultCommand&) = delete;
  FaultCommand& operator=(const FaultCommand&) = delete;
  // Kills and reaps a command still running (its process group).
  ~FaultCommand();

  // Starts `/bin/sh -c command` in its own process group, output to an
  // anonymous file. Never throws: a start failure is kept in the result.
  void start(const std::string& command, double timeoutSeconds);
  // The same for a program and its arguments, with no shell between: each
  // argument reaches the program as it is, whatever characters it holds.
  // argv[0] without a '/' is looked up on PATH. `environment`: NAME=VALUE
  // strings for the program (replacing this process's environment).
  void start(const std::vector<std::string>& argv, const std::vector<std::string>& environment, double timeoutSeconds);
  bool started() const { return pid_ > 0 || !result_.error.empty(); }
  // Non-blocking: true once the command has ended (or was killed at its
  // deadline, or failed to start).
  bool poll();
  // Polls until done, bounded by the command's own deadline.
  const FaultCommandResult& finish();
  const FaultCommandResult& result() const { return result_; }

 private:
  void spawn(const std::vector<std::string>& argv, char* const* environment, const std::string& shown,
             double timeoutSeconds);
  void collect(int status);
  void killGroup();

  pid_t pid_ = -1;
  int outputFd_ = -1;
  bool done_ = false;
  runtime::Deadline deadline_ = runtime::Deadline::afterSeconds(0);
  FaultCommandResult result_;
};

// Runs a command to its end (or deadline): for the commands outside the loop.
FaultCommandResult runFaultCommand(const std::string& command, double timeoutSeconds);
// Runs a program with its arguments to its end (or deadline), no shell between.
FaultCommandResult runProgram(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                              double timeoutSeconds);

}  // namespace fabscope::suite
