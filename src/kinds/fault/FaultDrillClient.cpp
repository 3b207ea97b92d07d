// Fault drill, client side: issues the request stream at `rate`, runs the
// fault command at the fault moment (link-down, loss), detects the victim's
// loss (transport error callback, heartbeats, a reply missing for
// request_timeout), re-routes its in-flight and later requests to the spare,
// releases the workers, runs the restore command and computes the stream's
// numbers (completed, re-routed, failed, hung, recovery to 90 %).
#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>

#include "fabscope/BuildConfig.hpp"
#include "kinds/fault/ExpectedDetection.hpp"
#include "kinds/fault/FaultCommand.hpp"
#include "kinds/fault/FaultDrillRoles.hpp"
#include "kinds/fault/FaultHeartbeat.hpp"
#include "runtime/Deadlines.hpp"
#include "transport/TransportFactory.hpp"
#include "transport/VerbsOptions.hpp"

namespace fabscope::suite::fault_drill {
namespace {

struct Request {
  enum class State { waiting, inFlight, completed, failed } state = State::waiting;
  int worker = -1;  // world rank serving the current attempt
  int slot = -1;    // send slot of the current attempt; slot + 1 receives the reply
  runtime::Nanoseconds firstPostedAt = 0, postedAt = 0, doneAt = 0;
  bool rerouted = false;
};

// "flap 2/3" for the second of three faults, the fault alone when it is the only one.
std::string faultName(const FaultDrillConfig& c, std::size_t i, std::size_t count) {
  return count > 1 ? c.fault + " " + std::to_string(i + 1) + "/" + std::to_string(count) : c.fault;
}

// What the return to baseline of each fault is judged against: the
// victim's pre-fault service and the rank that carries its share afterwards.
struct BaselineJudge {
  const RunContext& ctx;
  const FaultDrillConfig& c;
  EventLog& events;
  int carrier;
  std::vector<CarrierCompletion> carried;  // the carrier's completions
  double preRate = 0, preP99 = 0;
  runtime::Nanoseconds window = 0, recoverWithin = 0, streamEnd = 0;
  std::string reference;  // what recovery counts from: "the restore" or "the detection"

  std::string judge(std::vector<FaultCycle>& cycles, std::size_t i, int& recovered, double& worstMs,
                    std::string& missing) const;
  void judgeBaseline(FaultCycle& k, const std::string& name, runtime::Nanoseconds from, runtime::Nanoseconds until,
                     std::string& line, int& recovered, double& worstMs, std::string& missing) const;
};

BaselineJudge baselineJudgeOf(const RunContext& ctx, const FaultDrillConfig& c, const std::vector<Request>& state,
                              runtime::Nanoseconds start, runtime::Nanoseconds firstFault, int carrier, int victimRank,
                              EventLog& events) {
  BaselineJudge j{ctx, c, events, carrier, {}, 0, 0, 0, 0, 0, {}};
  // The victim's pre-fault service: its requests done before the first fault.
  std::vector<double> preLatencies;
  for (const auto& r : state) {
    if (r.state != Request::State::completed || r.rerouted) continue;
    if (r.worker == victimRank && r.doneAt < firstFault)
      preLatencies.push_back(static_cast<double>(r.doneAt - r.firstPostedAt));
    if (r.worker == carrier) j.carried.push_back({r.firstPostedAt, r.doneAt});
  }
  j.preRate =
      firstFault > start ? static_cast<double>(preLatencies.size()) * 1e9 / static_cast<double>(firstFault - start) : 0;
  j.preP99 = percentile99(preLatencies);
  j.window = static_cast<runtime::Nanoseconds>(c.baselineWindowSeconds * 1e9);
  j.recoverWithin = static_cast<runtime::Nanoseconds>(c.recoverWithinSeconds * 1e9);
  j.reference = c.victimReturns() ? "the restore" : "the detection";
  // Nothing is measured past the stream's last completion.
  for (const auto& r : state)
    if (r.state == Request::State::completed) j.streamEnd = std::max(j.streamEnd, r.doneAt);
  return j;
}

// The carrier's first whole window at baseline in [from, until), or why there is none.
void BaselineJudge::judgeBaseline(FaultCycle& k, const std::string& name, runtime::Nanoseconds from,
                                  runtime::Nanoseconds until, std::string& line, int& recovered, double& worstMs,
                                  std::string& missing) const {
  const auto b = findBaseline(carried, from, until, window, preRate, preP99, c.baselineThroughput, c.baselineP99);
  k.baselineAt = b.at;
  k.throughputPerSecond = b.throughputPerSecond;
  k.p99Ns = b.p99Ns;
  const std::string figures = std::to_string(static_cast<long long>(b.throughputPerSecond)) + " req/s, p99 " +
                              milliseconds(b.p99Ns / 1e6) + " ms";
  if (b.at) {
    ++recovered;
    const double ms = static_cast<double>(*b.at - from) / 1e6;
    worstMs = std::max(worstMs, ms);
    line += ", baseline " + milliseconds(ms) + " ms after " + reference + " (" + figures + ")";
    events.add(ctx, *b.at, "baseline", carrier,
               name + ": rank " + std::to_string(carrier) + " back at baseline " + milliseconds(ms) + " ms after " +
                   reference + ": " + figures + " (pre-fault " + std::to_string(static_cast<long long>(preRate)) +
                   " req/s, p99 " + milliseconds(preP99 / 1e6) + " ms)");
    return;
  }
  // Said plainly when the stream (or the next fault) left no whole window after the restore.
  const std::string why = until <= from ? "the request stream ended before " + reference
                          : until - from < window
                              ? "no baseline_window of requests was left after " + reference + " (" +
                                    milliseconds(static_cast<double>(until - from) / 1e6) + " ms)"
                              : "best window " + figures;
  line += ", not recovered within " + milliseconds(c.recoverWithinSeconds * 1e3) + " ms (" + why + ")";
  missing += (missing.empty() ? "" : "; ") + name + " not recovered within recover_within (" +
             milliseconds(c.recoverWithinSeconds * 1e3) + " ms after " + reference + "; " + why + "; needed " +
             std::to_string(static_cast<long long>(c.baselineThroughput * preRate)) +
             " req/s and p99 <= " + milliseconds(c.baselineP99 * preP99 / 1e6) + " ms)";
  events.add(ctx, std::max(until, from), "not_recovered", carrier, name + ": not back at baseline: " + why);
}

// Fault i's line of `fault_cycles`: detection, restore, return to service and to baseline.
std::string BaselineJudge::judge(std::vector<FaultCycle>& cycles, std::size_t i, int& recovered, double& worstMs,
                                 std::string& missing) const {
  auto& k = cycles[i];
  const std::string name = faultName(c, i, cycles.size());
  // A victim never declared lost (a lossy link it served through) never left: it is back at the restore.
  if (c.victimReturns() && k.restoredAt && !k.rejoinedAt && !k.detectedAt) k.rejoinedAt = k.restoredAt;
  if (!c.victimReturns() && k.detectedAt) k.rejoinedAt = k.detectedAt;  // the spare took the share over
  const auto from = c.victimReturns() ? k.restoredAt : k.detectedAt;
  std::string line = std::to_string(i + 1) + ": ";
  line += k.detectedAt
              ? "detected " + milliseconds(static_cast<double>(*k.detectedAt - k.faultAt) / 1e6) + " ms after the fault"
              : "not detected";
  if (c.victimReturns())
    line += k.restoredAt
                ? ", restored at +" + milliseconds(static_cast<double>(*k.restoredAt - k.faultAt) / 1e6) + " ms"
                : ", never restored";
  if (k.rejoinedAt && from)
    line += ", rank " + std::to_string(carrier) + " in service " +
            milliseconds(static_cast<double>(*k.rejoinedAt - *from) / 1e6) + " ms after " + reference;
  if (from) {
    auto until = *from + recoverWithin;
    if (i + 1 < cycles.size() && cycles[i + 1].faultAt > 0) until = std::min(until, cycles[i + 1].faultAt);
    until = std::min(until, streamEnd);
    judgeBaseline(k, name, *from, until, line, recovered, worstMs, missing);
  } else {
    line += ", not recovered (" + std::string(c.victimReturns() ? "never restored" : "never detected") + ")";
    missing += (missing.empty() ? "" : "; ") + name + " not recovered: " +
               (c.victimReturns() ? "its end (restore) never came" : "never detected, so no spare took over");
  }
  return line;
}

// Faults after the first: detection judged here (the first's is judged with
// every survivor's, in FaultDrillKind).
void judgeLaterDetections(const FaultDrillConfig& c, const std::vector<FaultCycle>& cycles, ClientOutcome& outcome) {
  for (std::size_t i = 1; i < cycles.size(); ++i) {
    const auto& k = cycles[i];
    if (!c.detectionRequired() || k.faultAt <= 0) continue;
    const std::string name = faultName(c, i, cycles.size());
    const double after = k.detectedAt ? static_cast<double>(*k.detectedAt - k.faultAt) / 1e6 : -1;
    if (after < 0 || after > c.detectWithinSeconds * 1e3)
      outcome.verdict += (outcome.verdict.empty() ? "" : "; ") + name +
                         (after < 0 ? ": never detected by the client"
                                    : ": detected after " + milliseconds(after) + " ms, past detect_within (" +
                                          milliseconds(c.detectWithinSeconds * 1e3) + " ms)");
  }
}

// The return to baseline of every fault that ended: the rank that carries the
// victim's share afterwards (the victim itself, back; for kill the spare)
// measured against the victim's pre-fault throughput and p99. Adds the
// `restored`/`baseline`/`not_recovered` rows and the verdict; returns the attributes.
output::Attributes judgeReturnToBaseline(const RunContext& ctx, const FaultDrillConfig& c,
                                         const std::vector<Request>& state, runtime::Nanoseconds start, int victimRank,
                                         int spare, ClientOutcome& outcome, EventLog& events) {
  auto& cycles = outcome.cycles;
  if (cycles.empty()) return {};
  const int carrier = c.victimReturns() ? victimRank : spare;
  const auto j = baselineJudgeOf(ctx, c, state, start, cycles[0].faultAt, carrier, victimRank, events);
  std::string perFault, missing;
  double worstMs = -1;
  int recovered = 0;
  for (std::size_t i = 0; i < cycles.size(); ++i)
    perFault += (perFault.empty() ? "" : "; ") + j.judge(cycles, i, recovered, worstMs, missing);
  judgeLaterDetections(c, cycles, outcome);
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
      {"victim_pre_fault_rps", j.preRate},
      {"victim_pre_fault_p99_ms", j.preP99 / 1e6},
      {"restored_ms", msBetween(first.faultAt, first.restoredAt)},
      {"rejoined_ms", msBetween(c.victimReturns() ? first.restoredAt : first.detectedAt, first.rejoinedAt)},
      {"baseline_ms", missing.empty() ? worstMs : -1.0},
      {"faults_recovered", std::int64_t{recovered}},
      {"return_to_baseline", std::string(missing.empty() ? "recovered" : "not recovered")},
      {"fault_cycles", perFault},
  };
}

// The client's whole drill: its request stream and the workers serving it,
// the fault and restore commands, what it learns of lost and returning
// workers, and the numbers it reports. One object so that the loop's steps
// share the stream's state without passing it around.
class DrillClient {
 public:
  DrillClient(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, EventLog& events);
  ClientOutcome serve();

 private:
  // The loop's steps, in the order of one pass.
  void driveCommands(runtime::Nanoseconds now);
  void followOwnClockFault(runtime::Nanoseconds now);
  void hearHeartbeats(runtime::Nanoseconds now, bool& abandoned);
  void issueDueRequests(runtime::Nanoseconds now);
  void collectReplies(runtime::Nanoseconds now, bool& abandoned);
  bool finished() const;
  // What happens to requests and workers.
  void markLost(int peer, runtime::Nanoseconds at, const std::string& path);
  void rejoin(runtime::Nanoseconds heardAt, const std::string& how);
  bool post(std::size_t id, int worker, runtime::Nanoseconds now);
  void reroute(std::size_t id);
  void repostAll(runtime::Nanoseconds now);
  // After the loop.
  std::int64_t noteHung();
  void releaseWorkers();
  output::Attributes finishCommands();
  void finishRestoresInLoop(output::Attributes& attributes);
  void runRestoreAfterWorkload(output::Attributes& attributes);
  output::Attributes streamAttributes(std::int64_t hung);
  void addVerdict(const std::string& what) { outcome_.verdict += (outcome_.verdict.empty() ? "" : "; ") + what; }
  std::string faultName(int i) const {
    return fault_drill::faultName(c_, static_cast<std::size_t>(i), static_cast<std::size_t>(faults_));
  }
  runtime::Nanoseconds faultDue(int i) const {
    return start_ + static_cast<runtime::Nanoseconds>(c_.faultStartSeconds(i) * 1e9);
  }

  RunContext& ctx_;
  const FaultDrillConfig& c_;
  const runtime::Nanoseconds start_;
  EventLog& events_;
  transport::Transport& t_;
  const int n_, spare_, victimRank_;
  const std::size_t requests_, replyBytes_;
  const runtime::Nanoseconds interval_, replyTimeout_, plannedFault_;
  const runtime::Deadline loopEnd_;
  const std::vector<int> peers_;
  // Every attempt gets fresh slots: a slot of a dead worker may hold a receive
  // UCX never completes, so it is never reused.
  const int maxSlots_;
  // The end of the slot range is kept for releaseWorkers: a stop and its ack per worker.
  int stopSlots() const { return 2 * n_; }
  int nextSlot_ = 0;
  RequestMessage* messages_ = nullptr;
  std::byte* replies_ = nullptr;
  // Reply buffers, used in turn. Nobody reads a reply (its arrival is the
  // sample), so a buffer reused while an abandoned receive still targets it
  // only takes bytes nobody reads. One per reply of the whole stream (2 x
  // requests: 320 MB at 16 KiB) left the client sending no heartbeat for its
  // first 500 ms and p50 at 22-60 ms (15 us at 4 KiB); with 256, 16 KiB ran at
  // 25 us. 1024 covers half a second of requests at the default rate.
  std::size_t replyRing() const { return std::min<std::size_t>(2 * requests_, 1024); }
  int repliesUsed_ = 0;
  std::unique_ptr<Heartbeats> heartbeats_;
  // The fault commands (a flap has `repeat`), the restore commands run inside
  // the loop (flap, loss_for) and their placeholders, prepared before the loop.
  const int faults_;
  std::vector<std::unique_ptr<FaultCommand>> faultCommands_, restoreCommands_;
  std::vector<char> faultReported_, restoreReported_;
  std::map<std::string, std::string> placeholders_;
  std::string faultCommandLine_, restoreCommandLine_;
  const runtime::Nanoseconds lasts_;
  // The stream.
  std::vector<Request> state_;
  std::vector<std::size_t> inFlight_;
  std::vector<int> targets_;
  std::map<int, bool> lost_;
  ClientOutcome outcome_;
  std::int64_t reroutedCount_ = 0, failedCount_ = 0, repostedCount_ = 0;
  // Faults that end: one cycle each; `cycle_` is the latest begun (-1: none yet).
  int cycle_ = -1;
  std::vector<char> lostInCycle_;
  bool hangEndNoted_ = false;
  std::size_t nextIssue_ = 0, rr_ = 0;
  std::vector<runtime::Nanoseconds> completions_;
};

DrillClient::DrillClient(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, EventLog& events)
    : ctx_(ctx),
      c_(c),
      start_(start),
      events_(events),
      t_(ctx.transport),
      n_(ctx.group.size()),
      spare_(ctx.participants[static_cast<std::size_t>(n_ - 1)]),
      victimRank_(ctx.participants[static_cast<std::size_t>(c.victim)]),
      requests_(static_cast<std::size_t>(c.requests)),
      replyBytes_(static_cast<std::size_t>(c.replyBytes)),
      interval_(static_cast<runtime::Nanoseconds>(1e9 / c.rate)),
      replyTimeout_(static_cast<runtime::Nanoseconds>(c.requestTimeoutSeconds * 1e9)),
      plannedFault_(start + static_cast<runtime::Nanoseconds>(c.atSeconds * 1e9)),
      loopEnd_(start + static_cast<runtime::Nanoseconds>(c.workloadSeconds() * 1e9)),
      peers_(othersThan(ctx.participants, ctx.world.rank())),
      maxSlots_(static_cast<int>(4 * requests_) + 2 * n_ + 2),
      faults_(c.faultCount()),
      faultReported_(static_cast<std::size_t>(faults_), 0),
      restoreReported_(static_cast<std::size_t>(faults_), 0),
      lasts_(static_cast<runtime::Nanoseconds>(c.faultLastsSeconds() * 1e9)),
      state_(requests_),
      targets_(ctx.participants.begin() + 1, ctx.participants.end() - 1) {
  t_.reserve(maxSlots_ + Heartbeats::slotsNeeded(peers_.size()));
  messages_ = reinterpret_cast<RequestMessage*>(
      ctx.buffers.allocate(requests_ * sizeof(RequestMessage) + 2 * n_ * sizeof(RequestMessage)));  // + stops, acks
  replies_ = ctx.buffers.allocate(replyRing() * replyBytes_);
  auto* beats = reinterpret_cast<std::uint64_t*>(ctx.buffers.allocate(2 * peers_.size() * sizeof(std::uint64_t)));
  for (std::size_t i = 0; i < requests_; ++i) messages_[i] = {static_cast<std::int32_t>(i), 0};
  heartbeats_ =
      std::make_unique<Heartbeats>(t_, peers_, maxSlots_, static_cast<runtime::Nanoseconds>(c.heartbeatSeconds * 1e9),
                                   static_cast<runtime::Nanoseconds>(c.heartbeatDeadlineSeconds * 1e9), beats);
  for (int i = 0; i < faults_; ++i) {
    faultCommands_.push_back(std::make_unique<FaultCommand>());
    restoreCommands_.push_back(std::make_unique<FaultCommand>());
  }
  placeholders_ = {{"victim_host", ctx.identity.hostOfRank.at(static_cast<std::size_t>(victimRank_))},
                   {"victim_rank", std::to_string(victimRank_)},
                   {"percent", std::to_string(static_cast<int>(c.lossPercent))}};
  faultCommandLine_ = c.usesCommand() ? expandFaultCommand(c.faultCommand, placeholders_) : "";
  restoreCommandLine_ = c.restoreCommand.empty() ? "" : expandFaultCommand(c.restoreCommand, placeholders_);
  outcome_.faultAt = plannedFault_;
  outcome_.cycles.resize(c.faultEnds() ? static_cast<std::size_t>(faults_) : 0);
  lostInCycle_.assign(outcome_.cycles.size(), 0);
  if (c.victimReturns()) heartbeats_->watchForReturn(victimRank_);
}

void DrillClient::markLost(int peer, runtime::Nanoseconds at, const std::string& path) {
  if (peer < 0 || lost_[peer]) return;
  lost_[peer] = true;
  at = recordedDetection(ctx_, peer, victimRank_, at);
  // The victim of a fault that ends may come back, unless its transport endpoint failed.
  if (peer == victimRank_ && c_.victimReturns() && path.rfind("transport", 0) != 0)
    heartbeats_->markSilent(peer);
  else
    heartbeats_->forget(peer);
  if (peer == victimRank_ && !outcome_.detection.at) outcome_.detection = {at, path};
  // A fault the victim makes itself (kill, hang) starts its cycle when this loop
  // next reads the clock; a loss noticed at or after the planned moment within
  // the turn that read it just before (a transport's error callback runs in the
  // same turn's progress) belongs to that cycle all the same.
  if (peer == victimRank_ && cycle_ < 0 && at >= plannedFault_) followOwnClockFault(at);
  if (peer == victimRank_ && cycle_ >= 0 && !outcome_.cycles.empty()) {
    auto& k = outcome_.cycles[static_cast<std::size_t>(cycle_)];
    if (!k.detectedAt) k.detectedAt = at;
    lostInCycle_[static_cast<std::size_t>(cycle_)] = 1;
  }
  events_.add(ctx_, at, "detected", peer, path);
  // The lost worker's share goes to the spare (once), or is dropped.
  auto it = std::find(targets_.begin(), targets_.end(), peer);
  if (it == targets_.end()) return;
  if (peer != spare_ && !lost_[spare_] && std::find(targets_.begin(), targets_.end(), spare_) == targets_.end())
    *it = spare_;
  else
    targets_.erase(it);
}

// The victim is heard again after its fault ended: its share moves back from the spare.
void DrillClient::rejoin(runtime::Nanoseconds heardAt, const std::string& how) {
  auto& k = outcome_.cycles[static_cast<std::size_t>(cycle_)];
  // Heard in the loop pass that saw the restore end: the loop's clock reading
  // may precede the command's end by a little; the return cannot.
  const auto at = std::max(heardAt, k.restoredAt.value_or(heardAt));
  lost_[victimRank_] = false;
  auto it = std::find(targets_.begin(), targets_.end(), spare_);
  if (it != targets_.end())
    *it = victimRank_;
  else if (std::find(targets_.begin(), targets_.end(), victimRank_) == targets_.end())
    targets_.push_back(victimRank_);
  if (!k.rejoinedAt) k.rejoinedAt = at;  // a later one follows a loss after the return (a stall), not the fault
  events_.add(ctx_, at, "rejoined", victimRank_,
              how + " (" + milliseconds(static_cast<double>(at - k.restoredAt.value_or(at)) / 1e6) +
                  " ms after the restore); its share moves back from the spare");
}

// Returns false when the attempt could not be posted (its worker is lost).
bool DrillClient::post(std::size_t id, int worker, runtime::Nanoseconds now) {
  auto& r = state_[id];
  r.worker = worker;
  r.slot = nextSlot_;
  nextSlot_ += 2;
  std::byte* reply = replies_ + static_cast<std::size_t>(repliesUsed_++ % replyRing()) * replyBytes_;
  try {
    t_.postRecv(r.slot + 1, worker, replyTagBase + static_cast<int>(id), reply, replyBytes_);
    t_.postSend(r.slot, worker, requestTag, &messages_[id], sizeof(RequestMessage));
  } catch (const RuntimeFailure& e) {
    markLost(worker, runtime::monotonicNow(), std::string("post failed: ") + e.what());
    return false;
  }
  r.postedAt = now;
  if (r.state == Request::State::waiting) r.firstPostedAt = now;
  r.state = Request::State::inFlight;
  return true;
}

// A request whose worker is gone: to the spare, or failed when it has no
// live worker left or was re-routed already.
void DrillClient::reroute(std::size_t id) {
  // Stamped now, not with the loop's time: the loss that causes a re-route may have
  // been learnt (callback) after the loop read the clock, and a re-route stamped
  // before its cause would put it before the fault in the timeline.
  const auto now = runtime::monotonicNow();
  auto& r = state_[id];
  const int from = r.worker;
  if (!r.rerouted && !targets_.empty() && nextSlot_ + 2 <= maxSlots_ - stopSlots()) {
    const int to = std::find(targets_.begin(), targets_.end(), spare_) != targets_.end() ? spare_ : targets_.front();
    r.rerouted = true;
    if (post(id, to, now)) {
      ++reroutedCount_;
      events_.add(ctx_, now, "rerouted", to, "request " + std::to_string(id) + " from rank " + std::to_string(from));
      return;
    }
  }
  r.state = Request::State::failed;
  ++failedCount_;
  events_.add(ctx_, now, "failed", from, "request " + std::to_string(id) + ": no live worker to re-route it to");
}

// The transport cancelled every outstanding operation (its reaction to a
// failed peer), not only the lost peer's: post the others again.
void DrillClient::repostAll(runtime::Nanoseconds now) {
  heartbeats_->repost();
  for (auto id : inFlight_) {
    auto& r = state_[id];
    if (r.state != Request::State::inFlight) continue;
    if (lost_[r.worker])
      reroute(id);
    else if (post(id, r.worker, now))
      ++repostedCount_;
    else
      reroute(id);
  }
}

// Starts each fault command when due (a flap's next only after the previous
// restore), and each restore once its fault has lasted; reports their ends.
void DrillClient::driveCommands(runtime::Nanoseconds now) {
  auto& cycles = outcome_.cycles;
  for (int i = 0; c_.usesCommand() && i < faults_; ++i) {
    const auto k = static_cast<std::size_t>(i);
    auto& command = *faultCommands_[k];
    if (!command.started() && now >= faultDue(i) && (i == 0 || restoreReported_[k - 1])) {
      command.start(faultCommandLine_, c_.commandTimeoutSeconds);
      const auto at = command.result().startedAt;
      if (i == 0) outcome_.faultAt = at;
      if (!cycles.empty()) cycles[k].faultAt = at;
      cycle_ = i;
      events_.add(ctx_, at, "fault", victimRank_, faultName(i) + ": fault_command started: " + faultCommandLine_);
    }
    if (command.started() && !faultReported_[k] && command.poll()) {
      faultReported_[k] = 1;
      const auto& r = command.result();
      events_.add(ctx_, r.endedAt ? r.endedAt : now, "fault_command", victimRank_, r.describe());
    }
    if (!c_.restoresInLoop()) continue;
    auto& restore = *restoreCommands_[k];
    // down_for counts from the fault command's end: the link is down from then.
    if (!restore.started() && faultReported_[k] && now >= command.result().endedAt + lasts_) {
      restore.start(restoreCommandLine_, c_.commandTimeoutSeconds);
      events_.add(ctx_, restore.result().startedAt, "restore_command", victimRank_,
                  faultName(i) + ": restore_command started: " + restoreCommandLine_);
    }
    if (restore.started() && !restoreReported_[k] && restore.poll()) {
      restoreReported_[k] = 1;
      const auto& r = restore.result();
      cycles[k].restoredAt = r.endedAt;
      events_.add(ctx_, r.endedAt, "restored", victimRank_, faultName(i) + ": restore_command " + r.describe());
    }
  }
}

// A fault the victim makes itself (kill, hang) begins at the planned moment;
// a hang with hang_for ends by the victim's own clock.
void DrillClient::followOwnClockFault(runtime::Nanoseconds now) {
  auto& cycles = outcome_.cycles;
  if (c_.usesCommand() || cycles.empty() || now < plannedFault_) return;
  if (cycle_ < 0) {
    cycle_ = 0;
    cycles[0].faultAt = plannedFault_;
  }
  if (c_.fault == "hang" && !hangEndNoted_ && now >= plannedFault_ + lasts_) {
    hangEndNoted_ = true;
    cycles[0].restoredAt = plannedFault_ + lasts_;
    events_.add(ctx_, plannedFault_ + lasts_, "restored", victimRank_,
                "hang_for " + milliseconds(c_.hangForSeconds * 1e3) + " ms is over by the victim's own clock");
  }
}

void DrillClient::hearHeartbeats(runtime::Nanoseconds now, bool& abandoned) {
  for (const auto& loss : heartbeats_->poll(now, abandoned)) {
    if (!loss.returned) {
      markLost(loss.peer, loss.at, loss.detail);
      continue;
    }
    if (loss.peer != victimRank_ || !lost_[victimRank_] || cycle_ < 0) continue;
    // Heard during the fault (a lossy link lets some through): not back yet.
    if (!outcome_.cycles[static_cast<std::size_t>(cycle_)].restoredAt)
      heartbeats_->markSilent(victimRank_);
    else
      rejoin(loss.at, loss.detail);
  }
}

// Every request whose time has come, round-robin over the live workers.
void DrillClient::issueDueRequests(runtime::Nanoseconds now) {
  while (nextIssue_ < requests_ && now >= start_ + static_cast<runtime::Nanoseconds>(nextIssue_) * interval_) {
    const std::size_t id = nextIssue_++;
    if (targets_.empty()) {
      state_[id].state = Request::State::failed;
      ++failedCount_;
      continue;
    }
    if (!post(id, targets_[rr_++ % targets_.size()], now)) reroute(id);
    inFlight_.push_back(id);
  }
}

// Replies that arrived become samples; a reply missing for request_timeout
// declares its worker lost and re-routes the request.
void DrillClient::collectReplies(runtime::Nanoseconds now, bool& abandoned) {
  for (std::size_t k = 0; k < inFlight_.size() && !abandoned; ++k) {
    auto& r = state_[inFlight_[k]];
    if (r.state != Request::State::inFlight) continue;
    if (lost_[r.worker]) {
      reroute(inFlight_[k]);
      continue;
    }
    try {
      if (t_.testSlots(r.slot, 2)) {
        r.state = Request::State::completed;
        r.doneAt = runtime::monotonicNow();
        completions_.push_back(r.doneAt);
        ctx_.samples.record(ctx_.world.rank(), static_cast<std::int32_t>(inFlight_[k]), r.worker,
                            static_cast<std::int64_t>(replyBytes_), r.firstPostedAt, r.doneAt);
      } else if (now - r.postedAt > replyTimeout_) {
        markLost(r.worker, now,
                 "missed reply: request " + std::to_string(inFlight_[k]) + " unanswered for " +
                     std::to_string(replyTimeout_ / 1000000) + " ms");
        reroute(inFlight_[k]);
      }
    } catch (const RuntimeFailure& e) {
      markLost(r.worker, runtime::monotonicNow(), std::string("transport failure: ") + e.what());
      abandoned = true;
    }
  }
}

// Every request issued and answered (or failed), every command reported.
bool DrillClient::finished() const {
  bool commandsDone = true;
  for (int i = 0; c_.usesCommand() && i < faults_; ++i)
    commandsDone = commandsDone && faultReported_[static_cast<std::size_t>(i)] &&
                   (!c_.restoresInLoop() || restoreReported_[static_cast<std::size_t>(i)]);
  return nextIssue_ == requests_ && inFlight_.empty() && commandsDone;
}

std::int64_t DrillClient::noteHung() {
  const std::int64_t hung =
      static_cast<std::int64_t>(inFlight_.size()) + static_cast<std::int64_t>(requests_ - nextIssue_);
  for (auto id : inFlight_)
    if (hung <= 20)
      events_.add(ctx_, runtime::monotonicNow(), "hung", state_[id].worker,
                  "request " + std::to_string(id) + " never answered");
  return hung;
}

// Release every live worker and wait, bounded, for each one's acknowledgement
// (stopAckTag says why); a worker that dies now fails its send or its ack.
void DrillClient::releaseWorkers() {
  heartbeats_->sayBye(runtime::Deadline::afterSeconds(runtime::deadlines::goodbyeSeconds));
  const auto stopDeadline = runtime::Deadline::afterSeconds(runtime::deadlines::drillStopSeconds);
  struct Released {
    int worker, stopSlot, ackSlot;
  };
  std::vector<Released> released;
  for (int g = 1; g < n_; ++g) {
    const int worker = ctx_.participants[static_cast<std::size_t>(g)];
    // A worker declared lost that is not the victim may be alive and waiting (a
    // scheduling gap longer than the heartbeat deadline): it gets its stop too.
    if (lost_[worker] && worker == victimRank_) continue;
    auto* stop = &messages_[requests_ + static_cast<std::size_t>(g)];
    *stop = {-1, 1};
    // The worker's ack lands in the message it answers; only its arrival counts.
    auto* ack = &messages_[requests_ + static_cast<std::size_t>(n_ + g)];
    if (nextSlot_ + 2 > maxSlots_) {  // re-posts after abandoned transfers used the room up
      events_.add(ctx_, runtime::monotonicNow(), "error", worker, "stop not sent: no transfer slot left");
      continue;
    }
    try {
      t_.postRecv(nextSlot_ + 1, worker, stopAckTag, ack, sizeof *ack);
      t_.postSend(nextSlot_, worker, requestTag, stop, sizeof *stop);
      released.push_back({worker, nextSlot_, nextSlot_ + 1});
      nextSlot_ += 2;
    } catch (const RuntimeFailure& e) {
      events_.add(ctx_, runtime::monotonicNow(), "error", worker, std::string("stop not sent: ") + e.what());
    }
  }
  for (const auto& r : released) {
    try {
      t_.waitSlots(r.stopSlot, 1, stopDeadline);
      t_.waitSlots(r.ackSlot, 1, stopDeadline);
    } catch (const std::exception& e) {
      events_.add(ctx_, runtime::monotonicNow(), "error", r.worker,
                  std::string("stop not acknowledged within ") +
                      milliseconds(runtime::deadlines::drillStopSeconds * 1e3) + " ms: " + e.what());
    }
  }
}

// The fault command's end (bounded by its own deadline) and the repair.
output::Attributes DrillClient::finishCommands() {
  output::Attributes attributes;
  if (!c_.usesCommand()) return attributes;
  for (int i = 1; i < faults_; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (!faultCommands_[k]->started()) {
      addVerdict(faultName(i) + ": fault_command never ran");
      continue;
    }
    const auto& r = faultCommands_[k]->finish();
    if (!faultReported_[k]) events_.add(ctx_, r.endedAt, "fault_command", victimRank_, r.describe());
    if (!r.ok()) addVerdict(faultName(i) + ": fault_command failed (" + r.describe() + ")");
  }
  auto& faultCommand = *faultCommands_[0];
  if (!faultCommand.started()) {
    outcome_.verdict = "fault_command never ran (the workload ended first)";
  } else {
    const auto& r = faultCommand.finish();
    if (!faultReported_[0]) events_.add(ctx_, r.endedAt, "fault_command", victimRank_, r.describe());
    attributes = {{"fault_command", r.command},
                  {"fault_command_started_ns", ctx_.clock.toGlobal(r.startedAt)},
                  {"fault_command_ms", static_cast<double>(r.endedAt - r.startedAt) / 1e6},
                  {"fault_command_exit", std::int64_t{r.exitStatus}},
                  {"fault_command_timed_out", std::int64_t{r.timedOut ? 1 : 0}},
                  {"fault_command_output", r.error.empty() ? r.output : r.error}};
    if (!r.ok()) outcome_.verdict = "fault_command failed (" + r.describe() + "): the fault may not have happened";
  }
  finishRestoresInLoop(attributes);
  runRestoreAfterWorkload(attributes);
  return attributes;
}

void addRestoreAttributes(output::Attributes& attributes, const FaultCommandResult& r) {
  attributes.emplace_back("restore_command", r.command);
  attributes.emplace_back("restore_command_exit", std::int64_t{r.exitStatus});
  attributes.emplace_back("restore_command_output", r.error.empty() ? r.output : r.error);
}

// In the loop's restores: any the loop did not finish (or start, though its
// fault ran: the link must not stay cut) end here, bounded.
void DrillClient::finishRestoresInLoop(output::Attributes& attributes) {
  for (int i = 0; c_.restoresInLoop() && i < faults_; ++i) {
    const auto k = static_cast<std::size_t>(i);
    auto& restore = *restoreCommands_[k];
    if (!faultCommands_[k]->started()) continue;
    if (!restore.started()) restore.start(restoreCommandLine_, c_.commandTimeoutSeconds);
    const auto& r = restore.finish();
    if (!restoreReported_[k]) {
      events_.add(ctx_, r.endedAt, "restored", victimRank_,
                  faultName(i) + ": restore_command (after the workload) " + r.describe());
      outcome_.cycles[k].restoredAt = r.endedAt;
    }
    if (i == 0) addRestoreAttributes(attributes, r);
    if (!r.ok())
      addVerdict(faultName(i) + ": restore_command failed (" + r.describe() +
                 "): the victim's link may still be faulty");
  }
}

// A fault that does not end inside the workload is repaired once it is over.
void DrillClient::runRestoreAfterWorkload(output::Attributes& attributes) {
  if (c_.restoreCommand.empty() || c_.restoresInLoop()) return;
  const auto r = runFaultCommand(restoreCommandLine_, c_.commandTimeoutSeconds);
  events_.add(ctx_, r.endedAt, "restore_command", victimRank_, r.describe());
  addRestoreAttributes(attributes, r);
  if (!r.ok())
    addVerdict(std::string("restore_command failed (") + r.describe() + "): the victim's link may still be faulty");
}

output::Attributes DrillClient::streamAttributes(std::int64_t hung) {
  std::sort(completions_.begin(), completions_.end());
  const auto window = std::max<runtime::Nanoseconds>(20 * interval_, 20000000);
  const auto recovery =
      findRecovery(completions_, start_, outcome_.faultAt, outcome_.detection.at.value_or(outcome_.faultAt), window);
  if (recovery.recoveredAt)
    events_.add(ctx_, *recovery.recoveredAt, "recovered", spare_,
                "throughput back to >= 90% of the pre-fault " +
                    std::to_string(static_cast<long long>(recovery.preFaultPerSecond)) + " req/s over a " +
                    std::to_string(window / 1000000) + " ms window");
  const double recoveredMs =
      recovery.recoveredAt ? static_cast<double>(*recovery.recoveredAt - outcome_.faultAt) / 1e6 : -1;
  return {
      {"fault", c_.fault},
      {"victim_rank", std::int64_t{victimRank_}},
      {"victim_host", placeholders_.at("victim_host")},
      {"spare_rank", std::int64_t{spare_}},
      {"fault_ns", ctx_.clock.toGlobal(outcome_.faultAt)},
      {"detect_within_ms", c_.detectWithinSeconds * 1e3},
      {"heartbeat_ms", c_.heartbeatSeconds * 1e3},
      {"heartbeat_deadline_ms", c_.heartbeatDeadlineSeconds * 1e3},
      {"request_timeout_ms", c_.requestTimeoutSeconds * 1e3},
      {"requests", std::int64_t{c_.requests}},
      {"completed", static_cast<std::int64_t>(completions_.size())},
      {"rerouted", reroutedCount_},
      {"reposted", repostedCount_},
      {"failed_requests", failedCount_},
      {"hung", hung},
      {"pre_fault_rps", recovery.preFaultPerSecond},
      {"recovered_ms", recoveredMs},
      {"transport_detection", transportDetection(ctx_.instance.spec->transport)},
  };
}

}  // namespace

// What each transport can tell about a lost peer, for the result file.
std::string transportDetection(const std::string& transport) {
  const auto report = transport::transportCapabilities(transport).peerLossReport;
  if (!report.empty()) return std::string(report);
  return transport + ": no peer-failure reporting; heartbeats only";
}

// What the stack would take on its own to report this fault with the
// settings in force here, next to the drill's measured detection.
void addExpectedDetection(output::Attributes& attributes, const FaultDrillConfig& c, const std::string& transport) {
  try {
    const auto settings = stackSettingsHere();
    const auto here = expectedForDrill(c.fault, c.lossPercent, transport, settings);
    const auto nccl = expectedNcclIb(c.fault, settings);
    attributes.emplace_back("expected_detection_stack", here.stack);
    attributes.emplace_back("expected_detection_s", here.seconds);
    attributes.emplace_back("expected_detection_basis", here.basis);
    attributes.emplace_back("expected_nccl_ib_s", nccl.seconds);
    attributes.emplace_back("expected_nccl_ib_basis", nccl.basis);
  } catch (const std::invalid_argument& e) {
    attributes.emplace_back("expected_detection_basis", std::string("settings not readable: ") + e.what());
  }
  // The verbs transport's own options, as its queue pairs would be opened
  // here: what a verbs RC queue pair would need to declare a silent peer lost.
  // Compared with detect_within it says whether verbs alone could pass this
  // drill or heartbeats are required.
  try {
    const auto verbs = transport::verbs::verbsOptionsFromEnvironment();
    const auto qp = expectedVerbsQp(c.fault, verbs);
    attributes.emplace_back("expected_verbs_qp_s", qp.seconds);
    attributes.emplace_back("expected_verbs_qp_basis", qp.basis);
    attributes.emplace_back("verbs_qp_retry_budget_s",
                            transport::verbs::lostPeerSeconds(verbs.timeout, verbs.retryCount));
  } catch (const UsageError& e) {
    // Settings that do not parse: no figures (the attributes stay floats; the basis says why).
    attributes.emplace_back("expected_verbs_qp_s", std::numeric_limits<double>::quiet_NaN());
    attributes.emplace_back("expected_verbs_qp_basis", std::string("verbs settings not readable: ") + e.what());
    attributes.emplace_back("verbs_qp_retry_budget_s", std::numeric_limits<double>::quiet_NaN());
  }
}

namespace {

ClientOutcome DrillClient::serve() {
  t_.onError(
      [&](const transport::TransportError& e) { markLost(e.peer, e.at, "transport error callback: " + e.message); });
  ErrorHandlerGuard guard{t_};
  if (!c_.usesCommand())
    events_.add(ctx_, plannedFault_, "fault", victimRank_,
                c_.fault + (c_.fault == "kill" ? " (SIGKILL)" : " (stops answering)") + " planned at +" +
                    milliseconds(c_.atSeconds * 1e3) + " ms by the victim's own clock");
  heartbeats_->start(runtime::monotonicNow());
  while (!loopEnd_.expired()) {
    const auto now = runtime::monotonicNow();
    driveCommands(now);
    followOwnClockFault(now);
    t_.testSlots(0, 0);  // progress only: lets the endpoint error callback run before any slot is tested
    bool abandoned = false;
    hearHeartbeats(now, abandoned);
    issueDueRequests(now);
    collectReplies(now, abandoned);
    if (abandoned) repostAll(now);
    inFlight_.erase(std::remove_if(inFlight_.begin(), inFlight_.end(),
                                   [&](std::size_t id) { return state_[id].state != Request::State::inFlight; }),
                    inFlight_.end());
    if (finished()) break;
    runtime::betweenPolls();  // more ranks than CPUs: hand the CPU over (see the worker's loop)
  }
  const std::int64_t hung = noteHung();
  releaseWorkers();
  const auto commandAttributes = finishCommands();
  auto attributes = streamAttributes(hung);
  const auto baselineAttributes =
      judgeReturnToBaseline(ctx_, c_, state_, start_, victimRank_, spare_, outcome_, events_);
  addExpectedDetection(attributes, c_, ctx_.instance.spec->transport);
  attributes.insert(attributes.end(), commandAttributes.begin(), commandAttributes.end());
  attributes.insert(attributes.end(), baselineAttributes.begin(), baselineAttributes.end());
  outcome_.attributes = std::move(attributes);
  outcome_.hung = hung;
  if (hung > 0) addVerdict(std::to_string(hung) + " request(s) hung past their deadline");
  return std::move(outcome_);
}

}  // namespace

ClientOutcome serveClient(RunContext& ctx, const FaultDrillConfig& c, runtime::Nanoseconds start, EventLog& events) {
  return DrillClient(ctx, c, start, events).serve();
}

}  // namespace fabscope::suite::fault_drill
