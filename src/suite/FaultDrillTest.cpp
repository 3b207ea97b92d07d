// Fault drill (kind `fault`): a serving-shaped request stream loses a worker
// on purpose and the survivors must notice, re-route and carry on.
// Group index 0 is the client; 1 .. n-2 are workers (one of them the victim);
// n-1 is the spare, idle until it takes over the victim's share. At `at` after
// the start the fault happens: the victim SIGKILLs itself (kill) or stops
// answering while staying alive (hang), or the client runs fault_command
// against the victim's link (link-down, loss). Every rank sends every other
// rank heartbeats; a survivor detects the loss through the transport's error
// callback (UCX endpoint error: over TCP the socket reset of a dead process),
// missed heartbeats, or (client only) a reply missing for request_timeout.
// The client re-routes the victim's in-flight and later requests to the
// spare and writes the timeline to /tests/NNNN/events; every survivor adds its
// own detection. Samples: one per completed request on the client (t_post =
// first post, so a re-routed request's latency includes its wait on the
// victim). A victim that stays alive leaves the run after the drill.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <limits>
#include <map>
#include <span>
#include <thread>

#include "fabscope/BuildConfig.hpp"
#include "suite/FaultCommand.hpp"
#include "suite/FaultDrillConfig.hpp"
#include "suite/FaultHeartbeat.hpp"
#include "suite/Kinds.hpp"
#if FABSCOPE_HAVE_VERBS
#include "transport/VerbsParameters.hpp"
#endif

namespace fabscope::suite {
namespace {

constexpr int requestTag = 41;
constexpr int replyTagBase = 1 << 20;  // + request id; requests <= 1e6 keeps it under 2^21

struct RequestMessage {
  std::int32_t id;
  std::int32_t stop;  // 1: no more requests, the worker leaves its loop
};

struct Request {
  enum class State { waiting, inFlight, completed, failed } state = State::waiting;
  int worker = -1;  // world rank serving the current attempt
  int slot = -1;    // send slot of the current attempt; slot + 1 receives the reply
  runtime::Nanoseconds firstPostedAt = 0, postedAt = 0, doneAt = 0;
  bool rerouted = false;
};

// Clears the transport's error handler when the drill ends: it captures locals.
struct ErrorHandlerGuard {
  transport::Transport& transport;
  ~ErrorHandlerGuard() { transport.onError(nullptr); }
};

// How a survivor learned of the victim's loss.
struct Detection {
  std::optional<runtime::Nanoseconds> at;  // monotonic
  std::string path;
};

// What the client knows after its loop.
struct ClientOutcome {
  runtime::Nanoseconds faultAt = 0;  // monotonic: planned (kill, hang) or fault_command started
  Detection detection;
  output::Attributes attributes;
  std::string verdict;  // empty when the stream itself passed
  std::int64_t hung = 0;
};

std::string milliseconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", ms);
  return text;
}

// What each transport can tell about a lost peer, for the result file.
std::string transportDetection(const std::string& transport) {
  if (transport == "ucx")
    return "UCX endpoint error callback (UCP_ERR_HANDLING_MODE_PEER): over TCP a dead process's socket reset "
           "arrives at once; a hung process or a dead link is never reported (UCX keepalive aside), heartbeats "
           "catch those";
  return transport + ": no peer-failure reporting; heartbeats only";
}

std::vector<int> othersThan(const std::vector<int>& ranks, int me) {
  std::vector<int> out;
  for (int r : ranks)
    if (r != me) out.push_back(r);
  return out;
}

class FaultDrillTest final : public TestKind {
 public:
  std::string name() const override { return "fault"; }
  std::string summary() const override {
    return "fault drill: a worker is killed, hangs or loses its link under a request stream; detection time "
           "per survivor, re-routes, hung requests, recovery";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"fault",          "victim",         "at",          "detect_within",  "heartbeat",
                   "heartbeat_deadline", "request_timeout", "requests", "rate",          "fault_command",
                   "restore_command", "command_timeout", "loss_percent"};
    r.minRanks = 4;
    r.validate = [](const scenario::TestSpec& spec, const std::string& file, int) {
      readFaultDrillConfig(spec, file, 0);
    };
    return r;
  }

  InstancePlan plan(const scenario::TestInstance& instance, const std::string& scenarioFile,
                    int worldSize) const override {
    const auto& spec = *instance.spec;
    int ranks = 0;
    try {
      ranks = canaryCount(roleSpecOf(spec), worldSize, 4, hasCongestedCondition(spec));
    } catch (const UsageError& e) {
      throw scenario::ScenarioError(scenario::positionOf(scenarioFile, spec.node) + ": test '" + spec.name +
                                    "': " + e.what());
    }
    if (hasCongestedCondition(spec))
      throw scenario::ScenarioError(scenario::positionOf(scenarioFile, spec.node) + ": test '" + spec.name +
                                    "': a fault drill runs under condition quiet only");
    const auto c = readFaultDrillConfig(spec, scenarioFile, ranks);
    InstancePlan plan;
    plan.metric = Metric::latency;
    plan.pattern = "fault";
    plan.mayLoseRanks = true;
    plan.maxSamplesPerRank = c.requests;
    // Client: one reply buffer per attempt (at most two per request), the
    // request messages and two heartbeat words per peer.
    plan.bufferBytesPerRank = 2 * c.requests * c.replyBytes +
                              (c.requests + ranks) * static_cast<std::int64_t>(sizeof(RequestMessage)) +
                              2 * ranks * static_cast<std::int64_t>(sizeof(std::uint64_t)) + 4096;
    plan.description = "client -> " + std::to_string(ranks - 2) + " workers + spare, " + std::to_string(c.requests) +
                       " requests at " + std::to_string(static_cast<long long>(c.rate)) + "/s; " + c.fault +
                       " of rank index " + std::to_string(c.victim) + " at " + std::to_string(c.atSeconds) + " s";
    return plan;
  }

  void run(RunContext& ctx) const override {
    lastEvents_.clear();
    const auto c = readFaultDrillConfig(*ctx.instance.spec, std::string(), ctx.group.size());
    const int index = ctx.group.rank();
    const bool victim = index == c.victim;
    if (c.usesCommand()) requireVictimAloneOnItsHost(ctx, c);
    // Before the fault, while every rank is alive: the communicator the run goes on with.
    auto survivors = ctx.group.split(victim ? 1 : 0, index);
    // One start instant on the global clock for every rank, so the fault
    // moment (start + at) is the same instant everywhere within the clock
    // sync's error, not shifted by how late each rank left a barrier (tens of
    // ms on a loaded machine: enough to make detections look earlier than the
    // fault).
    constexpr runtime::Nanoseconds startMargin = 100'000'000;
    const auto proposal = index == 0 ? ctx.clock.toGlobal(runtime::monotonicNow()) + startMargin
                                     : std::numeric_limits<std::int64_t>::min();
    const auto startGlobal = ctx.group.allreduceMax(proposal, ctx.deadline);
    const runtime::Nanoseconds start = startGlobal - ctx.clock.toGlobal(0);
    while (runtime::monotonicNow() < start) {
      if (ctx.deadline.expired()) ctx.deadline.fail("the drill's common start");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    ClientOutcome client;
    Detection mine;
    if (index == 0) client = serveClient(ctx, c, start);
    else mine = serveWorker(ctx, c, start, victim);
    if (victim) {
      // Alive after a hang, link-down or loss: out of the run, so the
      // survivors' communicator never waits for it.
      ctx.leaveRun = true;
      return;
    }
    if (index == 0) mine = client.detection;
    // Every survivor's detection of the victim, on the global clock.
    const auto detectedAt = survivors.allgather(mine.at ? ctx.clock.toGlobal(*mine.at) : -1, ctx.deadline);
    const auto paths = survivors.gatherStrings(mine.path, 0, ctx.deadline);
    // One timeline: every survivor's events, in time order, written by the client.
    std::vector<int> counts;
    const auto rows = survivors.gatherBytes(std::as_bytes(std::span(lastEvents_)), 0, counts, ctx.deadline);
    lastEvents_.resize(rows.size() / sizeof(output::EventRecord));
    if (!rows.empty()) std::memcpy(lastEvents_.data(), rows.data(), lastEvents_.size() * sizeof(output::EventRecord));
    ctx.survivors = std::move(survivors);
    if (index == 0) judge(ctx, c, client, detectedAt, paths);
  }

  void writeExtra(RunContext& ctx, output::ResultFile& file, const std::string& group,
                  const runtime::Deadline& deadline) const override {
    (void)ctx;
    file.writeTable<output::EventRecord>(group + "/events", lastEvents_, deadline);
    lastEvents_.clear();
  }

 private:
  void event(const RunContext& ctx, runtime::Nanoseconds monotonic, const char* kind, int peer,
             const std::string& detail) const {
    output::EventRecord row{};
    row.rank = ctx.world.rank();
    row.t_ns = ctx.clock.toGlobal(monotonic);
    output::setText(row.kind, kind);
    row.peer = peer;
    output::setText(row.detail, detail);
    lastEvents_.push_back(row);
  }

  // A link fault acts on the victim's host: a survivor there would be cut off
  // too. Every rank checks the same table, so all of them stop together.
  static void requireVictimAloneOnItsHost(const RunContext& ctx, const FaultDrillConfig& c) {
    const auto& hosts = ctx.identity.hostOfRank;
    const int victimRank = ctx.participants[static_cast<std::size_t>(c.victim)];
    const auto& victimHost = hosts.at(static_cast<std::size_t>(victimRank));
    for (int rank : ctx.participants)
      if (rank != victimRank && hosts.at(static_cast<std::size_t>(rank)) == victimHost)
        throw RuntimeFailure("fault: " + c.fault + " acts on the victim's host " + victimHost + ", which also runs rank " +
                             std::to_string(rank) + " of the drill: it would be cut off too. Place the victim (rank " +
                             std::to_string(victimRank) + ", index " + std::to_string(c.victim) +
                             ") alone on its host, e.g. one rank per host, or choose another victim");
  }

  Detection serveWorker(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, bool victim) const;
  ClientOutcome serveClient(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start) const;
  void judge(RunContext& ctx, const FaultDrillConfig& c, ClientOutcome& client,
             const std::vector<std::int64_t>& detectedAt, const std::vector<std::string>& paths) const;

  // Every rank's events between run() and writeExtra(); the runner runs one
  // instance at a time on one kind object.
  mutable std::vector<output::EventRecord> lastEvents_;
};

Detection FaultDrillTest::serveWorker(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start,
                                      bool victim) const {
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
  auto noteLost = [&](int peer, runtime::Nanoseconds at, const std::string& path) {
    if (peer < 0 || lost[peer]) return;
    lost[peer] = true;
    heartbeats.forget(peer);
    event(ctx, at, "detected", peer, path);
    if (peer == victimRank && !detection.at) detection = {at, path};
  };
  t.onError([&](const transport::TransportError& e) { noteLost(e.peer, e.at, "transport error callback: " + e.message); });
  ErrorHandlerGuard guard{t};

  heartbeats.start(runtime::monotonicNow());
  t.postRecv(requestSlot, client, requestTag, message, sizeof *message);
  for (;;) {
    const auto now = runtime::monotonicNow();
    if (victim && now >= faultAt) {
      if (c.fault == "kill") kill(getpid(), SIGKILL);  // nothing is flushed first: the drill is about the survivors
      if (c.fault == "hang") {
        // Alive, connected and silent: no progress, no heartbeats, no replies.
        while (!leaveAt.expired()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return detection;
      }
      // link-down, loss: the client's fault_command acts on the link; this
      // rank carries on as well as its link lets it.
    }
    if (victim && leaveAt.expiredAt(now)) return detection;
    if (!victim && giveUp.expiredAt(now)) {
      // The client is gone or never sent the stop: carry on to the survivors'
      // exchange rather than wait out the test's deadline.
      event(ctx, now, "error", client, "no stop from the client by the end of the workload + 5 s");
      break;
    }
    bool abandoned = false;
    for (const auto& loss : heartbeats.poll(now, abandoned)) noteLost(loss.peer, loss.at, loss.detail);
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
      t.postRecv(requestSlot, client, requestTag, message, sizeof *message);
      continue;
    }
    if (arrived) {
      if (message->stop) break;
      t.postSend(replySlot, client, replyTagBase + message->id, reply, static_cast<std::size_t>(c.replyBytes));
      try {
        t.waitSlots(replySlot, 1, waits);
      } catch (const DeadlineExceeded&) {
        if (victim) return detection;
        throw;
      }
      t.postRecv(requestSlot, client, requestTag, message, sizeof *message);
    }
    if (ctx.deadline.expiredAt(now)) ctx.deadline.fail("the next request from the client");
  }
  heartbeats.sayBye(runtime::Deadline::afterSeconds(1));
  return detection;
}

ClientOutcome FaultDrillTest::serveClient(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start) const {
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
    event(ctx, at, "detected", peer, path);
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
  auto reroute = [&](std::size_t id, runtime::Nanoseconds now) {
    auto& r = state[id];
    const int from = r.worker;
    if (!r.rerouted && !targets.empty() && nextSlot + 2 <= maxSlots) {
      const int to = std::find(targets.begin(), targets.end(), spare) != targets.end() ? spare : targets.front();
      r.rerouted = true;
      if (post(id, to, now)) {
        ++reroutedCount;
        event(ctx, now, "rerouted", to, "request " + std::to_string(id) + " from rank " + std::to_string(from));
        return;
      }
    }
    r.state = Request::State::failed;
    ++failedCount;
    event(ctx, now, "failed", from, "request " + std::to_string(id) + ": no live worker to re-route it to");
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
    event(ctx, plannedFault, "fault", victimRank,
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
      event(ctx, outcome.faultAt, "fault", victimRank, c.fault + ": fault_command started: " + faultCommandLine);
    }
    if (faultCommand.started() && !faultCommandReported && faultCommand.poll()) {
      faultCommandReported = true;
      const auto& r = faultCommand.result();
      event(ctx, r.endedAt ? r.endedAt : now, "fault_command", victimRank, r.describe());
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
    if (hung <= 20) event(ctx, runtime::monotonicNow(), "hung", state[id].worker, "request " + std::to_string(id) + " never answered");

  // Release every live worker; a worker that dies now fails its send, bounded.
  heartbeats.sayBye(runtime::Deadline::afterSeconds(1));
  const auto stopDeadline = runtime::Deadline::afterSeconds(5);
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
      event(ctx, runtime::monotonicNow(), "error", worker, std::string("stop not sent: ") + e.what());
    }
  }
  for (int s : stopSlots) {
    try {
      t.waitSlots(s, 1, stopDeadline);
    } catch (const std::exception& e) {
      event(ctx, runtime::monotonicNow(), "error", -1, std::string("stop not delivered: ") + e.what());
    }
  }

  // The fault command's end (bounded by its own deadline) and the repair.
  output::Attributes commandAttributes;
  if (c.usesCommand()) {
    if (!faultCommand.started()) {
      outcome.verdict = "fault_command never ran (the workload ended first)";
    } else {
      const auto& r = faultCommand.finish();
      if (!faultCommandReported) event(ctx, r.endedAt, "fault_command", victimRank, r.describe());
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
      event(ctx, r.endedAt, "restore_command", victimRank, r.describe());
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
    event(ctx, *recovery.recoveredAt, "recovered", spare,
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

void FaultDrillTest::judge(RunContext& ctx, const FaultDrillConfig& c, ClientOutcome& client,
                           const std::vector<std::int64_t>& detectedAt, const std::vector<std::string>& paths) const {
  // Survivor i of the survivors' communicator is group index i, skipping the victim.
  std::vector<SurvivorDetection> survivors;
  for (std::size_t i = 0; i < detectedAt.size(); ++i) {
    const auto g = i < static_cast<std::size_t>(c.victim) ? i : i + 1;
    survivors.push_back({ctx.participants[g], detectedAt[i], paths[i]});
  }
  const auto judged = judgeDetections(survivors, ctx.clock.toGlobal(client.faultAt), c.detectWithinSeconds * 1e3,
                                      c.detectionRequired());
  const auto& late = judged.late;
  const auto slowest = judged.slowestMs;
  const auto detectedCount = judged.detected;
  const auto& perSurvivor = judged.perSurvivor;
  const double clientMs = client.detection.at ? static_cast<double>(*client.detection.at - client.faultAt) / 1e6 : -1;
  auto& a = client.attributes;
  a.emplace_back("detected", std::int64_t{client.detection.at ? 1 : 0});
  a.emplace_back("detection_ms", clientMs);
  a.emplace_back("detection_path", client.detection.path);
  a.emplace_back("detection_mechanism", mechanismOf(client.detection.path));
  a.emplace_back("survivors", static_cast<std::int64_t>(detectedAt.size()));
  a.emplace_back("survivors_detected", std::int64_t{detectedCount});
  a.emplace_back("detection_max_ms", slowest);
  a.emplace_back("detection_per_survivor", perSurvivor);
  event(ctx, runtime::monotonicNow(), "summary", -1,
        std::to_string(detectedCount) + "/" + std::to_string(detectedAt.size()) + " survivors detected, slowest " +
            milliseconds(slowest) + " ms; " + std::to_string(client.hung) + " hung");
  std::stable_sort(lastEvents_.begin(), lastEvents_.end(),
                   [](const output::EventRecord& x, const output::EventRecord& y) { return x.t_ns < y.t_ns; });
  ctx.attributes = a;

  std::string verdict = client.verdict;
  if (!late.empty()) {
    verdict = "detection of rank " + std::to_string(ctx.participants[static_cast<std::size_t>(c.victim)]) + "'s " +
              c.fault + " missed detect_within (" + milliseconds(c.detectWithinSeconds * 1e3) + " ms): " + late +
              (verdict.empty() ? "" : "; " + verdict);
  }
  if (!verdict.empty()) {
    ctx.dataCheckFailed = true;
    ctx.dataCheckMessage = "fault drill: " + verdict;
  }
}

}  // namespace

std::unique_ptr<TestKind> makeFaultDrillTest() { return std::make_unique<FaultDrillTest>(); }

}  // namespace fabscope::suite
