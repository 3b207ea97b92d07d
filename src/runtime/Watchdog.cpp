#include "runtime/Watchdog.hpp"
#include "runtime/WatchdogRanks.hpp"

#include "fabscope/BuildConfig.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

namespace fabscope::runtime::watchdog {
namespace detail {
namespace {
// Never destroyed: the watchdog thread may look at it while the process exits.
Slot* const slots = new Slot[kSlots];
std::atomic<int> taken{0};
// Set once, never freed (the watchdog thread may read it while the process exits).
struct Hosts {
  std::vector<std::string> ofRank;
};
struct Pids {
  std::vector<std::int64_t> ofRank;
};
std::atomic<const Hosts*> hosts{nullptr};
std::atomic<const Pids*> pids{nullptr};
}  // namespace

Slot* slotOfThisThread() noexcept {
  thread_local Slot* mine = [] {
    const int i = taken.fetch_add(1, std::memory_order_relaxed);
    return i < kSlots ? &slots[i] : nullptr;
  }();
  return mine;
}
}  // namespace detail

void knowHosts(const std::vector<std::string>& hostOfRank) {
  const detail::Hosts* expected = nullptr;
  auto* copy = new detail::Hosts{hostOfRank};
  if (!detail::hosts.compare_exchange_strong(expected, copy, std::memory_order_release)) delete copy;
}

void knowPids(const std::vector<std::int64_t>& pidOfRank) {
  const detail::Pids* expected = nullptr;
  auto* copy = new detail::Pids{pidOfRank};
  if (!detail::pids.compare_exchange_strong(expected, copy, std::memory_order_release)) delete copy;
}

namespace {
// " on rank 3 (host-b)", " on every rank of the collective ...", or nothing for
// a local call. Into a fixed buffer: the watchdog's thread and the fatal-signal
// handler call it while another thread may hold the allocator's lock.
void describePeer(int peer, char* out, std::size_t size) {
  if (peer == everyRank) {
    std::snprintf(out, size, " on every rank of the collective (one of them is lost or silent)");
    return;
  }
  if (peer < 0) {
    out[0] = '\0';
    return;
  }
  const auto* known = detail::hosts.load(std::memory_order_acquire);
  if (known && static_cast<std::size_t>(peer) < known->ofRank.size())
    std::snprintf(out, size, " on rank %d (%s)", peer, known->ofRank[static_cast<std::size_t>(peer)].c_str());
  else
    std::snprintf(out, size, " on rank %d", peer);
}

}  // namespace

std::string describePeer(int peer) {
  char text[320];
  describePeer(peer, text, sizeof text);
  return text;
}

namespace {
// The state letter of process `pid` from /proc (R, S, D, T, t, Z, ...), '-'
// when it no longer exists, '?' when it cannot be read. Plain system calls:
// the thread it runs in is about to end the process.
char processState(std::int64_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%lld/stat", static_cast<long long>(pid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? '-' : '?';
  char text[512];
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return '?';
  text[n] = '\0';
  // "pid (comm) S ...": the state follows the last ')' (comm may hold one).
  const char* paren = std::strrchr(text, ')');
  return paren && paren[1] == ' ' && paren[2] ? paren[2] : '?';
}

// "; on this host rank 1 (vm) is gone, rank 3 (vm) is stopped": the ranks of
// this rank's own host (same host name) that are dead, zombies or stopped.
void describeLocalSilence(int me, const std::string& myHost, char* out, std::size_t size) {
  out[0] = '\0';
  const auto* hosts = detail::hosts.load(std::memory_order_acquire);
  const auto* pids = detail::pids.load(std::memory_order_acquire);
  if (!hosts || !pids || pids->ofRank.size() != hosts->ofRank.size()) return;
  std::size_t used = 0;
  for (std::size_t r = 0; r < pids->ofRank.size() && used + 1 < size; ++r) {
    const auto pid = pids->ofRank[r];
    if (static_cast<int>(r) == me || hosts->ofRank[r] != myHost || pid <= 0) continue;
    const char state = processState(pid);
    const char* what = state == '-' || state == 'Z' || state == 'X' ? "is gone"
                       : state == 'T' || state == 't'               ? "is stopped"
                                                                    : nullptr;
    if (!what) continue;
    const int n =
        std::snprintf(out + used, size - used, "%s rank %zu (%s) %s (pid %lld)", used == 0 ? "; on this host" : ",", r,
                      hosts->ofRank[r].c_str(), what, static_cast<long long>(pid));
    if (n < 0) break;
    used += std::min(static_cast<std::size_t>(n), size - used - 1);
  }
}
}  // namespace

namespace {
std::atomic<JobEnder> jobEnder{nullptr};
// When the watchdog called the job ender (0: not yet): the backstop thread's clock.
std::atomic<Nanoseconds> endingSince{0};
// How long MPI_Abort may take before the backstop ends this process alone.
constexpr double endWithinSeconds = 10;

[[noreturn]] void endJob() {
  if (const JobEnder ender = jobEnder.load(std::memory_order_acquire)) {
    endingSince.store(monotonicNow(), std::memory_order_release);
    ender(3);
  }
  _exit(3);
}
}  // namespace

void setJobEnder(JobEnder ender) noexcept { jobEnder.store(ender, std::memory_order_release); }

namespace {
// Who this process is, for the fatal-signal line (set once by start()).
int crashRank = -1;
char crashHost[256] = {};

// The wait the crashing thread was in ("" when none): the slot of this thread.
void describeCurrentWait(char* out, std::size_t size) {
  out[0] = '\0';
  detail::Slot* slot = detail::slotOfThisThread();
  if (!slot || slot->deadline.load(std::memory_order_relaxed) == 0) return;
  const char* what = slot->what.load(std::memory_order_relaxed);
  char peer[320];
  describePeer(slot->peer.load(std::memory_order_relaxed), peer, sizeof peer);
  std::snprintf(out, size, " while waiting for %s%s", what ? what : "(unnamed wait)", peer);
}

// Best effort in a dying process: formatting and /proc reads are not
// async-signal-safe, but the process ends right after (_exit) whatever they do.
extern "C" void onFatalSignal(int signal) {
  char wait[800], silence[640], line[2048];
  describeCurrentWait(wait, sizeof wait);
  describeLocalSilence(crashRank, crashHost, silence, sizeof silence);
  const int n = std::snprintf(line, sizeof line,
                              "fabscope: rank %d (%s): watchdog: crashed with signal %d (%s)%s (a communication "
                              "library failing after a lost or silent peer, or a bug%s); ending this rank with exit "
                              "code 3\n",
                              crashRank, crashHost, signal, strsignal(signal), wait, silence[0] ? silence : "");
  if (n > 0) (void)!write(2, line, static_cast<std::size_t>(std::min<int>(n, sizeof line - 1)));
  _exit(3);
}

void takeOverFatalSignals() {
#if defined(__SANITIZE_ADDRESS__)
  // Under AddressSanitizer its own report of the fault (with the stack) is
  // worth more than this line: leave its handlers in place.
  return;
#endif
  struct sigaction action = {};
  action.sa_handler = onFatalSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND;  // a second fault inside the handler ends the process plainly
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(s, &action, nullptr);
}
}  // namespace

void start(int rank, const std::string& host, double grace) {
#if FABSCOPE_SMPI
  // Under SimGrid SMPI every rank is an actor of one process on simulated
  // time: a thread sleeping on real time would judge simulated deadlines by the
  // host's clock, and a fatal-signal handler or _exit would end every rank at
  // once. SMPI's own deadlock detection ends a simulation that cannot progress.
  (void)rank;
  (void)host;
  (void)grace;
  return;
#endif
  static std::once_flag once;
  std::call_once(once, [&] {
    crashRank = rank;
    std::snprintf(crashHost, sizeof crashHost, "%s", host.c_str());
    takeOverFatalSignals();
    const auto graceNs = static_cast<Nanoseconds>(grace * 1e9);
    // The backstop: a job ender that never returns must not keep the rank alive.
    std::thread([] {
      constexpr auto limit = static_cast<Nanoseconds>(endWithinSeconds * 1e9);
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        const Nanoseconds since = endingSince.load(std::memory_order_acquire);
        if (since != 0 && monotonicNow() > since + limit) _exit(3);
      }
    }).detach();
    std::thread([rank, host, graceNs] {
      for (;;) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        const Nanoseconds now = monotonicNow();
        const int used = std::min(detail::taken.load(std::memory_order_relaxed), detail::kSlots);
        for (int i = 0; i < used; ++i) {
          auto& slot = detail::slots[i];
          const Nanoseconds deadline = slot.deadline.load(std::memory_order_acquire);
          if (deadline == 0 || deadline > INT64_MAX - graceNs || now < deadline + graceNs) continue;
          const char* what = slot.what.load(std::memory_order_relaxed);
          char peer[320];
          describePeer(slot.peer.load(std::memory_order_relaxed), peer, sizeof peer);
          char silence[640];
          describeLocalSilence(rank, host, silence, sizeof silence);
          // One line, written with write(2): no lock the stuck thread may hold.
          char line[2048];
          const int n = std::snprintf(line, sizeof line,
                                      "fabscope: rank %d (%s): watchdog: still waiting for %s%s %.1f s after its "
                                      "deadline (a call into the communication library does not return: a lost or "
                                      "silent peer%s); ending this rank with exit code 3%s\n",
                                      rank, host.c_str(), what ? what : "(unnamed wait)", peer,
                                      static_cast<double>(now - deadline) / 1e9, silence,
                                      jobEnder.load(std::memory_order_acquire)
                                          ? " and the job with it (MPI_Abort: the launcher ends every rank)"
                                          : "");
          if (n > 0) (void)!write(2, line, static_cast<std::size_t>(std::min<int>(n, sizeof line - 1)));
          endJob();
        }
      }
    }).detach();
  });
}

}  // namespace fabscope::runtime::watchdog
