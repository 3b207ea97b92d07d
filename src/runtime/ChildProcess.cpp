#include "runtime/ChildProcess.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

extern char** environ;

namespace fabscope::runtime {

ChildProcess::~ChildProcess() {
  if (running()) kill();
  if (outputFd_ >= 0) ::close(outputFd_);
}

void ChildProcess::start(const std::vector<std::string>& args, const std::vector<std::string>& environment,
                         const std::vector<std::string>& unset) {
  outputFd_ = ::memfd_create("fabscope-child", MFD_CLOEXEC);
  if (outputFd_ < 0)
    throw RuntimeFailure(std::string("memfd_create for the output of ") + args[0] + ": " + std::strerror(errno));
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const auto name = entry.substr(0, entry.find('='));
    bool replaced = false;
    for (const auto& gone : unset)
      if (gone == name) replaced = true;
    for (const auto& extra : environment)
      if (extra.substr(0, extra.find('=')) == name) replaced = true;
    if (!replaced) env.push_back(entry);
  }
  env.insert(env.end(), environment.begin(), environment.end());
  std::vector<char*> argv, envp;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, outputFd_, 1);
  posix_spawn_file_actions_adddup2(&actions, outputFd_, 2);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  // Its own process group: a kill at the deadline reaches what it started too.
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  const int rc = ::posix_spawn(&pid_, argv[0], &actions, &attributes, argv.data(), envp.data());
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    pid_ = -1;
    throw RuntimeFailure("cannot start " + args[0] + ": " + std::strerror(rc));
  }
}

bool ChildProcess::exited() {
  if (pid_ <= 0 || reaped_) return true;
  int status = 0;
  const pid_t got = ::waitpid(pid_, &status, WNOHANG);
  if (got != pid_) return false;
  reaped_ = true;
  exitStatus_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return true;
}

bool ChildProcess::wait(const Deadline& deadline) {
  while (!exited()) {
    if (deadline.expired()) {
      kill();
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void ChildProcess::kill() {
  ::kill(-pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  reaped_ = true;
  exitStatus_ = 128 + SIGKILL;
}

std::string ChildProcess::output() const {
  if (outputFd_ < 0) return "";
  std::string text(maxOutputBytes, '\0');
  const ssize_t got = ::pread(outputFd_, text.data(), text.size(), 0);
  text.resize(got > 0 ? static_cast<std::size_t>(got) : 0);
  return text;
}

ChildRun runBounded(const std::vector<std::string>& args, double seconds, const std::vector<std::string>& environment) {
  ChildRun run;
  ChildProcess child;
  try {
    child.start(args, environment);
  } catch (const RuntimeFailure& e) {
    run.error = e.what();
    return run;
  }
  run.timedOut = !child.wait(Deadline::afterSeconds(seconds));
  run.exitStatus = child.exitStatus();
  run.output = child.output();
  return run;
}

std::string runToEnd(const std::vector<std::string>& args, double seconds, bool anyStatus) {
  const ChildRun run = runBounded(args, seconds);
  if (!run.error.empty() || run.timedOut || (run.exitStatus != 0 && !anyStatus)) return "";
  return run.output;
}

}  // namespace fabscope::runtime
