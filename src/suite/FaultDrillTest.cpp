// Fault drill (kind `fault`): a serving-shaped request stream loses a worker
// on purpose and the client must notice, re-route and carry on.
// Group index 0 is the client; 1 .. n-2 are workers (one of them the victim);
// n-1 is the spare, idle until it takes over the victim's share. At `at` after
// the start the victim SIGKILLs itself. The client detects the loss through
// the transport's error callback (UCX endpoint error) or a reply missing for
// 3 heartbeats, re-routes the victim's in-flight and later requests to the
// spare, and writes the timeline to /tests/NNNN/events. Samples: one per
// completed request on the client (t_post = first post, so a re-routed
// request's latency includes its wait on the dead worker).
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "suite/FaultDrillConfig.hpp"
#include "suite/Kinds.hpp"

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

class FaultDrillTest final : public TestKind {
 public:
  std::string name() const override { return "fault"; }
  std::string summary() const override {
    return "fault drill: a worker is killed under a request stream; detection time, re-routes, hung requests";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"fault", "victim", "at", "detect_within", "heartbeat", "requests", "rate"};
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
    // Client: one reply buffer per attempt (at most two per request) and the request messages.
    plan.bufferBytesPerRank = 2 * c.requests * c.replyBytes + c.requests * static_cast<std::int64_t>(sizeof(RequestMessage)) + 4096;
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
    // Before the fault, while every rank is alive: the communicator the run goes on with.
    auto survivors = ctx.group.split(victim ? 1 : 0, index);
    ctx.group.barrier(ctx.deadline);
    const auto start = runtime::monotonicNow();
    if (index == 0) serveClient(ctx, c, start);
    else serveWorker(ctx, c, start, victim);
    if (!victim) ctx.survivors = std::move(survivors);
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

  void serveWorker(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, bool victim) const {
    auto& t = ctx.transport;
    const int client = ctx.participants[0];
    t.reserve(2);
    auto* message = reinterpret_cast<RequestMessage*>(ctx.buffers.allocate(sizeof(RequestMessage)));
    std::byte* reply = ctx.buffers.allocate(static_cast<std::size_t>(c.replyBytes));
    std::memset(reply, 0x5a, static_cast<std::size_t>(c.replyBytes));
    const auto faultAt = start + static_cast<runtime::Nanoseconds>(c.atSeconds * 1e9);
    for (;;) {
      t.postRecv(0, client, requestTag, message, sizeof *message);
      while (!t.testSlots(0, 1)) {
        // Nothing is flushed first: the drill is about the survivors.
        if (victim && runtime::monotonicNow() >= faultAt) kill(getpid(), SIGKILL);
        if (ctx.deadline.expired()) ctx.deadline.fail("the next request from the client");
      }
      if (message->stop) return;
      t.postSend(1, client, replyTagBase + message->id, reply, static_cast<std::size_t>(c.replyBytes));
      t.waitSlots(1, 1, ctx.deadline);
    }
  }

  void serveClient(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start) const;

  // The client's events between run() and writeExtra(); the runner runs one
  // instance at a time on one kind object.
  mutable std::vector<output::EventRecord> lastEvents_;
};

void FaultDrillTest::serveClient(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start) const {
  auto& t = ctx.transport;
  const int n = ctx.group.size();
  const int spare = ctx.participants[static_cast<std::size_t>(n - 1)];
  const int victimRank = ctx.participants[static_cast<std::size_t>(c.victim)];
  const auto requests = static_cast<std::size_t>(c.requests);
  const auto replyBytes = static_cast<std::size_t>(c.replyBytes);
  const auto interval = static_cast<runtime::Nanoseconds>(1e9 / c.rate);
  const auto replyTimeout = static_cast<runtime::Nanoseconds>(c.replyTimeoutSeconds() * 1e9);
  const auto plannedFault = start + static_cast<runtime::Nanoseconds>(c.atSeconds * 1e9);
  const auto loopEnd = runtime::Deadline(start + static_cast<runtime::Nanoseconds>(c.workloadSeconds() * 1e9));

  // Every attempt gets fresh slots: a slot of a dead worker may hold a receive
  // UCX never completes, so it is never reused.
  const int maxSlots = static_cast<int>(4 * requests) + 2 * n + 2;
  t.reserve(maxSlots);
  int nextSlot = 0;
  auto* messages = reinterpret_cast<RequestMessage*>(ctx.buffers.allocate(requests * sizeof(RequestMessage) + n * sizeof(RequestMessage)));
  std::byte* replies = ctx.buffers.allocate(2 * requests * replyBytes);
  int repliesUsed = 0;
  for (std::size_t i = 0; i < requests; ++i) messages[i] = {static_cast<std::int32_t>(i), 0};

  std::vector<Request> state(requests);
  std::vector<std::size_t> inFlight;
  std::vector<int> targets(ctx.participants.begin() + 1, ctx.participants.end() - 1);
  std::map<int, bool> lost;
  std::optional<runtime::Nanoseconds> detectedAt;
  std::string detectionPath;
  std::int64_t reroutedCount = 0, failedCount = 0, repostedCount = 0;

  auto markLost = [&](int peer, runtime::Nanoseconds at, const std::string& path) {
    if (peer < 0 || lost[peer]) return;
    lost[peer] = true;
    if (peer == victimRank && !detectedAt) {
      detectedAt = at;
      detectionPath = path;
    }
    event(ctx, at, "detected", peer,
          path + ", " + std::to_string((at - plannedFault) / 1000000) + " ms after the planned fault");
    // The lost worker's share goes to the spare (once), or is dropped.
    auto it = std::find(targets.begin(), targets.end(), peer);
    if (it == targets.end()) return;
    if (peer != spare && !lost[spare] && std::find(targets.begin(), targets.end(), spare) == targets.end()) *it = spare;
    else targets.erase(it);
  };
  t.onError([&](const transport::TransportError& e) { markLost(e.peer, e.at, "transport error: " + e.message); });
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

  event(ctx, plannedFault, "fault", victimRank,
        c.fault + " (SIGKILL) planned at +" + std::to_string(c.atSeconds) +
            " s by the victim's own clock; the victim cannot record it");
  std::size_t nextIssue = 0, rr = 0;
  std::vector<runtime::Nanoseconds> completions;
  while (!loopEnd.expired()) {
    const auto now = runtime::monotonicNow();
    t.testSlots(0, 0);  // progress only: lets the endpoint error callback run before any slot is tested
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
    bool abandoned = false;
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
        // The transport gave up on every outstanding operation, not only the
        // lost peer's: post the other workers' requests again.
        markLost(r.worker, runtime::monotonicNow(), std::string("transport failure: ") + e.what());
        abandoned = true;
      }
    }
    if (abandoned) {
      for (auto id : inFlight) {
        auto& r = state[id];
        if (r.state != Request::State::inFlight) continue;
        if (lost[r.worker]) reroute(id, now);
        else if (post(id, r.worker, now)) ++repostedCount;
        else reroute(id, now);
      }
    }
    inFlight.erase(std::remove_if(inFlight.begin(), inFlight.end(),
                                  [&](std::size_t id) { return state[id].state != Request::State::inFlight; }),
                   inFlight.end());
    if (nextIssue == requests && inFlight.empty()) break;
  }
  const std::int64_t hung = static_cast<std::int64_t>(inFlight.size()) + static_cast<std::int64_t>(requests - nextIssue);
  for (auto id : inFlight)
    if (hung <= 20) event(ctx, runtime::monotonicNow(), "hung", state[id].worker, "request " + std::to_string(id) + " never answered");

  // Release every live worker; a worker that dies now fails its send, bounded.
  const auto stopDeadline = runtime::Deadline::afterSeconds(5);
  std::vector<int> stopSlots;
  for (int g = 1; g < n; ++g) {
    const int worker = ctx.participants[static_cast<std::size_t>(g)];
    if (lost[worker]) continue;
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

  std::sort(completions.begin(), completions.end());
  const auto window = std::max<runtime::Nanoseconds>(20 * interval, 20000000);
  const auto recovery = findRecovery(completions, start, plannedFault, detectedAt.value_or(plannedFault), window);
  if (detectedAt && recovery.recoveredAt)
    event(ctx, *recovery.recoveredAt, "recovered", spare,
          "throughput back to >= 90% of the pre-fault " + std::to_string(static_cast<long long>(recovery.preFaultPerSecond)) +
              " req/s over a " + std::to_string(window / 1000000) + " ms window");
  std::stable_sort(lastEvents_.begin(), lastEvents_.end(),
                   [](const output::EventRecord& a, const output::EventRecord& b) { return a.t_ns < b.t_ns; });

  const std::int64_t completed = static_cast<std::int64_t>(completions.size());
  const double detectionMs = detectedAt ? static_cast<double>(*detectedAt - plannedFault) / 1e6 : -1;
  const double recoveredMs =
      recovery.recoveredAt ? static_cast<double>(*recovery.recoveredAt - plannedFault) / 1e6 : -1;
  ctx.attributes = {
      {"fault", c.fault},
      {"victim_rank", std::int64_t{victimRank}},
      {"spare_rank", std::int64_t{spare}},
      {"fault_planned_ns", ctx.clock.toGlobal(plannedFault)},
      {"detect_within_ms", c.detectWithinSeconds * 1e3},
      {"heartbeat_ms", c.heartbeatSeconds * 1e3},
      {"detected", std::int64_t{detectedAt ? 1 : 0}},
      {"detection_ms", detectionMs},
      {"detection_path", detectionPath},
      {"requests", std::int64_t{c.requests}},
      {"completed", completed},
      {"rerouted", reroutedCount},
      {"reposted", repostedCount},
      {"failed_requests", failedCount},
      {"hung", hung},
      {"pre_fault_rps", recovery.preFaultPerSecond},
      {"recovered_ms", recoveredMs},
  };
  std::string verdict;
  if (!detectedAt) verdict = "the loss of rank " + std::to_string(victimRank) + " was never detected";
  else if (detectionMs > c.detectWithinSeconds * 1e3)
    verdict = "detection took " + std::to_string(detectionMs) + " ms, more than detect_within (" +
              std::to_string(c.detectWithinSeconds * 1e3) + " ms)";
  if (hung > 0) verdict += (verdict.empty() ? "" : "; ") + std::to_string(hung) + " request(s) hung past their deadline";
  if (!verdict.empty()) {
    ctx.dataCheckFailed = true;
    ctx.dataCheckMessage = "fault drill: " + verdict;
  }
}

}  // namespace

std::unique_ptr<TestKind> makeFaultDrillTest() { return std::make_unique<FaultDrillTest>(); }

}  // namespace fabscope::suite
