#include "kinds/fault/FaultDrillConfig.hpp"

#include "runtime/ShellQuote.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "scenario/TestSource.hpp"
#include "scenario/Units.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::suite {
namespace {

double durationKey(const scenario::TestSpec& spec, const scenario::TestSource& source, const std::string& key,
                   double fallback, double min, double max) {
  const auto node = source.test[key];
  if (!node) return fallback;
  const std::string where = scenario::positionOf(source.file, node) + ": test '" + spec.name + "': " + key;
  double seconds = 0;
  try {
    seconds = scenario::parseDurationSeconds(node.Scalar());
  } catch (const std::exception& e) {
    throw scenario::ScenarioError(where + ": expected a duration such as 500ms or 2s, got '" + node.Scalar() + "' (" +
                                  e.what() + ")");
  }
  if (seconds < min || seconds > max)
    throw scenario::ScenarioError(where + ": " + node.Scalar() + " is outside " + std::to_string(min) + " .. " +
                                  std::to_string(max) + " s");
  return seconds;
}

[[noreturn]] void refuse(const scenario::TestSpec& spec, const std::string& key, const std::string& message) {
  throw scenario::ScenarioError(spec.where(key) + ": test '" + spec.name + "': " + message);
}

std::string stringKey(const scenario::TestSpec& spec, const scenario::TestSource& source, const std::string& key) {
  const auto node = source.test[key];
  if (!node) return {};
  if (!node.IsScalar() || node.Scalar().empty())
    throw scenario::ScenarioError(scenario::positionOf(source.file, node) + ": test '" + spec.name + "': " + key +
                                  ": expected a shell command (a non-empty string)");
  return node.Scalar();
}

}  // namespace

std::string expandFaultCommand(const std::string& command, const std::map<std::string, std::string>& values) {
  std::string out;
  for (std::size_t i = 0; i < command.size(); ++i) {
    if (command[i] != '{') {
      out += command[i];
      continue;
    }
    const auto close = command.find('}', i);
    if (close == std::string::npos)
      throw std::invalid_argument("'{' at column " + std::to_string(i + 1) + " is not closed by '}'");
    const auto name = command.substr(i + 1, close - i - 1);
    const auto it = values.find(name);
    if (it == values.end()) {
      std::string known;
      for (const auto& [k, v] : values) known += (known.empty() ? "{" : ", {") + k + "}";
      throw std::invalid_argument("unknown placeholder {" + name + "}; known: " + known);
    }
    // Quoted: a value (a host name, a rank) is one word and can never add shell syntax.
    out += runtime::shellQuoted(it->second);
    i = close;
  }
  return out;
}

namespace {

// Reads a fault drill's keys in a fixed order, so that the first problem
// reported is always the same one.
struct FaultDrillReader {
  const scenario::TestSpec& spec;
  const scenario::TestSource& source;
  scenario::ParamReader p;
  FaultDrillConfig c;
  double duration(const std::string& key, double fallback, double min, double max) const {
    return durationKey(spec, source, key, fallback, min, max);
  }
  void readFaultAndPlace();
  void checkAbortDrill();
  void readDetection();
  void readStreamAndCommands();
  void readDurations();
  void checkCommands();
  void checkTimeline();
};

// The fault, and what it needs of the transport, the memory and the size.
void FaultDrillReader::readFaultAndPlace() {
  c.fault = p.choice("fault", {"kill", "hang", "link-down", "loss", "flap"}, "kill");
  const auto can = transport::transportCapabilities(spec.transport);
  if (!can.survivesPeerLoss && !can.abortsOnPeerLoss)
    refuse(spec, "transport",
           "a fault drill needs transport: " +
               transport::transportsWith(&transport::TransportCapabilities::survivesPeerLoss) + " or " +
               transport::transportsWith(&transport::TransportCapabilities::abortsOnPeerLoss) + " (got '" +
               spec.transport +
               "'): the MPI data path cannot survive the loss of a peer (Open MPI aborts or hangs the "
               "communicator), UCX reports it through its endpoint error callback, NCCL's survivors abort their "
               "communicator");
  c.abortDrill = !can.survivesPeerLoss;
  if (c.abortDrill)
    checkAbortDrill();
  else if (spec.memory != "host")
    refuse(spec, "memory", "a fault drill runs with memory: host");
  if (spec.sizes.size() != 1) refuse(spec, "sizes", "a fault drill takes exactly one size (the reply size)");
  c.replyBytes = spec.sizes.front();
  if (c.replyBytes < 8 || c.replyBytes > (std::int64_t{1} << 20))
    refuse(spec, "sizes", "the reply size must be 8B .. 1MiB");
  if (c.abortDrill && c.replyBytes % 4 != 0)
    refuse(spec, "sizes",
           "over " + spec.transport + " the size is that of an all-reduce of floats: a multiple of 4 bytes");
  c.victim = static_cast<int>(p.integer("victim", 1, 1, 1 << 20));
}

// A drill over a communicator the survivors abort (NCCL): all-reduce steps
// on GPU memory, a victim that dies or hangs, nothing that comes back.
void FaultDrillReader::checkAbortDrill() {
  const std::string over = "over transport: " + spec.transport;
  if (spec.memory != "cuda")
    refuse(
        spec, "memory",
        "a fault drill " + over + " runs its all-reduce steps on GPU memory: memory: cuda (got '" + spec.memory + "')");
  if (c.fault != "kill" && c.fault != "hang")
    refuse(spec, "fault",
           "fault: " + c.fault + " " + over +
               " is not supported: its survivors see only a stalled operation (NCCL reports a network fault only "
               "after its own InfiniBand retry budget), which they cannot tell from a hung peer, and no command "
               "cuts an NVLink; use fault: kill or hang");
  for (const auto* key : {"heartbeat", "heartbeat_deadline"})
    if (p.has(key))
      refuse(spec, key,
             std::string(key) + " is not used " + over +
                 ": its survivors have no heartbeats; a step unfinished for request_timeout declares the victim lost");
  for (const auto* key : {"hang_for", "recover_within", "baseline_throughput", "baseline_p99", "baseline_window"})
    if (p.has(key))
      refuse(spec, key,
             std::string(key) + " is not possible " + over +
                 ": the survivors abort the communicator, so neither a victim that comes back nor a spare has one "
                 "to join (nothing is re-routed)");
}

// When the fault comes and how it must be detected: heartbeats, their deadline, the reply timeout.
void FaultDrillReader::readDetection() {
  c.atSeconds = duration("at", 1.0, 0.001, 3600);
  c.detectWithinSeconds = duration("detect_within", 2.0, 0.001, 600);
  if (c.abortDrill) {
    // No heartbeats: the survivors' own deadline is a step unfinished for request_timeout.
    c.heartbeatSeconds = c.heartbeatDeadlineSeconds = 0;
    c.requestTimeoutSeconds = duration("request_timeout", 0.5, 0.001, 600);
    if (c.requestTimeoutSeconds >= c.detectWithinSeconds)
      refuse(spec, "request_timeout",
             "request_timeout (" + std::to_string(c.requestTimeoutSeconds) +
                 " s) must be shorter than detect_within (" + std::to_string(c.detectWithinSeconds) + " s): over " +
                 spec.transport + " a lost peer is only noticed through a step that stays unfinished that long");
    c.abortWithinSeconds = duration("abort_within", 5, 0.01, 600);
    return;
  }
  if (p.has("abort_within"))
    refuse(spec, "abort_within",
           "abort_within is for a fault drill over a communicator the survivors abort (transport: nccl)");
  c.heartbeatSeconds = duration("heartbeat", 0.1, 0.001, 60);
  c.heartbeatDeadlineSeconds = duration("heartbeat_deadline", 3 * c.heartbeatSeconds, 0.002, 600);
  if (c.heartbeatDeadlineSeconds < 2 * c.heartbeatSeconds)
    refuse(spec, "heartbeat_deadline",
           "heartbeat_deadline must be at least 2 heartbeats (" + std::to_string(2 * c.heartbeatSeconds) +
               " s): one late heartbeat would declare a live peer lost");
  if (c.heartbeatDeadlineSeconds >= c.detectWithinSeconds)
    refuse(spec, "heartbeat_deadline",
           "heartbeat_deadline (" + std::to_string(c.heartbeatDeadlineSeconds) +
               " s) must be shorter than detect_within (" + std::to_string(c.detectWithinSeconds) +
               " s): a hung peer or a dead link is only noticed through missed heartbeats");
  c.requestTimeoutSeconds = duration("request_timeout", 2 * c.heartbeatDeadlineSeconds, 0.001, 600);
}

// The request stream and the commands that make and end a link fault.
void FaultDrillReader::readStreamAndCommands() {
  c.requests = p.integer("requests", 4000, 1, 1000000);
  c.rate = static_cast<double>(p.integer("rate", 1000, 1, 1000000));
  c.faultCommand = stringKey(spec, source, "fault_command");
  c.restoreCommand = stringKey(spec, source, "restore_command");
  c.commandTimeoutSeconds = duration("command_timeout", 10, 0.1, 600);
  if (p.has("loss_percent")) {
    if (c.fault != "loss") refuse(spec, "loss_percent", "loss_percent is for fault: loss");
    c.lossPercent = static_cast<double>(p.integer("loss_percent", 100, 1, 100));
  }
}

// How long a fault lasts, how often it comes back, and how its end is judged.
void FaultDrillReader::readDurations() {
  // How long a fault lasts, and (flap) how often it comes back.
  const auto onlyFor = [&](const char* key, const char* fault) {
    if (p.has(key) && c.fault != fault)
      refuse(spec, key, std::string(key) + " is for fault: " + fault + " (this test has fault: " + c.fault + ")");
  };
  onlyFor("down_for", "flap");
  onlyFor("repeat", "flap");
  onlyFor("every", "flap");
  onlyFor("hang_for", "hang");
  onlyFor("loss_for", "loss");
  if (c.fault == "flap") {
    if (!p.has("down_for")) refuse(spec, "fault", "fault: flap needs down_for: how long the victim's link stays down");
    c.downForSeconds = duration("down_for", 0, 0.001, 86400);
    if (c.downForSeconds >= spec.timeoutSeconds)
      refuse(spec, "down_for",
             "down_for (" + std::to_string(c.downForSeconds) + " s) is not shorter than the test's timeout (" +
                 std::to_string(spec.timeoutSeconds) + " s): the link would still be down when the test must end");
    c.repeat = static_cast<int>(p.integer("repeat", 1, 1, 100));
    if (c.repeat > 1) {
      if (!p.has("every"))
        refuse(spec, "repeat",
               "repeat: " + std::to_string(c.repeat) + " needs every: the time from one cut's start to the next one's");
      c.everySeconds = duration("every", 0, 0.001, 86400);
      if (c.everySeconds <= c.downForSeconds)
        refuse(spec, "every",
               "every (" + std::to_string(c.everySeconds) + " s) must be longer than down_for (" +
                   std::to_string(c.downForSeconds) + " s): the link must come back before the next cut");
    } else if (p.has("every")) {
      refuse(spec, "every", "every is for repeat: 2 or more");
    }
  }
  c.hangForSeconds = duration("hang_for", 0, 0.001, 86400);
  c.lossForSeconds = duration("loss_for", 0, 0.001, 86400);
  for (const auto& [key, seconds] :
       {std::pair<const char*, double>{"down_for", c.downForSeconds}, {"hang_for", c.hangForSeconds}})
    if (seconds > 0 && seconds <= c.heartbeatDeadlineSeconds)
      refuse(spec, key,
             std::string(key) + " must be longer than heartbeat_deadline (" +
                 std::to_string(c.heartbeatDeadlineSeconds) + " s): a shorter silence is no loss the drill detects");
  for (const auto* key : {"recover_within", "baseline_throughput", "baseline_p99", "baseline_window"})
    if (p.has(key) && !c.faultEnds())
      refuse(spec, key,
             std::string(key) +
                 " is for a fault that ends while requests flow (flap; kill with its spare; hang with "
                 "hang_for; loss with loss_for)");
  c.recoverWithinSeconds = duration("recover_within", 5, 0.001, 3600);
  c.baselineThroughput = p.number("baseline_throughput", 0.9, 0.01, 1.0);
  c.baselineP99 = p.number("baseline_p99", 2.0, 1.0, 1000.0);
  c.baselineWindowSeconds = duration("baseline_window", 0.5, 0.01, 600);
}

// Each fault that acts on the link has the commands it needs, and only those; their placeholders are known.
void FaultDrillReader::checkCommands() {
  if (c.fault == "flap" && c.restoreCommand.empty())
    refuse(spec, "fault",
           "fault: flap needs restore_command: the command that brings the victim's link back after down_for "
           "(e.g. on the emulated cluster 'launch/emulated-cluster link {victim_host} up')");
  if (c.fault == "loss" && c.lossForSeconds > 0 && c.restoreCommand.empty())
    refuse(spec, "loss_for", "loss_for needs restore_command: the command that removes the loss after loss_for");
  if (c.usesCommand() && c.faultCommand.empty())
    refuse(spec, "fault",
           "fault: " + c.fault + " needs fault_command: the command that " +
               (c.fault == "loss" ? "makes the victim's link lossy" : "takes the victim's link down") +
               " (e.g. on the emulated cluster 'launch/emulated-cluster " +
               (c.fault == "loss" ? "loss {victim_host} {percent}'" : "link {victim_host} down'") +
               "; on a real cluster a site command such as 'ssh {victim_host} sudo ip link set ib0 down')");
  if (!c.usesCommand() && (!c.faultCommand.empty() || !c.restoreCommand.empty()))
    refuse(spec, c.faultCommand.empty() ? "restore_command" : "fault_command",
           "fault_command and restore_command are for fault: link-down, loss and flap (fault: " + c.fault +
               " acts on the victim process itself)");
  for (const auto* key : {"fault_command", "restore_command"}) {
    const auto& command = std::string(key) == "fault_command" ? c.faultCommand : c.restoreCommand;
    try {
      (void)expandFaultCommand(command, {{"victim_host", "h"}, {"victim_rank", "1"}, {"percent", "1"}});
    } catch (const std::invalid_argument& e) {
      refuse(spec, key, std::string(key) + ": " + e.what());
    }
  }
}

// The stream outlasts the fault and its recovery, and the timeout the whole drill.
void FaultDrillReader::checkTimeline() {
  const double issueSeconds = static_cast<double>(c.requests) / c.rate;
  if (c.atSeconds >= issueSeconds)
    refuse(spec, "at",
           "the fault at " + std::to_string(c.atSeconds) + " s would come after the last request (" +
               std::to_string(c.requests) + " requests at " + std::to_string(static_cast<long long>(c.rate)) +
               "/s take " + std::to_string(issueSeconds) + " s): raise requests or lower at");
  if (c.faultEnds()) {
    // The stream must outlast the last fault's end by recover_within, or the
    // return to baseline could not be seen.
    const double lastEnds = c.faultStartSeconds(c.faultCount() - 1) + c.faultLastsSeconds();
    // A kill's spare takes over at once: unless recover_within is asked for,
    // its baseline is looked for in what is left of the stream (at least one window).
    if (c.fault == "kill" && !p.has("recover_within")) {
      if (lastEnds + c.baselineWindowSeconds > issueSeconds)
        refuse(spec, "requests",
               "the request stream (" + std::to_string(issueSeconds) + " s) ends less than one baseline_window (" +
                   std::to_string(c.baselineWindowSeconds) +
                   " s) after the fault: the spare's return to baseline "
                   "could not be seen; raise requests or lower baseline_window");
    } else if (lastEnds + c.recoverWithinSeconds > issueSeconds)
      refuse(spec, "requests",
             "the request stream (" + std::to_string(c.requests) + " requests at " +
                 std::to_string(static_cast<long long>(c.rate)) + "/s: " + std::to_string(issueSeconds) +
                 " s) ends before the last fault's end (" + std::to_string(lastEnds) + " s) + recover_within (" +
                 std::to_string(c.recoverWithinSeconds) + " s): raise requests or lower recover_within");
    if (c.baselineWindowSeconds >= c.recoverWithinSeconds)
      refuse(spec, "baseline_window", "baseline_window must be shorter than recover_within");
  }
  // The client's loop ends at workloadSeconds; the victim leaves after it,
  // and stopping the workers and writing the file need the rest of the timeout.
  const double needed = c.victimLeavesAfterSeconds() + (c.usesCommand() ? c.commandTimeoutSeconds : 0) +
                        (c.abortDrill ? c.abortWithinSeconds : 0) + 10;
  if (spec.timeoutSeconds < needed)
    refuse(spec, "timeout",
           "timeout must be at least " + std::to_string(needed) + " s (workload " +
               std::to_string(c.workloadSeconds()) + " s, commands or abort_within, + 10 s)");
}

}  // namespace

FaultDrillConfig readFaultDrillConfig(const scenario::TestSpec& spec, const scenario::TestSource& source) {
  FaultDrillReader r{spec, source, scenario::ParamReader(spec, source), {}};
  r.readFaultAndPlace();
  r.readDetection();
  r.readStreamAndCommands();
  r.readDurations();
  r.checkCommands();
  r.checkTimeline();
  return r.c;
}

AbortDrillTiming abortDrillTiming(const FaultDrillConfig& c, runtime::Nanoseconds start) {
  return {start, static_cast<runtime::Nanoseconds>(1e9 / c.rate),
          static_cast<runtime::Nanoseconds>(c.requestTimeoutSeconds * 1e9),
          static_cast<runtime::Nanoseconds>(c.abortWithinSeconds * 1e9), c.requests};
}

void checkFaultDrillRanks(const FaultDrillConfig& c, const scenario::TestSpec& spec, int ranks) {
  if (c.abortDrill) {
    // Every rank is a peer of the all-reduce; rank index 0 writes the file, so it must survive.
    if (ranks < 2)
      refuse(spec, "ranks",
             "a fault drill over " + spec.transport + " needs at least 2 ranks (one GPU each); it has " +
                 std::to_string(ranks));
    if (c.victim > ranks - 1)
      refuse(spec, "victim",
             "victim must be 1 .. " + std::to_string(ranks - 1) + " (0 writes the file and must survive)");
    return;
  }
  if (ranks < 4)
    refuse(spec, "ranks",
           "a fault drill needs at least 4 ranks (client, victim, another worker, spare); it has " +
               std::to_string(ranks));
  if (c.victim > ranks - 2)
    refuse(spec, "victim",
           "victim must be a worker, 1 .. " + std::to_string(ranks - 2) + " (0 is the client, " +
               std::to_string(ranks - 1) + " the spare)");
}

std::string mechanismOf(const std::string& path) { return path.substr(0, path.find(':')); }

namespace {

// Milliseconds with one decimal, as the judgements print them.
std::string ms(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", v);
  return text;
}

// `item` appended to a ", "-separated list.
void listAlso(std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; }

}  // namespace

DetectionJudgement judgeDetections(const std::vector<SurvivorDetection>& survivors, std::int64_t faultNs,
                                   double detectWithinMs, bool detectionRequired) {
  DetectionJudgement j;
  for (const auto& s : survivors) {
    const std::string who = "rank " + std::to_string(s.rank);
    if (!j.perSurvivor.empty()) j.perSurvivor += "; ";
    if (s.detectedNs < 0) {
      j.perSurvivor += who + ": not detected";
      if (detectionRequired) listAlso(j.late, who + " never detected it");
      continue;
    }
    if (s.detectedNs < faultNs - falseLossToleranceNs) {
      // Declared lost while alive: judged with the false losses (judgeFalseLosses).
      j.perSurvivor += who + ": declared it lost " + ms(static_cast<double>(faultNs - s.detectedNs) / 1e6) +
                       " ms before the fault (a false loss) via " + mechanismOf(s.path);
      continue;
    }
    ++j.detected;
    const double after = static_cast<double>(s.detectedNs - faultNs) / 1e6;
    j.slowestMs = std::max(j.slowestMs, after);
    j.perSurvivor += who + ": " + ms(after) + " ms via " + mechanismOf(s.path);
    if (detectionRequired && after > detectWithinMs) listAlso(j.late, who + " after " + ms(after) + " ms");
  }
  return j;
}

FalseLossJudgement judgeFalseLosses(const std::vector<DeclaredLoss>& losses, int victimRank, std::int64_t faultNs) {
  // The detail names the first few; the count says how many in all.
  constexpr int named = 4;
  FalseLossJudgement j;
  for (const auto& l : losses) {
    const bool early = l.atNs < faultNs - falseLossToleranceNs;
    if (l.peer == victimRank && !early) continue;
    if (++j.count > named) continue;
    const double offsetMs = static_cast<double>(l.atNs - faultNs) / 1e6;
    const std::string when =
        offsetMs < 0 ? ms(-offsetMs) + " ms before the fault" : ms(offsetMs) + " ms after the fault";
    listAlso(j.detail, "rank " + std::to_string(l.by) + " declared rank " + std::to_string(l.peer) +
                           (l.peer == victimRank ? " (the victim)" : "") + " lost " + when + " (" + l.path + ")");
  }
  if (j.count > named) j.detail += ", and " + std::to_string(j.count - named) + " more";
  return j;
}

AbortJudgement judgeAborts(const std::vector<SurvivorAbort>& survivors, double abortWithinMs) {
  AbortJudgement j;
  for (const auto& s : survivors) {
    const std::string who = "rank " + std::to_string(s.rank);
    if (!j.perSurvivor.empty()) j.perSurvivor += "; ";
    if (!s.detected) {
      // Nothing to abort for: the missed detection is judged with the detections.
      j.perSurvivor += who + ": nothing detected, not aborted";
      continue;
    }
    if (s.tookNs < 0) {
      ++j.stuck;
      j.perSurvivor += who + ": abort stuck";
      listAlso(j.late, who + "'s ncclCommAbort did not return within abort_within (" + ms(abortWithinMs) + " ms)");
      continue;
    }
    const double took = static_cast<double>(s.tookNs) / 1e6;
    j.slowestMs = std::max(j.slowestMs, took);
    j.perSurvivor += who + ": aborted in " + ms(took) + " ms";
    if (took > abortWithinMs) listAlso(j.late, who + " aborted after " + ms(took) + " ms");
  }
  return j;
}

double percentile99(std::vector<double>& values) {
  if (values.empty()) return 0;
  // Nearest rank: the smallest value with at least 99 % of the values at or below it.
  const auto rank = static_cast<std::size_t>(std::ceil(0.99 * static_cast<double>(values.size())));
  const auto k = std::min(values.size() - 1, rank == 0 ? 0 : rank - 1);
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return values[k];
}

BaselineResult findBaseline(const std::vector<CarrierCompletion>& completions, runtime::Nanoseconds from,
                            runtime::Nanoseconds until, runtime::Nanoseconds window, double preFaultPerSecond,
                            double preFaultP99Ns, double throughputFraction, double p99Factor) {
  BaselineResult r;
  if (window <= 0 || preFaultPerSecond <= 0 || preFaultP99Ns <= 0) return r;
  // Only requests the carrier got after the fault ended: earlier ones (and
  // those re-routed from the victim) carry the fault's own delay.
  std::vector<CarrierCompletion> after;
  for (const auto& c : completions)
    if (c.postedAt >= from && c.doneAt <= until) after.push_back(c);
  std::sort(after.begin(), after.end(), [](const auto& x, const auto& y) { return x.doneAt < y.doneAt; });
  const double needed = throughputFraction * preFaultPerSecond * static_cast<double>(window) / 1e9;
  const double p99Limit = p99Factor * preFaultP99Ns;
  std::vector<double> latencies;
  std::size_t low = 0;
  double bestScore = -1;
  for (std::size_t high = 0; high < after.size(); ++high) {
    const auto t = after[high].doneAt;
    // A window must lie wholly after `from`.
    if (t - window < from) continue;
    while (after[low].doneAt <= t - window) ++low;
    const auto count = high - low + 1;
    latencies.clear();
    for (std::size_t k = low; k <= high; ++k)
      latencies.push_back(static_cast<double>(after[k].doneAt - after[k].postedAt));
    const double p99 = percentile99(latencies);
    const double perSecond = static_cast<double>(count) * 1e9 / static_cast<double>(window);
    const double score =
        std::min(perSecond / (throughputFraction * preFaultPerSecond), 1.0) + std::min(p99Limit / p99, 1.0);
    if (score > bestScore) {
      bestScore = score;
      r.throughputPerSecond = perSecond;
      r.p99Ns = p99;
    }
    if (static_cast<double>(count) >= needed && p99 <= p99Limit) {
      r.at = t;
      r.throughputPerSecond = perSecond;
      r.p99Ns = p99;
      return r;
    }
  }
  return r;
}

RecoveryResult findRecovery(const std::vector<runtime::Nanoseconds>& completions, runtime::Nanoseconds start,
                            runtime::Nanoseconds faultAt, runtime::Nanoseconds detectedAt,
                            runtime::Nanoseconds window) {
  RecoveryResult r;
  if (faultAt <= start || window <= 0) return r;
  const auto before = std::count_if(completions.begin(), completions.end(),
                                    [&](runtime::Nanoseconds t) { return t >= start && t < faultAt; });
  const double perNs = static_cast<double>(before) / static_cast<double>(faultAt - start);
  r.preFaultPerSecond = perNs * 1e9;
  if (before == 0) return r;
  const double needed = 0.9 * perNs * static_cast<double>(window);
  std::size_t low = 0;
  for (std::size_t high = 0; high < completions.size(); ++high) {
    const auto t = completions[high];
    while (completions[low] <= t - window) ++low;
    // Only windows that start after the detection count: earlier completions
    // were served before the re-route and say nothing about recovery.
    if (t - window < detectedAt) continue;
    if (static_cast<double>(high - low + 1) >= needed) {
      r.recoveredAt = t;
      return r;
    }
  }
  return r;
}

}  // namespace fabscope::suite
