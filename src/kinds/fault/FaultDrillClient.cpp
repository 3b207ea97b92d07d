// Fault drill, client side: issues the request stream at `rate`, runs the
// fault command at the fault moment (link-down, loss), detects the victim's
// loss (transport error callback, heartbeats, a reply missing for
// request_timeout), re-routes its in-flight and later requests to the spare,
// releases the workers, runs the restore command and computes the stream's
// numbers (completed, re-routed, failed, hung, recovery to 90 %).
#include <algorithm>
#include <limits>
#include <cstring>
#include <map>
#include <memory>

#include "runtime/Deadlines.hpp"
#include "fabscope/BuildConfig.hpp"
#include "kinds/fault/ExpectedDetection.hpp"
#include "kinds/fault/FaultCommand.hpp"
#include "kinds/fault/FaultDrillRoles.hpp"
#include "kinds/fault/FaultHeartbeat.hpp"
#if FABSCOPE_HAVE_VERBS
#include "transport/TransportFactory.hpp"
#include "transport/VerbsParameters.hpp"
#endif

namespace fabscope::suite::fault_drill {
namespace {

struct Request {
  enum class State { waiting, inFlight, completed, failed } state = State::waiting;
  int worker = -1;  // world rank serving the current attempt
  int slot = -1;    // send slot of the current attempt; slot + 1 receives the reply
  runtime::Nanoseconds firstPostedAt = 0, postedAt = 0, doneAt = 0;
  bool rerouted = false;
};

// What each transport can tell about a lost peer, for the result file.
std::string transportDetection(const std::string& transport) {
  const auto report = transport::transportCapabilities(transport).peerLossReport;
  if (!report.empty()) return std::string(report);
  return transport + ": no peer-failure reporting; heartbeats only";
}

// The return to baseline of every fault that ended: the rank that carries the
// victim's share afterwards (the victim itself, back; for kill the spare)
// measured against the victim's pre-fault throughput and p99. Adds the
// `restored`/`baseline`/`not_recovered` rows and the verdict; returns the attributes.
output::Attributes judgeReturnToBaseline(const RunContext& ctx, const FaultDrillConfig& c,
                                         const std::vector<Request>& state, runtime::Nanoseconds start,
                                         int victimRank, int spare, ClientOutcome& outcome, EventLog& events) {
  auto& cycles = outcome.cycles;
  if (cycles.empty()) return {};
  const int carrier = c.victimReturns() ? victimRank : spare;
  const auto firstFault = cycles[0].faultAt;
  // The victim's pre-fault service: its requests done before the first fault.
  std::vector<double> preLatencies;
  std::vector<CarrierCompletion> carried;
  for (const auto& r : state) {
    if (r.state != Request::State::completed || r.rerouted) continue;
    if (r.worker == victimRank && r.doneAt < firstFault) preLatencies.push_back(static_cast<double>(r.doneAt - r.firstPostedAt));
    if (r.worker == carrier) carried.push_back({r.firstPostedAt, r.doneAt});
  }
  const double preRate = firstFault > start ? static_cast<double>(preLatencies.size()) * 1e9 / static_cast<double>(firstFault - start) : 0;
  const double preP99 = percentile99(preLatencies);
  const auto window = static_cast<runtime::Nanoseconds>(c.baselineWindowSeconds * 1e9);
  const auto recoverWithin = static_cast<runtime::Nanoseconds>(c.recoverWithinSeconds * 1e9);
  const std::string reference = c.victimReturns() ? "the restore" : "the detection";
  // Nothing is measured past the stream's last completion.
  runtime::Nanoseconds streamEnd = 0;
  for (const auto& r : state)
    if (r.state == Request::State::completed) streamEnd = std::max(streamEnd, r.doneAt);
  std::string perFault, missing;
  double worstMs = -1;
  int recovered = 0;
  for (std::size_t i = 0; i < cycles.size(); ++i) {
    auto& k = cycles[i];
    const std::string name = cycles.size() > 1 ? c.fault + " " + std::to_string(i + 1) + "/" + std::to_string(cycles.size()) : c.fault;
    // A victim never declared lost (a lossy link it served through) never left: it is back at the restore.
    if (c.victimReturns() && k.restoredAt && !k.rejoinedAt && !k.detectedAt) k.rejoinedAt = k.restoredAt;
    if (!c.victimReturns() && k.detectedAt) k.rejoinedAt = k.detectedAt;  // the spare took the share over
    const auto from = c.victimReturns() ? k.restoredAt : k.detectedAt;
    std::string line = std::to_string(i + 1) + ": ";
    line += k.detectedAt ? "detected " + milliseconds(static_cast<double>(*k.detectedAt - k.faultAt) / 1e6) + " ms after the fault"
                         : "not detected";
    if (c.victimReturns())
      line += k.restoredAt ? ", restored at +" + milliseconds(static_cast<double>(*k.restoredAt - k.faultAt) / 1e6) + " ms"
                           : ", never restored";
    if (k.rejoinedAt && from)
      line += ", rank " + std::to_string(carrier) + " in service " +
              milliseconds(static_cast<double>(*k.rejoinedAt - *from) / 1e6) + " ms after " + reference;
    if (from) {
      auto until = *from + recoverWithin;
      if (i + 1 < cycles.size() && cycles[i + 1].faultAt > 0) until = std::min(until, cycles[i + 1].faultAt);
      until = std::min(until, streamEnd);
      const auto b = findBaseline(carried, *from, until, window, preRate, preP99, c.baselineThroughput, c.baselineP99);
      k.baselineAt = b.at;
      k.throughputPerSecond = b.throughputPerSecond;
      k.p99Ns = b.p99Ns;
      const std::string figures = std::to_string(static_cast<long long>(b.throughputPerSecond)) + " req/s, p99 " +
                                  milliseconds(b.p99Ns / 1e6) + " ms";
      if (b.at) {
        ++recovered;
        const double ms = static_cast<double>(*b.at - *from) / 1e6;
        worstMs = std::max(worstMs, ms);
        line += ", baseline " + milliseconds(ms) + " ms after " + reference + " (" + figures + ")";
        events.add(ctx, *b.at, "baseline", carrier,
                   name + ": rank " + std::to_string(carrier) + " back at baseline " + milliseconds(ms) + " ms after " +
                       reference + ": " + figures + " (pre-fault " + std::to_string(static_cast<long long>(preRate)) +
                       " req/s, p99 " + milliseconds(preP99 / 1e6) + " ms)");
      } else {
        // Said plainly when the stream (or the next fault) left no whole window after the restore.
        const std::string why =
            until <= *from ? "the request stream ended before " + reference
            : until - *from < window
                ? "no baseline_window of requests was left after " + reference + " (" +
                      milliseconds(static_cast<double>(until - *from) / 1e6) + " ms)"
                : "best window " + figures;
        line += ", not recovered within " + milliseconds(c.recoverWithinSeconds * 1e3) + " ms (" + why + ")";
        missing += (missing.empty() ? "" : "; ") + name + " not recovered within recover_within (" +
                   milliseconds(c.recoverWithinSeconds * 1e3) + " ms after " + reference + "; " + why +
                   "; needed " + std::to_string(static_cast<long long>(c.baselineThroughput * preRate)) +
                   " req/s and p99 <= " + milliseconds(c.baselineP99 * preP99 / 1e6) + " ms)";
        events.add(ctx, std::max(until, *from), "not_recovered", carrier, name + ": not back at baseline: " + why);
      }
    } else {
      line += ", not recovered (" + std::string(c.victimReturns() ? "never restored" : "never detected") + ")";
      missing += (missing.empty() ? "" : "; ") + name + " not recovered: " +
                 (c.victimReturns() ? "its end (restore) never came" : "never detected, so no spare took over");
    }
    perFault += (perFault.empty() ? "" : "; ") + line;
    // The first fault's detection is judged with every survivor's (FaultDrillKind); later ones here.
    if (i > 0 && c.detectionRequired() && k.faultAt > 0) {
      const double after = k.detectedAt ? static_cast<double>(*k.detectedAt - k.faultAt) / 1e6 : -1;
      if (after < 0 || after > c.detectWithinSeconds * 1e3)
        outcome.verdict += (outcome.verdict.empty() ? "" : "; ") + name +
                           (after < 0 ? ": never detected by the client"
                                      : ": detected after " + milliseconds(after) + " ms, past detect_within (" +
                                            milliseconds(c.detectWithinSeconds * 1e3) + " ms)");
    }
  }
  if (!missing.empty())
    outcome.verdict += (outcome.verdict.empty() ? "" : "; ") + std::string("return to baseline: ") + missing;
  const auto& first = cycles[0];
  const auto msBetween = [](std::optional<runtime::Nanoseconds> a, std::optional<runtime::Nanoseconds> b) {
    return a && b ? static_cast<double>(*b - *a) / 1e6 : -1.0;
  };
  return {
      {"faults", static_cast<std::int64_t>(cycles.size())},
      {"fault_lasts_ms", c.faultLastsSeconds() * 1e3},
      {"every_ms", c.everySeconds * 1e3},
      {"recover_within_ms", c.recoverWithinSeconds * 1e3},
      {"baseline_throughput", c.baselineThroughput},
      {"baseline_p99", c.baselineP99},
      {"baseline_window_ms", c.baselineWindowSeconds * 1e3},
      {"carrier_rank", std::int64_t{carrier}},
      {"victim_pre_fault_rps", preRate},
      {"victim_pre_fault_p99_ms", preP99 / 1e6},
      {"restored_ms", msBetween(first.faultAt, first.restoredAt)},
      {"rejoined_ms", msBetween(c.victimReturns() ? first.restoredAt : first.detectedAt, first.rejoinedAt)},
      {"baseline_ms", missing.empty() ? worstMs : -1.0},
      {"faults_recovered", std::int64_t{recovered}},
      {"return_to_baseline", std::string(missing.empty() ? "recovered" : "not recovered")},
      {"fault_cycles", perFault},
  };
}

}  // namespace

ClientOutcome serveClient(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, EventLog& events) {
  auto& t = ctx.transport;
  const int n = ctx.group.size();
  const int spare = ctx.participants[static_cast<std::size_t>(n - 1)];
  const int victimRank = ctx.participants[static_cast<std::size_t>(c.victim)];
  const auto requests = static_cast<std::size_t>(c.requests);
  const auto replyBytes = static_cast<std::size_t>(c.replyBytes);
  const auto interval = static_cast<runtime::Nanoseconds>(1e9 / c.rate);
  const auto replyTimeout = static_cast<runtime::Nanoseconds>(c.requestTimeoutSeconds * 1e9);
  const auto plannedFault = start + static_cast<runtime::Nanoseconds>(c.atSeconds * 1e9);
  const auto loopEnd = runtime::Deadline(start + static_cast<runtime::Nanoseconds>(c.workloadSeconds() * 1e9));
  const auto peers = othersThan(ctx.participants, ctx.world.rank());

  // Every attempt gets fresh slots: a slot of a dead worker may hold a receive
  // UCX never completes, so it is never reused.
  const int maxSlots = static_cast<int>(4 * requests) + 2 * n + 2;
  t.reserve(maxSlots + Heartbeats::slotsNeeded(peers.size()));
  int nextSlot = 0;
  auto* messages = reinterpret_cast<RequestMessage*>(ctx.buffers.allocate(requests * sizeof(RequestMessage) + n * sizeof(RequestMessage)));
  std::byte* replies = ctx.buffers.allocate(2 * requests * replyBytes);
  auto* beats = reinterpret_cast<std::uint64_t*>(ctx.buffers.allocate(2 * peers.size() * sizeof(std::uint64_t)));
  int repliesUsed = 0;
  for (std::size_t i = 0; i < requests; ++i) messages[i] = {static_cast<std::int32_t>(i), 0};
  Heartbeats heartbeats(t, peers, maxSlots, static_cast<runtime::Nanoseconds>(c.heartbeatSeconds * 1e9),
                        static_cast<runtime::Nanoseconds>(c.heartbeatDeadlineSeconds * 1e9), beats);

  // The fault commands (a flap has `repeat`), the restore commands run inside
  // the loop (flap, loss_for) and their placeholders, prepared before the loop.
  const int faults = c.faultCount();
  std::vector<std::unique_ptr<FaultCommand>> faultCommands, restoreCommands;
  for (int i = 0; i < faults; ++i) {
    faultCommands.push_back(std::make_unique<FaultCommand>());
    restoreCommands.push_back(std::make_unique<FaultCommand>());
  }
  std::vector<char> faultReported(static_cast<std::size_t>(faults), 0), restoreReported(static_cast<std::size_t>(faults), 0);
  FaultCommand& faultCommand = *faultCommands[0];
  const std::map<std::string, std::string> placeholders{
      {"victim_host", ctx.identity.hostOfRank.at(static_cast<std::size_t>(victimRank))},
      {"victim_rank", std::to_string(victimRank)},
      {"percent", std::to_string(static_cast<int>(c.lossPercent))}};
  const std::string faultCommandLine = c.usesCommand() ? expandFaultCommand(c.faultCommand, placeholders) : "";
  const std::string restoreCommandLine = c.restoreCommand.empty() ? "" : expandFaultCommand(c.restoreCommand, placeholders);
  const auto lasts = static_cast<runtime::Nanoseconds>(c.faultLastsSeconds() * 1e9);
  auto faultDue = [&](int i) { return start + static_cast<runtime::Nanoseconds>(c.faultStartSeconds(i) * 1e9); };
  auto faultName = [&](int i) {
    return faults > 1 ? c.fault + " " + std::to_string(i + 1) + "/" + std::to_string(faults) : c.fault;
  };

  std::vector<Request> state(requests);
  std::vector<std::size_t> inFlight;
  std::vector<int> targets(ctx.participants.begin() + 1, ctx.participants.end() - 1);
  std::map<int, bool> lost;
  ClientOutcome outcome;
  outcome.faultAt = plannedFault;
  auto& detectedAt = outcome.detection.at;
  std::int64_t reroutedCount = 0, failedCount = 0, repostedCount = 0;
  // Faults that end: one cycle each; `cycle` is the latest begun (-1: none yet).
  auto& cycles = outcome.cycles;
  cycles.resize(c.faultEnds() ? static_cast<std::size_t>(faults) : 0);
  int cycle = -1;
  std::vector<char> lostInCycle(cycles.size(), 0);
  bool hangEndNoted = false;
  if (c.victimReturns()) heartbeats.watchForReturn(victimRank);

  auto markLost = [&](int peer, runtime::Nanoseconds at, const std::string& path) {
    if (peer < 0 || lost[peer]) return;
    lost[peer] = true;
    // The victim of a fault that ends may come back, unless its transport endpoint failed.
    if (peer == victimRank && c.victimReturns() && path.rfind("transport", 0) != 0) heartbeats.markSilent(peer);
    else heartbeats.forget(peer);
    if (peer == victimRank && !detectedAt) outcome.detection = {at, path};
    if (peer == victimRank && cycle >= 0 && !cycles.empty()) {
      auto& k = cycles[static_cast<std::size_t>(cycle)];
      if (!k.detectedAt) k.detectedAt = at;
      lostInCycle[static_cast<std::size_t>(cycle)] = 1;
    }
    events.add(ctx, at, "detected", peer, path);
    // The lost worker's share goes to the spare (once), or is dropped.
    auto it = std::find(targets.begin(), targets.end(), peer);
    if (it == targets.end()) return;
    if (peer != spare && !lost[spare] && std::find(targets.begin(), targets.end(), spare) == targets.end()) *it = spare;
    else targets.erase(it);
  };
  t.onError([&](const transport::TransportError& e) { markLost(e.peer, e.at, "transport error callback: " + e.message); });
  ErrorHandlerGuard guard{t};
  // The victim is heard again after its fault ended: its share moves back from the spare.
  auto rejoin = [&](runtime::Nanoseconds heardAt, const std::string& how) {
    auto& k = cycles[static_cast<std::size_t>(cycle)];
    // Heard in the loop pass that saw the restore end: the loop's clock reading
    // may precede the command's end by a little; the return cannot.
    const auto at = std::max(heardAt, k.restoredAt.value_or(heardAt));
    lost[victimRank] = false;
    auto it = std::find(targets.begin(), targets.end(), spare);
    if (it != targets.end()) *it = victimRank;
    else if (std::find(targets.begin(), targets.end(), victimRank) == targets.end()) targets.push_back(victimRank);
    if (!k.rejoinedAt) k.rejoinedAt = at;  // a later one follows a loss after the return (a stall), not the fault
    events.add(ctx, at, "rejoined", victimRank,
               how + " (" + milliseconds(static_cast<double>(at - k.restoredAt.value_or(at)) / 1e6) +
                   " ms after the restore); its share moves back from the spare");
  };

  // Returns false when the attempt could not be posted (its worker is lost).
  auto post = [&](std::size_t id, int worker, runtime::Nanoseconds now) {
    auto& r = state[id];
    r.worker = worker;
    r.slot = nextSlot;
    nextSlot += 2;
    std::byte* reply = replies + static_cast<std::size_t>(repliesUsed++ % static_cast<int>(2 * requests)) * replyBytes;
    try {
      t.postRecv(r.slot + 1, worker, replyTagBase + static_cast<int>(id), reply, replyBytes);
      t.postSend(r.slot, worker, requestTag, &messages[id], sizeof(RequestMessage));
    } catch (const RuntimeFailure& e) {
      markLost(worker, runtime::monotonicNow(), std::string("post failed: ") + e.what());
      return false;
    }
    r.postedAt = now;
    if (r.state == Request::State::waiting) r.firstPostedAt = now;
    r.state = Request::State::inFlight;
    return true;
  };
  // A request whose worker is gone: to the spare, or failed when it has no
  // live worker left or was re-routed already.
  auto reroute = [&](std::size_t id, runtime::Nanoseconds) {
    // Stamped now, not with the loop's time: the loss that causes a re-route may have
    // been learnt (callback) after the loop read the clock, and a re-route stamped
    // before its cause would put it before the fault in the timeline.
    const auto now = runtime::monotonicNow();
    auto& r = state[id];
    const int from = r.worker;
    if (!r.rerouted && !targets.empty() && nextSlot + 2 <= maxSlots) {
      const int to = std::find(targets.begin(), targets.end(), spare) != targets.end() ? spare : targets.front();
      r.rerouted = true;
      if (post(id, to, now)) {
        ++reroutedCount;
        events.add(ctx, now, "rerouted", to, "request " + std::to_string(id) + " from rank " + std::to_string(from));
        return;
      }
    }
    r.state = Request::State::failed;
    ++failedCount;
    events.add(ctx, now, "failed", from, "request " + std::to_string(id) + ": no live worker to re-route it to");
  };
  // The transport cancelled every outstanding operation (its reaction to a
  // failed peer), not only the lost peer's: post the others again.
  auto repostAll = [&](runtime::Nanoseconds now) {
    heartbeats.repost();
    for (auto id : inFlight) {
      auto& r = state[id];
      if (r.state != Request::State::inFlight) continue;
      if (lost[r.worker]) reroute(id, now);
      else if (post(id, r.worker, now)) ++repostedCount;
      else reroute(id, now);
    }
  };

  if (!c.usesCommand())
    events.add(ctx, plannedFault, "fault", victimRank,
          c.fault + (c.fault == "kill" ? " (SIGKILL)" : " (stops answering)") + " planned at +" +
              milliseconds(c.atSeconds * 1e3) + " ms by the victim's own clock");
  heartbeats.start(runtime::monotonicNow());
  std::size_t nextIssue = 0, rr = 0;
  std::vector<runtime::Nanoseconds> completions;
  while (!loopEnd.expired()) {
    const auto now = runtime::monotonicNow();
    for (int i = 0; c.usesCommand() && i < faults; ++i) {
      const auto k = static_cast<std::size_t>(i);
      auto& command = *faultCommands[k];
      if (!command.started() && now >= faultDue(i) && (i == 0 || restoreReported[k - 1])) {
        command.start(faultCommandLine, c.commandTimeoutSeconds);
        const auto at = command.result().startedAt;
        if (i == 0) outcome.faultAt = at;
        if (!cycles.empty()) cycles[k].faultAt = at;
        cycle = i;
        events.add(ctx, at, "fault", victimRank, faultName(i) + ": fault_command started: " + faultCommandLine);
      }
      if (command.started() && !faultReported[k] && command.poll()) {
        faultReported[k] = 1;
        const auto& r = command.result();
        events.add(ctx, r.endedAt ? r.endedAt : now, "fault_command", victimRank, r.describe());
      }
      if (!c.restoresInLoop()) continue;
      auto& restore = *restoreCommands[k];
      // down_for counts from the fault command's end: the link is down from then.
      if (!restore.started() && faultReported[k] && now >= command.result().endedAt + lasts) {
        restore.start(restoreCommandLine, c.commandTimeoutSeconds);
        events.add(ctx, restore.result().startedAt, "restore_command", victimRank,
                   faultName(i) + ": restore_command started: " + restoreCommandLine);
      }
      if (restore.started() && !restoreReported[k] && restore.poll()) {
        restoreReported[k] = 1;
        const auto& r = restore.result();
        cycles[k].restoredAt = r.endedAt;
        events.add(ctx, r.endedAt, "restored", victimRank, faultName(i) + ": restore_command " + r.describe());
      }
    }
    if (!c.usesCommand() && !cycles.empty() && now >= plannedFault) {
      if (cycle < 0) {
        cycle = 0;
        cycles[0].faultAt = plannedFault;
      }
      // A hang with hang_for ends by the victim's own clock.
      if (c.fault == "hang" && !hangEndNoted && now >= plannedFault + lasts) {
        hangEndNoted = true;
        cycles[0].restoredAt = plannedFault + lasts;
        events.add(ctx, plannedFault + lasts, "restored", victimRank,
                   "hang_for " + milliseconds(c.hangForSeconds * 1e3) + " ms is over by the victim's own clock");
      }
    }
    t.testSlots(0, 0);  // progress only: lets the endpoint error callback run before any slot is tested
    bool abandoned = false;
    for (const auto& loss : heartbeats.poll(now, abandoned)) {
      if (!loss.returned) {
        markLost(loss.peer, loss.at, loss.detail);
        continue;
      }
      if (loss.peer != victimRank || !lost[victimRank] || cycle < 0) continue;
      // Heard during the fault (a lossy link lets some through): not back yet.
      if (!cycles[static_cast<std::size_t>(cycle)].restoredAt) heartbeats.markSilent(victimRank);
      else rejoin(loss.at, loss.detail);
    }
    while (nextIssue < requests && now >= start + static_cast<runtime::Nanoseconds>(nextIssue) * interval) {
      const std::size_t id = nextIssue++;
      if (targets.empty()) {
        state[id].state = Request::State::failed;
        ++failedCount;
        continue;
      }
      if (!post(id, targets[rr++ % targets.size()], now)) reroute(id, now);
      inFlight.push_back(id);
    }
    for (std::size_t k = 0; k < inFlight.size() && !abandoned; ++k) {
      auto& r = state[inFlight[k]];
      if (r.state != Request::State::inFlight) continue;
      if (lost[r.worker]) {
        reroute(inFlight[k], now);
        continue;
      }
      try {
        if (t.testSlots(r.slot, 2)) {
          r.state = Request::State::completed;
          r.doneAt = runtime::monotonicNow();
          completions.push_back(r.doneAt);
          ctx.samples.record(ctx.world.rank(), static_cast<std::int32_t>(inFlight[k]), r.worker,
                             static_cast<std::int64_t>(replyBytes), r.firstPostedAt, r.doneAt);
        } else if (now - r.postedAt > replyTimeout) {
          markLost(r.worker, now, "missed reply: request " + std::to_string(inFlight[k]) + " unanswered for " +
                                      std::to_string(replyTimeout / 1000000) + " ms");
          reroute(inFlight[k], now);
        }
      } catch (const RuntimeFailure& e) {
        markLost(r.worker, runtime::monotonicNow(), std::string("transport failure: ") + e.what());
        abandoned = true;
      }
    }
    if (abandoned) repostAll(now);
    inFlight.erase(std::remove_if(inFlight.begin(), inFlight.end(),
                                  [&](std::size_t id) { return state[id].state != Request::State::inFlight; }),
                   inFlight.end());
    bool commandsDone = true;
    for (int i = 0; c.usesCommand() && i < faults; ++i)
      commandsDone = commandsDone && faultReported[static_cast<std::size_t>(i)] &&
                     (!c.restoresInLoop() || restoreReported[static_cast<std::size_t>(i)]);
    if (nextIssue == requests && inFlight.empty() && commandsDone) break;
  }
  const std::int64_t hung = static_cast<std::int64_t>(inFlight.size()) + static_cast<std::int64_t>(requests - nextIssue);
  for (auto id : inFlight)
    if (hung <= 20) events.add(ctx, runtime::monotonicNow(), "hung", state[id].worker, "request " + std::to_string(id) + " never answered");

  // Release every live worker; a worker that dies now fails its send, bounded.
  heartbeats.sayBye(runtime::Deadline::afterSeconds(runtime::deadlines::goodbyeSeconds));
  const auto stopDeadline = runtime::Deadline::afterSeconds(runtime::deadlines::drillStopSeconds);
  std::vector<int> stopSlots;
  for (int g = 1; g < n; ++g) {
    const int worker = ctx.participants[static_cast<std::size_t>(g)];
    // A worker declared lost that is not the victim may be alive and waiting (a
    // scheduling gap longer than the heartbeat deadline): it gets its stop too.
    if (lost[worker] && worker == victimRank) continue;
    auto* stop = &messages[requests + static_cast<std::size_t>(g)];
    *stop = {-1, 1};
    try {
      t.postSend(nextSlot, worker, requestTag, stop, sizeof *stop);
      stopSlots.push_back(nextSlot++);
    } catch (const RuntimeFailure& e) {
      events.add(ctx, runtime::monotonicNow(), "error", worker, std::string("stop not sent: ") + e.what());
    }
  }
  for (int s : stopSlots) {
    try {
      t.waitSlots(s, 1, stopDeadline);
    } catch (const std::exception& e) {
      events.add(ctx, runtime::monotonicNow(), "error", -1, std::string("stop not delivered: ") + e.what());
    }
  }

  // The fault command's end (bounded by its own deadline) and the repair.
  output::Attributes commandAttributes;
  if (c.usesCommand()) {
    for (int i = 1; i < faults; ++i) {
      const auto k = static_cast<std::size_t>(i);
      if (!faultCommands[k]->started()) {
        outcome.verdict += (outcome.verdict.empty() ? "" : "; ") + faultName(i) + ": fault_command never ran";
        continue;
      }
      const auto& r = faultCommands[k]->finish();
      if (!faultReported[k]) events.add(ctx, r.endedAt, "fault_command", victimRank, r.describe());
      if (!r.ok())
        outcome.verdict += (outcome.verdict.empty() ? "" : "; ") + faultName(i) + ": fault_command failed (" + r.describe() + ")";
    }
    if (!faultCommand.started()) {
      outcome.verdict = "fault_command never ran (the workload ended first)";
    } else {
      const auto& r = faultCommand.finish();
      if (!faultReported[0]) events.add(ctx, r.endedAt, "fault_command", victimRank, r.describe());
      commandAttributes = {{"fault_command", r.command},
                           {"fault_command_started_ns", ctx.clock.toGlobal(r.startedAt)},
                           {"fault_command_ms", static_cast<double>(r.endedAt - r.startedAt) / 1e6},
                           {"fault_command_exit", std::int64_t{r.exitStatus}},
                           {"fault_command_timed_out", std::int64_t{r.timedOut ? 1 : 0}},
                           {"fault_command_output", r.error.empty() ? r.output : r.error}};
      if (!r.ok()) outcome.verdict = "fault_command failed (" + r.describe() + "): the fault may not have happened";
    }
    // In the loop's restores: any the loop did not finish (or start, though its
    // fault ran: the link must not stay cut) end here, bounded.
    for (int i = 0; c.restoresInLoop() && i < faults; ++i) {
      const auto k = static_cast<std::size_t>(i);
      auto& restore = *restoreCommands[k];
      if (!faultCommands[k]->started()) continue;
      if (!restore.started()) restore.start(restoreCommandLine, c.commandTimeoutSeconds);
      const auto& r = restore.finish();
      if (!restoreReported[k]) {
        events.add(ctx, r.endedAt, "restored", victimRank, faultName(i) + ": restore_command (after the workload) " + r.describe());
        cycles[k].restoredAt = r.endedAt;
      }
      if (i == 0) {
        commandAttributes.emplace_back("restore_command", r.command);
        commandAttributes.emplace_back("restore_command_exit", std::int64_t{r.exitStatus});
        commandAttributes.emplace_back("restore_command_output", r.error.empty() ? r.output : r.error);
      }
      if (!r.ok())
        outcome.verdict += (outcome.verdict.empty() ? "" : "; ") + faultName(i) + ": restore_command failed (" +
                           r.describe() + "): the victim's link may still be faulty";
    }
    if (!c.restoreCommand.empty() && !c.restoresInLoop()) {
      const auto r = runFaultCommand(restoreCommandLine, c.commandTimeoutSeconds);
      events.add(ctx, r.endedAt, "restore_command", victimRank, r.describe());
      commandAttributes.emplace_back("restore_command", r.command);
      commandAttributes.emplace_back("restore_command_exit", std::int64_t{r.exitStatus});
      commandAttributes.emplace_back("restore_command_output", r.error.empty() ? r.output : r.error);
      if (!r.ok())
        outcome.verdict += (outcome.verdict.empty() ? "" : "; ") + std::string("restore_command failed (") +
                           r.describe() + "): the victim's link may still be faulty";
    }
  }

  std::sort(completions.begin(), completions.end());
  const auto window = std::max<runtime::Nanoseconds>(20 * interval, 20000000);
  const auto recovery = findRecovery(completions, start, outcome.faultAt, detectedAt.value_or(outcome.faultAt), window);
  if (recovery.recoveredAt)
    events.add(ctx, *recovery.recoveredAt, "recovered", spare,
          "throughput back to >= 90% of the pre-fault " + std::to_string(static_cast<long long>(recovery.preFaultPerSecond)) +
              " req/s over a " + std::to_string(window / 1000000) + " ms window");

  const auto baselineAttributes = judgeReturnToBaseline(ctx, c, state, start, victimRank, spare, outcome, events);

  const std::int64_t completed = static_cast<std::int64_t>(completions.size());
  const double recoveredMs =
      recovery.recoveredAt ? static_cast<double>(*recovery.recoveredAt - outcome.faultAt) / 1e6 : -1;
  outcome.attributes = {
      {"fault", c.fault},
      {"victim_rank", std::int64_t{victimRank}},
      {"victim_host", placeholders.at("victim_host")},
      {"spare_rank", std::int64_t{spare}},
      {"fault_ns", ctx.clock.toGlobal(outcome.faultAt)},
      {"detect_within_ms", c.detectWithinSeconds * 1e3},
      {"heartbeat_ms", c.heartbeatSeconds * 1e3},
      {"heartbeat_deadline_ms", c.heartbeatDeadlineSeconds * 1e3},
      {"request_timeout_ms", c.requestTimeoutSeconds * 1e3},
      {"requests", std::int64_t{c.requests}},
      {"completed", completed},
      {"rerouted", reroutedCount},
      {"reposted", repostedCount},
      {"failed_requests", failedCount},
      {"hung", hung},
      {"pre_fault_rps", recovery.preFaultPerSecond},
      {"recovered_ms", recoveredMs},
      {"transport_detection", transportDetection(ctx.instance.spec->transport)},
  };
  // What the stack would take on its own to report this fault with the
  // settings in force here, next to the drill's measured detection.
  try {
    const auto settings = stackSettingsHere();
    const auto here = expectedForDrill(c.fault, c.lossPercent, ctx.instance.spec->transport, settings);
    const auto nccl = expectedNcclIb(c.fault, settings);
    const auto verbs = expectedVerbsQp(c.fault, settings);
    outcome.attributes.emplace_back("expected_detection_stack", here.stack);
    outcome.attributes.emplace_back("expected_detection_s", here.seconds);
    outcome.attributes.emplace_back("expected_detection_basis", here.basis);
    outcome.attributes.emplace_back("expected_nccl_ib_s", nccl.seconds);
    outcome.attributes.emplace_back("expected_nccl_ib_basis", nccl.basis);
    outcome.attributes.emplace_back("expected_verbs_qp_s", verbs.seconds);
    outcome.attributes.emplace_back("expected_verbs_qp_basis", verbs.basis);
  } catch (const std::invalid_argument& e) {
    outcome.attributes.emplace_back("expected_detection_basis", std::string("settings not readable: ") + e.what());
  }
#if FABSCOPE_HAVE_VERBS
  // What a verbs RC queue pair with this environment's settings would need to
  // declare a silent peer lost: compared with detect_within it says whether
  // verbs alone could pass this drill or heartbeats are required.
  try {
    const auto options = transport::verbs::verbsOptionsFromEnvironment();
    outcome.attributes.emplace_back("verbs_qp_retry_budget_s",
                                    transport::verbs::lostPeerSeconds(options.timeout, options.retryCount));
  } catch (const UsageError& e) {
    // Settings that do not parse: no budget (the attribute stays a float;
    // expected_verbs_qp_basis says why).
    outcome.attributes.emplace_back("verbs_qp_retry_budget_s", std::numeric_limits<double>::quiet_NaN());
  }
#endif
  outcome.attributes.insert(outcome.attributes.end(), commandAttributes.begin(), commandAttributes.end());
  outcome.attributes.insert(outcome.attributes.end(), baselineAttributes.begin(), baselineAttributes.end());
  outcome.hung = hung;
  if (hung > 0)
    outcome.verdict += (outcome.verdict.empty() ? "" : "; ") + std::to_string(hung) + " request(s) hung past their deadline";
  return outcome;
}

}  // namespace fabscope::suite::fault_drill
