// fabscope quickcheck: collects, judges, prints one line, optionally drains or
// resumes the Slurm node. The latency/bandwidth loop runs in two processes of
// this same binary under mpirun (QuickcheckLoop.cpp).
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "inventory/InventoryFormat.hpp"
#include "inventory/JsonWriter.hpp"
#include "quickcheck/Quickcheck.hpp"
#include "runtime/Clock.hpp"
#include "runtime/Errors.hpp"
#include "runtime/Mpi.hpp"

namespace fabscope::quickcheck {
namespace inv = fabscope::inventory;
namespace fs = std::filesystem;

namespace {

struct ChildResult {
  bool started = false;
  bool timedOut = false;
  int exitStatus = -1;  // exit code, or 128 + signal
  std::string output;   // stdout and stderr together
  std::string error;    // why it could not be started
};

// Runs argv[0] (searched in PATH when it has no '/'), stdin from /dev/null,
// collecting its output; the whole process group is killed at the deadline.
ChildResult runChild(const std::vector<std::string>& args, double seconds) {
  ChildResult result;
  int pipeFds[2];
  if (::pipe2(pipeFds, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    result.error = std::string("fork: ") + std::strerror(errno);
    ::close(pipeFds[0]), ::close(pipeFds[1]);
    return result;
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    const int devNull = ::open("/dev/null", O_RDONLY);
    if (devNull >= 0) ::dup2(devNull, 0);
    ::dup2(pipeFds[1], 1);
    ::dup2(pipeFds[1], 2);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "cannot start %s: %s\n", argv[0], std::strerror(errno));
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  ::close(pipeFds[1]);
  result.started = true;
  const auto deadline = runtime::monotonicNow() + static_cast<runtime::Nanoseconds>(seconds * 1e9);
  bool open = true;
  while (open) {
    const auto left = deadline - runtime::monotonicNow();
    if (left <= 0) {
      result.timedOut = true;
      break;
    }
    pollfd p{.fd = pipeFds[0], .events = POLLIN, .revents = 0};
    const int ready = ::poll(&p, 1, static_cast<int>(std::min<runtime::Nanoseconds>(left / 1000000 + 1, 1000)));
    if (ready < 0 && errno != EINTR) break;
    if (ready <= 0) continue;
    char buffer[4096];
    const ssize_t n = ::read(pipeFds[0], buffer, sizeof buffer);
    if (n > 0) {
      if (result.output.size() < (1u << 20)) result.output.append(buffer, static_cast<std::size_t>(n));
    } else if (n == 0 || errno != EINTR) {
      open = false;
    }
  }
  ::close(pipeFds[0]);
  if (result.timedOut) ::kill(-pid, SIGKILL);
  int status = 0;
  // The pipe closed: the child is ending; wait for it, still bounded.
  for (int tries = 0; tries < 500; ++tries) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) {
      result.exitStatus = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return result;
    }
    if (tries == 200) ::kill(-pid, SIGKILL);
    ::usleep(10000);
  }
  result.timedOut = true;
  return result;
}

std::string lastLines(const std::string& text, int count) {
  std::size_t end = text.size();
  while (end > 0 && text[end - 1] == '\n') --end;
  std::size_t start = end;
  for (int i = 0; i < count && start > 0; ++i) {
    start = text.rfind('\n', start - 1);
    if (start == std::string::npos) {
      start = 0;
      break;
    }
  }
  std::string out = text.substr(start, end - start);
  while (!out.empty() && out.front() == '\n') out.erase(0, 1);
  for (char& c : out)
    if (c == '\n') c = ' ';
  return out;
}

std::string programOrDefault(const std::string& given, const char* name) {
  if (!given.empty()) return given;
  if (const char* path = std::getenv("PATH"); path && *path) {
    std::string dirs = path;
    std::size_t start = 0;
    while (start <= dirs.size()) {
      const auto colon = dirs.find(':', start);
      const std::string dir = dirs.substr(start, colon == std::string::npos ? std::string::npos : colon - start);
      if (!dir.empty() && ::access((fs::path(dir) / name).c_str(), X_OK) == 0) return (fs::path(dir) / name).string();
      if (colon == std::string::npos) break;
      start = colon + 1;
    }
  }
  // Slurm starts HealthCheckProgram with a bare environment: no PATH.
  return (fs::path("/usr/bin") / name).string();
}

CheckResult runLoop(const LoopSettings& s, double secondsLeft) {
  CheckResult r;
  r.name = "loop";
  if (!s.enabled) {
    r.detail = "latency/bandwidth loop not run (--no-loop)";
    return r;
  }
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) {
    r.problem = "cannot find its own program to start the loop: " + ec.message();
    return r;
  }
  const double budget = secondsLeft - 1.0;
  if (budget < 3) {
    r.problem = "no time left for the latency loop (raise --time-limit)";
    return r;
  }
  std::vector<std::string> args = {
      programOrDefault(s.mpirun, "mpirun"), "-np", "2", "--oversubscribe", "--bind-to", "none"};
  if (::geteuid() == 0) args.push_back("--allow-run-as-root");
  char number[64];
  std::snprintf(number, sizeof number, "%.3f", budget - 1.0);
  for (const std::string& a :
       {self.string(), std::string("quickcheck"), std::string("--loop-worker"), std::string("--loop-transport"),
        s.transport, std::string("--loop-iterations"), std::to_string(s.latencyIterations), std::string("--loop-bytes"),
        std::to_string(s.bandwidthBytes), std::string("--loop-window"), std::to_string(s.bandwidthWindow),
        std::string("--loop-rounds"), std::to_string(s.bandwidthRounds), std::string("--time-limit"),
        std::string(number)})
    args.push_back(a);
  const ChildResult child = runChild(args, budget);
  if (!child.started) {
    r.problem = "latency loop not started: " + child.error;
    return r;
  }
  if (child.timedOut) {
    r.problem = "latency loop did not finish within " + std::to_string(static_cast<int>(budget)) + " s";
    return r;
  }
  const auto figures = parseLoopLine(child.output);
  if (child.exitStatus != 0 || !figures) {
    r.problem = "latency loop failed (" + args[0] + " exit " + std::to_string(child.exitStatus) +
                "): " + lastLines(child.output, 2);
    return r;
  }
  return judgeLoop(*figures, s);
}

std::string shortHostName() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  std::string host = name;
  return host.substr(0, host.find('.'));
}

// Drains the node with `reason`, or resumes it when healthy and fabscope drained it;
// a drain someone else set is left alone. Returns a note for --verbose.
std::string applyToSlurm(const QuickcheckOptions& o, const std::string& problem) {
  const std::string scontrol = programOrDefault(o.scontrol, "scontrol");
  std::string node = o.slurmNode;
  if (node.empty())
    if (const char* n = std::getenv("SLURMD_NODENAME"); n && *n) node = n;
  if (node.empty()) node = shortHostName();
  const ChildResult shown = runChild({scontrol, "show", "node", node, "--oneliner"}, 10);
  if (!shown.started || shown.timedOut || shown.exitStatus != 0)
    return "slurm: scontrol show node " + node + " failed: " + lastLines(shown.output + shown.error, 1);
  const auto field = [&](const std::string& key) {
    const auto at = shown.output.find(" " + key + "=");
    if (at == std::string::npos) return std::string();
    const auto start = at + key.size() + 2;
    // Reason runs to the end of its text ("... [root@2026-12-01T11:40:00]").
    if (key == "Reason") return shown.output.substr(start, shown.output.find('\n', start) - start);
    return shown.output.substr(start, shown.output.find_first_of(" \n", start) - start);
  };
  const std::string state = field("State");
  const std::string reason = field("Reason");
  const bool drained = state.find("DRAIN") != std::string::npos;
  const bool ours = reason.rfind("fabscope:", 0) == 0;
  std::vector<std::string> update;
  if (!problem.empty()) {
    if (drained && !ours) return "slurm: " + node + " already drained by someone else (" + reason + "); left alone";
    update = {scontrol, "update", "nodename=" + node, "state=drain", "reason=" + problem};
  } else {
    if (!drained || !ours) return "slurm: " + node + " is " + state + "; nothing to do";
    update = {scontrol, "update", "nodename=" + node, "state=resume"};
  }
  const ChildResult done = runChild(update, 10);
  if (!done.started || done.timedOut || done.exitStatus != 0)
    return "slurm: '" + update[1] + " " + update[3] + "' for " + node +
           " failed: " + lastLines(done.output + done.error, 1);
  return "slurm: " + node + " " + (problem.empty() ? "resumed" : "drained");
}

void writeReport(const fs::path& file, const inv::HostInventory& host, const std::vector<CheckResult>& results,
                 const std::string& problem, double seconds) {
  inv::JsonWriter w;
  w.beginObject();
  w.key("host").value(host.hostname);
  w.key("fabscope").value(host.versions.fabscope);
  w.key("healthy").value(problem.empty());
  w.key("problem").value(problem);
  w.key("seconds").value(seconds);
  w.key("checks").beginArray();
  for (const auto& r : results) {
    w.beginObject();
    w.key("name").value(r.name);
    w.key("healthy").value(r.problem.empty());
    w.key("problem").value(r.problem);
    w.key("detail").value(r.detail);
    w.endObject();
  }
  w.endArray();
  w.endObject();
  replaceFile(file, w.str() + "\n");
}

// This host's inventory; under --sys-root only what the files there tell.
inv::HostInventory thisHostsInventory(const QuickcheckOptions& o) {
  inv::InventoryOptions io;
  io.environment = inv::currentEnvironment();
  io.mpiLibraryVersion = runtime::mpiLibraryVersion();
  if (!o.sysRoot.empty()) {
    io.sysRoot = o.sysRoot;
    io.useVerbs = io.useHwloc = io.useCuda = io.useNetlink = io.useVendorTools = false;
  }
  return inv::collectHostInventory(io);
}

// The counters' movement since the last check (kept in the state folder).
CheckResult checkCounters(const QuickcheckOptions& o) {
  CheckResult counters;
  counters.name = "counters";
  try {
    const fs::path dir = o.stateDir.empty() ? defaultStateDir() : o.stateDir;
    secureStateDir(dir, ::geteuid());
    inv::CounterOptions co;
    if (!o.sysRoot.empty()) co.sysRoot = o.sysRoot;
    co.tcp = false;
    co.interfaceNames = o.interfaces;
    inv::CounterSnapshot now = inv::readCounters(co);
    if (o.interfaces.empty())
      std::erase_if(now.values, [](const inv::CounterValue& v) { return v.source == "net:lo"; });
    counters = checkCounterMovement(loadCounterState(dir, ::geteuid()), now, o);
    saveCounterState(dir, now);
  } catch (const RuntimeFailure& e) {
    counters.problem = e.what();
    counters.detail = "counter state not usable";
  }
  return counters;
}

}  // namespace

int runQuickcheckCommand(const QuickcheckOptions& o) {
  const auto started = runtime::monotonicNow();
  const auto secondsLeft = [&] { return o.timeLimitSeconds - double(runtime::monotonicNow() - started) / 1e9; };
  std::vector<CheckResult> results;

  std::optional<inv::Manifest> manifest;
  if (!o.manifestPath.empty()) {
    try {
      manifest = inv::loadManifest(o.manifestPath);
    } catch (const std::exception& e) {
      // A manifest that cannot be read is the admin's error, not the node's: exit 2, no drain.
      std::cerr << "fabscope: error: " << e.what() << "\n";
      return exit_code::usage;
    }
  }

  const inv::HostInventory host = thisHostsInventory(o);
  results.push_back({.name = "inventory",
                     .problem = "",
                     .detail = host.hostname + ": " + std::to_string(host.rdmaDevices.size()) + " RDMA devices, " +
                               std::to_string(host.interfaces.size()) + " interfaces, " +
                               std::to_string(host.gpus.size()) + " GPUs"});
  if (manifest) results.push_back(checkManifestRows(inv::checkManifest(*manifest, {host}), o.manifestPath));
  results.push_back(checkRdmaPorts(host, o, manifest));
  results.push_back(checkGpuNicAffinity(host, o.affinityLimit));

  if (o.counters) results.push_back(checkCounters(o));
  results.push_back(runLoop(o.loop, secondsLeft()));

  const std::string problem = problemLine(results);
  if (o.verbose)
    for (const auto& r : results)
      std::cerr << "quickcheck " << r.name << ": " << (r.problem.empty() ? "ok" : "PROBLEM " + r.problem) << " | "
                << r.detail << "\n";
  if (o.slurmDrain) {
    const std::string note = applyToSlurm(o, problem);
    if (o.verbose) std::cerr << "quickcheck " << note << "\n";
  }
  if (!o.reportPath.empty()) {
    try {
      writeReport(o.reportPath, host, results, problem, double(runtime::monotonicNow() - started) / 1e9);
    } catch (const RuntimeFailure& e) {
      std::cerr << "fabscope: report not written: " << e.what() << "\n";
    }
  }
  if (!problem.empty()) {
    std::cout << problem << std::endl;
    return exit_code::checkFailed;
  }
  std::cout << "fabscope: quickcheck ok (" << results.back().detail << ")" << std::endl;
  return exit_code::ok;
}

}  // namespace fabscope::quickcheck
