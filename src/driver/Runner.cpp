// Running: the run's named stages (Runner::run: set up, open the file, its
// header, the matrix (MatrixLoop.cpp), finish).
#include "driver/Runner.hpp"
#include "runtime/MemoryUse.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <utility>

#include "driver/MatrixLoop.hpp"
#include "driver/SummaryTable.hpp"
#include "fabscope/BuildConfig.hpp"
#include "inventory/HostInventory.hpp"
#include "runtime/Deadlines.hpp"
#include "runtime/EveryRanksLine.hpp"
#include "runtime/Timestamp.hpp"
#include "runtime/WatchdogRanks.hpp"
#include "transport/TransportFactory.hpp"

namespace fabscope::driver {

runtime::Deadline setupDeadline(const scenario::Scenario& scenario) {
  return runtime::Deadline::afterSeconds(scenario.controlTimeoutSeconds > 0 ? scenario.controlTimeoutSeconds
                                                                            : runtime::deadlines::setupSeconds);
}

namespace {

constexpr int formatVersion = 1;
// A step of the result file outside a test (the header, a skipped test, the
// run's closing steps) waits for ranks that have nothing else to do: one that
// does not answer within control_grace is as silent as one that misses a
// test's deadline by it. control_timeout, where given, bounds it instead.
double fileStepSeconds(const scenario::Scenario& scenario) {
  return scenario.controlTimeoutSeconds > 0 ? scenario.controlTimeoutSeconds : scenario.controlGraceSeconds;
}
runtime::Deadline fileStep(const scenario::Scenario& scenario) {
  return runtime::Deadline::afterSeconds(fileStepSeconds(scenario));
}

std::string envOr(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v ? v : fallback;
}

}  // namespace

Runner::Runner(const scenario::Scenario& scenario, const suite::Registry& registry, const runtime::Communicator& world,
               RunOptions options)
    : run_(scenario, registry, world, std::move(options)) {}

void Runner::writeRunHeader(output::Recorder& recorder, const output::ResultFile& file) {
  const auto now = runtime::realtimeNow();
  const auto mono = runtime::monotonicNow();
  std::string overrides;
  for (const auto& o : run_.scenario.overrides) overrides += o + "\n";
  output::Attributes header = {
      {"format", std::string("fabscope")},
      {"format_version", std::int64_t{formatVersion}},
      {"tool_version", std::string(FABSCOPE_VERSION)},
      {"run_id", run_.runId},
      {"started_utc", runtime::utcTimestamp(now)},
      {"finished_utc", std::string()},
      {"complete", std::int64_t{0}},
      {"exit_code", std::int64_t{-1}},
      {"command_line", run_.options.commandLine},
      {"scenario_name", run_.scenario.name},
      {"scenario_file", run_.scenario.file},
      {"scenario_text", run_.scenario.text},
      {"overrides", overrides},
      {"nranks", std::int64_t{run_.world.size()}},
      {"nhosts", std::int64_t{run_.identity.hostCount}},
      {"hdf5_mode", std::string(output::writeModeName(file.mode()))},
      {"epoch_offset_ns", std::int64_t{now - mono}},
      {"seed", static_cast<std::int64_t>(run_.seed)},
      {"launch_preset", envOr("FABSCOPE_FABRIC", "")},
  };
  // Known at start: the wait policy and the start findings (the count becomes
  // final with /validity at the end: the clock finding needs the latencies).
  for (auto& attribute : validity::attributesOf(run_.validity)) header.push_back(std::move(attribute));
  recorder.attributes("/", header);
  transport::recordTransportSettings(recorder, run_.scenario.transports);
}

void Runner::writeRanks(output::Recorder& recorder) {
  output::RankRecord row{};
  row.rank = run_.identity.rank;
  output::setText(row.host, run_.identity.host);
  row.local_rank = run_.identity.localRank;
  row.local_size = run_.identity.localSize;
  row.pid = run_.identity.pid;
  row.gpu = run_.identity.gpu;
  output::setText(row.nic, run_.identity.nic);
  row.clock_offset_ns = run_.clock.mine().offset;
  row.clock_uncertainty_ns = run_.clock.mine().uncertainty;
  const auto& topology = run_.options.fabric.topology;
  const auto label =
      inventory::topologyForHost(run_.identity.host, topology ? &*topology : nullptr, inventory::currentEnvironment());
  output::setText(row.site, label.site);
  output::setText(row.pod, label.pod);
  output::setText(row.leaf, label.leaf);
  recorder.rank(row);
  // Every rank's site on every rank: each rank splits its own summary by site
  // scope, rank 0 the instance's statistics, and flags groups that span sites.
  run_.siteOfRank = runtime::everyRanksLine(run_.world, label.site, fileStep(run_.scenario));
}

void printResultLine(bool rank0, int code) {
  const char* asked = std::getenv("FABSCOPE_REPORT_EXIT");
  if (!rank0 || !asked || std::string(asked) != "1") return;
  std::printf("fabscope: result: exit code %d\n", code);
  std::fflush(stdout);
}

// Identity, clock, the run's seed and id: the same on every rank.
void Runner::setUp() {
  const auto setup = setupDeadline(run_.scenario);
  // First: the wait policy depends on it, and every later wait (clock sync
  // included) must already yield where ranks outnumber CPUs.
  run_.validity = validity::judgeAtStart(run_.world, setup);
  run_.identity = runtime::discoverRankIdentity(run_.world, setup);
  // So the watchdog's line names a peer's host, and the ranks of its own host
  // that are gone or stopped.
  runtime::watchdog::knowHosts(run_.identity.hostOfRank);
  runtime::watchdog::knowPids(run_.world.allgather(run_.identity.pid, setup));
  const auto syncStart = runtime::monotonicNow();
  run_.clock = runtime::ClockSync::measure(run_.world, 50, setup);
  run_.clockReadNs = runtime::clockReadCost();
  runtime::addClockSyncNanoseconds(runtime::monotonicNow() - syncStart);
  std::uint64_t seed = run_.scenario.seed;
  if (!run_.scenario.seedGiven && run_.world.rank() == 0) seed = std::random_device{}() & 0x7fffffffffffull;
  run_.world.broadcast(&seed, sizeof seed, 0, setup);
  run_.seed = seed;
  char id[40];
  std::snprintf(id, sizeof id, "%016llx",
                static_cast<unsigned long long>(std::random_device{}()) << 32 |
                    static_cast<unsigned long long>(runtime::realtimeNow() & 0xffffffff));
  run_.runId = run_.world.broadcastString(id, 0, setup);
}

output::ResultFile Runner::openFile(const std::vector<PlannedInstance>& planned) {
  std::string hdf5Mode = run_.scenario.hdf5Mode;
  const bool mayLoseRanks =
      std::any_of(planned.begin(), planned.end(), [](const PlannedInstance& p) { return p.plan.mayLoseRanks; });
  if (mayLoseRanks) {
    if (hdf5Mode == "parallel")
      throw UsageError(
          "the scenario has a fault drill, which loses ranks: it needs hdf5=serial (or auto), not parallel");
    hdf5Mode = "serial";
  }
  return output::ResultFile(run_.options.outputPath, hdf5Mode, run_.world, setupDeadline(run_.scenario));
}

int Runner::run(std::vector<PlannedInstance> planned) {
  setUp();
  runtime::sampleHeapPeak("setup");
  auto file = openFile(planned);
  file.setStepSeconds(fileStepSeconds(run_.scenario));
  output::Recorder recorder(file, fileStepSeconds(run_.scenario));
  announce(planned, file);
  RankLoss losses(run_, recorder);
  const auto fabric = writeFileHeaderOrEndAfterLoss(recorder, file, losses);
  runtime::sampleHeapPeak("file header");
  const int exitCode = runMatrixOrEndAfterLoss(std::move(planned), file, losses, recorder);
  if (run_.leaveRun) return exit_code::ok;
  return finish(file, recorder, losses, fabric, exitCode);
}

// Rank 0's opening lines on stderr: what runs, where it is written, what makes the numbers doubtful.
void Runner::announce(const std::vector<PlannedInstance>& planned, const output::ResultFile& file) const {
  if (run_.world.rank() != 0) return;
  std::fprintf(stderr, "fabscope %s: scenario '%s', %d ranks on %d hosts, %zu test instances%s, seed %llu\n",
               FABSCOPE_VERSION, run_.scenario.name.c_str(), run_.world.size(), run_.identity.hostCount, planned.size(),
               retestsAmong(planned).c_str(), static_cast<unsigned long long>(run_.seed));
  std::fprintf(stderr, "fabscope: writing %s (%s HDF5)\n", run_.options.outputPath.c_str(),
               output::writeModeName(file.mode()));
  for (const auto& line : validity::describe(run_.validity)) std::fprintf(stderr, "fabscope: %s\n", line.c_str());
}

// The run header, /ranks, the fabric inventory and the /tests group.
FabricVerdict Runner::writeFileHeader(output::Recorder& recorder, output::ResultFile& file) {
  writeRunHeader(recorder, file);
  writeRanks(recorder);
  auto fabric = recordFabric(file, run_.world, run_.identity, run_.options.fabric, setupDeadline(run_.scenario));
  recorder.attributes("/", {{"consistency_flags", std::int64_t{fabric.consistencyFlags}},
                            {"manifest_failed", std::int64_t{fabric.manifestFailed ? 1 : 0}}});
  recorder.testsGroup();
  return fabric;
}

// A rank silent or lost while the header is written is named by a loss round,
// as in the matrix: the file then holds the error and the lost rank, not a
// header cut short with exit_code=-1.
FabricVerdict Runner::writeFileHeaderOrEndAfterLoss(output::Recorder& recorder, output::ResultFile& file,
                                                    RankLoss& losses) {
  suite::stopIfAsked(run_.options.selfTest, run_.world.rank(), suite::SelfTestHooks::StopPoint::header);
  try {
    return writeFileHeader(recorder, file);
  } catch (const std::exception& e) {
    endAfterFailure(e, losses);
  }
}

int Runner::runMatrixOrEndAfterLoss(std::vector<PlannedInstance> planned, output::ResultFile& file, RankLoss& losses,
                                    output::Recorder& recorder) {
  try {
    return MatrixLoop(run_, losses, file, recorder).run(std::move(planned));
  } catch (const std::exception& e) {
    endAfterFailure(e, losses);
  }
}

// No collective may run again, not even closing the file (parallel HDF5
// closes collectively): a loss round names the lost or silent ranks and rank 0
// records the end alone. Every finished test is already flushed.
void Runner::endAfterFailure(const std::exception& failure, RankLoss& losses) {
  const std::string mine = "rank " + std::to_string(run_.world.rank()) + ": " + failure.what();
  if (const auto* lost = dynamic_cast<const runtime::PeerLost*>(&failure))
    losses.endAfterLoss(mine, {lost->peer()}, nullptr);
  if (run_.survivors) {
    std::fprintf(stderr, "fabscope: %s rank %d: runtime failure after a fault drill: %s\n",
                 runtime::utcTimestamp(runtime::realtimeNow()).c_str(), run_.world.rank(), failure.what());
    std::fflush(stderr);
    runtime::MpiEnvironment::abortJob(exit_code::runtimeFailure);
  }
  losses.endAfterLoss(mine, {}, nullptr);
}

int Runner::finish(output::ResultFile& file, output::Recorder& recorder, RankLoss& losses, const FabricVerdict& fabric,
                   int exitCode) {
  if (fabric.manifestFailed) exitCode = exit_code::checkFailed;
  suite::stopIfAsked(run_.options.selfTest, run_.world.rank(), suite::SelfTestHooks::StopPoint::closing);
  // The closing steps wait for every rank, as the matrix's do: a rank stopped
  // or lost after its last test is named by a loss round (a rank still in the
  // matrix calls one from there), and the file is marked complete=0.
  try {
    // Clock uncertainty against the smallest latency measured (one-way p50, rank 0's results).
    double smallestLatency = 0;
    for (const auto& r : run_.results)
      if (r.metric == suite::Metric::latency && r.status == "passed" && std::isfinite(r.latency.p50) &&
          r.latency.p50 > 0 && (smallestLatency == 0 || r.latency.p50 < smallestLatency))
        smallestLatency = r.latency.p50;
    const auto closing = fileStep(run_.scenario);
    validity::judgeClocks(run_.validity, *run_.comm, run_.clock.mine().uncertainty, smallestLatency, closing);
    std::vector<output::ValidityRecord> rows;
    if (run_.comm->rank() == 0) rows = validity::rowsOf(run_.validity);
    recorder.validity(rows, validity::attributesOf(run_.validity), closing);
    run_.validityRecorded = true;
  } catch (const std::exception& e) {
    endAfterFailure(e, losses);
  }
  recorder.attributes("/", {{"finished_utc", runtime::utcTimestamp(runtime::realtimeNow())},
                            {"complete", std::int64_t{1}},
                            {"exit_code", std::int64_t{exitCode}},
                            {"missed_deadlines", std::int64_t{run_.recoveries}},
                            {"not_run_after_missed_deadlines", std::int64_t{run_.notRunAfterTimeouts}}});
  file.flush();
  runtime::sampleHeapPeak("closing");
  if (run_.world.rank() == 0) {
    // What makes the numbers doubtful comes before the numbers.
    for (const auto& line : validity::describe(run_.validity)) std::printf("%s\n", line.c_str());
    printSummaryTable(stdout, run_.results);
    if (run_.recoveries > 0)
      std::printf("\n%d test(s) missed their deadline; each following test ran on a fresh data path%s\n",
                  run_.recoveries,
                  run_.notRunAfterTimeouts > 0 ? (", until the limit of " + std::to_string(maxRecoveries) + ": " +
                                                  std::to_string(run_.notRunAfterTimeouts) + " test(s) were NOT RUN")
                                                     .c_str()
                                               : "");
    if (!fabric.lines.empty()) {
      std::printf("\nfabric inventory: %d consistency flag(s)%s\n", fabric.consistencyFlags,
                  fabric.manifestFailed ? "; the manifest check FAILED" : "");
      for (const auto& line : fabric.lines) std::printf("  %s\n", line.c_str());
    }
    std::printf("result file: %s (complete)\n", run_.options.outputPath.c_str());
    std::fflush(stdout);
  }
  return exitCode;
}

std::vector<int> Runner::ranksLeftBehind() const {
  if (!run_.survivors) return {};
  MPI_Group worldGroup, survivorGroup;
  MPI_Comm_group(run_.world.handle(), &worldGroup);
  MPI_Comm_group(run_.survivors->handle(), &survivorGroup);
  std::vector<int> mine(static_cast<std::size_t>(run_.survivors->size())), inWorld(mine.size());
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = static_cast<int>(i);
  MPI_Group_translate_ranks(survivorGroup, static_cast<int>(mine.size()), mine.data(), worldGroup, inWorld.data());
  MPI_Group_free(&worldGroup);
  MPI_Group_free(&survivorGroup);
  std::vector<int> left;
  for (int r = 0; r < run_.world.size(); ++r)
    if (std::find(inWorld.begin(), inWorld.end(), r) == inWorld.end()) left.push_back(r);
  return left;
}

bool Runner::survivorsDone(const runtime::Deadline& deadline) const {
  if (!run_.survivors) return true;
  try {
    run_.survivors->barrier(deadline);
    return true;
  } catch (const DeadlineExceeded&) {
    return false;
  }
}

}  // namespace fabscope::driver
