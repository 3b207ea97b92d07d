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
  // answering (no transport reports it; heartbeats must). link-down, loss:
  // fault_command (run by the client at the fault moment) cuts or degrades the
  // victim's link; restore_command undoes it after the workload.
  std::string fault = "kill";
  int victim = 1;                      // index among the test's ranks: 1 .. ranks-2
  double atSeconds = 1.0;              // after the workload starts
  double detectWithinSeconds = 2.0;    // detection deadline (exit 1 when missed)
  double heartbeatSeconds = 0.1;       // every rank sends every other rank a heartbeat this often
  double heartbeatDeadlineSeconds = 0.3;  // silence after which a peer is declared lost
  double requestTimeoutSeconds = 0.6;  // a reply missing this long declares its worker lost
  std::int64_t requests = 4000;
  double rate = 1000;                  // requests per second issued by the client
  std::int64_t replyBytes = 64;        // the test's size
  std::string faultCommand;            // link-down / loss; placeholders see expandFaultCommand
  std::string restoreCommand;          // optional; run after the workload
  double commandTimeoutSeconds = 10;   // bound on each command
  double lossPercent = 100;            // loss: substituted for {percent}

  bool usesCommand() const { return fault == "link-down" || fault == "loss"; }
  // A lossy link may legitimately stay in service; every other fault must be noticed.
  bool detectionRequired() const { return fault != "loss"; }
  // How long the client issues and then waits for replies, at most.
  double workloadSeconds() const { return static_cast<double>(requests) / rate + 4 * requestTimeoutSeconds; }
  // A victim that does not die (hang, link-down, loss) leaves the run this
  // long after the workload started: after the client has stopped waiting on
  // it and has run restore_command.
  double victimLeavesAfterSeconds() const { return workloadSeconds() + (usesCommand() ? commandTimeoutSeconds : 0) + 1; }
};

// Reads and checks the keys (the kind's parse step, at load). Throws
// ScenarioError naming file:line:column and what was expected.
FaultDrillConfig readFaultDrillConfig(const scenario::TestSpec& spec, const scenario::TestSource& source);
// The checks that need the number of ranks the test runs on (known when an
// instance is planned): enough ranks, and a victim that is a worker.
void checkFaultDrillRanks(const FaultDrillConfig& c, const scenario::TestSpec& spec, int ranks);

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
DetectionJudgement judgeDetections(const std::vector<SurvivorDetection>& survivors, std::int64_t faultNs,
                                   double detectWithinMs, bool detectionRequired);

// When throughput is back: the first completion time t at or after
// `detectedAt` such that the completions in (t - window, t] reach 90% of the
// pre-fault rate (completions in [start, faultAt) per ns) times `window`.
// `completions` are sorted monotonic times. Empty when it never happens.
struct RecoveryResult {
  double preFaultPerSecond = 0;
  std::optional<runtime::Nanoseconds> recoveredAt;
};
RecoveryResult findRecovery(const std::vector<runtime::Nanoseconds>& completions, runtime::Nanoseconds start,
                            runtime::Nanoseconds faultAt, runtime::Nanoseconds detectedAt,
                            runtime::Nanoseconds window);

}  // namespace fabscope::suite
