// Fault drill (kind `fault`): a serving-shaped request stream loses a worker
// on purpose and the survivors must notice, re-route and carry on.
// Group index 0 is the client; 1 .. n-2 are workers (one of them the victim);
// n-1 is the spare, idle until it takes over the victim's share. At `at` after
// the start the fault happens: the victim SIGKILLs itself (kill) or stops
// answering while staying alive (hang, for hang_for or to the end), or the
// client runs fault_command against the victim's link (link-down, loss; flap:
// down for down_for, then restore_command, `repeat` times). A fault that ends
// is followed to the return to baseline: the victim, heard again, gets its
// share back from the spare (for kill the spare keeps it) and must serve it
// at its pre-fault throughput and p99 within recover_within. Every rank sends every other
// rank heartbeats; a survivor detects the loss through the transport's error
// callback (UCX endpoint error: over TCP the socket reset of a dead process),
// missed heartbeats, or (client only) a reply missing for request_timeout.
// The client re-routes the victim's in-flight and later requests to the
// spare and writes the timeline to /tests/NNNN/events; every survivor adds its
// own detection. Samples: one per completed request on the client (t_post =
// first post, so a re-routed request's latency includes its wait on the
// victim). A victim that stays alive leaves the run after the drill.
// Over NCCL (FaultDrillNccl.cpp) there is no client, worker or spare: every
// drill rank runs all-reduce steps, and the survivors detect and abort their
// communicator; the detections, timeline and verdict are judged here alike.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <span>
#include <thread>

#include "kinds/Kind.hpp"
#include "kinds/fault/FaultDrillRoles.hpp"
#include "scenario/TestSource.hpp"

namespace fabscope::suite {
namespace {

using namespace fault_drill;

class FaultDrillKind final : public Kind {
 public:
  std::string name() const override { return "fault"; }
  using enum output::AttributeType;
  using enum output::Presence;
  // Its own attributes of /tests/NNNN; the schema's entry is printed from them.
  static constexpr output::DeclaredAttribute attributes_[] = {
      {"completed", integer},
      {"detect_within_ms", real},
      {"detected", integer},
      {"detection_max_ms", real},
      {"detection_mechanism", text},
      {"detection_ms", real},
      {"detection_path", text},
      {"detection_per_survivor", text},
      {"failed_requests", integer},
      {"false_losses", integer},
      {"false_loss_detail", text},
      {"fault", text},
      {"fault_ns", integer},
      {"heartbeat_deadline_ms", real},
      {"heartbeat_ms", real},
      {"hung", integer},
      {"pre_fault_rps", real},
      {"recovered_ms", real},
      {"reposted", integer},
      {"request_timeout_ms", real},
      {"requests", integer},
      {"rerouted", integer},
      {"spare_rank", integer},
      {"survivors", integer},
      {"survivors_detected", integer},
      {"transport_detection", text},
      {"victim_host", text},
      {"victim_rank", integer},
      {"verbs_qp_retry_budget_s", real, sometimes},
      {"expected_detection_basis", text, always,
       "expected detection (ExpectedDetection.cpp): the basis always, the figures\n"
       "when the settings could be read"},
      {"expected_detection_stack", text, sometimes},
      {"expected_detection_s", real, sometimes},
      {"expected_nccl_ib_s", real, sometimes},
      {"expected_nccl_ib_basis", text, sometimes},
      {"expected_verbs_qp_s", real, sometimes},
      {"expected_verbs_qp_basis", text, sometimes},
      {"faults", integer, sometimes,
       "return to baseline: faults that end (flap, kill with the spare, hang_for, loss_for)"},
      {"fault_lasts_ms", real, sometimes},
      {"every_ms", real, sometimes},
      {"recover_within_ms", real, sometimes},
      {"baseline_throughput", real, sometimes},
      {"baseline_p99", real, sometimes},
      {"baseline_window_ms", real, sometimes},
      {"carrier_rank", integer, sometimes},
      {"victim_pre_fault_rps", real, sometimes},
      {"victim_pre_fault_p99_ms", real, sometimes},
      {"restored_ms", real, sometimes},
      {"rejoined_ms", real, sometimes},
      {"baseline_ms", real, sometimes},
      {"faults_recovered", integer, sometimes},
      {"return_to_baseline", text, sometimes},
      {"fault_cycles", text, sometimes},
      {"fault_command", text, sometimes},
      {"fault_command_started_ns", integer, sometimes},
      {"fault_command_ms", real, sometimes},
      {"fault_command_exit", integer, sometimes},
      {"fault_command_timed_out", integer, sometimes},
      {"fault_command_output", text, sometimes},
      {"restore_command", text, sometimes},
      {"restore_command_exit", integer, sometimes},
      {"restore_command_output", text, sometimes},
      {"abort_within_ms", real, sometimes,
       "over NCCL: the survivors' aborts of their communicator, and why nothing is re-routed"},
      {"abort_max_ms", real, sometimes},
      {"abort_per_survivor", text, sometimes},
      {"reroute", text, sometimes}};
  output::DeclaredAttributes declaredAttributes() const override { return attributes_; }
  std::string summary() const override {
    return "fault drill: a worker is killed, hangs, loses its link or flaps under a request stream; detection "
           "time per survivor, re-routes, hung requests, recovery and the return to baseline";
  }

  scenario::KindRules rules() const override {
    scenario::KindRules r;
    r.extraKeys = {"fault",
                   "victim",
                   "at",
                   "detect_within",
                   "heartbeat",
                   "heartbeat_deadline",
                   "request_timeout",
                   "requests",
                   "rate",
                   "fault_command",
                   "restore_command",
                   "command_timeout",
                   "loss_percent",
                   "down_for",
                   "repeat",
                   "every",
                   "hang_for",
                   "loss_for",
                   "recover_within",
                   "baseline_throughput",
                   "baseline_p99",
                   "baseline_window",
                   "abort_within"};
    r.commandKeys = {"fault_command", "restore_command"};
    r.minRanks = 2;  // over NCCL; over UCX 4 (checkFaultDrillRanks)
    r.parse = [](const scenario::TestSpec& spec, const scenario::TestSource& source) {
      return std::make_shared<FaultDrillConfig>(readFaultDrillConfig(spec, source));
    };
    return r;
  }

  InstancePlan plan(const scenario::TestInstance& instance, int worldSize) const override {
    const auto& spec = *instance.spec;
    const int ranks = measuringRanksOf(spec, worldSize, rules().minRanks);
    if (hasCongestedCondition(spec))
      throw scenario::ScenarioError(spec.at + ": test '" + spec.name +
                                    "': a fault drill runs under condition quiet only");
    const auto& c = scenario::configOf<FaultDrillConfig>(spec);
    checkFaultDrillRanks(c, spec, ranks);
    InstancePlan plan;
    plan.metric = Metric::latency;
    plan.pattern = "fault";
    plan.mayLoseRanks = true;
    plan.maxSamplesPerRank = c.requests;
    if (c.abortDrill) {
      // Its own NCCL communicator and GPU buffers (FaultDrillNccl.cpp), outside the arena.
      plan.ownDataPath = true;
      plan.description = std::to_string(ranks) + " ranks, " + std::to_string(c.requests) +
                         " NCCL all-reduce steps of " + std::to_string(c.replyBytes) + " B at " +
                         std::to_string(static_cast<long long>(c.rate)) + "/s; " + c.fault + " of rank index " +
                         std::to_string(c.victim) + " at " + std::to_string(c.atSeconds) +
                         " s; survivors abort within " + std::to_string(c.abortWithinSeconds) + " s";
      return plan;
    }
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

  // A link fault acts on the victim's host: a drill rank there would be cut
  // off too. Refused at load where the ranks' placement is known then (not
  // for placement: random, drawn from the run's seed at run time: the check below
  // still stops it, with exit 1).
  void checkPlacement(const scenario::TestInstance& instance,
                      const std::vector<std::string>& hostOfRank) const override {
    const auto& spec = *instance.spec;
    const auto& c = scenario::configOf<FaultDrillConfig>(spec);
    const auto roleSpec = roleSpecOf(spec);
    if (!c.usesCommand() || roleSpec.placement == "random") return;
    const auto roles = assignRoles(roleSpec, hostOfRank, rules().minRanks, false, 0);
    const auto& participants = roles.canaries;
    if (c.victim < 0 || static_cast<std::size_t>(c.victim) >= participants.size()) return;  // plan refuses it
    const int victimRank = participants[static_cast<std::size_t>(c.victim)];
    const auto& victimHost = hostOfRank.at(static_cast<std::size_t>(victimRank));
    for (int rank : participants)
      if (rank != victimRank && hostOfRank.at(static_cast<std::size_t>(rank)) == victimHost)
        throw scenario::ScenarioError(spec.where("victim") + ": test '" + spec.name + "': fault: " + c.fault +
                                      " acts on the victim's host " + victimHost + ", which also runs rank " +
                                      std::to_string(rank) +
                                      " of the drill: it would be cut off too. "
                                      "Place the victim (rank " +
                                      std::to_string(victimRank) + ", index " + std::to_string(c.victim) +
                                      ") alone on its host, e.g. one rank per host, or choose another victim");
  }

  // Filled as the run fills them (quoted); the victim's host is known only once the ranks are placed.
  std::vector<std::string> shellCommands(const scenario::TestSpec& spec) const override {
    const auto& c = scenario::configOf<FaultDrillConfig>(spec);
    const std::map<std::string, std::string> values = {
        {"victim_host", "<host of rank " + std::to_string(c.victim) + ">"},
        {"victim_rank", std::to_string(c.victim)},
        {"percent", std::to_string(static_cast<int>(c.lossPercent))}};
    std::vector<std::string> out;
    if (!c.faultCommand.empty()) out.push_back("fault_command: " + expandFaultCommand(c.faultCommand, values));
    if (!c.restoreCommand.empty()) out.push_back("restore_command: " + expandFaultCommand(c.restoreCommand, values));
    return out;
  }

  Outcome run(RunContext& ctx) const override {
    auto& events = ctx.adopt(std::make_unique<EventLog>());
    Outcome outcome;
    const auto& c = scenario::configOf<FaultDrillConfig>(*ctx.instance.spec);
    const int index = ctx.group.rank();
    const bool victim = index == c.victim;
    if (c.usesCommand()) requireVictimAloneOnItsHost(ctx, c);
    // Over NCCL: the communicator and its first all-reduce, with every rank alive, before the start.
    std::function<ClientOutcome(runtime::Nanoseconds)> abortDrill;
    if (c.abortDrill) abortDrill = prepareAbortDrill(ctx, c, victim, events);
    // Before the fault, while every rank is alive: the communicator the run goes on with.
    auto survivors = ctx.group.split(victim ? 1 : 0, index, ctx.deadline);
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
    if (abortDrill)
      client = abortDrill(start);
    else if (index == 0)
      client = serveClient(ctx, c, start, events);
    else
      mine = serveWorker(ctx, c, start, victim, events);
    if (victim) {
      // Alive after a hang, link-down or loss: out of the run, so the
      // survivors' communicator never waits for it.
      outcome.leaveRun = true;
      return outcome;
    }
    if (index == 0 || abortDrill) mine = client.detection;
    // Every survivor's detection of the victim, on the global clock.
    const auto detectedAt = survivors.allgather(mine.at ? ctx.clock.toGlobal(*mine.at) : -1, ctx.deadline);
    const auto paths = survivors.gatherStrings(mine.path, 0, ctx.deadline);
    const auto abortTook = abortDrill ? survivors.allgather(mine.abortTook, ctx.deadline) : std::vector<std::int64_t>{};
    // One timeline: every survivor's events, in time order, written by the client.
    std::vector<int> counts;
    const auto rows = survivors.gatherBytes(std::as_bytes(std::span(events.rows)), 0, counts, ctx.deadline);
    events.rows.resize(rows.size() / sizeof(EventRecord));
    if (!rows.empty()) std::memcpy(events.rows.data(), rows.data(), events.rows.size() * sizeof(EventRecord));
    outcome.survivors = std::move(survivors);
    if (index == 0) outcome.attributes = judge(ctx, c, client, detectedAt, paths, abortTook, events);
    return outcome;
  }

  std::vector<output::KindTable> tables() const override { return {output::KindTable::of<EventRecord>("events")}; }

 private:
  // A link fault acts on the victim's host: a survivor there would be cut off
  // too. Every rank checks the same table, so all of them stop together.
  static void requireVictimAloneOnItsHost(const RunContext& ctx, const FaultDrillConfig& c) {
    const auto& hosts = ctx.identity.hostOfRank;
    const int victimRank = ctx.participants[static_cast<std::size_t>(c.victim)];
    const auto& victimHost = hosts.at(static_cast<std::size_t>(victimRank));
    for (int rank : ctx.participants)
      if (rank != victimRank && hosts.at(static_cast<std::size_t>(rank)) == victimHost)
        throw RuntimeFailure("fault: " + c.fault + " acts on the victim's host " + victimHost +
                             ", which also runs rank " + std::to_string(rank) +
                             " of the drill: it would be cut off too. Place the victim (rank " +
                             std::to_string(victimRank) + ", index " + std::to_string(c.victim) +
                             ") alone on its host, e.g. one rank per host, or choose another victim");
  }

  // Every survivor's `detected` rows of the timeline.
  static std::vector<DeclaredLoss> declaredLosses(const EventLog& events) {
    std::vector<DeclaredLoss> out;
    for (const auto& row : events.rows)
      if (std::strncmp(row.kind, "detected", sizeof row.kind) == 0 && row.peer >= 0)
        out.push_back({row.rank, row.peer, row.t_ns, std::string(row.detail, strnlen(row.detail, sizeof row.detail))});
    return out;
  }

  // The client's attributes and verdict; sorts the timeline.
  output::Attributes judge(RunContext& ctx, const FaultDrillConfig& c, ClientOutcome& client,
                           const std::vector<std::int64_t>& detectedAt, const std::vector<std::string>& paths,
                           const std::vector<std::int64_t>& abortTook, EventLog& events) const;
};

output::Attributes FaultDrillKind::judge(RunContext& ctx, const FaultDrillConfig& c, ClientOutcome& client,
                                         const std::vector<std::int64_t>& detectedAt,
                                         const std::vector<std::string>& paths,
                                         const std::vector<std::int64_t>& abortTook, EventLog& events) const {
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
  if (c.abortDrill) {
    // Every survivor must have aborted its communicator within abort_within of its detection.
    std::vector<SurvivorAbort> aborts;
    for (std::size_t i = 0; i < survivors.size(); ++i)
      aborts.push_back({survivors[i].rank, survivors[i].detectedNs >= 0, abortTook.at(i)});
    const auto aborted = judgeAborts(aborts, c.abortWithinSeconds * 1e3);
    client.hung = aborted.stuck;
    a.emplace_back("hung", std::int64_t{aborted.stuck});
    a.emplace_back("abort_max_ms", aborted.slowestMs);
    a.emplace_back("abort_per_survivor", aborted.perSurvivor);
    if (!aborted.late.empty())
      client.verdict += (client.verdict.empty() ? "" : "; ") + std::string("communicator abort: ") + aborted.late;
  }
  events.add(ctx, runtime::monotonicNow(), "summary", -1,
             std::to_string(detectedCount) + "/" + std::to_string(detectedAt.size()) + " survivors detected, slowest " +
                 milliseconds(slowest) + " ms; " + std::to_string(client.hung) + " hung");
  std::stable_sort(events.rows.begin(), events.rows.end(),
                   [](const EventRecord& x, const EventRecord& y) { return x.t_ns < y.t_ns; });
  const int victimRank = ctx.participants[static_cast<std::size_t>(c.victim)];
  const auto falseLosses = judgeFalseLosses(declaredLosses(events), victimRank, ctx.clock.toGlobal(client.faultAt));
  a.emplace_back("false_losses", std::int64_t{falseLosses.count});
  a.emplace_back("false_loss_detail", falseLosses.detail);

  std::string verdict = client.verdict;
  if (!late.empty()) {
    verdict = "detection of rank " + std::to_string(victimRank) + "'s " + c.fault + " missed detect_within (" +
              milliseconds(c.detectWithinSeconds * 1e3) + " ms): " + late + (verdict.empty() ? "" : "; " + verdict);
  }
  // First, because it explains what follows: with a live peer declared lost,
  // the detection and recovery figures do not describe the fault.
  if (falseLosses.count)
    verdict =
        std::to_string(falseLosses.count) + " live peer(s) declared lost, so this drill cannot judge the " + c.fault +
        " (late heartbeats: an overloaded host, see VALIDITY, or heartbeat_deadline too tight): " + falseLosses.detail +
        (verdict.empty() ? "" : "; " + verdict);
  if (!verdict.empty()) {
    ctx.verdict.fail("fault drill: " + verdict);
  }
  return a;
}

}  // namespace

std::unique_ptr<Kind> makeFaultDrillKind() { return std::make_unique<FaultDrillKind>(); }

}  // namespace fabscope::suite
