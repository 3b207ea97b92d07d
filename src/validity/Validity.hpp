#pragma once
// Validity of a measurement: the facts that make a run's numbers meaningless or
// doubtful, found before anything is measured (placement, governor,
// load) or after (clock-sync uncertainty against the latencies measured).
// The detection is pure (facts in, findings out) so it is unit-tested on made-up
// machines; readFacts() is the only part that looks at this one.
#include <cstdint>
#include <string>
#include <vector>

namespace fabscope::validity {

// What one rank sees of the machine it runs on.
struct RankFacts {
  int rank = -1;
  std::string host;  // the rank's hostname (an emulated host is a namespace)
  // Which machine the CPUs belong to: ranks of different emulated hosts (network
  // namespaces) share one machine's CPUs, so the hostname cannot tell.
  std::string machine;    // /etc/machine-id + boot_id
  std::vector<int> cpus;  // sched_getaffinity, ascending
  int onlineCpus = 0;     // the machine's
  // CPUs kept busy by other work at start (average over a short window while every
  // rank of the run slept: /proc/stat), -1 when unreadable. Not the load average:
  // it lags by a minute and still counts a job that has just ended.
  double otherBusyCpus = -1;
  // scaling_governor of each CPU in `cpus` that has one ("" where unreadable).
  std::vector<std::string> governors;
};

// One row of /validity.
struct Finding {
  std::string host;  // a hostname, or "*" when it concerns every host of the run
  std::string what;  // short code: oversubscribed, clock_uncertainty, cpu_governor, busy_host
  double value = 0;
  double limit = 0;
  std::string effect;  // what it does to the numbers, in words
};

inline constexpr const char* oversubscribed = "oversubscribed";
inline constexpr const char* clockUncertainty = "clock_uncertainty";
inline constexpr const char* cpuGovernor = "cpu_governor";
inline constexpr const char* busyHost = "busy_host";

// More polling ranks than CPUs they may run on, per machine. A set of ranks is
// oversubscribed when fewer CPUs are open to all of them together than there are
// ranks (Hall's condition); the sets checked are each distinct affinity set and
// the machine's union, which covers unpinned, grouped and per-rank pinning.
std::vector<Finding> oversubscription(const std::vector<RankFacts>& ranks);

// True when `findings` hold an oversubscription: polling waits must then yield.
bool waitsMustYield(const std::vector<Finding>& findings);

// CPU frequency governors other than `performance` (where readable), per machine.
std::vector<Finding> governors(const std::vector<RankFacts>& ranks);

// A busy machine at start: other work kept more CPUs busy than the run's ranks
// on that machine leave free (at least half a CPU), measured while they slept.
std::vector<Finding> busyMachines(const std::vector<RankFacts>& ranks);

// The placement, governor and load findings together (what is known at start).
std::vector<Finding> atStart(const std::vector<RankFacts>& ranks);

// Clock-sync uncertainty against the smallest latency measured: cross-rank
// timelines (incast arrival, collective arrival order) cannot order events
// closer than the uncertainty. The uncertainty is half the sync's best round
// trip, so about one one-way latency is the method's own floor (measured: 0.28
// us against a 0.39 us p50 on shared memory); above twice the smallest p50 the
// sync was disturbed (a busy or oversubscribed machine) and timelines are
// coarser than the fabric. `smallestLatencyNs` <= 0 (none measured) flags nothing.
inline constexpr double clockUncertaintyFactor = 2.0;
std::vector<Finding> clockSync(std::int64_t worstUncertaintyNs, double smallestLatencyNs);

// The hosts a machine's ranks carry: "*" when that is every host of the run.
std::string hostsLabel(const std::vector<std::string>& machineHosts, const std::vector<std::string>& allHosts);

// Facts of this process (affinity, machine identity, load, governors).
// `busyWindowSeconds`: how long this rank sleeps while it reads /proc/stat (every
// rank of the run sleeps the same window, so the busy CPUs are others' work); the
// window is read in three parts and the quietest part counts.
RankFacts readFacts(int rank, const std::string& host, double busyWindowSeconds);

// A line per rank for gathering over the control plane, and back.
std::string encode(const RankFacts& facts);
RankFacts decode(const std::string& line);

}  // namespace fabscope::validity
