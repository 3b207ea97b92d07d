// Fault drill, client side: issues the request stream at `rate`, runs the
// fault command at the fault moment (link-down, loss), detects the victim's
// loss (transport error callback, heartbeats, a reply missing for
// request_timeout), re-routes its in-flight and later requests to the spare,
// releases the workers, runs the restore command and computes the stream's
// numbers (completed, re-routed, failed, hung, recovery to 90 %).
#include <algorithm>
#include <cstring>
#include <map>

#include "runtime/Deadlines.hpp"
#include "fabscope/BuildConfig.hpp"
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

  // The fault command and its placeholders, prepared before the loop.
  FaultCommand faultCommand;
  const std::map<std::string, std::string> placeholders{
      {"victim_host", ctx.identity.hostOfRank.at(static_cast<std::size_t>(victimRank))},
      {"victim_rank", std::to_string(victimRank)},
      {"percent", std::to_string(static_cast<int>(c.lossPercent))}};
  const std::string faultCommandLine = c.usesCommand() ? expandFaultCommand(c.faultCommand, placeholders) : "";
  bool faultCommandReported = false;

  std::vector<Request> state(requests);
  std::vector<std::size_t> inFlight;
  std::vector<int> targets(ctx.participants.begin() + 1, ctx.participants.end() - 1);
  std::map<int, bool> lost;
  ClientOutcome outcome;
  outcome.faultAt = plannedFault;
  auto& detectedAt = outcome.detection.at;
  std::int64_t reroutedCount = 0, failedCount = 0, repostedCount = 0;

  auto markLost = [&](int peer, runtime::Nanoseconds at, const std::string& path) {
    if (peer < 0 || lost[peer]) return;
    lost[peer] = true;
    heartbeats.forget(peer);
    if (peer == victimRank && !detectedAt) outcome.detection = {at, path};
    events.add(ctx, at, "detected", peer, path);
    // The lost worker's share goes to the spare (once), or is dropped.
    auto it = std::find(targets.begin(), targets.end(), peer);
    if (it == targets.end()) return;
    if (peer != spare && !lost[spare] && std::find(targets.begin(), targets.end(), spare) == targets.end()) *it = spare;
    else targets.erase(it);
  };
  t.onError([&](const transport::TransportError& e) { markLost(e.peer, e.at, "transport error callback: " + e.message); });
  ErrorHandlerGuard guard{t};

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
    if (c.usesCommand() && !faultCommand.started() && now >= plannedFault) {
      faultCommand.start(faultCommandLine, c.commandTimeoutSeconds);
      outcome.faultAt = faultCommand.result().startedAt;
      events.add(ctx, outcome.faultAt, "fault", victimRank, c.fault + ": fault_command started: " + faultCommandLine);
    }
    if (faultCommand.started() && !faultCommandReported && faultCommand.poll()) {
      faultCommandReported = true;
      const auto& r = faultCommand.result();
      events.add(ctx, r.endedAt ? r.endedAt : now, "fault_command", victimRank, r.describe());
    }
    t.testSlots(0, 0);  // progress only: lets the endpoint error callback run before any slot is tested
    bool abandoned = false;
    for (const auto& loss : heartbeats.poll(now, abandoned)) markLost(loss.peer, loss.at, loss.detail);
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
    if (nextIssue == requests && inFlight.empty() && (!c.usesCommand() || faultCommandReported)) break;
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
    if (!faultCommand.started()) {
      outcome.verdict = "fault_command never ran (the workload ended first)";
    } else {
      const auto& r = faultCommand.finish();
      if (!faultCommandReported) events.add(ctx, r.endedAt, "fault_command", victimRank, r.describe());
      commandAttributes = {{"fault_command", r.command},
                           {"fault_command_started_ns", ctx.clock.toGlobal(r.startedAt)},
                           {"fault_command_ms", static_cast<double>(r.endedAt - r.startedAt) / 1e6},
                           {"fault_command_exit", std::int64_t{r.exitStatus}},
                           {"fault_command_timed_out", std::int64_t{r.timedOut ? 1 : 0}},
                           {"fault_command_output", r.error.empty() ? r.output : r.error}};
      if (!r.ok()) outcome.verdict = "fault_command failed (" + r.describe() + "): the fault may not have happened";
    }
    if (!c.restoreCommand.empty()) {
      const auto r = runFaultCommand(expandFaultCommand(c.restoreCommand, placeholders), c.commandTimeoutSeconds);
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
#if FABSCOPE_HAVE_VERBS
  // What a verbs RC queue pair with this environment's settings would need to
  // declare a silent peer lost: compared with detect_within it says whether
  // verbs alone could pass this drill or heartbeats are required.
  try {
    const auto options = transport::verbs::verbsOptionsFromEnvironment();
    outcome.attributes.emplace_back("verbs_qp_retry_budget_s",
                                    transport::verbs::lostPeerSeconds(options.timeout, options.retryCount));
  } catch (const UsageError& e) {
    outcome.attributes.emplace_back("verbs_qp_retry_budget_s", std::string(e.what()));
  }
#endif
  outcome.attributes.insert(outcome.attributes.end(), commandAttributes.begin(), commandAttributes.end());
  outcome.hung = hung;
  if (hung > 0)
    outcome.verdict += (outcome.verdict.empty() ? "" : "; ") + std::to_string(hung) + " request(s) hung past their deadline";
  return outcome;
}

}  // namespace fabscope::suite::fault_drill
