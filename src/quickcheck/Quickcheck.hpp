#pragma once
// fabscope quickcheck: a node health check for Slurm's HealthCheckProgram or
// NHC. Every check answers "healthy" or one problem line; the first problem
// becomes the single line the command prints (the text `scontrol update ...
// reason=` and NHC's `die` take). See docs/quickcheck.md.
#include <sys/types.h>

#include <boost/program_options/options_description.hpp>
#include <boost/program_options/variables_map.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "inventory/Counters.hpp"
#include "inventory/HostInventory.hpp"
#include "inventory/Manifest.hpp"

namespace fabscope::quickcheck {

// What a GPU's nearest NIC may be at worst (nvidia-smi topo's classes, nearest first).
enum class AffinityLimit { pix, pxb, phb, node, sys };
std::string affinityLimitName(AffinityLimit limit);
// Throws UsageError naming the option and the accepted values.
AffinityLimit parseAffinityLimit(const std::string& text);

// Thresholds of the intra-node latency and bandwidth loop (2 local ranks under mpirun).
struct LoopSettings {
  bool enabled = true;
  std::string transport = "mpi";          // any data path of the build that runs on 2 local ranks
  int latencyIterations = 2000;           // 8-byte ping-pongs after warm-up
  std::int64_t bandwidthBytes = 1 << 20;  // one message of the bandwidth loop
  int bandwidthWindow = 16;               // messages in flight per round
  int bandwidthRounds = 30;
  double maxLatencyUs = 100;      // median one-way latency allowed
  double minBandwidthGBps = 0.5;  // 10^9 bytes per second, at least
  std::string mpirun;             // "" : mpirun from PATH, then /usr/bin/mpirun
};

struct QuickcheckOptions {
  std::string manifestPath;            // "" : no manifest
  std::optional<double> rdmaRateGbps;  // every active RDMA port at least this (also: the manifest's rate)
  bool requireRdma = false;            // no RDMA device is a problem (also: manifest protocol ib|roce)
  AffinityLimit affinityLimit = AffinityLimit::node;
  std::filesystem::path stateDir;  // where counters of the last pass live; "" : defaultStateDir()
  bool counters = true;
  std::vector<std::string> interfaces;      // interfaces whose error counters count; empty: all but lo
  std::vector<std::string> ignoreCounters;  // counter names not to judge
  std::int64_t counterTolerance = 0;        // increase per counter allowed between passes
  LoopSettings loop;
  double timeLimitSeconds = 45;  // the whole check, loop included
  std::string reportPath;        // "" : no file; else a JSON report of every check
  bool verbose = false;          // every check's line on stderr
  // Slurm: drain this node on a problem, resume it when healthy if fabscope drained it.
  bool slurmDrain = false;
  std::string slurmNode;  // "" : SLURMD_NODENAME, else the short host name
  std::string scontrol;   // "" : scontrol from PATH, then /usr/bin/scontrol
  // For fabscope's own tests: read this tree instead of /sys (no live verbs, hwloc, CUDA).
  std::filesystem::path sysRoot;
};

// One check's outcome: problem empty when healthy; detail says what was seen.
struct CheckResult {
  std::string name;     // inventory, manifest, rdma, affinity, counters, loop
  std::string problem;  // one line, "" when healthy
  std::string detail;   // one line, always set
};

// --- the checks, pure where they can be (unit-tested) ---------------------------
CheckResult checkManifestRows(const std::vector<inventory::ManifestRow>& rows, const std::string& manifestFile);
CheckResult checkRdmaPorts(const inventory::HostInventory& host, const QuickcheckOptions& options,
                           const std::optional<inventory::Manifest>& manifest);
CheckResult checkGpuNicAffinity(const inventory::HostInventory& host, AffinityLimit limit);

// Error counters judged by quickcheck (interface and RDMA port errors; not
// congestion or TCP retransmissions, which move on healthy nodes).
bool isErrorCounter(const std::string& name);
// previous == nullopt: first pass, the baseline is recorded and nothing judged.
// A counter that went down (driver reload, reboot) starts a new baseline.
CheckResult checkCounterMovement(const std::optional<inventory::CounterSnapshot>& previous,
                                 const inventory::CounterSnapshot& now, const QuickcheckOptions& options);

// --- the state directory --------------------------------------
// root: /run/fabscope-quickcheck; others: $XDG_RUNTIME_DIR/fabscope-quickcheck,
// else /tmp/fabscope-quickcheck-<uid>.
std::filesystem::path defaultStateDir();
// Creates `dir` (mode 0700, parent must exist) or accepts an existing one only
// when it is a real directory (not a symbolic link) owned by `owner` and not
// writable by group or others. Throws RuntimeFailure saying why it was refused.
void secureStateDir(const std::filesystem::path& dir, uid_t owner);
// The counters file of the last pass; nullopt when there is none. Refuses (throws
// RuntimeFailure) a symbolic link, a file of another owner, or a malformed file.
std::optional<inventory::CounterSnapshot> loadCounterState(const std::filesystem::path& dir, uid_t owner);
// Written to a new temporary file (O_EXCL|O_NOFOLLOW, 0600) and renamed over the old one.
void saveCounterState(const std::filesystem::path& dir, const inventory::CounterSnapshot& snapshot);
// Writes `text` to a new temporary file beside `file` (O_EXCL|O_NOFOLLOW, 0600)
// and renames it over `file`; throws RuntimeFailure.
void replaceFile(const std::filesystem::path& file, const std::string& text);

// --- the loop ---------------------------------------------------------------------
struct LoopFigures {
  double latencyUs = 0;
  double bandwidthGBps = 0;
};
// The worker's result line "quickcheck-loop: latency_us=X bandwidth_GBps=Y".
std::optional<LoopFigures> parseLoopLine(const std::string& output);
CheckResult judgeLoop(const LoopFigures& figures, const LoopSettings& settings);

// --- the command line (QuickcheckOptions.cpp) ------------------------------------
boost::program_options::options_description quickcheckOptionsDescription();
// Throws UsageError naming the option and what was expected.
QuickcheckOptions quickcheckOptionsOf(const boost::program_options::variables_map& vm);
// The arguments after "quickcheck"; throws UsageError (unknown option, bad value).
QuickcheckOptions parseQuickcheckArguments(const std::vector<std::string>& args);

// --- the command ----------------------------------------------------------------
// The single line printed on failure, prefixed so Slurm/NHC reasons name fabscope.
std::string problemLine(const std::vector<CheckResult>& results);
int runQuickcheckCommand(const QuickcheckOptions& options);
// The loop's worker, started by quickcheck itself as `mpirun -np 2 fabscope quickcheck --loop-worker`.
int runQuickcheckLoopWorker(const LoopSettings& settings, double seconds, int& argc, char**& argv);

}  // namespace fabscope::quickcheck
