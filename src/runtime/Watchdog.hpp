#pragma once
// A per-rank watchdog that needs no MPI, UCX or NCCL progress ("no
// hang anywhere"). Every wait the program makes says what it waits for, on
// which peer, and until when (waitUntil does it for every poll loop; loops of
// their own and teardown calls such as MPI_Finalize or a UCX worker's destroy
// hold a Watch). A thread of the watchdog's own looks four times a second,
// and when a wait has not returned `grace` after its deadline (a poll or a
// call is stuck inside a library, e.g. UCX shared memory after a peer was
// killed), it writes one line on stderr naming the rank, its host, the wait
// and the peer, and ends the process with exit code 3, so the launcher and
// the other ranks finish instead of hanging.
#include <atomic>
#include <string>
#include <vector>

#include "runtime/Clock.hpp"

namespace fabscope::runtime::watchdog {

// Extra time after a wait's deadline before the watchdog ends the process.
inline constexpr double graceSeconds = 10;

// The peer of a wait that is not on one rank.
inline constexpr int noPeer = -1;     // a local call (e.g. a library's teardown)
inline constexpr int everyRank = -2;  // a collective: any rank of the communicator

// Starts the watchdog thread once per process (later calls change nothing),
// and takes over the fatal signals (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT):
// a library that crashes after a peer was lost (Open MPI's shared-memory
// path may read a dead peer's fragments) ends the rank with one line naming
// the rank, the signal, the wait it was in and the ranks of its host that are
// gone or stopped, and exit code 3, instead of a bare backtrace (not under
// AddressSanitizer, whose report is kept). Call it after MPI_Init (which
// installs handlers of its own).
void start(int rank, const std::string& host, double grace = graceSeconds);
// The host of every rank, for naming the peer (set once the ranks know them;
// until then a peer is named by its rank only).
void knowHosts(const std::vector<std::string>& hostOfRank);
// How a wait names the peer it waits on: " on rank 3 (host-b)" (the host once
// knowHosts has run, else the rank alone), " on every rank of the collective
// (...)" for everyRank, and "" for noPeer. The watchdog's line and a missed
// deadline's error say the same.
std::string describePeer(int peer);

// How the watchdog ends the job after its line. Ending only this process
// (_exit(3)) leaves the job to the launcher, and a launcher told not to end
// the others on one rank's exit (mpirun --mca orte_abort_on_non_zero_status 0,
// srun where KillOnBadExit=0) then waits for ever on a peer that is stopped,
// or (Open MPI 4.1's mpirun, seen on this machine) on nothing at all once a
// peer died by a signal. A job ender (MpiEnvironment registers MPI_Abort)
// asks the launcher to end every rank, a stopped one included. It is called
// on the watchdog's thread while another thread may be inside the library,
// which MPI at thread level single does not promise to allow (Open MPI 4.1's
// MPI_Abort only messages the launcher, and worked so on this machine); if
// the process still runs `endWithinSeconds` later, a thread of the
// watchdog's own ends it with exit code 3. Null: only this process ends.
using JobEnder = void (*)(int code);
void setJobEnder(JobEnder ender) noexcept;

namespace detail {
// One slot per thread that waits (threads take the next free slot once).
struct Slot {
  std::atomic<const char*> what{nullptr};
  std::atomic<int> peer{noPeer};
  std::atomic<Nanoseconds> deadline{0};  // 0: not waiting
};
inline constexpr int kSlots = 32;
Slot* slotOfThisThread() noexcept;  // null when every slot is taken (then unwatched)
}  // namespace detail

// Marks the current thread as waiting for `what` on `peer` until `deadline`
// for its lifetime: three relaxed stores in, three out (nested waits restore
// the outer one).
class Watch {
 public:
  Watch(const char* what, Nanoseconds deadline, int peer = noPeer) noexcept : slot_(detail::slotOfThisThread()) {
    if (!slot_) return;
    outerWhat_ = slot_->what.load(std::memory_order_relaxed);
    outerPeer_ = slot_->peer.load(std::memory_order_relaxed);
    outerDeadline_ = slot_->deadline.load(std::memory_order_relaxed);
    slot_->what.store(what, std::memory_order_relaxed);
    slot_->peer.store(peer, std::memory_order_relaxed);
    slot_->deadline.store(deadline, std::memory_order_release);
  }
  ~Watch() {
    if (!slot_) return;
    slot_->deadline.store(outerDeadline_, std::memory_order_release);
    slot_->what.store(outerWhat_, std::memory_order_relaxed);
    slot_->peer.store(outerPeer_, std::memory_order_relaxed);
  }
  Watch(const Watch&) = delete;
  Watch& operator=(const Watch&) = delete;

 private:
  detail::Slot* slot_;
  const char* outerWhat_ = nullptr;
  int outerPeer_ = noPeer;
  Nanoseconds outerDeadline_ = 0;
};

// A Watch for a call that has no deadline of its own (teardown: MPI_Finalize,
// MPI_Abort, a UCX worker's destroy): `seconds` from now.
inline Nanoseconds secondsFromNow(double seconds) noexcept {
  return monotonicNow() + static_cast<Nanoseconds>(seconds * 1e9);
}

}  // namespace fabscope::runtime::watchdog
