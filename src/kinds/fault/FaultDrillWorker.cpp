// Fault drill, worker side: serves requests, sends heartbeats to every drill
// rank and watches theirs; the victim acts out its fault (kill: SIGKILL;
// hang: silent and idle while alive; link-down, loss: carries on as its link
// lets it) and leaves after the drill.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <thread>

#include "kinds/fault/FaultDrillRoles.hpp"
#include "kinds/fault/FaultHeartbeat.hpp"
#include "runtime/Deadlines.hpp"

namespace fabscope::suite::fault_drill {

namespace {

// What a pass of the worker's loop does next.
enum class Next { goOn, passAgain, leave, stop };

// One worker of the drill (the victim among them): its request loop, its
// heartbeats, and what it learns of lost and returning peers.
class DrillWorker {
 public:
  DrillWorker(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, bool victim, EventLog& events);
  Detection serve();

 private:
  Next actOutFault();
  void hearHeartbeats(runtime::Nanoseconds now, bool& abandoned);
  Next serveRequest(bool abandoned);
  void receiveNextRequest();
  void noteLost(int peer, runtime::Nanoseconds at, const std::string& path);
  void noteReturned(int peer, runtime::Nanoseconds at, const std::string& path);
  void lingerAfterStop();
  void acknowledgeStop();

  static constexpr int requestSlot = 0, replySlot = 1, heartbeatSlots = 2;
  RunContext& ctx_;
  const FaultDrillConfig& c_;
  const bool victim_;
  EventLog& events_;
  transport::Transport& t_;
  const int client_, victimRank_;
  const std::vector<int> peers_;
  RequestMessage* message_ = nullptr;
  std::byte* reply_ = nullptr;
  std::unique_ptr<Heartbeats> heartbeats_;
  const runtime::Nanoseconds faultAt_;
  const runtime::Deadline leaveAt_, giveUp_;
  // A victim whose link is cut must not wait on it past the point where it leaves.
  const runtime::Deadline& waits_;
  Detection detection_;
  std::map<int, bool> lost_;
  bool stopped_ = false;    // the client's stop arrived: the drill is over
  bool hangEnded_ = false;  // hang with hang_for: the victim is back at work
};

DrillWorker::DrillWorker(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, bool victim,
                         EventLog& events)
    : ctx_(ctx),
      c_(c),
      victim_(victim),
      events_(events),
      t_(ctx.transport),
      client_(ctx.participants[0]),
      victimRank_(ctx.participants[static_cast<std::size_t>(c.victim)]),
      peers_(othersThan(ctx.participants, ctx.world.rank())),
      faultAt_(start + static_cast<runtime::Nanoseconds>(c.atSeconds * 1e9)),
      leaveAt_(start + static_cast<runtime::Nanoseconds>(c.victimLeavesAfterSeconds() * 1e9)),
      giveUp_(start + static_cast<runtime::Nanoseconds>((c.workloadSeconds() + 5) * 1e9)),
      waits_(victim ? leaveAt_ : ctx.deadline) {
  t_.reserve(heartbeatSlots + Heartbeats::slotsNeeded(peers_.size()));
  message_ = reinterpret_cast<RequestMessage*>(ctx.buffers.allocate(sizeof(RequestMessage)));
  reply_ = ctx.buffers.allocate(static_cast<std::size_t>(c.replyBytes));
  auto* beats = reinterpret_cast<std::uint64_t*>(ctx.buffers.allocate(2 * peers_.size() * sizeof(std::uint64_t)));
  std::memset(reply_, 0x5a, static_cast<std::size_t>(c.replyBytes));
  heartbeats_ = std::make_unique<Heartbeats>(
      t_, peers_, heartbeatSlots, static_cast<runtime::Nanoseconds>(c.heartbeatSeconds * 1e9),
      static_cast<runtime::Nanoseconds>(c.heartbeatDeadlineSeconds * 1e9), beats);
}

void DrillWorker::noteLost(int peer, runtime::Nanoseconds at, const std::string& path) {
  if (peer < 0 || lost_[peer]) return;
  lost_[peer] = true;
  if (stopped_) {
    // After the stop peers leave (and stop progressing their transport) on
    // purpose: an endpoint error now is the orderly end, not a detected fault.
    events_.add(ctx_, at, "gone_after_stop", peer, path);
    return;
  }
  // A peer that may come back (the victim of a flap or of a hang that ends,
  // or, seen from the victim, everyone behind its cut link) stays watched;
  // a transport failure is final.
  if (c_.victimReturns() && path.rfind("transport", 0) != 0)
    heartbeats_->markSilent(peer);
  else
    heartbeats_->forget(peer);
  at = recordedDetection(ctx_, peer, victimRank_, at);
  events_.add(ctx_, at, "detected", peer, path);
  if (peer == victimRank_ && !detection_.at) detection_ = {at, path};
}

void DrillWorker::noteReturned(int peer, runtime::Nanoseconds at, const std::string& path) {
  if (!lost_[peer] || stopped_) return;
  lost_[peer] = false;
  events_.add(ctx_, at, "rejoined", peer, path);
}

// The buffer is marked empty before every receive: when the transport abandons
// its operations (a peer failed), a request that had already arrived is in the
// buffer and must be served, not dropped (the client would wait for its reply in vain).
void DrillWorker::receiveNextRequest() {
  message_->id = -1;
  message_->stop = 0;
  t_.postRecv(requestSlot, client_, requestTag, message_, sizeof *message_);
}

// The victim at its fault moment.
Next DrillWorker::actOutFault() {
  if (c_.fault == "kill") kill(getpid(), SIGKILL);  // nothing is flushed first: the drill is about the survivors
  if (c_.fault == "hang" && !hangEnded_) {
    // Alive, connected and silent: no progress, no heartbeats, no replies;
    // to the end, or for hang_for and then back to work.
    const auto hangEnds = c_.hangForSeconds > 0
                              ? runtime::Deadline(faultAt_ + static_cast<runtime::Nanoseconds>(c_.hangForSeconds * 1e9))
                              : leaveAt_;
    while (!hangEnds.expired() && !leaveAt_.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (c_.hangForSeconds <= 0 || leaveAt_.expired()) return Next::leave;
    hangEnded_ = true;
    return Next::passAgain;
  }
  // link-down, loss: the client's fault_command acts on the link; this
  // rank carries on as well as its link lets it.
  return Next::goOn;
}

void DrillWorker::hearHeartbeats(runtime::Nanoseconds now, bool& abandoned) {
  for (const auto& loss : heartbeats_->poll(now, abandoned)) {
    if (loss.returned)
      noteReturned(loss.peer, loss.at, loss.detail);
    else
      noteLost(loss.peer, loss.at, loss.detail);
  }
}

// Answers a request that arrived; the client's stop ends the loop.
Next DrillWorker::serveRequest(bool abandoned) {
  bool arrived = false;
  try {
    arrived = t_.testSlots(requestSlot, 1);
  } catch (const RuntimeFailure& e) {
    noteLost(client_, runtime::monotonicNow(), std::string("transport failure: ") + e.what());
    abandoned = true;
  }
  if (abandoned) {
    // The transport cancelled every outstanding operation.
    heartbeats_->repost();
    if (lost_[client_]) ctx_.deadline.fail("requests from the client (rank " + std::to_string(client_) + " was lost)");
    arrived = message_->id >= 0 || message_->stop != 0;
    if (!arrived) {
      receiveNextRequest();
      return Next::passAgain;
    }
  }
  if (!arrived) return Next::goOn;
  if (message_->stop) {
    stopped_ = true;
    acknowledgeStop();
    return Next::stop;
  }
  t_.postSend(replySlot, client_, replyTagBase + message_->id, reply_, static_cast<std::size_t>(c_.replyBytes));
  try {
    t_.waitSlots(replySlot, 1, waits_);
  } catch (const DeadlineExceeded&) {
    if (victim_) return Next::leave;
    throw;
  }
  receiveNextRequest();
  return Next::goOn;
}

// The client waits for this (stopAckTag says why); the reply slot is free by now.
void DrillWorker::acknowledgeStop() {
  try {
    t_.postSend(replySlot, client_, stopAckTag, message_, sizeof *message_);
    t_.waitSlots(replySlot, 1, runtime::Deadline::afterSeconds(runtime::deadlines::goodbyeSeconds));
  } catch (const std::exception& e) {
    events_.add(ctx_, runtime::monotonicNow(), "error", client_, std::string("stop not acknowledged: ") + e.what());
  }
}

// A victim still connected (its fault did nothing, or the link came back) got
// its stop with the survivors: if it left at once, a survivor still waiting for
// its own stop would see the victim's endpoint fail and count a detection of a
// fault that never happened. It lingers one heartbeat deadline, bounded.
void DrillWorker::lingerAfterStop() {
  const auto linger = runtime::Deadline(std::min(
      runtime::monotonicNow() + static_cast<runtime::Nanoseconds>(c_.heartbeatDeadlineSeconds * 1e9), leaveAt_.at()));
  while (!linger.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

Detection DrillWorker::serve() {
  if (c_.victimReturns())
    for (int peer : peers_)
      if (victim_ || peer == victimRank_) heartbeats_->watchForReturn(peer);
  t_.onError(
      [&](const transport::TransportError& e) { noteLost(e.peer, e.at, "transport error callback: " + e.message); });
  ErrorHandlerGuard guard{t_};
  heartbeats_->start(runtime::monotonicNow());
  receiveNextRequest();
  for (;;) {
    const auto now = runtime::monotonicNow();
    if (victim_ && now >= faultAt_) {
      const auto next = actOutFault();
      if (next == Next::leave) return detection_;
      if (next == Next::passAgain) continue;
    }
    if (victim_ && leaveAt_.expiredAt(now)) return detection_;
    if (!victim_ && giveUp_.expiredAt(now)) {
      // The client is gone or never sent the stop: carry on to the survivors'
      // exchange rather than wait out the test's deadline.
      events_.add(ctx_, now, "error", client_, "no stop from the client by the end of the workload + 5 s");
      break;
    }
    bool abandoned = false;
    hearHeartbeats(now, abandoned);
    const auto next = serveRequest(abandoned);
    if (next == Next::passAgain) continue;
    if (next == Next::leave) return detection_;
    if (next == Next::stop) break;
    if (ctx_.deadline.expiredAt(now)) ctx_.deadline.fail("the next request from the client");
    // More ranks than CPUs: hand the CPU over between turns, as every other wait
    // does (a worker spinning through its time slice delayed heartbeats by
    // hundreds of ms, and the survivors declared live peers lost).
    runtime::betweenPolls();
  }
  heartbeats_->sayBye(runtime::Deadline::afterSeconds(runtime::deadlines::goodbyeSeconds));
  if (victim_ && stopped_) lingerAfterStop();
  return detection_;
}

}  // namespace

Detection serveWorker(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, bool victim,
                      EventLog& events) {
  return DrillWorker(ctx, c, start, victim, events).serve();
}

}  // namespace fabscope::suite::fault_drill
