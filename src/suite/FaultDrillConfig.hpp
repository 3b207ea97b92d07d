#pragma once
// The scenario keys of a fault drill (kind `fault`) and the pure parts of its
// analysis, apart from the MPI/transport code so they can be unit-tested.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/Clock.hpp"
#include "scenario/Scenario.hpp"

namespace fabscope::suite {

struct FaultDrillConfig {
  std::string fault = "kill";          // only `kill` is implemented
  int victim = 1;                      // index among the test's ranks: 1 .. ranks-2
  double atSeconds = 1.0;              // after the workload starts
  double detectWithinSeconds = 2.0;    // detection deadline (exit 1 when missed)
  double heartbeatSeconds = 0.1;       // a reply missing for 3 heartbeats declares its worker lost
  std::int64_t requests = 4000;
  double rate = 1000;                  // requests per second issued by the client
  std::int64_t replyBytes = 64;        // the test's size

  double replyTimeoutSeconds() const { return 3 * heartbeatSeconds; }
  // How long the client issues and then waits for replies, at most.
  double workloadSeconds() const { return static_cast<double>(requests) / rate + 4 * replyTimeoutSeconds(); }
};

// Reads and checks the keys; `ranks` is the number of ranks the test runs on
// (0 = not known yet: the rank-dependent checks are skipped). Throws
// ScenarioError naming file:line and what was expected.
FaultDrillConfig readFaultDrillConfig(const scenario::TestSpec& spec, const std::string& file, int ranks);

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
