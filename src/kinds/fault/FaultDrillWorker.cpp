// Fault drill, worker side: serves requests, sends heartbeats to every drill
// rank and watches theirs; the victim acts out its fault (kill: SIGKILL;
// hang: silent and idle while alive; link-down, loss: carries on as its link
// lets it) and leaves after the drill.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "runtime/Deadlines.hpp"
#include "kinds/fault/FaultDrillRoles.hpp"
#include "kinds/fault/FaultHeartbeat.hpp"

namespace fabscope::suite::fault_drill {

Detection serveWorker(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, bool victim,
                      EventLog& events) {
  auto& t = ctx.transport;
  const int client = ctx.participants[0];
  const int victimRank = ctx.participants[static_cast<std::size_t>(c.victim)];
  const auto peers = othersThan(ctx.participants, ctx.world.rank());
  constexpr int requestSlot = 0, replySlot = 1, heartbeatSlots = 2;
  t.reserve(heartbeatSlots + Heartbeats::slotsNeeded(peers.size()));
  auto* message = reinterpret_cast<RequestMessage*>(ctx.buffers.allocate(sizeof(RequestMessage)));
  std::byte* reply = ctx.buffers.allocate(static_cast<std::size_t>(c.replyBytes));
  auto* beats = reinterpret_cast<std::uint64_t*>(ctx.buffers.allocate(2 * peers.size() * sizeof(std::uint64_t)));
  std::memset(reply, 0x5a, static_cast<std::size_t>(c.replyBytes));
  Heartbeats heartbeats(t, peers, heartbeatSlots, static_cast<runtime::Nanoseconds>(c.heartbeatSeconds * 1e9),
                        static_cast<runtime::Nanoseconds>(c.heartbeatDeadlineSeconds * 1e9), beats);
  const auto faultAt = start + static_cast<runtime::Nanoseconds>(c.atSeconds * 1e9);
  const auto leaveAt = runtime::Deadline(start + static_cast<runtime::Nanoseconds>(c.victimLeavesAfterSeconds() * 1e9));
  const auto giveUp = runtime::Deadline(start + static_cast<runtime::Nanoseconds>((c.workloadSeconds() + 5) * 1e9));
  // A victim whose link is cut must not wait on it past the point where it leaves.
  const runtime::Deadline& waits = victim ? leaveAt : ctx.deadline;

  Detection detection;
  std::map<int, bool> lost;
  bool stopped = false;  // the client's stop arrived: the drill is over
  bool hangEnded = false;  // hang with hang_for: the victim is back at work
  auto noteLost = [&](int peer, runtime::Nanoseconds at, const std::string& path) {
    if (peer < 0 || lost[peer]) return;
    lost[peer] = true;
    if (stopped) {
      // After the stop peers leave (and stop progressing their transport) on
      // purpose: an endpoint error now is the orderly end, not a detected fault.
      events.add(ctx, at, "gone_after_stop", peer, path);
      return;
    }
    // A peer that may come back (the victim of a flap or of a hang that ends,
    // or, seen from the victim, everyone behind its cut link) stays watched;
    // a transport failure is final.
    if (c.victimReturns() && path.rfind("transport", 0) != 0) heartbeats.markSilent(peer);
    else heartbeats.forget(peer);
    events.add(ctx, at, "detected", peer, path);
    if (peer == victimRank && !detection.at) detection = {at, path};
  };
  auto noteReturned = [&](int peer, runtime::Nanoseconds at, const std::string& path) {
    if (!lost[peer] || stopped) return;
    lost[peer] = false;
    events.add(ctx, at, "rejoined", peer, path);
  };
  if (c.victimReturns())
    for (int peer : peers)
      if (victim || peer == victimRank) heartbeats.watchForReturn(peer);
  t.onError([&](const transport::TransportError& e) { noteLost(e.peer, e.at, "transport error callback: " + e.message); });
  ErrorHandlerGuard guard{t};

  // The buffer is marked empty before every receive: when the transport abandons
  // its operations (a peer failed), a request that had already arrived is in the
  // buffer and must be served, not dropped (the client would wait for its reply in vain).
  auto receiveNextRequest = [&] {
    message->id = -1;
    message->stop = 0;
    t.postRecv(requestSlot, client, requestTag, message, sizeof *message);
  };
  heartbeats.start(runtime::monotonicNow());
  receiveNextRequest();
  for (;;) {
    const auto now = runtime::monotonicNow();
    if (victim && now >= faultAt) {
      if (c.fault == "kill") kill(getpid(), SIGKILL);  // nothing is flushed first: the drill is about the survivors
      if (c.fault == "hang" && !hangEnded) {
        // Alive, connected and silent: no progress, no heartbeats, no replies;
        // to the end, or for hang_for and then back to work.
        const auto hangEnds = c.hangForSeconds > 0
                                  ? runtime::Deadline(faultAt + static_cast<runtime::Nanoseconds>(c.hangForSeconds * 1e9))
                                  : leaveAt;
        while (!hangEnds.expired() && !leaveAt.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (c.hangForSeconds <= 0 || leaveAt.expired()) return detection;
        hangEnded = true;
        continue;
      }
      // link-down, loss: the client's fault_command acts on the link; this
      // rank carries on as well as its link lets it.
    }
    if (victim && leaveAt.expiredAt(now)) return detection;
    if (!victim && giveUp.expiredAt(now)) {
      // The client is gone or never sent the stop: carry on to the survivors'
      // exchange rather than wait out the test's deadline.
      events.add(ctx, now, "error", client, "no stop from the client by the end of the workload + 5 s");
      break;
    }
    bool abandoned = false;
    for (const auto& loss : heartbeats.poll(now, abandoned)) {
      if (loss.returned) noteReturned(loss.peer, loss.at, loss.detail);
      else noteLost(loss.peer, loss.at, loss.detail);
    }
    bool arrived = false;
    try {
      arrived = t.testSlots(requestSlot, 1);
    } catch (const RuntimeFailure& e) {
      noteLost(client, runtime::monotonicNow(), std::string("transport failure: ") + e.what());
      abandoned = true;
    }
    if (abandoned) {
      // The transport cancelled every outstanding operation.
      heartbeats.repost();
      if (lost[client]) ctx.deadline.fail("requests from the client (rank " + std::to_string(client) + " was lost)");
      arrived = message->id >= 0 || message->stop != 0;
      if (!arrived) {
        receiveNextRequest();
        continue;
      }
    }
    if (arrived) {
      if (message->stop) {
        stopped = true;
        break;
      }
      t.postSend(replySlot, client, replyTagBase + message->id, reply, static_cast<std::size_t>(c.replyBytes));
      try {
        t.waitSlots(replySlot, 1, waits);
      } catch (const DeadlineExceeded&) {
        if (victim) return detection;
        throw;
      }
      receiveNextRequest();
    }
    if (ctx.deadline.expiredAt(now)) ctx.deadline.fail("the next request from the client");
  }
  heartbeats.sayBye(runtime::Deadline::afterSeconds(runtime::deadlines::goodbyeSeconds));
  if (victim && stopped) {
    // A victim still connected (its fault did nothing, or the link came back) got
    // its stop with the survivors: if it left at once, a survivor still waiting for
    // its own stop would see the victim's endpoint fail and count a detection of a
    // fault that never happened. It lingers one heartbeat deadline, bounded.
    const auto linger = runtime::Deadline(
        std::min(runtime::monotonicNow() + static_cast<runtime::Nanoseconds>(c.heartbeatDeadlineSeconds * 1e9),
                 leaveAt.at()));
    while (!linger.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return detection;
}

}  // namespace fabscope::suite::fault_drill
