#include "kinds/fault/FaultCommand.hpp"

#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include "runtime/ShellQuote.hpp"

extern char** environ;

namespace fabscope::suite {

std::string FaultCommandResult::describe() const {
  if (!error.empty()) return "not started: " + error;
  std::string line = timedOut ? "killed at its deadline" : "exit " + std::to_string(exitStatus);
  line += " after " + std::to_string((endedAt - startedAt) / 1000000) + " ms";
  if (!output.empty()) {
    auto first = output.substr(0, output.find('\n'));
    line += ": " + first;
  }
  return line;
}

FaultCommand::~FaultCommand() {
  if (pid_ > 0 && !done_) {
    killGroup();
    int status = 0;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (outputFd_ >= 0) close(outputFd_);
}

void FaultCommand::start(const std::string& command, double timeoutSeconds) {
  spawn({"/bin/sh", "-c", command}, environ, command, timeoutSeconds);
}

void FaultCommand::start(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                         double timeoutSeconds) {
  std::vector<char*> env;
  for (const auto& entry : environment) env.push_back(const_cast<char*>(entry.c_str()));
  env.push_back(nullptr);
  std::string shown;
  for (const auto& word : argv) shown += (shown.empty() ? "" : " ") + runtime::shellQuoted(word);
  spawn(argv, env.data(), shown, timeoutSeconds);
}

void FaultCommand::spawn(const std::vector<std::string>& argv, char* const* environment, const std::string& shown,
                         double timeoutSeconds) {
  result_ = {};
  result_.command = shown;
  result_.startedAt = runtime::monotonicNow();
  deadline_ = runtime::Deadline::afterSeconds(timeoutSeconds);
  const auto failed = [&](const std::string& why) {
    pid_ = -1;
    result_.error = why;
    result_.endedAt = runtime::monotonicNow();
    done_ = true;
  };
  if (argv.empty()) return failed("no program to run");
  outputFd_ = memfd_create("fabscope-fault-command", MFD_CLOEXEC);
  if (outputFd_ < 0) return failed(std::string("memfd_create: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attributes;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attributes);
  // Own process group: a deadline kills the command and everything it started.
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attributes, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attributes, &none);
  posix_spawnattr_setsigdefault(&attributes, &all);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, outputFd_, 1);
  posix_spawn_file_actions_adddup2(&actions, outputFd_, 2);
  std::vector<char*> args;
  for (const auto& word : argv) args.push_back(const_cast<char*>(word.c_str()));
  args.push_back(nullptr);
  // posix_spawnp: PATH lookup only for a name without '/', as a shell would.
  const int rc = posix_spawnp(&pid_, args[0], &actions, &attributes, args.data(), environment);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  if (rc != 0) failed("posix_spawn " + argv[0] + ": " + std::strerror(rc));
}

void FaultCommand::killGroup() {
  if (pid_ > 0) kill(-pid_, SIGKILL);
}

void FaultCommand::collect(int status) {
  done_ = true;
  result_.endedAt = runtime::monotonicNow();
  if (WIFEXITED(status))
    result_.exitStatus = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result_.exitStatus = 128 + WTERMSIG(status);
  // What the command (and anything it left behind) wrote; the group is gone
  // or killed, so the file no longer grows.
  char buffer[maxOutputBytes];
  const ssize_t n = pread(outputFd_, buffer, sizeof buffer, 0);
  if (n > 0) result_.output.assign(buffer, static_cast<std::size_t>(n));
  while (!result_.output.empty() && (result_.output.back() == '\n' || result_.output.back() == '\0'))
    result_.output.pop_back();
  close(outputFd_);
  outputFd_ = -1;
}

bool FaultCommand::poll() {
  if (done_) return true;
  if (pid_ <= 0) return false;
  int status = 0;
  siginfo_t info{};
  // WNOWAIT: the process stays unreaped, so its group id cannot be reused
  // before the helpers it left in the group are killed.
  if (waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid_) {
    killGroup();
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    collect(status);
    return true;
  }
  if (deadline_.expired()) {
    killGroup();
    result_.timedOut = true;
    while (waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    collect(status);
    return true;
  }
  return false;
}

const FaultCommandResult& FaultCommand::finish() {
  while (!poll()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  return result_;
}

FaultCommandResult runFaultCommand(const std::string& command, double timeoutSeconds) {
  FaultCommand c;
  c.start(command, timeoutSeconds);
  return c.finish();
}

FaultCommandResult runProgram(const std::vector<std::string>& argv, const std::vector<std::string>& environment,
                              double timeoutSeconds) {
  FaultCommand c;
  c.start(argv, environment, timeoutSeconds);
  return c.finish();
}

}  // namespace fabscope::suite
