#pragma once
// The scenario keys of a fault drill (kind `fault`) and the pure parts of its
// analysis, apart from the MPI/transport code so they can be unit-tested.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runtime/Clock.hpp"
#include "scenario/Scenario.hpp"

namespace fabscope::suite {

struct FaultDrillConfig final : scenario::KindConfig {
  // kill: the victim SIGKILLs itself. hang: the victim stays alive but stops
  // answering (no transport reports it; heartbeats must), for hang_for or to
  // the end. link-down, loss: fault_command (run by the client at the fault
  // moment) cuts or degrades the victim's link; restore_command undoes it after
  // the workload, or after loss_for. flap: link-down for down_for, restored by
  // restore_command, `repeat` times, one every `every`.
  std::string fault = "kill";
  int victim = 1;                         // index among the test's ranks: 1 .. ranks-2
  double atSeconds = 1.0;                 // after the workload starts
  double detectWithinSeconds = 2.0;       // detection deadline (exit 1 when missed)
  double heartbeatSeconds = 0.1;          // every rank sends every other rank a heartbeat this often
  double heartbeatDeadlineSeconds = 0.3;  // silence after which a peer is declared lost
  double requestTimeoutSeconds = 0.6;     // a reply missing this long declares its worker lost
  std::int64_t requests = 4000;
  double rate = 1000;                 // requests per second issued by the client
  std::int64_t replyBytes = 64;       // the test's size
  std::string faultCommand;           // link-down / loss; placeholders see expandFaultCommand
  std::string restoreCommand;         // optional; run after the workload
  double commandTimeoutSeconds = 10;  // bound on each command
  double lossPercent = 100;           // loss: substituted for {percent}
  double downForSeconds = 0;          // flap: how long each cut lasts
  int repeat = 1;                     // flap: how many cuts
  double everySeconds = 0;            // flap: from one cut's start to the next one's
  double hangForSeconds = 0;          // hang: 0 = to the end of the drill
  double lossForSeconds = 0;          // loss: 0 = to the end of the workload
  // Return to baseline: after the fault ends (restore; a hang's end; for kill,
  // the detection, when the spare takes the victim's place) the rank carrying
  // the victim's share must complete, over a window of baseline_window, at
  // least baseline_throughput of the victim's pre-fault rate with a p99 of at
  // most baseline_p99 times the victim's pre-fault p99, within recover_within.
  double recoverWithinSeconds = 5;
  double baselineThroughput = 0.9;
  double baselineP99 = 2.0;
  double baselineWindowSeconds = 0.5;
  // Over a transport whose communicator each survivor aborts alone after a
  // peer is lost (NCCL; TransportCapabilities::abortsOnPeerLoss): every drill
  // rank runs all-reduce steps at `rate` (`requests` of them, one in flight),
  // there are no heartbeats, no client and no spare; a survivor declares the
  // victim lost on NCCL's asynchronous error or when a step stays unfinished
  // for request_timeout, and must then have aborted its communicator within
  // abort_within.
  bool abortDrill = false;
  double abortWithinSeconds = 5;

  bool usesCommand() const { return fault == "link-down" || fault == "loss" || fault == "flap"; }
  // Faults that end while requests still flow, so the return to baseline is measured.
  bool faultEnds() const {
    if (abortDrill) return false;  // nothing takes the victim's place over an aborted communicator
    return fault == "flap" || fault == "kill" || (fault == "hang" && hangForSeconds > 0) ||
           (fault == "loss" && lossForSeconds > 0);
  }
  // The victim itself comes back (rather than a spare taking its place).
  bool victimReturns() const { return faultEnds() && fault != "kill"; }
  // restore_command runs inside the request loop (at each fault's end), not after it.
  bool restoresInLoop() const { return fault == "flap" || (fault == "loss" && lossForSeconds > 0); }
  // How long one fault lasts (0: to the end), and how many there are.
  double faultLastsSeconds() const {
    return fault == "flap" ? downForSeconds : fault == "hang" ? hangForSeconds : fault == "loss" ? lossForSeconds : 0;
  }
  int faultCount() const { return fault == "flap" ? repeat : 1; }
  double faultStartSeconds(int i) const { return atSeconds + i * everySeconds; }
  // A lossy link may legitimately stay in service; every other fault must be noticed.
  bool detectionRequired() const { return fault != "loss"; }
  // How long the client issues and then waits for replies, at most.
  double workloadSeconds() const { return static_cast<double>(requests) / rate + 4 * requestTimeoutSeconds; }
  // A victim that does not die (hang, link-down, loss) leaves the run this
  // long after the workload started: after the client has stopped waiting on
  // it and has run restore_command.
  double victimLeavesAfterSeconds() const {
    return workloadSeconds() + (usesCommand() ? commandTimeoutSeconds : 0) + 1;
  }
};

// Reads and checks the keys (the kind's parse step, at load). Throws
// ScenarioError naming file:line:column and what was expected.
FaultDrillConfig readFaultDrillConfig(const scenario::TestSpec& spec, const scenario::TestSource& source);
// A survivor of a drill over NCCL: the step deadline (request_timeout after
// a step's launch) and the abort deadline (abort_within after the detection),
// on the monotonic clock. Pure, unit-tested with NcclDrillWatch.
struct AbortDrillTiming {
  runtime::Nanoseconds start = 0;        // the drill's common start
  runtime::Nanoseconds interval = 0;     // from one step's due time to the next's (1 / rate)
  runtime::Nanoseconds stepTimeout = 0;  // request_timeout
  runtime::Nanoseconds abortWithin = 0;  // abort_within
  std::int64_t steps = 0;                // requests
};
AbortDrillTiming abortDrillTiming(const FaultDrillConfig& c, runtime::Nanoseconds start);

// The checks that need the number of ranks the test runs on (known when an
// instance is planned): enough ranks, and a victim that is a worker.
void checkFaultDrillRanks(const FaultDrillConfig& c, const scenario::TestSpec& spec, int ranks);

// Where the rank carrying the victim's share is back at its baseline: the
// first window end t >= `from` such that the requests first posted to that rank
// at or after `from` and completed in (t - window, t] number at least
// `throughputFraction` x `preFaultPerSecond` x window and their p99 latency
// is at most `p99Factor` x `preFaultP99Ns`. Looked for up to `until`.
struct CarrierCompletion {
  runtime::Nanoseconds postedAt = 0, doneAt = 0;
};
struct BaselineResult {
  std::optional<runtime::Nanoseconds> at;  // the window's end; empty: not recovered
  double throughputPerSecond = 0;          // in that window (or the best window seen)
  double p99Ns = 0;                        // in that window (or the best window seen)
};
BaselineResult findBaseline(const std::vector<CarrierCompletion>& completions, runtime::Nanoseconds from,
                            runtime::Nanoseconds until, runtime::Nanoseconds window, double preFaultPerSecond,
                            double preFaultP99Ns, double throughputFraction, double p99Factor);
// The p99 (nearest rank) of `values`; 0 when empty. Reorders `values`.
double percentile99(std::vector<double>& values);

// The command with {victim_host}, {victim_rank} and {percent} replaced.
// Throws std::invalid_argument naming an unknown or unclosed placeholder.
std::string expandFaultCommand(const std::string& command, const std::map<std::string, std::string>& values);

// The detection path's name: the part of a detection detail before ':'
// ("heartbeat", "transport error callback", "missed reply", ...).
std::string mechanismOf(const std::string& path);

// Every survivor's detection of the victim against detect_within.
struct SurvivorDetection {
  int rank = -1;
  std::int64_t detectedNs = -1;  // global clock; -1: never
  std::string path;
};
struct DetectionJudgement {
  int detected = 0;
  double slowestMs = -1;    // -1 when nobody detected it
  std::string perSurvivor;  // "rank R: T ms via PATH; rank S: not detected"
  std::string late;         // survivors past the deadline or never (when detection is required); empty = in time
};
// A detection earlier than the fault by more than this is a live peer
// declared lost, not a detection: it covers the clocks' disagreement (tens of
// us on the emulated cluster, less on a fabric) and a transport error seen the
// instant the victim dies, with room to spare; a heartbeat detection cannot
// legitimately come before heartbeat_deadline after the fault at all.
constexpr std::int64_t falseLossToleranceNs = 10'000'000;

// A survivor detecting the victim before the fault (beyond the tolerance) is
// reported as such and not counted as detected: that loss was a false one.
DetectionJudgement judgeDetections(const std::vector<SurvivorDetection>& survivors, std::int64_t faultNs,
                                   double detectWithinMs, bool detectionRequired);

// Every loss a survivor declared (its `detected` events), on the global clock.
struct DeclaredLoss {
  int by = -1;    // the survivor that declared it
  int peer = -1;  // the rank it declared lost
  std::int64_t atNs = 0;
  std::string path;  // how: "heartbeat: none for 500 ms ...", "transport: ..."
};
// Live peers declared lost: any rank but the victim (the fault touches only
// the victim), or the victim before the fault. Late heartbeats on an
// overloaded host do this; when it happens the drill's detection and recovery
// figures do not describe the fault, and the verdict must say so, not report
// a detection that "never came" or a spare that "never took over".
struct FalseLossJudgement {
  int count = 0;
  std::string detail;  // "rank 0 declared rank 3 lost 1001.2 ms before the fault (heartbeat: ...); ..."
};
FalseLossJudgement judgeFalseLosses(const std::vector<DeclaredLoss>& losses, int victimRank, std::int64_t faultNs);

// Every survivor's abort of its communicator (a drill over NCCL) against
// abort_within: `tookNs` from its detection to ncclCommAbort's return, -1
// when it did not return in time (or, with nothing detected, never began).
struct SurvivorAbort {
  int rank = -1;
  bool detected = false;
  std::int64_t tookNs = -1;
};
struct AbortJudgement {
  int stuck = 0;            // detected, but the abort did not return within abort_within
  double slowestMs = -1;    // of the aborts that returned; -1 none
  std::string perSurvivor;  // "rank R: aborted in T ms; rank S: abort stuck; rank Q: nothing detected"
  std::string late;         // survivors whose abort was stuck or late; empty = all in time
};
AbortJudgement judgeAborts(const std::vector<SurvivorAbort>& survivors, double abortWithinMs);

// When throughput is back: the first completion time t at or after
// `detectedAt` such that the completions in (t - window, t] reach 90% of the
// pre-fault rate (completions in [start, faultAt) per ns) times `window`.
// `completions` are sorted monotonic times. Empty when it never happens.
struct RecoveryResult {
  double preFaultPerSecond = 0;
  std::optional<runtime::Nanoseconds> recoveredAt;
};
RecoveryResult findRecovery(const std::vector<runtime::Nanoseconds>& completions, runtime::Nanoseconds start,
                            runtime::Nanoseconds faultAt, runtime::Nanoseconds detectedAt, runtime::Nanoseconds window);

}  // namespace fabscope::suite
