#include "runtime/Watchdog.hpp"

#include <unistd.h>

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
std::atomic<const std::vector<std::string>*> hosts{nullptr};
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
  const std::vector<std::string>* expected = nullptr;
  auto* copy = new std::vector<std::string>(hostOfRank);
  if (!detail::hosts.compare_exchange_strong(expected, copy, std::memory_order_release)) delete copy;
}

namespace {
// "rank 3 (host-b)", "every rank of the collective", or nothing for a local call.
void describePeer(int peer, char* out, std::size_t size) {
  if (peer == everyRank) {
    std::snprintf(out, size, " on every rank of the collective (one of them is lost or silent)");
    return;
  }
  if (peer < 0) {
    out[0] = '\0';
    return;
  }
  const auto* hosts = detail::hosts.load(std::memory_order_acquire);
  if (hosts && static_cast<std::size_t>(peer) < hosts->size())
    std::snprintf(out, size, " on rank %d (%s)", peer, (*hosts)[static_cast<std::size_t>(peer)].c_str());
  else
    std::snprintf(out, size, " on rank %d", peer);
}
}  // namespace

void start(int rank, const std::string& host, double grace) {
  static std::once_flag once;
  std::call_once(once, [&] {
    const auto graceNs = static_cast<Nanoseconds>(grace * 1e9);
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
          // One line, written with write(2): no lock the stuck thread may hold.
          char line[1024];
          const int n = std::snprintf(line, sizeof line,
                                      "fabscope: rank %d (%s): watchdog: still waiting for %s%s %.1f s after its "
                                      "deadline (a call into the communication library does not return: a lost or "
                                      "silent peer); ending this rank with exit code 3\n",
                                      rank, host.c_str(), what ? what : "(unnamed wait)", peer,
                                      static_cast<double>(now - deadline) / 1e9);
          if (n > 0) (void)!write(2, line, static_cast<std::size_t>(std::min<int>(n, sizeof line - 1)));
          _exit(3);
        }
      }
    }).detach();
  });
}

}  // namespace fabscope::runtime::watchdog
